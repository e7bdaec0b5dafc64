//! Whether a client certificate (already verified against the client CAs) has one of the
//! identities an oracle allows: a DNS name among its subject alternative names (checked by
//! webpki, as a server name would be), or its subject's common name.
//!
//! webpki deliberately ignores the common name, and rustls exposes no X.509 parser, so the
//! subject is read here with a bounded DER walk: every length is checked against what is left,
//! and anything unexpected means "no common name", never a panic.

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::server::ParsedCertificate;

/// Whether `cert` has one of `allowed` as a DNS name or as its subject's common name.
pub(crate) fn is_allowed(cert: &CertificateDer<'_>, allowed: &[String]) -> bool {
    let common_name = common_name(cert);
    let parsed = ParsedCertificate::try_from(cert).ok();
    allowed.iter().any(|name| {
        common_name.as_deref() == Some(name.as_str())
            || parsed.as_ref().is_some_and(|p| {
                ServerName::try_from(name.as_str()).is_ok_and(|n| {
                    matches!(n, ServerName::DnsName(_))
                        && rustls::client::verify_server_name(p, &n).is_ok()
                })
            })
    })
}

/// The first common name (OID 2.5.4.3) in the certificate's subject, if it is a string.
pub(crate) fn common_name(cert: &[u8]) -> Option<String> {
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    let (certificate, _) = element(cert, 0x30)?;
    let (mut tbs, _) = element(certificate, 0x30)?;
    // [0] version is optional; then serial, signature algorithm, issuer, validity, subject.
    if tbs.first() == Some(&0xa0) {
        tbs = element(tbs, 0xa0)?.1;
    }
    for tag in [0x02, 0x30, 0x30, 0x30] {
        tbs = element(tbs, tag)?.1;
    }
    let (mut subject, _) = element(tbs, 0x30)?;
    while !subject.is_empty() {
        let (mut rdn, rest) = element(subject, 0x31)?;
        subject = rest;
        while !rdn.is_empty() {
            let (attribute, rest) = element(rdn, 0x30)?;
            rdn = rest;
            let (oid, value) = element(attribute, 0x06)?;
            if oid == CN {
                let (&tag, _) = value.split_first()?;
                // UTF8String, PrintableString, IA5String, T61String (read as Latin-1 is not
                // worth it: names are ASCII in practice).
                if matches!(tag, 0x0c | 0x13 | 0x16 | 0x14) {
                    let (bytes, _) = element(value, tag)?;
                    return String::from_utf8(bytes.to_vec()).ok();
                }
                return None;
            }
        }
    }
    None
}

/// Splits one DER element with tag `tag` off the front of `der`: its contents and what
/// follows it.
fn element(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = der.split_first()?;
    if found != tag {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return None;
        }
        let (len_bytes, after) = rest.split_at(octets);
        rest = after;
        len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
    };
    if rest.len() < len {
        return None;
    }
    Some(rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(cn: &str, dns: &[&str]) -> CertificateDer<'static> {
        let mut params =
            rcgen::CertificateParams::new(dns.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "percolator");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn common_names_and_dns_names_are_identities() {
        let c = cert("txn-client", &["app.example.com"]);
        assert_eq!(common_name(&c).as_deref(), Some("txn-client"));
        assert!(is_allowed(&c, &["txn-client".into()]));
        assert!(is_allowed(&c, &["other".into(), "app.example.com".into()]));
        assert!(!is_allowed(&c, &["txn".into(), "example.com".into()]));
        assert!(!is_allowed(&c, &[]));
    }

    #[test]
    fn garbage_has_no_common_name_and_never_panics() {
        let c = cert("x", &[]);
        for cut in 0..c.len() {
            let _ = common_name(&c[..cut]);
        }
        assert_eq!(common_name(b""), None);
        assert_eq!(common_name(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert!(!is_allowed(
            &CertificateDer::from(vec![1, 2, 3]),
            &["x".into()]
        ));
    }
}
