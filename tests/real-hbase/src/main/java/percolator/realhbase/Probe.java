package percolator.realhbase;

import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.PrivilegedExceptionAction;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.net.ssl.HttpsURLConnection;
import javax.security.sasl.Sasl;

import org.apache.hadoop.hbase.thrift2.generated.TGet;
import org.apache.hadoop.hbase.thrift2.generated.THBaseService;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClients;
import org.apache.thrift.TConfiguration;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TCompactProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.transport.THttpClient;
import org.apache.thrift.transport.TSaslClientTransport;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.layered.TFramedTransport;
import org.ietf.jgss.GSSContext;
import org.ietf.jgss.GSSManager;
import org.ietf.jgss.GSSName;
import org.ietf.jgss.Oid;

/**
 * A Thrift2 client for one gateway mode, used to decide that a gateway is ready (a real request
 * succeeded through it) and to check once what a client of that mode sees.
 */
final class Probe {
  private static final Map<String, UserGroupInformation> LOGINS = new HashMap<>();

  final Mode mode;
  final Tls tls;
  final Kerberos kerberos;
  /** Host part of the SASL gateway's principal. */
  final String serviceHost;
  /** Quality of protection to ask for (SASL mode only). */
  final String qop;

  Probe(Mode mode, Tls tls, Kerberos kerberos, String serviceHost) {
    this(mode, tls, kerberos, serviceHost, null);
  }

  private Probe(Mode mode, Tls tls, Kerberos kerberos, String serviceHost, String qop) {
    this.mode = mode;
    this.tls = tls;
    this.kerberos = kerberos;
    this.serviceHost = serviceHost;
    this.qop = qop;
  }

  Probe withQop(String qop) {
    return new Probe(mode, tls, kerberos, serviceHost, qop);
  }

  String qop() {
    return qop;
  }

  /** The gateway's address as a client of this mode names it (HBASE_THRIFT). */
  String address(int port) {
    switch (mode) {
      case HTTP:
        return "http://127.0.0.1:" + port + "/";
      case HTTPS:
      case SPNEGO_HTTPS:
        return "https://localhost:" + port + "/";
      default:
        return "127.0.0.1:" + port;
    }
  }

  /** True once listNamespaces names `default` and a get on hbase:meta returns. */
  boolean ready(int port) throws Exception {
    return as(client(), () -> {
      try (Connection c = connect(port, Map.of())) {
        return check(c.client);
      }
    });
  }

  /** Checks, once the gateway is ready, what authenticated clients of this mode must see. */
  void afterReady(int port) throws Exception {
    if (mode == Mode.SASL) {
      // Any valid Kerberos identity may use the gateway; impersonation plays no part here.
      boolean ok = as("other", () -> {
        try (Connection c = connect(port, Map.of())) {
          return check(c.client);
        }
      });
      System.out.println("real-hbase: sasl " + qop + ": "
          + kerberos.clientPrincipal + " and " + kerberos.otherPrincipal + " served: " + ok);
    } else if (mode == Mode.SPNEGO_HTTPS) {
      int status = unauthenticatedPost(port);
      if (status != 401) {
        throw new IllegalStateException("a request without credentials got HTTP " + status);
      }
      as("client", () -> {
        try (Connection c = connect(port, Map.of("doAs", "alice"))) {
          return check(c.client);
        }
      });
      String refused;
      try {
        as("other", () -> {
          try (Connection c = connect(port, Map.of("doAs", "alice"))) {
            return check(c.client);
          }
        });
        throw new IllegalStateException(
            kerberos.otherPrincipal + " was allowed to act as another user");
      } catch (Exception e) {
        Throwable cause = e instanceof java.lang.reflect.UndeclaredThrowableException
            ? e.getCause() : e;
        refused = String.valueOf(cause);
      }
      System.out.println("real-hbase: spnego-https: no credentials -> HTTP 401; "
          + kerberos.clientPrincipal + " with doAs: alice -> served; "
          + kerberos.otherPrincipal + " with doAs: alice -> refused (" + refused + ")");
    }
  }

  private String client() {
    return mode.kerberos ? "client" : null;
  }

  interface Action<T> {
    T run() throws Exception;
  }

  /** Runs ACTION logged in as WHO ("client" or "other"), or as nobody when WHO is null. */
  private <T> T as(String who, Action<T> action) throws Exception {
    if (who == null) {
      return action.run();
    }
    UserGroupInformation ugi;
    synchronized (LOGINS) {
      ugi = LOGINS.get(who);
      if (ugi == null) {
        String principal = who.equals("client") ? kerberos.clientPrincipal : kerberos.otherPrincipal;
        Path keytab = who.equals("client") ? kerberos.clientKeytab : kerberos.otherKeytab;
        ugi = UserGroupInformation.loginUserFromKeytabAndReturnUGI(principal, keytab.toString());
        LOGINS.put(who, ugi);
      }
    }
    return ugi.doAs((PrivilegedExceptionAction<T>) action::run);
  }

