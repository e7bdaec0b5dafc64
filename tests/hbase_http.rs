//! The client against the gateway modes production clusters run, on the emulator, which
//! serves each of them: HTTP (binary and compact), HTTPS with the trust checks a user relies
//! on (the gateway's CA, hostname verification, client certificates), impersonation, and a
//! list of gateways (calls spread over them, a dead one left out, a scanner kept on its own).
//! Certificates are made by each test; none is stored in the repository.

mod common;

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::PathBuf;

use common::proxy::Proxy;
use hbase_emulator::{self as emulator, EmulatorConfig, EmulatorHandle};
use percolator::hbase::{
    CheckAndMutate, CompareOp, FamilyDescriptor, Get, Protocol, Put, Scan, TableDescriptor,
    TlsFailure, TlsOptions,
};
use percolator::{Error, HBaseClient, HBaseConfig, RetryClass};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

/// A certificate authority made for one test.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new() -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// A certificate for `names` signed by this CA: (certificate PEM, key PEM).
    fn issue(&self, names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &self.cert, &self.key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// The CA certificate in a file, as a user would give it.
    fn file(&self, dir: &tempfile::TempDir) -> PathBuf {
        write(dir, "ca.pem", &self.cert.pem())
    }
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn start(config: EmulatorConfig) -> EmulatorHandle {
    emulator::start(TcpListener::bind("127.0.0.1:0").unwrap(), config).unwrap()
}

/// An emulator in HTTP mode over TLS with a certificate for `names` signed by `ca`; clients
/// must show a certificate signed by `client_ca` when it is given.
fn https_gateway(ca: &Ca, names: &[&str], client_ca: Option<&Ca>) -> EmulatorHandle {
    let (cert, key) = ca.issue(names);
    let client_ca = client_ca.map(|ca| ca.cert.pem());
    let tls = emulator::tls_config_from_pem(
        cert.as_bytes(),
        key.as_bytes(),
        client_ca.as_deref().map(str::as_bytes),
    )
    .unwrap();
    start(EmulatorConfig {
        http: true,
        tls: Some(tls),
        ..EmulatorConfig::default()
    })
}

fn http_gateway(proxy_users: Option<&[&str]>) -> EmulatorHandle {
    start(EmulatorConfig {
        http: true,
        proxy_users: proxy_users.map(|users| users.iter().map(|u| u.to_string()).collect()),
        ..EmulatorConfig::default()
    })
}

fn with_ca(ca_file: PathBuf) -> TlsOptions {
    TlsOptions {
        ca_file: Some(ca_file),
        ..TlsOptions::default()
    }
}

fn create(client: &HBaseClient, name: &str) {
    let desc = TableDescriptor::new(name).family(FamilyDescriptor::new("f"));
    client.admin().create_table(&desc).expect("create table");
}

/// Puts, gets, a paged scan and a check-and-mutate through `client`: what a transaction
/// needs of a gateway.
fn exercise(client: &HBaseClient, table: &str) {
    create(client, table);
    for row in ["a", "b", "c"] {
        client
            .put(table, &Put::new(row).add("f", "q", row.repeat(3)))
            .unwrap();
    }
    let got = client.get(table, &Get::new("b")).unwrap();
    assert_eq!(got.value(b"f", b"q"), Some(&b"bbb"[..]));
    let rows: Vec<Vec<u8>> = client
        .scan(table, &Scan::new().caching(1))
        .unwrap()
        .map(|r| r.unwrap().row)
        .collect();
    assert_eq!(rows, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    let cam = CheckAndMutate::new("a", "f", "q", CompareOp::Equal, "aaa")
        .put(Put::new("a").add("f", "q", "new"));
    assert!(client.check_and_mutate(table, &cam).unwrap());
    let got = client.get(table, &Get::new("a")).unwrap();
    assert_eq!(got.value(b"f", b"q"), Some(&b"new"[..]));
}

#[test]
fn an_http_gateway_serves_every_call_in_binary_and_compact() {
    for protocol in [Protocol::Binary, Protocol::Compact] {
        let gateway = http_gateway(None);
        let url = format!("http://{}/", gateway.local_addr());
        let client = HBaseClient::connect(HBaseConfig::new(url).protocol(protocol)).unwrap();
        exercise(&client, "t");
    }
}

#[test]
fn an_https_gateway_is_trusted_through_its_ca_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let gateway = https_gateway(&ca, &["localhost", "127.0.0.1"], None);
    let url = format!("https://127.0.0.1:{}/", gateway.local_addr().port());

    let client =
        HBaseClient::connect(HBaseConfig::new(url.clone()).tls(with_ca(ca.file(&dir)))).unwrap();
    exercise(&client, "t");
    let by_name = format!("https://localhost:{}", gateway.local_addr().port());
    let client = HBaseClient::connect(HBaseConfig::new(by_name).tls(with_ca(ca.file(&dir))));
    assert!(client.is_ok(), "{:?}", client.err());

    let other = Ca::new();
    let other_file = write(&dir, "other.pem", &other.cert.pem());
    match HBaseClient::connect(HBaseConfig::new(url.clone()).tls(with_ca(other_file))) {
        Err(Error::Tls {
            addr,
            failure: TlsFailure::UntrustedCertificate { .. },
        }) => assert_eq!(addr, url),
        other => panic!("a gateway signed by another CA was not refused: {other:?}"),
    }
}

#[test]
fn a_certificate_for_another_host_is_refused_unless_hostname_checks_are_off() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let gateway = https_gateway(&ca, &["gateway.example.com"], None);
    let url = format!("https://127.0.0.1:{}/", gateway.local_addr().port());
    let err = HBaseClient::connect(HBaseConfig::new(url.clone()).tls(with_ca(ca.file(&dir))))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Tls { failure: TlsFailure::HostnameMismatch { host }, .. } if host == "127.0.0.1"),
        "{err:?}"
    );
    assert_eq!(err.retry_class(), RetryClass::Fatal);
    assert!(
        err.to_string().contains("not valid for `127.0.0.1`"),
        "{err}"
    );

    let lax = TlsOptions {
        verify_hostname: false,
        ..with_ca(ca.file(&dir))
    };
    let client = HBaseClient::connect(HBaseConfig::new(url).tls(lax)).unwrap();
    exercise(&client, "t");
}

