package percolator.realhbase;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hbase.util.Strings;
import org.apache.hadoop.hbase.util.VersionInfo;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.net.DNS;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * A standalone HBase the way {@code hbase master start} runs it when the cluster is not
 * distributed (ZooKeeper, one master and one region server in this JVM, data on the local
 * filesystem), plus the Thrift2 gateway in one of several modes (see {@link Mode}). With
 * {@code --region-servers N} it runs N region servers, and a {@link Nemesis} waits for its
 * control file to move, split, merge and crash them.
 *
 * <p>Arguments: {@code --mode MODE --data DIR --work DIR --ready FILE [--port N] [--bind ADDR]}
 * (the gateways' port and address; 127.0.0.1 by default, which every client here uses). Once a real
 * request through every gateway succeeded, the NAME=VALUE lines a client needs are written to
 * READY_FILE (atomically), which is how {@code scripts/real-hbase} knows it may return.
 * Everything runs until the JVM is told to stop (SIGTERM); a shutdown hook stops the gateways,
 * then HBase, then ZooKeeper, then the KDC.
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
    Map<String, String> opts = parseArgs(args);
    Mode mode = Mode.parse(opts.getOrDefault("mode", "plain"));
    Path data = Paths.get(required(opts, "data")).toAbsolutePath();
    Path work = Paths.get(required(opts, "work")).toAbsolutePath();
    Path ready = Paths.get(required(opts, "ready")).toAbsolutePath();
    int fixedPort = Integer.parseInt(opts.getOrDefault("port", "0"));
    String bind = opts.getOrDefault("bind", "127.0.0.1");
    int regionServers = Integer.parseInt(opts.getOrDefault("region-servers", "1"));
    if (regionServers < 1) {
      usage("--region-servers must be at least 1");
    }
    String gatewayClient = opts.getOrDefault("gateway-client", "defaults");
    if (!gatewayClient.equals("defaults") && !gatewayClient.equals("fast")) {
      usage("--gateway-client is defaults or fast, not " + gatewayClient);
    }
    Files.createDirectories(data);
    Files.deleteIfExists(ready);
    System.out.println("real-hbase: HBase " + VersionInfo.getVersion() + ", mode " + mode.name
        + ", " + regionServers + " region server(s), gateway client " + gatewayClient);

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
    if (regionServers > 1) {
      cluster(conf, regionServers);
    }

    Kerberos kerberos = null;
    String serviceHost = null;
    if (mode.kerberos) {
      // The SASL gateway names itself after this host as Hadoop's DNS class reports it
      // (hbase.thrift.dns.interface / .nameserver, both "default"): its principal must match.
      serviceHost = Strings.domainNamePointerToHostName(DNS.getDefaultHost("default", "default"));
      kerberos = Kerberos.start(work.resolve("kerberos"), freePort(), serviceHost);
      kerberos.writeTicketCaches();
      secureCluster(conf, kerberos);
      // ZooKeeper stays unauthenticated (no JAAS configuration): only HBase's RPC and the
      // gateway are secured.
      System.setProperty("zookeeper.sasl.client", "false");
      UserGroupInformation.setConfiguration(conf);
      UserGroupInformation.loginUserFromKeytab(
          kerberos.hbasePrincipal, kerberos.hbaseKeytab.toString());
    }
    Tls tls = mode.tls ? Tls.generate(work.resolve("tls")) : null;

    MiniZooKeeperCluster zookeeper = new MiniZooKeeperCluster(conf);
    zookeeper.setDefaultClientPort(freePort());
    int zkPort = zookeeper.startup(data.resolve("zookeeper").toFile());
    conf.setInt("hbase.zookeeper.property.clientPort", zkPort);

    LocalHBaseCluster cluster =
        new LocalHBaseCluster(conf, 1, regionServers, HMaster.class,
            CrashableRegionServer.class);
    cluster.startup();
    Nemesis.start(cluster, conf, work);

    Probe probe = new Probe(mode, tls, kerberos, serviceHost);
    Map<String, String> env = new LinkedHashMap<>();
    List<Gateway> gateways = new ArrayList<>();
    if (mode == Mode.SASL) {
      // One quality of protection per gateway; all three share the cluster.
      Map<String, String> byQop = new LinkedHashMap<>();
      for (String qop : List.of("auth", "auth-int", "auth-conf")) {
        Configuration gatewayConf = new Configuration(conf);
        configureGateway(gatewayConf, mode, bind, tls, kerberos, gatewayClient);
        gatewayConf.set("hbase.thrift.security.qop", qop);
        Gateway g = startGateway(gatewayConf, fixedPort > 0 && qop.equals("auth-conf")
            ? fixedPort : 0, probe.withQop(qop));
        gateways.add(g);
        byQop.put(qop, "127.0.0.1:" + g.port);
      }
      env.put("HBASE_THRIFT", byQop.get("auth-conf"));
      env.put("HBASE_THRIFT_SASL_AUTH", byQop.get("auth"));
      env.put("HBASE_THRIFT_SASL_AUTH_INT", byQop.get("auth-int"));
      env.put("HBASE_THRIFT_SASL_AUTH_CONF", byQop.get("auth-conf"));
    } else {
      Configuration gatewayConf = new Configuration(conf);
      configureGateway(gatewayConf, mode, bind, tls, kerberos, gatewayClient);
      Gateway g = startGateway(gatewayConf, fixedPort, probe);
      gateways.add(g);
      env.put("HBASE_THRIFT", probe.address(g.port));
      if (mode == Mode.FRAMED_COMPACT) {
        env.put("HBASE_THRIFT_TRANSPORT", "framed");
        env.put("HBASE_THRIFT_PROTOCOL", "compact");
      }
    }
    if (tls != null) {
      env.put("HBASE_CA_FILE", tls.caPem.toString());
    }
    if (regionServers > 1) {
      env.put("REAL_HBASE_REGION_SERVERS", Integer.toString(regionServers));
    }
    if (!gatewayClient.equals("defaults")) {
      env.put("REAL_HBASE_GATEWAY_CLIENT", gatewayClient);
    }
    if (kerberos != null) {
      env.putAll(kerberos.env(
          mode == Mode.SASL ? kerberos.hbasePrincipal : kerberos.httpPrincipal));
    }
    // What a client of this mode must also see (or be refused), checked once at start.
    for (Gateway g : gateways) {
      probe.withQop(g.qop).afterReady(g.port);
    }

    Kerberos kdc = kerberos;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      for (Gateway g : gateways) {
        g.server.stop();
      }
      cluster.shutdown();
      cluster.join();
      try {
        zookeeper.shutdown();
      } catch (IOException e) {
        e.printStackTrace();
      }
      if (kdc != null) {
        kdc.stop();
      }
    }, "real-hbase-shutdown"));

    StringBuilder lines = new StringBuilder();
    env.forEach((k, v) -> lines.append(k).append('=').append(v).append('\n'));
    if (kerberos != null && kerberos.expiredAt != null) {
      System.out.println("real-hbase: the ticket in HBASE_KRB_EXPIRED_CCACHE ended at "
          + kerberos.expiredAt);
    }
    Path partial = ready.resolveSibling(ready.getFileName() + ".tmp");
    Files.write(partial, lines.toString().getBytes(StandardCharsets.UTF_8));
    Files.move(partial, ready, StandardCopyOption.ATOMIC_MOVE);
    System.out.print("real-hbase: ready\n" + lines);
    System.out.flush();
    cluster.join();
  }

  /** The cluster's side of Kerberos: HBase RPC authenticated, the gateway allowed to proxy. */
  private static void secureCluster(Configuration conf, Kerberos k) {
    conf.set("hadoop.security.authentication", "kerberos");
    conf.set("hbase.security.authentication", "kerberos");
    conf.set("hbase.master.kerberos.principal", k.hbasePrincipal);
    conf.set("hbase.master.keytab.file", k.hbaseKeytab.toString());
    conf.set("hbase.regionserver.kerberos.principal", k.hbasePrincipal);
    conf.set("hbase.regionserver.keytab.file", k.hbaseKeytab.toString());
    // The gateway (short name "hbase") runs every call as the authenticated end user: the
    // cluster must let it impersonate anyone.
    conf.set("hadoop.proxyuser.hbase.hosts", "*");
    conf.set("hadoop.proxyuser.hbase.groups", "*");
    // The HTTP gateway's doAs: "client" may act for anyone, "other" may not.
    String client = k.clientPrincipal.substring(0, k.clientPrincipal.indexOf('@'));
    conf.set("hadoop.proxyuser." + client + ".hosts", "*");
    conf.set("hadoop.proxyuser." + client + ".groups", "*");
  }

  /**
   * Settings for a cluster of several region servers that a crash test can live with: a crashed
   * server's regions must come back within seconds, not the minute and a half of HBase's
   * defaults (docs/real-hbase.md says which and why).
   */
  private static void cluster(Configuration conf, int regionServers) {
    // The master learns of a server that died without closing its session only when the
    // session expires: 90 s by default.
    conf.setInt("zookeeper.session.timeout", 10_000);
    // Assign nothing until every server is up, so the tables spread over all of them.
    conf.setInt("hbase.master.wait.on.regionservers.mintostart", regionServers);
    // User regions on region servers only, as in a real cluster.
    conf.setBoolean("hbase.balancer.tablesOnMaster", false);
    // Each region server registers its metrics under the same names; in one JVM they would
    // clash (HBase's own mini cluster does the same).
    DefaultMetricsSystem.setMiniClusterMode(true);
  }

  /**
   * The gateway's own settings for MODE (what hbase-site.xml would hold for it). CLIENT "fast"
   * is a gateway whose HBase client gives up quickly, as latency-minded operators set it.
   */
  private static void configureGateway(
      Configuration conf, Mode mode, String bind, Tls tls, Kerberos k, String client) {
    conf.set("hbase.regionserver.thrift.ipaddress", bind);
    if (client.equals("fast")) {
      conf.setInt("hbase.client.operation.timeout", 3000);
      conf.setInt("hbase.client.retries.number", 2);
    }
    switch (mode) {
      case PLAIN:
        break;
      case FRAMED_COMPACT:
        conf.setBoolean("hbase.regionserver.thrift.framed", true);
        conf.setBoolean("hbase.regionserver.thrift.compact", true);
        break;
      case HTTP:
        conf.setBoolean("hbase.regionserver.thrift.http", true);
        break;
      case HTTPS:
        conf.setBoolean("hbase.regionserver.thrift.http", true);
        tls(conf, tls);
        break;
      case SASL:
        conf.set("hbase.thrift.kerberos.principal", k.hbasePrincipal);
        conf.set("hbase.thrift.keytab.file", k.hbaseKeytab.toString());
        break;
      case SPNEGO_HTTPS:
        conf.setBoolean("hbase.regionserver.thrift.http", true);
        tls(conf, tls);
        conf.set("hbase.thrift.kerberos.principal", k.hbasePrincipal);
        conf.set("hbase.thrift.keytab.file", k.hbaseKeytab.toString());
        conf.set("hbase.thrift.spnego.principal", k.httpPrincipal);
        conf.set("hbase.thrift.spnego.keytab.file", k.httpKeytab.toString());
        conf.setBoolean("hbase.thrift.support.proxyuser", true);
        break;
      default:
        throw new AssertionError(mode);
    }
  }

  private static void tls(Configuration conf, Tls tls) {
    conf.setBoolean("hbase.thrift.ssl.enabled", true);
    conf.set("hbase.thrift.ssl.keystore.store", tls.serverKeystore.toString());
    conf.set("hbase.thrift.ssl.keystore.password", Tls.PASSWORD);
    conf.set("hbase.thrift.ssl.keystore.keypassword", Tls.PASSWORD);
    conf.set("hbase.thrift.ssl.keystore.type", "pkcs12");
  }

  /**
   * Starts one gateway. The port is picked only now, after HBase has taken its own ephemeral
   * ports, and picked again if something took it between the probe and the gateway's bind.
   */
  private static Gateway startGateway(Configuration conf, int fixedPort, Probe probe)
      throws Exception {
    for (int attempt = 1; ; attempt++) {
      int port = fixedPort > 0 ? fixedPort : freePort();
      Gateway candidate = new Gateway(conf, port, probe.qop());
      if (candidate.awaitReady(probe)) {
        return candidate;
      } else if (fixedPort > 0 || attempt >= 5) {
        throw new IllegalStateException("the Thrift2 gateway did not start", candidate.failure);
      } else {
        candidate.server.stop();
        System.err.println("real-hbase: gateway on port " + port + " failed ("
            + candidate.failure + "), trying another port");
      }
    }
  }

  private static Map<String, String> parseArgs(String[] args) {
    Map<String, String> opts = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        usage("bad argument: " + args[i]);
      }
      opts.put(args[i].substring(2), args[++i]);
    }
    return opts;
  }

  private static String required(Map<String, String> opts, String name) {
    String value = opts.get(name);
    if (value == null) {
      usage("missing --" + name);
    }
    return value;
  }

  private static void usage(String why) {
    System.err.println("RealHBase: " + why);
    System.err.println("usage: RealHBase --mode MODE --data DIR --work DIR --ready FILE [--port N] [--bind ADDR] [--region-servers N] [--gateway-client defaults|fast]");
    System.exit(2);
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
