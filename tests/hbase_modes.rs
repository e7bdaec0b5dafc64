//! What a secured real gateway must refuse, and how the refusal reads: checks that need the
//! gateway `scripts/real-hbase start --mode MODE` runs, with the settings it prints in the
//! environment (`scripts/real-hbase-mode-checks MODE` does both). Each test says why it is
//! skipped when the gateway in the environment is not of its mode.

mod common;

use std::path::PathBuf;

use common::gateway::{external_addr, external_config};
use percolator::hbase::{Get, Kerberos, KerberosError, Qop, TlsFailure, TlsOptions};
use percolator::{Error, HBaseClient, HBaseConfig, RetryClass};

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
    let authority = percolator::hbase::Endpoint::parse_list(&addr).unwrap()[0].authority();
    if addr.starts_with("https://") {
        eprintln!("skipped: a raw client meets TLS records, not HTTP, on an https gateway");
        return;
    }
    let err = HBaseClient::connect(percolator::HBaseConfig::new(authority))
        .and_then(|client| client.get("t", &Get::new("r")))
        .unwrap_err();
    assert!(
        matches!(err, Error::NotThrift { http: true, .. }),
        "{err:?}"
    );
}

/// The gateways of `--mode sasl`, one per qop, if this is that mode.
fn sasl_gateways() -> Option<[(Qop, String); 3]> {
    let found = [
        (Qop::Auth, var("HBASE_THRIFT_SASL_AUTH")),
        (Qop::AuthInt, var("HBASE_THRIFT_SASL_AUTH_INT")),
        (Qop::AuthConf, var("HBASE_THRIFT_SASL_AUTH_CONF")),
    ];
    match found {
        [(a, Some(x)), (b, Some(y)), (c, Some(z))] => Some([(a, x), (b, y), (c, z)]),
        _ => {
            eprintln!("skipped: needs the gateways of scripts/real-hbase start --mode sasl");
            None
        }
    }
}

/// The Kerberos error a connect or first call ended in.
fn kerberos_error(result: percolator::Result<()>) -> std::sync::Arc<KerberosError> {
    match result {
        Err(Error::Kerberos { source, .. }) => source,
        other => panic!("not a Kerberos error: {other:?}"),
    }
}

fn reach(config: HBaseConfig) -> percolator::Result<()> {
    let client = HBaseClient::connect(config)?;
    client.admin().list_tables().map(|_| ())
}

#[test]
fn each_sasl_gateway_serves_its_own_qop_and_refuses_the_others() {
    let Some(gateways) = sasl_gateways() else {
        return;
    };
    for (qop, addr) in &gateways {
        let client = HBaseClient::connect(external_config(addr).qop(*qop))
            .unwrap_or_else(|e| panic!("{qop} at {addr}: {e}"));
        let table = common::gateway::unique_name("sasl");
        let desc = percolator::hbase::TableDescriptor::new(table.clone())
            .family(percolator::hbase::FamilyDescriptor::new("f"));
        client.admin().create_table(&desc).unwrap();
        // Large enough for several SASL frames each way.
        let value = vec![b'v'; 300_000];
        client
            .put(
                &table,
                &percolator::hbase::Put::new("r").add("f", "q", value.clone()),
            )
            .unwrap();
        let row = client.get(&table, &Get::new("r")).unwrap();
        assert_eq!(row.value(b"f", b"q"), Some(&value[..]), "{qop}");
        common::gateway::drop_later(&client, table);

        let other = if *qop == Qop::AuthConf {
            Qop::Auth
        } else {
            Qop::AuthConf
        };
        let err = kerberos_error(reach(external_config(addr).qop(other)));
        assert!(
            matches!(*err, KerberosError::QopNotOffered { requested, .. } if requested == other),
            "{qop} gateway asked for {other}: {err:?}"
        );
    }
}

/// A client without Kerberos settings is refused by every SASL gateway, and told that the
/// gateway requires Kerberos, well within its read timeout (it once waited all of it).
#[test]
fn a_client_without_kerberos_is_told_the_gateway_requires_it() {
    let Some(gateways) = sasl_gateways() else {
        return;
    };
    for (qop, addr) in &gateways {
        let started = std::time::Instant::now();
        let config =
            HBaseConfig::new(addr.as_str()).read_timeout(std::time::Duration::from_secs(20));
        let err = reach(config).unwrap_err();
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(10),
            "{qop}: {took:?}: {err}"
        );
        assert_eq!(err.retry_class(), RetryClass::Fatal, "{qop}: {err:?}");
        assert!(
            err.to_string().contains("requires Kerberos"),
            "{qop}: {err}"
        );
    }
}

#[test]
fn a_missing_or_expired_ticket_is_named_before_anything_is_sent() {
    let Some(addr) = external_addr().filter(|_| var("KRB5_CONFIG").is_some()) else {
        eprintln!("skipped: needs a Kerberos mode of scripts/real-hbase");
        return;
    };
    let without_keytab = |ccache: String| {
        let mut config = external_config(&addr);
        config.kerberos = Some(Kerberos {
            principal: var("HBASE_KRB_CLIENT_PRINCIPAL"),
            ccache: Some(ccache),
            service_principal: var("HBASE_KRB_SERVICE_PRINCIPAL"),
            ..Kerberos::default()
        });
        config
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("FILE:{}", dir.path().join("no-such-ccache").display());
    let err = kerberos_error(reach(without_keytab(missing)));
    assert!(matches!(*err, KerberosError::NoTicket { .. }), "{err:?}");

    if let Some(expired) = var("HBASE_KRB_EXPIRED_CCACHE") {
        let result = reach(without_keytab(format!("FILE:{expired}")));
        let err = kerberos_error(result.map_err(|e| {
            assert_eq!(e.retry_class(), RetryClass::Fatal, "{e}");
            e
        }));
        assert!(
            matches!(*err, KerberosError::TicketExpired { .. }),
            "{err:?}"
        );
    }
}

#[test]
fn spnego_acts_as_an_end_user_only_for_a_client_granted_it() {
    let Some(addr) = gateway_of("https://").filter(|_| var("KRB5_CONFIG").is_some()) else {
        eprintln!("skipped: needs scripts/real-hbase start --mode spnego-https");
        return;
    };
    reach(external_config(&addr).do_as("alice")).expect("client may act as alice");

    let (Some(principal), Some(keytab)) = (
        var("HBASE_KRB_OTHER_PRINCIPAL"),
        var("HBASE_KRB_OTHER_KEYTAB"),
    ) else {
        panic!("the spnego-https mode prints HBASE_KRB_OTHER_PRINCIPAL and _KEYTAB");
    };
    let mut as_other = external_config(&addr).do_as("alice");
    let service = as_other
        .kerberos
        .as_ref()
        .and_then(|k| k.service_principal.clone());
    as_other.kerberos = Some(Kerberos {
        service_principal: service,
        ..Kerberos::keytab(principal, keytab)
    });
    match reach(as_other) {
        Err(Error::HttpStatus { status, detail, .. }) => {
            assert!(
                status == 403 || detail.contains("AuthorizationException"),
                "{status}: {detail}"
            );
        }
        other => panic!("impersonation without the grant was not refused: {other:?}"),
    }

    let mut no_kerberos = external_config(&addr);
    no_kerberos.kerberos = None;
    match reach(no_kerberos) {
        Err(Error::HttpStatus { status: 401, .. }) => {}
        other => panic!("a request without SPNEGO was not refused with 401: {other:?}"),
    }
}
