package percolator.realhbase;

import java.io.IOException;
import java.lang.reflect.Field;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.zookeeper.ClientCnxn;
import org.apache.zookeeper.ZooKeeper;

/**
 * A region server the nemesis can crash in two ways. {@link #abort} is the crash HBase notices
 * at once: the server closes its ZooKeeper session on the way down. {@link #hardKill} is a
 * machine that died: the session is left open, so the master learns of the death only when
 * ZooKeeper expires it ({@code zookeeper.session.timeout}), and the server's regions stay away
 * until then.
 */
public final class CrashableRegionServer extends HRegionServer {
  public CrashableRegionServer(Configuration conf) throws IOException {
    super(conf);
  }

  void hardKill() throws ReflectiveOperationException {
    ZooKeeper zk = getZooKeeper().getRecoverableZooKeeper().getZooKeeper();
    // ZooKeeper's client has no public way to go silent without ending its session; its
    // connection's disconnect() stops the heartbeats and sends no close.
    Field field = ZooKeeper.class.getDeclaredField("cnxn");
    field.setAccessible(true);
    ((ClientCnxn) field.get(zk)).disconnect();
    kill();
  }
}
