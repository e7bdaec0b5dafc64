package percolator.realhbase;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A throwaway certificate authority and a server certificate it signed, made with the JDK's
 * keytool at every start. The server certificate names DNS {@code localhost} and IP 127.0.0.1;
 * the gateway serves it from a PKCS#12 keystore; clients trust the CA's PEM file.
 */
final class Tls {
  /** Keystore and key password of the generated stores (they live under target/ only). */
  static final String PASSWORD = "real-hbase-store";

  final Path caPem;
  final Path serverKeystore;

  private Tls(Path caPem, Path serverKeystore) {
    this.caPem = caPem;
    this.serverKeystore = serverKeystore;
  }

  static Tls generate(Path dir) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Path caStore = dir.resolve("ca.p12");
    Path caPem = dir.resolve("ca.pem");
    Path serverStore = dir.resolve("server.p12");
    Path csr = dir.resolve("server.csr");
    Path serverPem = dir.resolve("server.pem");
    for (Path p : List.of(caStore, caPem, serverStore, csr, serverPem)) {
      Files.deleteIfExists(p);
    }
    keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048",
        "-dname", "CN=real-hbase test CA", "-validity", "30",
        "-ext", "BasicConstraints:critical=ca:true",
        "-ext", "KeyUsage:critical=keyCertSign,cRLSign",
        "-storetype", "PKCS12", "-keystore", caStore.toString(),
        "-storepass", PASSWORD, "-keypass", PASSWORD);
    keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", caStore.toString(),
        "-storepass", PASSWORD, "-file", caPem.toString());
    keytool("-genkeypair", "-alias", "server", "-keyalg", "RSA", "-keysize", "2048",
        "-dname", "CN=localhost", "-validity", "30",
        "-storetype", "PKCS12", "-keystore", serverStore.toString(),
        "-storepass", PASSWORD, "-keypass", PASSWORD);
    keytool("-certreq", "-alias", "server", "-keystore", serverStore.toString(),
        "-storepass", PASSWORD, "-file", csr.toString());
    keytool("-gencert", "-rfc", "-alias", "ca", "-keystore", caStore.toString(),
        "-storepass", PASSWORD, "-infile", csr.toString(), "-outfile", serverPem.toString(),
        "-validity", "30",
        "-ext", "SubjectAlternativeName=dns:localhost,ip:127.0.0.1",
        "-ext", "KeyUsage:critical=digitalSignature,keyEncipherment",
        "-ext", "ExtendedKeyUsage=serverAuth",
        "-ext", "BasicConstraints:critical=ca:false");
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", caPem.toString(),
        "-keystore", serverStore.toString(), "-storepass", PASSWORD);
    keytool("-importcert", "-alias", "server", "-file", serverPem.toString(),
        "-keystore", serverStore.toString(), "-storepass", PASSWORD);
    return new Tls(caPem, serverStore);
  }

  /** A client-side context that trusts only the generated CA. */
  SSLContext clientContext() throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    try (InputStream in = Files.newInputStream(caPem)) {
      X509Certificate ca =
          (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
      trust.setCertificateEntry("ca", ca);
    }
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, tmf.getTrustManagers(), null);
    return context;
  }

  private static void keytool(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    byte[] output = process.getInputStream().readAllBytes();
    if (process.waitFor() != 0) {
      throw new IOException("keytool " + args[0] + " failed: "
          + new String(output, StandardCharsets.UTF_8));
    }
  }
}
