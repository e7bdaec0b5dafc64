package percolator.realhbase;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.kerby.KOptions;
import org.apache.kerby.kerberos.kerb.KrbException;
import org.apache.kerby.kerberos.kerb.client.KrbClient;
import org.apache.kerby.kerberos.kerb.client.KrbOption;
import org.apache.kerby.kerberos.kerb.server.KdcConfig;
import org.apache.kerby.kerberos.kerb.server.KdcConfigKey;
import org.apache.kerby.kerberos.kerb.server.SimpleKdcServer;
import org.apache.kerby.kerberos.kerb.identity.backend.BackendConfig;
import org.apache.kerby.kerberos.kerb.type.ticket.TgtTicket;

/**
 * A KDC in this JVM (Apache Kerby's SimpleKdcServer, TCP only, on a free loopback port) with the
 * principals the secured modes need, their keytabs, a krb5.conf that both the JDK and MIT krb5
 * read, and ticket caches for the client principal: one valid, one that expires seconds after
 * it was issued.
 */
final class Kerberos {
  static final String REALM = "EXAMPLE.COM";
  /** Both the JDK and MIT krb5 support these; the KDC makes keys of these types only. */
  static final String ENCTYPES = "aes128-cts-hmac-sha1-96 aes256-cts-hmac-sha1-96";
  /** Lifetime of the ticket in the expired cache, in seconds. */
  static final int EXPIRED_LIFETIME_SECS = 5;

  final SimpleKdcServer kdc;
  final int port;
  final Path dir;
  final Path krb5Conf;
  /** The cluster's own identity (master, region server and the gateway's HBase client). */
  final String hbasePrincipal;
  final Path hbaseKeytab;
  /** The SPNEGO identity of the HTTP gateway. */
  final String httpPrincipal;
  final Path httpKeytab;
  /** A client allowed to impersonate (hadoop.proxyuser.client.*). */
  final String clientPrincipal;
  final Path clientKeytab;
  /** A client without the proxy-user grant. */
  final String otherPrincipal;
  final Path otherKeytab;
  Path ccache;
  Path expiredCcache;
  Instant expiredAt;

  private Kerberos(SimpleKdcServer kdc, int port, Path dir, String serviceHost) {
    this.kdc = kdc;
    this.port = port;
    this.dir = dir;
    this.krb5Conf = dir.resolve("krb5.conf");
    this.hbasePrincipal = "hbase/" + serviceHost + "@" + REALM;
    this.hbaseKeytab = dir.resolve("hbase.keytab");
    this.httpPrincipal = "HTTP/localhost@" + REALM;
    this.httpKeytab = dir.resolve("http.keytab");
    this.clientPrincipal = "client@" + REALM;
    this.clientKeytab = dir.resolve("client.keytab");
    this.otherPrincipal = "other@" + REALM;
    this.otherKeytab = dir.resolve("other.keytab");
  }

  /**
   * Starts the KDC and writes everything under DIR. SERVICE_HOST is the host part of the
   * cluster's and the SASL gateway's principal: the name the gateway's SASL server uses for
   * itself (this machine's host name as Hadoop's DNS class reports it).
   */
  static Kerberos start(Path dir, int port, String serviceHost) throws Exception {
    Files.createDirectories(dir);
    KdcConfig config = new KdcConfig();
    config.setString(KdcConfigKey.ENCRYPTION_TYPES, ENCTYPES);
    SimpleKdcServer kdc = new SimpleKdcServer(config, new BackendConfig());
    kdc.setWorkDir(dir.resolve("kdc").toFile());
    Files.createDirectories(dir.resolve("kdc"));
    kdc.setKdcRealm(REALM);
    kdc.setKdcHost("127.0.0.1");
    kdc.setAllowUdp(false);
    kdc.setKdcTcpPort(port);
    kdc.init();
    kdc.start();

    Kerberos k = new Kerberos(kdc, port, dir, serviceHost);
    k.writeKrb5Conf(serviceHost);
    // The JDK reads krb5.conf once, on first use: this must happen before anything Kerberos.
    System.setProperty("java.security.krb5.conf", k.krb5Conf.toString());
    k.export(k.hbasePrincipal, k.hbaseKeytab);
    k.export(k.httpPrincipal, k.httpKeytab);
    k.export(k.clientPrincipal, k.clientKeytab);
    k.export(k.otherPrincipal, k.otherKeytab);
    return k;
  }

