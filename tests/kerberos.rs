//! Kerberos against a real KDC: credentials, SPNEGO, and the SASL/GSSAPI handshake at each qop
//! with messages sealed both ways, against an in-process GSSAPI acceptor that stands in for
//! the gateway (the same exchange as HBase's ThriftServer), and against real SASL gateways.
//!
//! Runs with `--features kerberos` when these are set (as `scripts/real-hbase start --mode
//! sasl` prints them), and skips with the reason otherwise:
//! - `KRB5_CONFIG`: a krb5.conf naming the KDC;
//! - `HBASE_KRB_CLIENT_PRINCIPAL`, `HBASE_KRB_CLIENT_KEYTAB`: the client;
//! - `HBASE_KRB_SERVICE_PRINCIPAL`: the gateway's principal, "hbase/<host>@REALM";
//! - for the in-process acceptor: `HBASE_KRB_SERVICE_KEYTAB`, a keytab with the service's key
//!   (and optionally `HBASE_KRB_HTTP_PRINCIPAL`, "HTTP/<host>@REALM" in the same keytab, for
//!   SPNEGO by host name);
//! - for the expired-ticket test: `HBASE_KRB_EXPIRED_CCACHE` (a cache whose ticket ended), or
//!   MIT's `kinit` on the PATH;
//! - for the real gateways: `HBASE_THRIFT_SASL_AUTH`, `HBASE_THRIFT_SASL_AUTH_INT`,
//!   `HBASE_THRIFT_SASL_AUTH_CONF` (host:port, one gateway per qop).

#![cfg(feature = "kerberos")]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use percolator_thrift::hbase::{THBaseServiceSyncClient, TTHBaseServiceSyncClient};
use percolator_thrift::thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};

use percolator::hbase::kerberos::testkit::{self, Acceptor};
use percolator::hbase::{Kerberos, KerberosError, Qop};

