package percolator.realhbase;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.thrift2.ThriftServer;
import org.apache.hadoop.hbase.thrift2.generated.TGet;
import org.apache.hadoop.hbase.thrift2.generated.THBaseService;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.thrift.TConfiguration;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSocket;

/**
 * A standalone HBase the way {@code hbase master start} runs it when the cluster is not
 * distributed (ZooKeeper, one master and one region server in this JVM, data on the local
 * filesystem), plus the Thrift2 gateway with its default server type, transport and protocol.
 *
 * <p>Arguments: {@code DATA_DIR READY_FILE [THRIFT_PORT]}. Once a real request through the
 * gateway succeeds, the gateway's port is written to READY_FILE (atomically), which is how
 * {@code scripts/real-hbase} knows it may return. Everything runs until the JVM is told to stop
 * (SIGTERM); a shutdown hook stops the gateway, then HBase, then ZooKeeper.
 */
public final class RealHBase {
  private RealHBase() {}

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable e) {
      // HBase's own non-daemon threads would keep a failed start alive until the script's
      // deadline; exit now so that it reports the failure at once.
      e.printStackTrace();
      System.exit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: RealHBase DATA_DIR READY_FILE [THRIFT_PORT]");
      System.exit(2);
    }
    Path data = Paths.get(args[0]).toAbsolutePath();
    Path ready = Paths.get(args[1]).toAbsolutePath();
    int fixedPort = args.length > 2 ? Integer.parseInt(args[2]) : 0;
    Files.createDirectories(data);
    Files.deleteIfExists(ready);

    Configuration conf = HBaseConfiguration.create();
    conf.setBoolean("hbase.cluster.distributed", false);
    conf.set("hbase.rootdir", data.resolve("hbase").toUri().toString());
    conf.set("hbase.tmp.dir", data.resolve("tmp").toString());
    // The local filesystem has no hflush/hsync; standalone HBase must not insist on them.
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.zookeeper.quorum", "127.0.0.1");
    // No web UIs: they would need fixed ports and nothing here reads them.
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setInt("hbase.thrift.info.port", -1);
    // Master and region server RPC on ephemeral ports, so two instances never clash.
    conf.set(LocalHBaseCluster.ASSIGN_RANDOM_PORTS, "true");

    MiniZooKeeperCluster zookeeper = new MiniZooKeeperCluster(conf);
    zookeeper.setDefaultClientPort(freePort());
    int zkPort = zookeeper.startup(data.resolve("zookeeper").toFile());
    conf.setInt("hbase.zookeeper.property.clientPort", zkPort);

    LocalHBaseCluster cluster =
        new LocalHBaseCluster(conf, 1, 1, HMaster.class, HRegionServer.class);
    cluster.startup();

    // The port is picked only now, after HBase has taken its own ephemeral ports, and picked
    // again if something took it between the probe and the gateway's bind.
    Gateway gateway = null;
    for (int attempt = 1; gateway == null; attempt++) {
      int port = fixedPort > 0 ? fixedPort : freePort();
      Gateway candidate = new Gateway(conf, port);
      if (candidate.awaitReady()) {
        gateway = candidate;
      } else if (fixedPort > 0 || attempt >= 5) {
        throw new IllegalStateException("the Thrift2 gateway did not start", candidate.failure);
      } else {
        System.err.println("real-hbase: gateway on port " + port + " failed ("
            + candidate.failure + "), trying another port");
      }
    }
    Gateway started = gateway;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      started.server.stop();
      cluster.shutdown();
      cluster.join();
      try {
        zookeeper.shutdown();
      } catch (IOException e) {
        e.printStackTrace();
      }
    }, "real-hbase-shutdown"));

    int thriftPort = started.port;
    Path partial = ready.resolveSibling(ready.getFileName() + ".tmp");
    Files.write(partial, (thriftPort + "\n").getBytes(StandardCharsets.UTF_8));
    Files.move(partial, ready, StandardCopyOption.ATOMIC_MOVE);
    System.out.println("real-hbase: Thrift2 gateway ready on 127.0.0.1:" + thriftPort);
    cluster.join();
  }

  /** One attempt at running the Thrift2 gateway on a port. */
  private static final class Gateway {
    final ThriftServer server;
    final int port;
    final Thread serving;
    volatile Exception failure;

    Gateway(Configuration conf, int port) {
      this.server = new ThriftServer(conf);
      this.port = port;
      this.serving = new Thread(() -> {
        try {
          server.run(new String[] {"-b", "127.0.0.1", "-p", Integer.toString(port), "start"});
        } catch (Exception e) {
          failure = e;
        }
      }, "thrift2-gateway");
      serving.setDaemon(true);
      serving.start();
    }

    /**
     * True once the master has finished initialising (namespaces are listed) and hbase:meta is
     * served by the region server (a get on it returns), both through this gateway; false if
     * the gateway thread ended first.
     */
    boolean awaitReady() throws InterruptedException {
      Exception last = null;
      for (int attempt = 0; attempt < 600; attempt++) {
        if (!serving.isAlive()) {
          if (failure == null) {
            failure = new IllegalStateException("the gateway stopped", last);
          }
          return false;
        }
        try (TSocket socket = new TSocket(new TConfiguration(), "127.0.0.1", port, 10_000)) {
          socket.open();
          THBaseService.Client client = new THBaseService.Client(new TBinaryProtocol(socket));
          List<String> namespaces = client.listNamespaces();
          if (namespaces.contains("default")) {
            client.get(
                ByteBuffer.wrap("hbase:meta".getBytes(StandardCharsets.UTF_8)),
                new TGet(ByteBuffer.wrap("probe".getBytes(StandardCharsets.UTF_8))));
            return true;
          }
        } catch (Exception e) {
          last = e;
        }
        Thread.sleep(500);
      }
      failure = new IllegalStateException("the gateway never answered a real request", last);
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
