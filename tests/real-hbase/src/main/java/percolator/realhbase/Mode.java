package percolator.realhbase;

/** How the Thrift2 gateway is exposed; the names are those of {@code scripts/real-hbase --mode}. */
enum Mode {
  /** HBase's defaults: threadpool server, unframed transport, binary protocol. */
  PLAIN("plain", false, false),
  /** Framed transport and compact protocol, still raw TCP. */
  FRAMED_COMPACT("framed-compact", false, false),
  /** Thrift (binary protocol) in HTTP POST bodies. */
  HTTP("http", false, false),
  /** HTTP over TLS, with a certificate from a CA generated at start. */
  HTTPS("https", true, false),
  /** Raw TCP with SASL/GSSAPI (Kerberos); one gateway per quality of protection. */
  SASL("sasl", false, true),
  /** HTTPS with SPNEGO (Kerberos) authentication and doAs impersonation. */
  SPNEGO_HTTPS("spnego-https", true, true);

  final String name;
  final boolean tls;
  final boolean kerberos;

  Mode(String name, boolean tls, boolean kerberos) {
    this.name = name;
    this.tls = tls;
    this.kerberos = kerberos;
  }

  static Mode parse(String name) {
    for (Mode m : values()) {
      if (m.name.equals(name)) {
        return m;
      }
    }
    throw new IllegalArgumentException("unknown mode " + name);
  }
}