  private void export(String principal, Path keytab) throws KrbException, IOException {
    Files.deleteIfExists(keytab);
    // One principal per keytab (exporting "all principals" would hand clients the services' keys).
    kdc.createPrincipal(principal);
    kdc.exportPrincipal(principal, keytab.toFile());
  }

  private void writeKrb5Conf(String serviceHost) throws IOException {
    String conf = String.join("\n",
        "[libdefaults]",
        "  default_realm = " + REALM,
        "  dns_lookup_kdc = false",
        "  dns_lookup_realm = false",
        "  dns_canonicalize_hostname = false",
        "  rdns = false",
        "  udp_preference_limit = 1",
        "  forwardable = true",
        "  ticket_lifetime = 24h",
        "  default_tkt_enctypes = " + ENCTYPES,
        "  default_tgs_enctypes = " + ENCTYPES,
        "  permitted_enctypes = " + ENCTYPES,
        "",
        "[realms]",
        "  " + REALM + " = {",
        "    kdc = 127.0.0.1:" + port,
        "  }",
        "",
        "[domain_realm]",
        "  localhost = " + REALM,
        "  127.0.0.1 = " + REALM,
        "  " + serviceHost + " = " + REALM,
        "");
    Files.write(krb5Conf, conf.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Writes the client's ticket caches (MIT's file format, as kinit writes them): one valid for
   * the KDC's default lifetime, one whose ticket ends EXPIRED_LIFETIME_SECS after issue.
   */
  void writeTicketCaches() throws KrbException, IOException {
    KrbClient client = kdc.getKrbClient();
    ccache = dir.resolve("client.ccache");
    Files.deleteIfExists(ccache);
    TgtTicket tgt = client.requestTgt(clientPrincipal, clientKeytab.toFile());
    client.storeTicket(tgt, ccache.toFile());

    expiredCcache = dir.resolve("client-expired.ccache");
    Files.deleteIfExists(expiredCcache);
    KOptions options = new KOptions();
    options.add(KrbOption.CLIENT_PRINCIPAL, clientPrincipal);
    options.add(KrbOption.USE_KEYTAB, true);
    options.add(KrbOption.KEYTAB_FILE, clientKeytab.toFile());
    options.add(KrbOption.LIFE_TIME, EXPIRED_LIFETIME_SECS);
    TgtTicket shortLived = client.requestTgt(options);
    client.storeTicket(shortLived, expiredCcache.toFile());
    expiredAt = Instant.ofEpochMilli(
        shortLived.getEncKdcRepPart().getEndTime().getTime());
  }

  /** The NAME=VALUE lines a client needs, in a stable order. */
  Map<String, String> env(String servicePrincipal) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("KRB5_CONFIG", krb5Conf.toString());
    env.put("HBASE_KRB_REALM", REALM);
    env.put("HBASE_KRB_CLIENT_PRINCIPAL", clientPrincipal);
    env.put("HBASE_KRB_CLIENT_KEYTAB", clientKeytab.toString());
    env.put("HBASE_KRB_OTHER_PRINCIPAL", otherPrincipal);
    env.put("HBASE_KRB_OTHER_KEYTAB", otherKeytab.toString());
    env.put("HBASE_KRB_SERVICE_PRINCIPAL", servicePrincipal);
    if (ccache != null) {
      env.put("HBASE_KRB_CCACHE", ccache.toString());
    }
    if (expiredCcache != null) {
      env.put("HBASE_KRB_EXPIRED_CCACHE", expiredCcache.toString());
    }
    return env;
  }

  void stop() {
    try {
      kdc.stop();
    } catch (KrbException e) {
      e.printStackTrace();
    }
  }
}
