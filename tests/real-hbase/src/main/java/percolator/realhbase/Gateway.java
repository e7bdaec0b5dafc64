package percolator.realhbase;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.thrift2.ThriftServer;

/** One attempt at running a Thrift2 gateway on a port, in a thread of its own. */
final class Gateway {
  final ThriftServer server;
  final int port;
  final String qop;
  final Thread serving;
  volatile Exception failure;

  Gateway(Configuration conf, int port, String qop) {
    this.server = new ThriftServer(conf);
    this.port = port;
    this.qop = qop;
    this.serving = new Thread(() -> {
      try {
        // As `hbase thrift2 start -p PORT` would; the bind address is in the configuration.
        int status = server.run(new String[] {"-p", Integer.toString(port)});
        if (status != 0) {
          failure = new IllegalStateException("the gateway exited with status " + status);
        }
      } catch (Exception e) {
        failure = e;
      }
    }, "thrift2-gateway-" + port);
    serving.setDaemon(true);
    serving.start();
  }

  /**
   * True once PROBE's real request through this gateway succeeded (the master has finished
   * initialising and hbase:meta is served); false if the gateway thread ended first or it
   * never answered.
   */
  boolean awaitReady(Probe probe) throws InterruptedException {
    Exception last = null;
    for (int attempt = 0; attempt < 600; attempt++) {
      if (!serving.isAlive()) {
        if (failure == null) {
          failure = new IllegalStateException("the gateway stopped", last);
        }
        return false;
      }
      try {
        if (probe.ready(port)) {
          return true;
        }
      } catch (Exception e) {
        last = e;
        if (attempt % 20 == 19) {
          System.err.println("real-hbase: gateway on " + port + " not ready yet: " + e);
        }
      }
      Thread.sleep(500);
    }
    failure = new IllegalStateException("the gateway never answered a real request", last);
    return false;
  }
}
