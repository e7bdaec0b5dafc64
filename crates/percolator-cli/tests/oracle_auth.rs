//! A secured oracle: TLS, client certificates, tokens. Certificates are made here with rcgen
//! (a CA, the oracle's, clients'); the servers run in-process, or as the binary where its
//! flags and its log are what is checked.

mod oracle_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use oracle_common::{bin, OracleProcess};
use percolator::hbase::TlsOptions;
use percolator::oracle::{
    AuthFailure, ClientConfig, MemoryStore, OracleClient, OracleHandle, OracleServer, OracleToken,
    ServerConfig, ServerTls,
};
use percolator::Error;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};

/// A CA and certificates it signed, as PEM files in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
        };
        let (ca, ca_key) = pki.ca("ca");
        pki.leaf("oracle", &["localhost", "127.0.0.1"], true, (&ca, &ca_key));
        pki.leaf("txn-client", &["app.example.com"], false, (&ca, &ca_key));
        pki.leaf("intruder", &[], false, (&ca, &ca_key));
        // A second CA the oracle does not trust, and a client and an oracle of its own.
        let (other, other_key) = pki.ca("other-ca");
        pki.leaf("stranger", &[], false, (&other, &other_key));
        pki.leaf("impostor", &["127.0.0.1"], true, (&other, &other_key));
        pki
    }

    fn ca(&self, name: &str) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(self.path(&format!("{name}.pem")), cert.pem()).unwrap();
        (cert, key)
    }

    fn leaf(
        &self,
        name: &str,
        sans: &[&str],
        server: bool,
        (ca, ca_key): (&rcgen::Certificate, &KeyPair),
    ) {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let cert = params.signed_by(&key, ca, ca_key).unwrap();
        std::fs::write(self.path(&format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(self.path(&format!("{name}.key")), key.serialize_pem()).unwrap();
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn server_tls(&self) -> ServerTls {
        ServerTls::new(self.path("oracle.pem"), self.path("oracle.key"))
    }

    fn mutual_tls(&self, allowed: &[&str]) -> ServerTls {
        ServerTls {
            client_ca: Some(self.path("ca.pem")),
            allowed_clients: allowed.iter().map(|s| s.to_string()).collect(),
            ..self.server_tls()
        }
    }

    /// Trusts the CA; shows the certificate `client` if given.
    fn client_tls(&self, client: Option<&str>) -> TlsOptions {
        TlsOptions {
            ca_file: Some(self.path("ca.pem")),
            client_cert: client.map(|c| {
                (
                    self.path(&format!("{c}.pem")),
                    self.path(&format!("{c}.key")),
                )
            }),
            verify_hostname: true,
        }
    }
}

fn start(tls: Option<ServerTls>, token: Option<&str>) -> OracleHandle {
    let config = ServerConfig {
        tls,
        token: token.map(|t| OracleToken::new(t).unwrap()),
        ..ServerConfig::default()
    };
    OracleServer::start("127.0.0.1:0", MemoryStore::new(), config).unwrap()
}

/// A client config that would wait ten minutes on an oracle that does not answer: a refusal
/// that returns at all returns at once.
fn patient(tls: Option<TlsOptions>, token: Option<&str>) -> ClientConfig {
    ClientConfig {
        connect_timeout: Duration::from_secs(600),
        request_timeout: Duration::from_secs(600),
        tls,
        token: token.map(|t| OracleToken::new(t).unwrap()),
        ..ClientConfig::default()
    }
}

fn connect(oracle: &OracleHandle, config: ClientConfig) -> percolator::Result<OracleClient> {
    OracleClient::connect(&[oracle.local_addr().to_string()], config)
}

fn refusal(result: percolator::Result<OracleClient>) -> AuthFailure {
    match result {
        Err(Error::OracleAuth { failure, .. }) => failure,
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("expected a refusal, got a client"),
    }
}

#[test]
fn tls_with_the_right_token_serves_timestamps_and_stats() {
    let pki = Pki::new();
    let oracle = start(Some(pki.server_tls()), Some("right-token"));
    let client = connect(
        &oracle,
        patient(Some(pki.client_tls(None)), Some("right-token")),
    )
    .expect("TLS and the token get in");
    let ts = client.get_timestamps(100).unwrap();
    assert!(ts.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(client.server_stats().unwrap().timestamps, 100);
}

#[test]
fn a_wrong_or_missing_token_is_refused_at_once_and_others_are_still_served() {
    let pki = Pki::new();
    let oracle = start(Some(pki.server_tls()), Some("right-token"));
    let good = connect(
        &oracle,
        patient(Some(pki.client_tls(None)), Some("right-token")),
    )
    .unwrap();
    let before = good.get_timestamp().unwrap();

    let wrong = connect(
        &oracle,
        patient(Some(pki.client_tls(None)), Some("wrong-token")),
    );
    assert_eq!(refusal(wrong), AuthFailure::TokenRejected);
    let missing = connect(&oracle, patient(Some(pki.client_tls(None)), None));
    assert_eq!(refusal(missing), AuthFailure::TokenRequired);
    // A fail-over list is not walked round and round either.
    let addrs = [
        oracle.local_addr().to_string(),
        oracle.local_addr().to_string(),
    ];
    let err = OracleClient::connect(&addrs, patient(Some(pki.client_tls(None)), Some("nope")))
        .err()
        .unwrap();
    assert_eq!(err.retry_class(), percolator::RetryClass::Fatal);
    assert!(err.to_string().contains("rejected the token"), "{err}");

    assert!(
        good.get_timestamp().unwrap() > before,
        "the server kept serving"
    );
}

#[test]
fn a_plain_oracle_takes_tokens_too_and_refuses_the_wrong_one() {
    let oracle = start(None, Some("plain-token"));
    let client = connect(&oracle, patient(None, Some("plain-token"))).unwrap();
    assert!(client.get_timestamp().unwrap() > 0);
    assert_eq!(
        refusal(connect(&oracle, patient(None, Some("other")))),
        AuthFailure::TokenRejected
    );
}

#[test]
fn mutual_tls_refuses_missing_unallowed_and_unknown_certificates() {
    let pki = Pki::new();
    let oracle = start(Some(pki.mutual_tls(&["txn-client"])), None);
    let allowed = connect(
        &oracle,
        patient(Some(pki.client_tls(Some("txn-client"))), None),
    )
    .expect("the allowed client gets in");
    assert!(allowed.get_timestamp().unwrap() > 0);

    let none = connect(&oracle, patient(Some(pki.client_tls(None)), None));
    assert_eq!(refusal(none), AuthFailure::CertificateRequired);
    let intruder = connect(
        &oracle,
        patient(Some(pki.client_tls(Some("intruder"))), None),
    );
    assert_eq!(refusal(intruder), AuthFailure::IdentityNotAllowed);
    let stranger = connect(
        &oracle,
        patient(Some(pki.client_tls(Some("stranger"))), None),
    );
    assert!(
        matches!(refusal(stranger), AuthFailure::CertificateRefused { .. }),
        "a certificate from another CA ends the handshake"
    );
    assert!(
        allowed.get_timestamp().unwrap() > 0,
        "the server kept serving"
    );

    // A DNS name of the certificate is an identity too.
    let by_name = start(Some(pki.mutual_tls(&["app.example.com"])), None);
    assert!(connect(
        &by_name,
        patient(Some(pki.client_tls(Some("txn-client"))), None)
    )
    .is_ok());
}

#[test]
fn plain_and_tls_that_do_not_match_fail_clearly() {
    let pki = Pki::new();
    let tls_oracle = start(Some(pki.server_tls()), None);
    assert_eq!(
        refusal(connect(&tls_oracle, patient(None, None))),
        AuthFailure::TlsRequired
    );
    // Not trusted: an oracle whose certificate another CA signed.
    let impostor = start(
        Some(ServerTls::new(
            pki.path("impostor.pem"),
            pki.path("impostor.key"),
        )),
        None,
    );
    assert!(matches!(
        refusal(connect(
            &impostor,
            patient(Some(pki.client_tls(None)), None)
        )),
        AuthFailure::UntrustedServer { .. }
    ));
    // A plain oracle hangs up on a TLS hello: not a refusal (the next address may serve
    // TLS), but the error says what to suspect.
    let plain = start(None, None);
    let quick = ClientConfig {
        connect_timeout: Duration::from_secs(2),
        tls: Some(pki.client_tls(None)),
        ..ClientConfig::default()
    };
    let err = connect(&plain, quick).err().unwrap();
    assert!(err.to_string().contains("serve TLS"), "{err}");
}

#[test]
fn transactions_reach_a_secured_oracle_through_txn_options() {
    let pki = Pki::new();
    let oracle = start(Some(pki.mutual_tls(&["txn-client"])), Some("txn-token"));
    let emulator = hbase_emulator::start_local().unwrap();
    let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    let addrs = [oracle.local_addr().to_string()];
    let options = |token| {
        percolator::TxnOptions::builder()
            .oracle(patient(
                Some(pki.client_tls(Some("txn-client"))),
                Some(token),
            ))
            .build()
    };
    let client = percolator::Client::connect(hbase.clone(), &addrs, options("txn-token"))
        .expect("the transaction client reaches the oracle over mutual TLS");
    assert!(!client.is_dead());
    client.shutdown();
    let refused = percolator::Client::connect(hbase, &addrs, options("stale-token")).err();
    assert!(
        matches!(
            refused,
            Some(Error::OracleAuth {
                failure: AuthFailure::TokenRejected,
                ..
            })
        ),
        "{refused:?}"
    );
}

#[test]
fn a_tls_standby_turns_clients_away_to_the_next_address() {
    let pki = Pki::new();
    let store = MemoryStore::with_lease(Duration::from_secs(600));
    let secured = |standby| ServerConfig {
        tls: Some(pki.server_tls()),
        token: Some(OracleToken::new("t").unwrap()),
        standby,
        ..ServerConfig::default()
    };
    let owner = OracleServer::start("127.0.0.1:0", store.clone(), secured(false)).unwrap();
    let waiting = OracleServer::start("127.0.0.1:0", store, secured(true)).unwrap();
    let config = ClientConfig {
        connect_timeout: Duration::from_secs(5),
        ..patient(Some(pki.client_tls(None)), Some("t"))
    };
    let alone = OracleClient::connect(&[waiting.local_addr().to_string()], config.clone());
    assert!(
        matches!(&alone, Err(Error::OracleUnavailable { reason, .. }) if reason.contains("standby")),
        "{:?}",
        alone.err()
    );
    let addrs = [
        waiting.local_addr().to_string(),
        owner.local_addr().to_string(),
    ];
    let both = OracleClient::connect(&addrs, config).unwrap();
    assert!(both.get_timestamp().unwrap() > 0);
}

#[test]
fn unusable_pem_and_token_files_are_named() {
    let pki = Pki::new();
    let garbage = pki.path("garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnot base64\n").unwrap();
    let oracle = start(None, None);
    let tls = TlsOptions {
        ca_file: Some(garbage.clone()),
        ..TlsOptions::default()
    };
    match connect(&oracle, patient(Some(tls), None)) {
        Err(Error::OracleSettings { file, detail }) => {
            assert_eq!(file.as_deref(), Some(garbage.as_path()));
            assert!(detail.contains("garbage.pem"), "{detail}");
        }
        other => panic!("expected a settings error, got {:?}", other.err()),
    }
    let server = ServerConfig {
        tls: Some(ServerTls::new(pki.path("oracle.pem"), &garbage)),
        ..ServerConfig::default()
    };
    let err = OracleServer::start("127.0.0.1:0", MemoryStore::new(), server)
        .err()
        .unwrap();
    assert!(
        matches!(&err, Error::OracleSettings { file: Some(f), .. } if *f == garbage),
        "{err}"
    );
    let allow_without_ca = ServerConfig {
        tls: Some(ServerTls {
            allowed_clients: vec!["txn-client".into()],
            ..pki.server_tls()
        }),
        ..ServerConfig::default()
    };
    assert!(matches!(
        OracleServer::start("127.0.0.1:0", MemoryStore::new(), allow_without_ca),
        Err(Error::OracleSettings { .. })
    ));
}

fn write_token(dir: &Path, name: &str, token: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path
}

fn fetch(addr: &str, extra: &[&Path], flags: &[&str]) -> std::process::Output {
    let mut command = Command::new(bin());
    command
        .args(["fetch", "--addr", addr, "--count", "3", "--timeout", "600"])
        .env_remove("PERCOLATOR_ORACLE_TOKEN");
    for (flag, path) in flags.iter().zip(extra) {
        command.arg(flag).arg(path);
    }
    command.output().expect("run percolator-oracle fetch")
}

#[test]
fn the_binary_serves_mutual_tls_with_a_token_and_never_logs_it() {
    let pki = Pki::new();
    let secret = "token-3f9a7c1e-must-not-be-logged";
    let wrong = "token-wrong-b81d-must-not-be-logged";
    let token = write_token(pki.dir.path(), "token", secret);
    let wrong_token = write_token(pki.dir.path(), "wrong", wrong);
    let log = pki.path("oracle.log");
    let mut server = OracleProcess::start_with_stderr(
        &[
            "--store".as_ref(),
            "memory".as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--tls-cert".as_ref(),
            pki.path("oracle.pem").as_os_str(),
            "--tls-key".as_ref(),
            pki.path("oracle.key").as_os_str(),
            "--tls-client-ca".as_ref(),
            pki.path("ca.pem").as_os_str(),
            "--allow-client".as_ref(),
            "txn-client".as_ref(),
            "--token-file".as_ref(),
            token.as_os_str(),
        ] as &[&std::ffi::OsStr],
        std::fs::File::create(&log).unwrap(),
    );
    let (ca, cert, key) = (
        pki.path("ca.pem"),
        pki.path("txn-client.pem"),
        pki.path("txn-client.key"),
    );
    let flags = [
        "--oracle-tls-ca",
        "--oracle-tls-cert",
        "--oracle-tls-key",
        "--oracle-token-file",
    ];

    let served = fetch(&server.addr, &[&ca, &cert, &key, &token], &flags);
    assert!(
        served.status.success(),
        "{}",
        String::from_utf8_lossy(&served.stderr)
    );
    let lines = String::from_utf8(served.stdout).unwrap();
    let ts: Vec<u64> = lines.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ts.len(), 3);
    assert!(ts.windows(2).all(|w| w[0] < w[1]));

    let refused = fetch(&server.addr, &[&ca, &cert, &key, &wrong_token], &flags);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("rejected the token"), "{stderr}");
    assert!(!stderr.contains(wrong), "{stderr}");
    let no_token = fetch(&server.addr, &[&ca, &cert, &key], &flags);
    assert!(String::from_utf8_lossy(&no_token.stderr).contains("requires a token"));
    let (intruder_cert, intruder_key) = (pki.path("intruder.pem"), pki.path("intruder.key"));
    let intruder = fetch(
        &server.addr,
        &[&ca, &intruder_cert, &intruder_key, &token],
        &flags,
    );
    let stderr = String::from_utf8_lossy(&intruder.stderr);
    assert!(stderr.contains("does not allow"), "{stderr}");

    // The token may come from the environment instead of a file.
    let from_env = Command::new(bin())
        .args(["stats", "--addr", &server.addr, "--oracle-tls-ca"])
        .arg(&ca)
        .args(["--oracle-tls-cert".as_ref(), cert.as_os_str()])
        .args(["--oracle-tls-key".as_ref(), key.as_os_str()])
        .env("PERCOLATOR_ORACLE_TOKEN", secret)
        .output()
        .unwrap();
    assert!(
        from_env.status.success(),
        "{}",
        String::from_utf8_lossy(&from_env.stderr)
    );
    assert!(String::from_utf8_lossy(&from_env.stdout).contains("\"timestamps\":3"));

    assert!(server.terminate());
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("wrong token"),
        "the refusal is logged: {logged}"
    );
    assert!(logged.contains("no token in the hello"), "{logged}");
    assert!(
        logged.contains("identity not allowed") && logged.contains("intruder"),
        "{logged}"
    );
    assert!(
        !logged.contains(secret) && !logged.contains(wrong),
        "{logged}"
    );
}

#[test]
fn the_binary_names_an_unusable_certificate_file() {
    let pki = Pki::new();
    let missing = pki.path("missing.pem");
    let out = Command::new(bin())
        .args(["--store", "memory", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&missing)
        .arg("--tls-key")
        .arg(pki.path("oracle.key"))
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.pem"), "{stderr}");
}