  private static boolean check(THBaseService.Client client) throws Exception {
    List<String> namespaces = client.listNamespaces();
    if (!namespaces.contains("default")) {
      return false;
    }
    client.get(
        ByteBuffer.wrap("hbase:meta".getBytes(StandardCharsets.UTF_8)),
        new TGet(ByteBuffer.wrap("probe".getBytes(StandardCharsets.UTF_8))));
    return true;
  }

  /** A client connection; HEADERS go with every HTTP request. */
  private Connection connect(int port, Map<String, String> headers) throws Exception {
    switch (mode) {
      case PLAIN: {
        TSocket socket = socket(port);
        socket.open();
        return new Connection(socket, new TBinaryProtocol(socket), null);
      }
      case FRAMED_COMPACT: {
        TSocket socket = socket(port);
        socket.open();
        TFramedTransport framed = new TFramedTransport(socket);
        return new Connection(framed, new TCompactProtocol(framed), null);
      }
      case SASL: {
        TSocket socket = socket(port);
        Map<String, String> props = new HashMap<>();
        props.put(Sasl.QOP, qop);
        props.put(Sasl.SERVER_AUTH, "true");
        TSaslClientTransport sasl = new TSaslClientTransport(
            "GSSAPI", null, "hbase", serviceHost, props, null, socket);
        sasl.open();
        return new Connection(sasl, new TBinaryProtocol(sasl), null);
      }
      case HTTP: {
        THttpClient http = new THttpClient(address(port));
        http.setConnectTimeout(10_000);
        http.setReadTimeout(30_000);
        headers.forEach(http::setCustomHeader);
        return new Connection(http, new TBinaryProtocol(http), null);
      }
      case HTTPS:
      case SPNEGO_HTTPS: {
        CloseableHttpClient httpClient =
            HttpClients.custom().setSSLContext(tls.clientContext()).build();
        THttpClient http = mode == Mode.SPNEGO_HTTPS
            ? new SpnegoHttpClient(address(port), httpClient)
            : new THttpClient(address(port), httpClient);
        headers.forEach(http::setCustomHeader);
        return new Connection(http, new TBinaryProtocol(http), httpClient);
      }
      default:
        throw new AssertionError(mode);
    }
  }

  /**
   * A Negotiate token for HTTP/localhost from the Kerberos credentials of the Subject this runs
   * under. The gateway accepts each token once (the JDK's replay cache), so every request needs
   * a new one: this builds it by hand rather than through Apache HttpClient's SPNEGO support,
   * whose older releases (HBase 2.4's) ask for HTTPS/localhost on https URLs.
   */
  static String negotiateToken() throws Exception {
    GSSManager manager = GSSManager.getInstance();
    GSSName server = manager.createName("HTTP@localhost", GSSName.NT_HOSTBASED_SERVICE);
    GSSContext context = manager.createContext(
        server, new Oid("1.3.6.1.5.5.2"), null, GSSContext.DEFAULT_LIFETIME);
    try {
      context.requestMutualAuth(false);
      context.requestCredDeleg(false);
      byte[] token = context.initSecContext(new byte[0], 0, 0);
      return "Negotiate " + Base64.getEncoder().encodeToString(token);
    } finally {
      context.dispose();
    }
  }

  /** THttpClient that sends a fresh SPNEGO token with every request. */
  private static final class SpnegoHttpClient extends THttpClient {
    SpnegoHttpClient(String url, CloseableHttpClient client) throws Exception {
      super(url, client);
    }

    @Override
    public void flush() throws TTransportException {
      try {
        setCustomHeader("Authorization", negotiateToken());
      } catch (Exception e) {
        throw new TTransportException(e);
      }
      super.flush();
    }
  }

  /** The HTTP status of a Thrift POST that carries no Authorization header. */
  private int unauthenticatedPost(int port) throws Exception {
    HttpsURLConnection c = (HttpsURLConnection) new URL(address(port)).openConnection();
    c.setSSLSocketFactory(tls.clientContext().getSocketFactory());
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    c.setRequestProperty("Content-Type", "application/x-thrift");
    c.getOutputStream().write(new byte[] {(byte) 0x80, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    int status = c.getResponseCode();
    c.disconnect();
    return status;
  }

  private static TSocket socket(int port) throws Exception {
    return new TSocket(new TConfiguration(), "127.0.0.1", port, 10_000);
  }

  private static final class Connection implements AutoCloseable {
    final TTransport transport;
    final THBaseService.Client client;
    final CloseableHttpClient httpClient;

    Connection(TTransport transport, TProtocol protocol, CloseableHttpClient httpClient) {
      this.transport = transport;
      this.client = new THBaseService.Client(protocol);
      this.httpClient = httpClient;
    }

    @Override
    public void close() throws Exception {
      transport.close();
      if (httpClient != null) {
        httpClient.close();
      }
    }
  }
}