#[test]
fn a_gateway_that_asks_for_a_client_certificate_gets_the_configured_one() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let clients_ca = Ca::new();
    let gateway = https_gateway(&ca, &["127.0.0.1"], Some(&clients_ca));
    let url = format!("https://127.0.0.1:{}/", gateway.local_addr().port());

    // TLS 1.3 finishes the client's side of the handshake before the gateway checks the
    // client: the refusal may come at connect or on the first call.
    let without = HBaseClient::connect(HBaseConfig::new(url.clone()).tls(with_ca(ca.file(&dir))))
        .and_then(|client| client.get("t", &Get::new("r")));
    assert!(
        matches!(without, Err(Error::Tls { .. } | Error::Transport { .. })),
        "{without:?}"
    );

    let (cert, key) = clients_ca.issue(&["percolator-client"]);
    let tls = TlsOptions {
        client_cert: Some((write(&dir, "c.pem", &cert), write(&dir, "c.key", &key))),
        ..with_ca(ca.file(&dir))
    };
    let client = HBaseClient::connect(HBaseConfig::new(url).tls(tls)).unwrap();
    exercise(&client, "t");
}

#[test]
fn unusable_tls_settings_are_named_before_any_connection() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = write(&dir, "ca.pem", "not a certificate");
    let missing = dir.path().join("missing.pem");
    for ca_file in [not_pem, missing] {
        let err = HBaseClient::connect(
            HBaseConfig::new("https://127.0.0.1:1").tls(with_ca(ca_file.clone())),
        )
        .unwrap_err();
        assert!(
            matches!(&err, Error::Tls { failure: TlsFailure::Settings { detail }, .. } if detail.contains(&*ca_file.to_string_lossy())),
            "{err:?}"
        );
    }
}

#[test]
fn the_wrong_mode_is_named_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let plain_http = http_gateway(None);
    let err = HBaseClient::connect(
        HBaseConfig::new(format!("https://{}", plain_http.local_addr()))
            .tls(with_ca(ca.file(&dir))),
    )
    .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Tls {
                failure: TlsFailure::NotTls { .. },
                ..
            }
        ),
        "{err:?}"
    );

    let raw = emulator::start_local().unwrap();
    let client = HBaseClient::connect(
        HBaseConfig::new(format!("http://{}", raw.local_addr()))
            .read_timeout(std::time::Duration::from_secs(5)),
    )
    .unwrap();
    // A raw gateway reads the request line as a message size and hangs up: the call fails
    // at once, naming the gateway, instead of waiting out the read timeout.
    let started = std::time::Instant::now();
    let err = client.get("t", &Get::new("r")).unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{err}"
    );
    assert!(
        err.to_string().contains(&raw.local_addr().to_string()),
        "{err}"
    );
}