struct Env {
    client: String,
    client_keytab: PathBuf,
    service: String,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Env {
    /// The KDC's settings, or None (with the reason printed) when they are not set.
    fn get(test: &str) -> Option<Env> {
        let missing: Vec<&str> = [
            "KRB5_CONFIG",
            "HBASE_KRB_CLIENT_PRINCIPAL",
            "HBASE_KRB_CLIENT_KEYTAB",
            "HBASE_KRB_SERVICE_PRINCIPAL",
        ]
        .into_iter()
        .filter(|name| var(name).is_none())
        .collect();
        if !missing.is_empty() {
            eprintln!("skipping {test}: no KDC ({} not set)", missing.join(", "));
            return None;
        }
        Some(Env {
            client: var("HBASE_KRB_CLIENT_PRINCIPAL")?,
            client_keytab: var("HBASE_KRB_CLIENT_KEYTAB")?.into(),
            service: var("HBASE_KRB_SERVICE_PRINCIPAL")?,
        })
    }

    /// The KDC's settings and an acceptor with the service's key, or None (printed).
    fn with_acceptor(test: &str) -> Option<(Env, Acceptor)> {
        let env = Env::get(test)?;
        let Some(keytab) = var("HBASE_KRB_SERVICE_KEYTAB") else {
            eprintln!("skipping {test}: HBASE_KRB_SERVICE_KEYTAB not set (the in-process acceptor needs the service's key)");
            return None;
        };
        let acceptor = Acceptor::new(keytab.as_ref()).expect("the service keytab");
        Some((env, acceptor))
    }

    fn client(&self) -> Kerberos {
        Kerberos {
            principal: Some(self.client.clone()),
            keytab: Some(self.client_keytab.clone()),
            ..Default::default()
        }
    }

    fn realm(&self) -> &str {
        self.client.rsplit_once('@').map_or("", |(_, realm)| realm)
    }

    /// The host in "service/host@REALM".
    fn host_of(principal: &str) -> String {
        let name = principal.split('@').next().unwrap_or_default();
        name.split_once('/')
            .map_or(name, |(_, host)| host)
            .to_owned()
    }
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn keytab_credentials_are_acquired_at_once() {
    let Some(env) = Env::get("keytab_credentials_are_acquired_at_once") else {
        return;
    };
    let (principal, expires) = testkit::credentials(&env.client()).unwrap();
    assert_eq!(principal, env.client);
    assert_eq!(expires, None, "a keytab's tickets are renewed");
    // No principal: the keytab's first entry.
    let config = Kerberos {
        principal: None,
        ..env.client()
    };
    assert_eq!(testkit::credentials(&config).unwrap().0, env.client);
}

#[test]
fn a_principal_missing_from_the_keytab_is_a_typed_error() {
    let Some(env) = Env::get("a_principal_missing_from_the_keytab_is_a_typed_error") else {
        return;
    };
    let config = Kerberos {
        principal: Some(format!("nobody@{}", env.realm())),
        ..env.client()
    };
    match testkit::credentials(&config) {
        Err(e @ KerberosError::PrincipalNotInKeytab { .. }) => {
            let text = e.to_string();
            assert!(text.contains("nobody@"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreadable_keytab_is_a_typed_error() {
    let Some(env) = Env::get("an_unreadable_keytab_is_a_typed_error") else {
        return;
    };
    let config = Kerberos {
        keytab: Some("/nonexistent/k.keytab".into()),
        ..env.client()
    };
    assert!(matches!(
        testkit::credentials(&config),
        Err(KerberosError::KeytabUnreadable { .. })
    ));
}

#[test]
fn a_missing_ticket_cache_is_a_typed_error() {
    let Some(_env) = Env::get("a_missing_ticket_cache_is_a_typed_error") else {
        return;
    };
    let dir = temp_dir();
    let ccache = format!("FILE:{}/none", dir.path().display());
    let config = Kerberos {
        ccache: Some(ccache.clone()),
        ..Default::default()
    };
    match testkit::credentials(&config) {
        Err(e @ KerberosError::NoTicket { .. }) => assert!(e.to_string().contains(&ccache), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_ticket_cache_filled_from_the_keytab_is_used_without_it() {
    let Some(env) = Env::get("a_ticket_cache_filled_from_the_keytab_is_used_without_it") else {
        return;
    };
    let dir = temp_dir();
    let ccache = format!("FILE:{}/cc", dir.path().display());
    // With both, the tickets obtained from the keytab are stored in the cache...
    let with_keytab = Kerberos {
        ccache: Some(ccache.clone()),
        ..env.client()
    };
    testkit::credentials(&with_keytab).unwrap();
    // ... where a client with only the cache finds them.
    let config = Kerberos {
        ccache: Some(ccache),
        ..Default::default()
    };
    let (principal, expires) = testkit::credentials(&config).unwrap();
    assert_eq!(principal, env.client);
    let left = expires
        .expect("a cache's ticket expires")
        .duration_since(std::time::SystemTime::now());
    assert!(left.unwrap() > Duration::from_secs(60));
}

#[test]
fn an_expired_ticket_is_a_typed_error_with_its_time() {
    let Some(env) = Env::get("an_expired_ticket_is_a_typed_error_with_its_time") else {
        return;
    };
    let dir = temp_dir();
    let ccache = match var("HBASE_KRB_EXPIRED_CCACHE") {
        Some(path) => Some(format!("FILE:{path}")),
        None => kinit_short_lived(&env, &dir.path().join("cc")),
    };
    let Some(ccache) = ccache else { return };
    let config = Kerberos {
        ccache: Some(ccache.clone()),
        ..Default::default()
    };
    match testkit::credentials(&config) {
        Err(
            e @ KerberosError::TicketExpired {
                expired_at: Some(_),
                ..
            },
        ) => {
            let text = e.to_string();
            assert!(
                text.contains(" expired at ") && text.contains(&ccache),
                "{text}"
            );
            eprintln!("{text}");
        }
        other => panic!("{other:?}"),
    }
}

/// A cache whose ticket has just expired, made by kinit; None (printed) without kinit.
fn kinit_short_lived(env: &Env, path: &std::path::Path) -> Option<String> {
    let ccache = format!("FILE:{}", path.display());
    let kinit = std::process::Command::new("kinit")
        .args(["-l", "5s", "-k", "-t"])
        .arg(&env.client_keytab)
        .args(["-c", &ccache, &env.client])
        .status();
    match kinit {
        Ok(status) if status.success() => {}
        other => {
            eprintln!("skipping an_expired_ticket_is_a_typed_error_with_its_time: no HBASE_KRB_EXPIRED_CCACHE, and kinit: {other:?}");
            return None;
        }
    }
    std::thread::sleep(Duration::from_secs(7));
    Some(ccache)
}

#[test]
fn the_harness_ticket_cache_is_used() {
    let Some(env) = Env::get("the_harness_ticket_cache_is_used") else {
        return;
    };
    let Some(path) = var("HBASE_KRB_CCACHE") else {
        eprintln!("skipping the_harness_ticket_cache_is_used: HBASE_KRB_CCACHE not set");
        return;
    };
    let config = Kerberos {
        ccache: Some(format!("FILE:{path}")),
        ..Default::default()
    };
    let (principal, expires) = testkit::credentials(&config).unwrap();
    assert_eq!(principal, env.client);
    assert!(expires.is_some());
}

#[test]
fn a_spnego_header_is_accepted() {
    let Some((env, acceptor)) = Env::with_acceptor("a_spnego_header_is_accepted") else {
        return;
    };
    let config = Kerberos {
        service_principal: Some(env.service.clone()),
        ..env.client()
    };
    let (header, client) = testkit::spnego(&config, "ignored.example", &acceptor).unwrap();
    assert!(header.starts_with("Negotiate YI"), "an SPNEGO NegTokenInit");
    assert_eq!(client, env.client);
    if let Some(http) = var("HBASE_KRB_HTTP_PRINCIPAL") {
        let (_, client) = testkit::spnego(&env.client(), &Env::host_of(&http), &acceptor).unwrap();
        assert_eq!(client, env.client);
    }
    let cost = testkit::spnego_cost(&config, "ignored.example", 200).unwrap();
    eprintln!("one SPNEGO header (keytab, service ticket cached in memory): {cost:?}");
    if let Some(path) = var("HBASE_KRB_CCACHE") {
        let config = Kerberos {
            ccache: Some(format!("FILE:{path}")),
            service_principal: Some(env.service.clone()),
            ..Default::default()
        };
        let cost = testkit::spnego_cost(&config, "ignored.example", 200).unwrap();
        eprintln!("one SPNEGO header (FILE ticket cache): {cost:?}");
    }
}

#[test]
fn spnego_for_an_unknown_service_is_a_typed_error() {
    let Some((env, acceptor)) =
        Env::with_acceptor("spnego_for_an_unknown_service_is_a_typed_error")
    else {
        return;
    };
    let config = Kerberos {
        service_principal: Some(format!("HTTP/no-such-host.invalid@{}", env.realm())),
        ..env.client()
    };
    match testkit::spnego(&config, "x", &acceptor) {
        Err(KerberosError::UnknownService { service, .. }) => {
            assert!(service.contains("no-such-host"))
        }
        other => panic!("{other:?}"),
    }
}

fn messages() -> Vec<Vec<u8>> {
    vec![
        b"x".to_vec(),
        (0..=255u8).collect(),
        // Larger than the 64 KiB the server accepts per frame: sealed as several frames.
        (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        b"last".to_vec(),
    ]
}

#[tokio::test]
async fn sasl_at_each_qop_round_trips_messages_both_ways() {
    let Some((env, acceptor)) =
        Env::with_acceptor("sasl_at_each_qop_round_trips_messages_both_ways")
    else {
        return;
    };
    let host = Env::host_of(&env.service);
    for qop in [Qop::Auth, Qop::AuthInt, Qop::AuthConf] {
        // By host name ("hbase@host"), the server offering only this qop, as HBase's does.
        let echo = testkit::sasl_echo(
            &env.client(),
            &host,
            &acceptor,
            qop_bit(qop),
            qop,
            &messages(),
        )
        .await
        .unwrap_or_else(|e| panic!("{qop}: {e}"));
        assert_eq!(echo.qop, qop);
        assert_eq!(echo.client, env.client);
        if qop == Qop::Auth {
            assert_eq!(echo.client_frames, 200_000, "raw frames are not split");
        } else {
            assert!(
                echo.client_frames <= 65_536,
                "{qop}: a {}-byte frame",
                echo.client_frames
            );
        }
        // By the configured service principal, the server offering every qop.
        let config = Kerberos {
            service_principal: Some(env.service.clone()),
            ..env.client()
        };
        let echo = testkit::sasl_echo(&config, "ignored.example", &acceptor, 7, qop, &messages())
            .await
            .unwrap();
        assert_eq!(echo.qop, qop);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_credentials_serve_many_connections_and_threads_at_once() {
    let Some((env, acceptor)) =
        Env::with_acceptor("one_clients_credentials_serve_many_connections_and_threads_at_once")
    else {
        return;
    };
    let config = Kerberos {
        service_principal: Some(env.service.clone()),
        ..env.client()
    };
    testkit::concurrently(&config, "ignored.example", &acceptor, 6)
        .await
        .unwrap();
}

#[tokio::test]
async fn tampered_replayed_and_cut_frames_are_refused() {
    let Some((env, acceptor)) = Env::with_acceptor("tampered_replayed_and_cut_frames_are_refused")
    else {
        return;
    };
    let host = Env::host_of(&env.service);
    for qop in [Qop::AuthInt, Qop::AuthConf] {
        let (mut client, mut server) = testkit::layer_pair(&env.client(), &host, &acceptor, 7, qop)
            .await
            .unwrap();
        let secret = b"a row key that must not be seen in clear";
        let mut frame = Vec::new();
        client.seal(secret, &mut frame).unwrap();
        let visible = frame.windows(secret.len()).any(|w| w == secret);
        assert_eq!(
            visible,
            qop == Qop::AuthInt,
            "{qop}: plaintext visible on the wire"
        );
        // A cut frame waits; the whole one opens.
        let mut plain = Vec::new();
        assert_eq!(
            server.open(&frame[..frame.len() - 1], &mut plain).unwrap(),
            0
        );
        assert_eq!(server.open(&frame, &mut plain).unwrap(), frame.len());
        assert_eq!(plain, secret);
        // The same frame again: a replay.
        assert!(
            server.open(&frame, &mut plain).is_err(),
            "{qop}: replay accepted"
        );
        // A flipped bit.
        let mut frame = Vec::new();
        client.seal(b"second", &mut frame).unwrap();
        let last = frame.len() - 1;
        frame[last] ^= 1;
        match server.open(&frame, &mut Vec::new()) {
            Err(KerberosError::Gss {
                call: "gss_unwrap", ..
            }) => {}
            other => panic!("{qop}: {other:?}"),
        }
        // The other direction.
        let mut frame = Vec::new();
        server.seal(b"reply", &mut frame).unwrap();
        let mut plain = Vec::new();
        assert_eq!(client.open(&frame, &mut plain).unwrap(), frame.len());
        assert_eq!(plain, b"reply");
        // A frame longer than any reply may be is refused from its header alone.
        match client.open(&[0x7f, 0xff, 0xff, 0xff, 0], &mut plain) {
            Err(KerberosError::FrameTooLarge { size, .. }) => assert_eq!(size, 0x7fff_ffff),
            other => panic!("{qop}: {other:?}"),
        }
    }
}

fn qop_bit(qop: Qop) -> u8 {
    match qop {
        Qop::Auth => 1,
        Qop::AuthInt => 2,
        Qop::AuthConf => 4,
    }
}

#[tokio::test]
async fn sasl_with_a_qop_the_server_does_not_offer_is_a_typed_error() {
    let Some((env, acceptor)) =
        Env::with_acceptor("sasl_with_a_qop_the_server_does_not_offer_is_a_typed_error")
    else {
        return;
    };
    let host = Env::host_of(&env.service);
    match testkit::sasl_echo(&env.client(), &host, &acceptor, 4, Qop::Auth, &messages()).await {
        Err(KerberosError::QopNotOffered {
            requested: Qop::Auth,
            offered,
        }) => {
            assert_eq!(offered, [Qop::AuthConf])
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sasl_to_a_server_without_the_key_is_refused() {
    let Some((env, acceptor)) = Env::with_acceptor("sasl_to_a_server_without_the_key_is_refused")
    else {
        return;
    };
    // A ticket for a principal whose key the acceptor's keytab does not hold.
    let config = Kerberos {
        service_principal: Some(env.client.clone()),
        ..env.client()
    };
    match testkit::sasl_echo(&config, "x", &acceptor, 7, Qop::AuthConf, &messages()).await {
        Err(KerberosError::ServerRefused {
            status: "BAD",
            message,
        }) => {
            assert_eq!(message, "GSS initiate failed")
        }
        Err(KerberosError::UnknownService { .. }) => {
            eprintln!("the KDC issues no ticket for a user principal; nothing to check")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sasl_without_credentials_fails_before_connecting() {
    let Some(_env) = Env::get("sasl_without_credentials_fails_before_connecting") else {
        return;
    };
    let dir = temp_dir();
    let config = Kerberos {
        ccache: Some(format!("FILE:{}/none", dir.path().display())),
        ..Default::default()
    };
    // A listener that never answers: the error must come from the credentials, before any I/O.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let result = testkit::connect(
        &config,
        &mut stream,
        "localhost",
        Qop::AuthConf,
        Duration::from_secs(5),
    )
    .await;
    assert!(
        matches!(result, Err(KerberosError::NoTicket { .. })),
        "{:?}",
        result.err()
    );
}

/// A blocking Thrift transport over a negotiated layer: each flush leaves as sealed frames.
#[derive(Clone)]
struct SaslTransport(Arc<Mutex<SaslState>>);

struct SaslState {
    tcp: std::net::TcpStream,
    layer: testkit::Layer,
    wire: Vec<u8>,
    plain: Vec<u8>,
    read_at: usize,
    out: Vec<u8>,
    /// The largest frame received.
    largest_in: usize,
}

impl Read for SaslTransport {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut guard = self.0.lock().unwrap();
        let s = &mut *guard;
        while s.read_at == s.plain.len() {
            s.plain.clear();
            s.read_at = 0;
            let mut chunk = [0u8; 1 << 16];
            let n = s.tcp.read(&mut chunk)?;
            if n == 0 {
                return Ok(0);
            }
            s.wire.extend_from_slice(&chunk[..n]);
            let used = s
                .layer
                .open(&s.wire, &mut s.plain)
                .map_err(std::io::Error::other)?;
            let mut at = 0;
            while at < used {
                let len = u32::from_be_bytes(s.wire[at..at + 4].try_into().unwrap()) as usize;
                s.largest_in = s.largest_in.max(len);
                at += 4 + len;
            }
            s.wire.drain(..used);
        }
        let n = buf.len().min(s.plain.len() - s.read_at);
        buf[..n].copy_from_slice(&s.plain[s.read_at..s.read_at + n]);
        s.read_at += n;
        Ok(n)
    }
}

impl Write for SaslTransport {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut guard = self.0.lock().unwrap();
        let s = &mut *guard;
        let mut frames = Vec::new();
        s.layer
            .seal(&s.out, &mut frames)
            .map_err(std::io::Error::other)?;
        s.out.clear();
        s.tcp.write_all(&frames)
    }
}

/// `sasl_connect` to a gateway, then a blocking THBaseService client over the layer.
fn gateway_client(
    config: &Kerberos,
    addr: &str,
    host: &str,
    qop: Qop,
) -> Result<(impl TTHBaseServiceSyncClient + use<>, SaslTransport), KerberosError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (stream, layer) = runtime.block_on(async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let layer =
            testkit::connect(config, &mut stream, host, qop, Duration::from_secs(20)).await?;
        Ok::<_, KerberosError>((stream, layer))
    })?;
    assert_eq!(layer.qop(), qop);
    // Java's SASL server announces javax.security.sasl.maxbuffer's default.
    assert_eq!(layer.peer_max(), 65_536, "{qop}");
    let tcp = stream.into_std()?;
    tcp.set_nonblocking(false)?;
    let state = SaslState {
        tcp,
        layer,
        wire: Vec::new(),
        plain: Vec::new(),
        read_at: 0,
        out: Vec::new(),
        largest_in: 0,
    };
    let transport = SaslTransport(Arc::new(Mutex::new(state)));
    let client = THBaseServiceSyncClient::new(
        TBinaryInputProtocol::new(transport.clone(), true),
        TBinaryOutputProtocol::new(transport.clone(), true),
    );
    Ok((client, transport))
}

fn gateways() -> Vec<(Qop, String)> {
    [
        (Qop::Auth, "HBASE_THRIFT_SASL_AUTH"),
        (Qop::AuthInt, "HBASE_THRIFT_SASL_AUTH_INT"),
        (Qop::AuthConf, "HBASE_THRIFT_SASL_AUTH_CONF"),
    ]
    .into_iter()
    .filter_map(|(qop, name)| var(name).map(|addr| (qop, addr)))
    .collect()
}

#[test]
fn real_sasl_gateways_answer_calls_at_each_qop() {
    let Some(env) = Env::get("real_sasl_gateways_answer_calls_at_each_qop") else {
        return;
    };
    let gateways = gateways();
    if gateways.is_empty() {
        eprintln!(
            "skipping real_sasl_gateways_answer_calls_at_each_qop: no HBASE_THRIFT_SASL_* gateway"
        );
        return;
    }
    let host = Env::host_of(&env.service);
    for (qop, addr) in gateways {
        let (mut client, transport) = gateway_client(&env.client(), &addr, &host, qop)
            .unwrap_or_else(|e| panic!("{qop}: {e}"));
        let namespaces = client
            .list_namespace_descriptors()
            .unwrap_or_else(|e| panic!("{qop}: {e}"));
        assert!(
            namespaces.iter().any(|n| n.name == "hbase"),
            "{qop}: {namespaces:?}"
        );
        // A request over the 64 KiB the gateway accepts per frame (sealed as several frames
        // when there is a layer), and a second call on the same layer.
        let pattern = format!("{}|hbase:meta", "x".repeat(150_000));
        let tables = client
            .get_table_names_by_pattern(pattern, true)
            .unwrap_or_else(|e| panic!("{qop}: {e}"));
        assert!(
            tables.iter().any(|t| t.qualifier == b"meta"),
            "{qop}: {tables:?}"
        );
        // A reply over 64 KiB (an error that repeats the 200 KB name): the gateway sends it as
        // one frame, larger than its own max buffer, whatever size the client announced.
        let missing = client.get_namespace_descriptor("n".repeat(200_000));
        assert!(missing.is_err(), "{qop}");
        let largest = transport.0.lock().unwrap().largest_in;
        eprintln!("{qop}: the largest frame from the gateway: {largest} bytes");
        assert!(largest > 200_000, "{qop}: {largest}");
        // The connection still works after it.
        client
            .list_namespace_descriptors()
            .unwrap_or_else(|e| panic!("{qop}: {e}"));
        // The service principal given instead of the host name.
        let config = Kerberos {
            service_principal: Some(env.service.clone()),
            ..env.client()
        };
        let (mut client, _) = gateway_client(&config, &addr, "ignored.example", qop).unwrap();
        client.list_namespace_descriptors().unwrap();
    }
}

#[test]
fn a_real_gateway_without_the_requested_qop_is_a_typed_error() {
    let Some(env) = Env::get("a_real_gateway_without_the_requested_qop_is_a_typed_error") else {
        return;
    };
    let Some(addr) = var("HBASE_THRIFT_SASL_AUTH") else {
        eprintln!("skipping a_real_gateway_without_the_requested_qop_is_a_typed_error: HBASE_THRIFT_SASL_AUTH not set");
        return;
    };
    match gateway_client(
        &env.client(),
        &addr,
        &Env::host_of(&env.service),
        Qop::AuthConf,
    ) {
        Err(KerberosError::QopNotOffered {
            requested: Qop::AuthConf,
            offered,
        }) => {
            assert_eq!(offered, [Qop::Auth])
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_real_gateway_refuses_a_ticket_for_another_service() {
    let Some(env) = Env::get("a_real_gateway_refuses_a_ticket_for_another_service") else {
        return;
    };
    let Some(addr) = var("HBASE_THRIFT_SASL_AUTH_CONF") else {
        eprintln!("skipping a_real_gateway_refuses_a_ticket_for_another_service: HBASE_THRIFT_SASL_AUTH_CONF not set");
        return;
    };
    // A ticket for the client itself, which the gateway cannot decrypt.
    let config = Kerberos {
        service_principal: Some(env.client.clone()),
        ..env.client()
    };
    match gateway_client(&config, &addr, "x", Qop::AuthConf) {
        Err(KerberosError::ServerRefused { message, .. }) => {
            eprintln!("the gateway said: {message}")
        }
        Err(KerberosError::UnknownService { .. }) => {
            eprintln!("the KDC issues no ticket for a user principal")
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_real_spnego_gateway_accepts_the_header() {
    let Some(env) = Env::get("a_real_spnego_gateway_accepts_the_header") else {
        return;
    };
    let (Some(url), Some(ca)) = (var("HBASE_THRIFT"), var("HBASE_CA_FILE")) else {
        eprintln!("skipping a_real_spnego_gateway_accepts_the_header: not the spnego-https gateway (no HBASE_CA_FILE)");
        return;
    };
    if !url.starts_with("https://") || !env.service.starts_with("HTTP/") {
        eprintln!(
            "skipping a_real_spnego_gateway_accepts_the_header: not the spnego-https gateway"
        );
        return;
    }
    let host = url
        .trim_start_matches("https://")
        .split([':', '/'])
        .next()
        .unwrap()
        .to_owned();
    let dir = temp_dir();
    // listNamespaceDescriptors, binary protocol: the version and CALL, the name, seqid 1, no
    // arguments.
    let name = b"listNamespaceDescriptors";
    let mut body = vec![0x80, 0x01, 0x00, 0x01];
    body.extend_from_slice(&(name.len() as u32).to_be_bytes());
    body.extend_from_slice(name);
    body.extend_from_slice(&[0, 0, 0, 1, 0]);
    std::fs::write(dir.path().join("body"), &body).unwrap();
    let post = |header: Option<String>| {
        let mut curl = std::process::Command::new("curl");
        curl.args(["-sS", "-o"])
            .arg(dir.path().join("reply"))
            .args(["-w", "%{http_code}", "--cacert", &ca])
            .args(["-H", "Content-Type: application/x-thrift", "--data-binary"])
            .arg(format!("@{}", dir.path().join("body").display()));
        if let Some(header) = header {
            // From a file, so the token is on no command line.
            std::fs::write(
                dir.path().join("auth"),
                format!("Authorization: {header}\n"),
            )
            .unwrap();
            curl.arg("-H")
                .arg(format!("@{}", dir.path().join("auth").display()));
        }
        let out = curl.arg(&url).output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let Some(refused) = post(None) else {
        eprintln!("skipping a_real_spnego_gateway_accepts_the_header: no curl");
        return;
    };
    assert_eq!(refused, "401", "without a header");
    for _ in 0..3 {
        // A fresh token per request (a replayed one would be refused).
        let header = testkit::spnego_header(&env.client(), &host).unwrap();
        assert_eq!(post(Some(header)).unwrap(), "200");
        let reply = std::fs::read(dir.path().join("reply")).unwrap();
        assert!(reply.windows(5).any(|w| w == b"hbase"), "{reply:?}");
    }
}
