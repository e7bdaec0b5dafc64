//! What a secured real gateway must refuse, and how the refusal reads: checks that need the
//! gateway `scripts/real-hbase start --mode MODE` runs, with the settings it prints in the
//! environment (`scripts/real-hbase-mode-checks MODE` does both). Each test says why it is
//! skipped when the gateway in the environment is not of its mode.

mod common;

use std::path::PathBuf;

use common::gateway::{external_addr, external_config};
use percolator::hbase::{Get, TlsFailure, TlsOptions};
use percolator::{Error, HBaseClient, RetryClass};

#[allow(dead_code)]
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The gateway in the environment if its address starts with `scheme`.
fn gateway_of(scheme: &str) -> Option<String> {
    match external_addr() {
        Some(addr) if addr.starts_with(scheme) => Some(addr),
        other => {
            eprintln!("skipped: needs HBASE_THRIFT={scheme}... (it is {other:?})");
            None
        }
    }
}

#[test]
fn an_https_gateway_is_refused_under_another_ca_and_served_under_its_own() {
    let Some(addr) = gateway_of("https://") else {
        return;
    };
    let client = HBaseClient::connect(external_config(&addr)).expect("its own CA");
    client.admin().list_tables().expect("a call through TLS");

    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let other_ca = params.self_signed(&key).unwrap();
    let other: PathBuf = dir.path().join("other-ca.pem");
    std::fs::write(&other, other_ca.pem()).unwrap();
    let mut config = external_config(&addr);
    config.tls = TlsOptions {
        ca_file: Some(other),
        ..config.tls
    };
    let err = HBaseClient::connect(config).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Tls {
                failure: TlsFailure::UntrustedCertificate { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.retry_class(), RetryClass::Fatal);
    assert!(err.to_string().contains(&addr), "{err}");
}

#[test]
fn a_raw_client_is_told_that_an_http_gateway_speaks_http() {
    let Some(addr) = gateway_of("http") else {
        return;
    };
    let authority = addr
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/'))
        .unwrap_or(&addr)
        .to_owned();
    if addr.starts_with("https://") {
        eprintln!("skipped: a raw client meets TLS records, not HTTP, on an https gateway");
        return;
    }
    let err = HBaseClient::connect(percolator::HBaseConfig::new(authority))
        .and_then(|client| client.get("t", &Get::new("r")))
        .unwrap_err();
    assert!(matches!(err, Error::NotThrift { http: true, .. }), "{err:?}");
}