#[test]
fn an_end_user_is_acted_as_only_where_the_gateway_grants_it() {
    let gateway = http_gateway(Some(&["alice"]));
    let url = format!("http://{}", gateway.local_addr());
    let as_alice = HBaseClient::connect(HBaseConfig::new(url.clone()).do_as("alice")).unwrap();
    exercise(&as_alice, "t");

    let as_mallory = HBaseClient::connect(HBaseConfig::new(url).do_as("mallory")).unwrap();
    let err = as_mallory
        .put("t", &Put::new("m").add("f", "q", "x"))
        .unwrap_err();
    // HBase's servlet lets the AuthorizationException escape: a 500 whose page names it.
    match &err {
        Error::HttpStatus {
            status: 500,
            detail,
            ..
        } if detail.contains("not allowed to impersonate mallory") => {}
        other => panic!("impersonating mallory was not refused: {other:?}"),
    }
    assert_eq!(err.retry_class(), RetryClass::Fatal);
    let row = as_alice.get("t", &Get::new("m")).unwrap();
    assert!(row.is_empty(), "the refused put was applied");
}

#[test]
fn calls_spread_over_several_gateways_and_a_dead_one_is_left_out() {
    let emulator = emulator::start_local().unwrap();
    let upstream = emulator.local_addr().to_string();
    let first = Proxy::start(&upstream);
    let second = Proxy::start(&upstream);
    let list = format!("127.0.0.1:1,{},{}", first.addr(), second.addr());
    let client = HBaseClient::connect(HBaseConfig::new(list)).expect("one gateway answers");
    create(&client, "t");
    for i in 0..40 {
        client
            .put("t", &Put::new(format!("r{i}")).add("f", "q", "v"))
            .unwrap();
    }
    assert!(
        first.accepted() > 0 && second.accepted() > 0,
        "calls went to one gateway only ({} and {})",
        first.accepted(),
        second.accepted()
    );

    drop(second);
    for i in 0..40 {
        let put = Put::new(format!("s{i}")).add("f", "q", "v");
        client
            .put("t", &put)
            .unwrap_or_else(|e| panic!("put {i} after a gateway died: {e}"));
    }
    let rows = client.scan("t", &Scan::new()).unwrap().count();
    assert_eq!(rows, 80);
}

#[test]
fn a_scanner_is_read_from_the_gateway_that_opened_it() {
    let a = emulator::start_local().unwrap();
    let b = emulator::start_local().unwrap();
    for (gateway, prefix) in [(&a, "a"), (&b, "b")] {
        let client =
            HBaseClient::connect(HBaseConfig::new(gateway.local_addr().to_string())).unwrap();
        create(&client, "t");
        for i in 0..5 {
            client
                .put("t", &Put::new(format!("{prefix}{i}")).add("f", "q", "v"))
                .unwrap();
        }
    }
    let both = HBaseClient::connect(HBaseConfig::new(format!(
        "{},{}",
        a.local_addr(),
        b.local_addr()
    )))
    .unwrap();
    let mut seen = HashSet::new();
    for _ in 0..4 {
        let rows: Vec<Vec<u8>> = both
            .scan("t", &Scan::new().caching(1))
            .unwrap()
            .map(|r| r.unwrap().row)
            .collect();
        assert_eq!(rows.len(), 5, "{rows:?}");
        let first = rows[0][0];
        assert!(
            rows.iter().all(|r| r[0] == first),
            "pages from two gateways: {rows:?}"
        );
        seen.insert(first);
    }
    assert_eq!(seen.len(), 2, "the scans all went to one gateway");
    let unknown = both.scanner_rows(12345, 1).unwrap_err();
    assert!(
        matches!(unknown, Error::IllegalArgument { .. }),
        "{unknown:?}"
    );
}

#[test]
fn mixed_schemes_and_bad_lists_are_refused() {
    for list in ["http://h:1,https://h:2", "h:1,,h:2", "https://u:p@h:1"] {
        let err = HBaseClient::connect(HBaseConfig::new(list)).unwrap_err();
        assert!(
            matches!(err, Error::IllegalArgument { .. }),
            "{list}: {err:?}"
        );
        assert!(!err.to_string().contains("u:p"), "{err}");
    }
}
