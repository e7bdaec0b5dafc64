//! The `hbase-emulator` binary: its address on stdout, its logs on stderr, uncoloured when
//! stderr is not a terminal.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

#[test]
fn the_emulator_logs_to_stderr_without_colours_when_it_is_not_a_terminal() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hbase-emulator"))
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("hbase-emulator listening on "), "{line}");
    // SIGTERM: it logs that it is shutting down, and exits.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    child.wait().unwrap();
    assert!(log.contains("shutting down"), "{log:?}");
    assert!(!log.contains("\x1b["), "ANSI escapes in {log:?}");
    assert!(!rest.contains("shutting down"), "logs on stdout: {rest:?}");
}

/// A binary-protocol `tableExists("t")` call.
const TABLE_EXISTS: &[u8] =
    b"\x80\x01\x00\x01\x00\x00\x00\x0btableExists\x00\x00\x00\x01\x0c\x00\x01\x0b\x00\x02\x00\x00\x00\x01t\x00\x00";

fn post(extra_headers: &str) -> Vec<u8> {
    let mut req = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n{extra_headers}\r\n",
        TABLE_EXISTS.len()
    )
    .into_bytes();
    req.extend_from_slice(TABLE_EXISTS);
    req
}

/// One response: its status line and body (read to the end: the requests ask to close).
fn response(stream: &mut impl Read) -> (String, Vec<u8>) {
    let mut all = Vec::new();
    let _ = stream.read_to_end(&mut all);
    let head_end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let status =
        String::from_utf8_lossy(&all[..all.iter().position(|&b| b == b'\r').unwrap()]).into_owned();
    (status, all[head_end..].to_vec())
}

#[test]
fn https_with_impersonation_from_the_command_line() {
    use std::io::Write;
    use std::sync::Arc;

    let dir = std::env::temp_dir().join(format!("hbase-emulator-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_hbase-emulator"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--http",
            "--allow-doas",
            "alice,bob",
        ])
        .arg("--tls-cert")
        .arg(dir.join("cert.pem"))
        .arg("--tls-key")
        .arg(dir.join("key.pem"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(line.contains("(HTTPS;"), "{line}");
    let addr = line
        .strip_prefix("hbase-emulator listening on ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_string();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let config = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    let call = |headers: &str| {
        let conn =
            rustls::ClientConnection::new(config.clone(), "localhost".try_into().unwrap()).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, std::net::TcpStream::connect(&addr).unwrap());
        tls.write_all(&post(headers)).unwrap();
        response(&mut tls)
    };
    let (status, body) = call("doAs: bob\r\nConnection: close\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        body.starts_with(b"\x80\x01\x00\x02"),
        "a Thrift reply: {body:?}"
    );
    let (status, body) = call("doAs: carol\r\nConnection: close\r\n");
    assert_eq!(status, "HTTP/1.1 500 Server Error");
    assert!(String::from_utf8_lossy(&body).contains("not allowed to impersonate carol"));

    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn tls_needs_http_and_a_key() {
    for args in [
        &["--tls-cert", "c.pem", "--tls-key", "k.pem"][..],
        &["--http", "--tls-cert", "c.pem"][..],
        &["--allow-doas", "alice"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hbase-emulator"))
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // Unreadable files are reported, not panicked on.
    let out = Command::new(env!("CARGO_BIN_EXE_hbase-emulator"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--http",
            "--tls-cert",
            "/nonexistent/c.pem",
        ])
        .args(["--tls-key", "/nonexistent/k.pem"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/c.pem"));
}
