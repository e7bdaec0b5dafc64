//! Kerberos against a real KDC: credentials, SPNEGO, and the SASL/GSSAPI handshake at each qop
//! with messages sealed both ways, against an in-process GSSAPI acceptor that stands in for
//! the gateway (the same exchange as HBase's ThriftServer).
//!
//! Runs with `--features kerberos` when these are set (e.g. by `scripts/real-hbase`'s KDC),
//! and skips with the reason otherwise:
//! - `KRB5_CONFIG`: a krb5.conf naming the KDC;
//! - `HBASE_KRB_CLIENT_PRINCIPAL`, `HBASE_KRB_CLIENT_KEYTAB`: the client;
//! - `HBASE_KRB_SERVICE_PRINCIPAL` ("hbase/<host>@REALM"), `HBASE_KRB_SERVICE_KEYTAB`: the
//!   gateway's principal and a keytab with its key (for the in-process acceptor);
//! - optionally `HBASE_KRB_HTTP_PRINCIPAL` ("HTTP/<host>@REALM", in the same keytab) for
//!   SPNEGO by host name.
//!
//! The expired-ticket test also needs MIT's `kinit` on the PATH.

#![cfg(feature = "kerberos")]

use std::path::PathBuf;
use std::time::Duration;

use percolator::hbase::kerberos::testkit::{self, Acceptor};
use percolator::hbase::{Kerberos, KerberosError, Qop};

struct Env {
    client: String,
    client_keytab: PathBuf,
    service: String,
    service_keytab: PathBuf,
    http: Option<String>,
}

impl Env {
    /// The KDC's settings, or None (with the reason printed) when they are not set.
    fn get(test: &str) -> Option<Env> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let missing: Vec<&str> = [
            "KRB5_CONFIG",
            "HBASE_KRB_CLIENT_PRINCIPAL",
            "HBASE_KRB_CLIENT_KEYTAB",
            "HBASE_KRB_SERVICE_PRINCIPAL",
            "HBASE_KRB_SERVICE_KEYTAB",
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
            service_keytab: var("HBASE_KRB_SERVICE_KEYTAB")?.into(),
            http: var("HBASE_KRB_HTTP_PRINCIPAL"),
        })
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
        name.split_once('/').map_or(name, |(_, host)| host).to_owned()
    }

    fn acceptor(&self) -> Acceptor {
        Acceptor::new(&self.service_keytab).expect("the service keytab")
    }
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn keytab_credentials_are_acquired_at_once() {
    let Some(env) = Env::get("keytab_credentials_are_acquired_at_once") else { return };
    let (principal, expires) = testkit::credentials(&env.client()).unwrap();
    assert_eq!(principal, env.client);
    assert_eq!(expires, None, "a keytab's tickets are renewed");
    // No principal: the keytab's first entry.
    let config = Kerberos { principal: None, ..env.client() };
    assert_eq!(testkit::credentials(&config).unwrap().0, env.client);
}

#[test]
fn a_principal_missing_from_the_keytab_is_a_typed_error() {
    let Some(env) = Env::get("a_principal_missing_from_the_keytab_is_a_typed_error") else { return };
    let config = Kerberos { principal: Some(format!("nobody@{}", env.realm())), ..env.client() };
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
    let Some(env) = Env::get("an_unreadable_keytab_is_a_typed_error") else { return };
    let config = Kerberos { keytab: Some("/nonexistent/k.keytab".into()), ..env.client() };
    assert!(matches!(testkit::credentials(&config), Err(KerberosError::KeytabUnreadable { .. })));
}

#[test]
fn a_missing_ticket_cache_is_a_typed_error() {
    let Some(_env) = Env::get("a_missing_ticket_cache_is_a_typed_error") else { return };
    let dir = temp_dir();
    let ccache = format!("FILE:{}/none", dir.path().display());
    let config = Kerberos { ccache: Some(ccache.clone()), ..Default::default() };
    match testkit::credentials(&config) {
        Err(e @ KerberosError::NoTicket { .. }) => assert!(e.to_string().contains(&ccache), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_ticket_cache_filled_from_the_keytab_is_used_without_it() {
    let Some(env) = Env::get("a_ticket_cache_filled_from_the_keytab_is_used_without_it") else { return };
    let dir = temp_dir();
    let ccache = format!("FILE:{}/cc", dir.path().display());
    // With both, the tickets obtained from the keytab are stored in the cache...
    let with_keytab = Kerberos { ccache: Some(ccache.clone()), ..env.client() };
    testkit::credentials(&with_keytab).unwrap();
    // ... where a client with only the cache finds them.
    let config = Kerberos { ccache: Some(ccache), ..Default::default() };
    let (principal, expires) = testkit::credentials(&config).unwrap();
    assert_eq!(principal, env.client);
    let left = expires.expect("a cache's ticket expires").duration_since(std::time::SystemTime::now());
    assert!(left.unwrap() > Duration::from_secs(60));
}

#[test]
fn an_expired_ticket_is_a_typed_error_with_its_time() {
    let Some(env) = Env::get("an_expired_ticket_is_a_typed_error_with_its_time") else { return };
    let dir = temp_dir();
    let ccache = format!("FILE:{}/cc", dir.path().display());
    let kinit = std::process::Command::new("kinit")
        .args(["-l", "5s", "-k", "-t"])
        .arg(&env.client_keytab)
        .args(["-c", &ccache, &env.client])
        .status();
    match kinit {
        Ok(status) if status.success() => {}
        other => {
            eprintln!("skipping an_expired_ticket_is_a_typed_error_with_its_time: kinit: {other:?}");
            return;
        }
    }
    std::thread::sleep(Duration::from_secs(7));
    let config = Kerberos { ccache: Some(ccache.clone()), ..Default::default() };
    match testkit::credentials(&config) {
        Err(e @ KerberosError::TicketExpired { expired_at: Some(_), .. }) => {
            let text = e.to_string();
            assert!(text.contains(" expired at ") && text.contains(&ccache), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_spnego_header_is_accepted() {
    let Some(env) = Env::get("a_spnego_header_is_accepted") else { return };
    let acceptor = env.acceptor();
    let config = Kerberos { service_principal: Some(env.service.clone()), ..env.client() };
    let (header, client) = testkit::spnego(&config, "ignored.example", &acceptor).unwrap();
    assert!(header.starts_with("Negotiate YI"), "an SPNEGO NegTokenInit");
    assert_eq!(client, env.client);
    if let Some(http) = &env.http {
        let (_, client) = testkit::spnego(&env.client(), &Env::host_of(http), &acceptor).unwrap();
        assert_eq!(client, env.client);
    }
    let cost = testkit::spnego_cost(&config, "ignored.example", 200).unwrap();
    eprintln!("one SPNEGO header (service ticket cached): {cost:?}");
}

#[test]
fn spnego_for_an_unknown_service_is_a_typed_error() {
    let Some(env) = Env::get("spnego_for_an_unknown_service_is_a_typed_error") else { return };
    let config = Kerberos {
        service_principal: Some(format!("HTTP/no-such-host.invalid@{}", env.realm())),
        ..env.client()
    };
    match testkit::spnego(&config, "x", &env.acceptor()) {
        Err(KerberosError::UnknownService { service, .. }) => assert!(service.contains("no-such-host")),
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
    let Some(env) = Env::get("sasl_at_each_qop_round_trips_messages_both_ways") else { return };
    let acceptor = env.acceptor();
    let host = Env::host_of(&env.service);
    for qop in [Qop::Auth, Qop::AuthInt, Qop::AuthConf] {
        // By host name ("hbase@host"), the server offering only this qop, as HBase's does.
        let echo = testkit::sasl_echo(&env.client(), &host, &acceptor, qop_bit(qop), qop, &messages())
            .await
            .unwrap_or_else(|e| panic!("{qop}: {e}"));
        assert_eq!(echo.qop, qop);
        assert_eq!(echo.client, env.client);
        if qop == Qop::Auth {
            assert_eq!(echo.client_frames, 200_000, "raw frames are not split");
        } else {
            assert!(echo.client_frames <= 65_536, "{qop}: a {}-byte frame", echo.client_frames);
        }
        // By the configured service principal, the server offering every qop.
        let config = Kerberos { service_principal: Some(env.service.clone()), ..env.client() };
        let echo = testkit::sasl_echo(&config, "ignored.example", &acceptor, 7, qop, &messages()).await.unwrap();
        assert_eq!(echo.qop, qop);
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
    let Some(env) = Env::get("sasl_with_a_qop_the_server_does_not_offer_is_a_typed_error") else { return };
    let host = Env::host_of(&env.service);
    match testkit::sasl_echo(&env.client(), &host, &env.acceptor(), 4, Qop::Auth, &messages()).await {
        Err(KerberosError::QopNotOffered { requested: Qop::Auth, offered }) => {
            assert_eq!(offered, [Qop::AuthConf])
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sasl_to_a_server_without_the_key_is_refused() {
    let Some(env) = Env::get("sasl_to_a_server_without_the_key_is_refused") else { return };
    // A ticket for a principal whose key the acceptor's keytab does not hold.
    let config = Kerberos { service_principal: Some(env.client.clone()), ..env.client() };
    match testkit::sasl_echo(&config, "x", &env.acceptor(), 7, Qop::AuthConf, &messages()).await {
        Err(KerberosError::ServerRefused { status: "BAD", message }) => {
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
    let Some(_env) = Env::get("sasl_without_credentials_fails_before_connecting") else { return };
    let dir = temp_dir();
    let config = Kerberos { ccache: Some(format!("FILE:{}/none", dir.path().display())), ..Default::default() };
    // A listener that never answers: the error must come from the credentials, before any I/O.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let result = testkit::connect(&config, &mut stream, "localhost", Qop::AuthConf, Duration::from_secs(5)).await;
    assert!(matches!(result, Err(KerberosError::NoTicket { .. })), "{:?}", result.err());
}
