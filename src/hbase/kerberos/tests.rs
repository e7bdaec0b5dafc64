//! Unit tests that need no KDC: frame parsing, the RFC 4752 tokens, qop selection, base64, and
//! what errors say.

use super::error::clean_remote_text;
use super::sasl::{self, Offer};
use super::spnego;
use super::{KerberosError, Qop};

#[test]
fn negotiation_frames_round_trip_and_partial_frames_wait() {
    let mut buf = Vec::new();
    sasl::encode_frame(sasl::START, b"GSSAPI", &mut buf);
    sasl::encode_frame(sasl::OK, &[7; 300], &mut buf);
    assert_eq!(&buf[..5], &[1, 0, 0, 0, 6]);
    let (status, payload, used) = sasl::parse_frame(&buf, "t").unwrap().unwrap();
    assert_eq!((status, payload, used), (sasl::START, &b"GSSAPI"[..], 11));
    let (status, payload, used) = sasl::parse_frame(&buf[11..], "t").unwrap().unwrap();
    assert_eq!((status, payload.len(), used), (sasl::OK, 300, 305));
    for n in 0..11 {
        assert!(
            sasl::parse_frame(&buf[..n], "t").unwrap().is_none(),
            "prefix of {n}"
        );
    }
}

#[test]
fn wrong_status_and_oversized_frames_are_typed_errors() {
    for status in [0u8, 6, 0x80, 0xff] {
        match sasl::parse_frame(&[status, 0, 0, 0, 0], "in test") {
            Err(KerberosError::UnexpectedStatus { status: s, .. }) => assert_eq!(s, status),
            other => panic!("{status}: {other:?}"),
        }
    }
    match sasl::parse_frame(&[sasl::OK, 0x7f, 0xff, 0xff, 0xff], "t") {
        Err(KerberosError::FrameTooLarge { size, .. }) => assert_eq!(size, 0x7fff_ffff),
        other => panic!("{other:?}"),
    }
    // A negative Java int is a huge length here.
    assert!(matches!(
        sasl::parse_frame(&[sasl::OK, 0xff, 0xff, 0xff, 0xff], "t"),
        Err(KerberosError::FrameTooLarge { .. })
    ));
}

#[test]
fn bad_and_error_frames_carry_the_servers_message_cleaned() {
    let mut buf = Vec::new();
    sasl::encode_frame(sasl::BAD, b"GSS initiate failed\n\x1b[31m", &mut buf);
    match sasl::parse_frame(&buf, "t") {
        Err(e @ KerberosError::ServerRefused { status: "BAD", .. }) => {
            let text = e.to_string();
            assert!(text.contains("GSS initiate failed"), "{text}");
            assert!(!text.contains('\x1b') && !text.contains('\n'), "{text:?}");
        }
        other => panic!("{other:?}"),
    }
    let mut buf = Vec::new();
    sasl::encode_frame(sasl::ERROR, &[0xff; 2000], &mut buf);
    match sasl::parse_frame(&buf, "t") {
        Err(KerberosError::ServerRefused {
            status: "ERROR",
            message,
        }) => {
            assert!(message.chars().count() <= 513)
        }
        other => panic!("{other:?}"),
    }
}

/// A cheap deterministic generator for the fuzz-ish tests.
fn noise(seed: &mut u64) -> u8 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 24) as u8
}

#[test]
fn frame_parser_never_panics_on_noise() {
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20_000 {
        let len = usize::from(noise(&mut seed) % 24);
        let mut buf: Vec<u8> = (0..len).map(|_| noise(&mut seed)).collect();
        if let Some(first) = buf.first_mut() {
            *first %= 7;
        }
        if buf.len() > 4 && noise(&mut seed).is_multiple_of(2) {
            buf[1] = 0;
            buf[2] = 0;
            buf[3] = 0;
            buf[4] %= 24;
        }
        let _ = sasl::parse_frame(&buf, "fuzz");
        let _ = Offer::decode(&buf);
        let _ = sasl::decode_choice(&buf);
    }
}

#[test]
fn layer_tokens_encode_and_decode() {
    let offer = Offer {
        mask: 4,
        max_buffer: 65_536,
    };
    assert_eq!(offer.encode(), [4, 1, 0, 0]);
    assert_eq!(Offer::decode(&[4, 1, 0, 0]).unwrap(), offer);
    assert_eq!(
        Offer::decode(&[7, 0xff, 0xff, 0xff]).unwrap().max_buffer,
        0xff_ffff
    );
    for bad in [&[][..], &[4], &[4, 0, 0], &[4, 0, 0, 0, 0]] {
        assert!(
            matches!(Offer::decode(bad), Err(KerberosError::Protocol(_))),
            "{bad:?}"
        );
    }
    // No layer: the size must be 0 (RFC 4752 section 3.1).
    assert_eq!(sasl::encode_choice(Qop::Auth, 0xff_ffff, ""), [1, 0, 0, 0]);
    assert_eq!(sasl::encode_choice(Qop::AuthInt, 65_536, ""), [2, 1, 0, 0]);
    assert_eq!(
        sasl::encode_choice(Qop::AuthConf, u32::MAX, "u"),
        [4, 0xff, 0xff, 0xff, b'u']
    );
    assert_eq!(
        sasl::decode_choice(&[4, 0, 1, 0, b'a']).unwrap(),
        (4, 256, "a".to_owned())
    );
}

#[test]
fn qop_selection() {
    let only_conf = Offer {
        mask: 4,
        max_buffer: 0,
    };
    assert_eq!(only_conf.select(Qop::AuthConf).unwrap(), Qop::AuthConf);
    match only_conf.select(Qop::Auth) {
        Err(
            e @ KerberosError::QopNotOffered {
                requested: Qop::Auth,
                ..
            },
        ) => {
            assert_eq!(
                e.to_string(),
                "the gateway does not offer qop auth; it offers auth-conf"
            );
        }
        other => panic!("{other:?}"),
    }
    let all = Offer {
        mask: 7,
        max_buffer: 0,
    };
    for q in [Qop::Auth, Qop::AuthInt, Qop::AuthConf] {
        assert_eq!(all.select(q).unwrap(), q);
    }
    assert!(Offer {
        mask: 0,
        max_buffer: 0
    }
    .select(Qop::Auth)
    .unwrap_err()
    .to_string()
    .ends_with("offers none"));
    assert_eq!(Qop::from_mask(6), [Qop::AuthInt, Qop::AuthConf]);
    assert_eq!("privacy".parse::<Qop>().unwrap(), Qop::AuthConf);
    assert_eq!("auth-int".parse::<Qop>().unwrap(), Qop::AuthInt);
    assert!("none".parse::<Qop>().is_err());
    assert_eq!(Qop::default(), Qop::AuthConf);
}

#[test]
fn base64_matches_rfc_4648_vectors() {
    for (plain, coded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        let mut out = String::new();
        spnego::base64(plain.as_bytes(), &mut out);
        assert_eq!(out, coded);
        assert_eq!(spnego::unbase64(coded).unwrap(), plain.as_bytes());
    }
    let bytes: Vec<u8> = (0..=255).collect();
    let mut out = String::new();
    spnego::base64(&bytes, &mut out);
    assert_eq!(spnego::unbase64(&out).unwrap(), bytes);
    assert_eq!(spnego::header(b"\x60\x81"), "Negotiate YIE=");
    assert!(spnego::unbase64("Zg=a").is_none());
}

#[test]
fn remote_text_is_cleaned_and_bounded() {
    assert_eq!(clean_remote_text(b"a\r\nb\0"), "a  b ");
    assert_eq!(clean_remote_text(&[b'x'; 600]).chars().count(), 513);
}

#[test]
fn errors_name_what_to_fix_and_carry_no_bytes() {
    let e = KerberosError::QopNotOffered {
        requested: Qop::AuthConf,
        offered: vec![Qop::Auth, Qop::AuthInt],
    };
    assert_eq!(
        e.to_string(),
        "the gateway does not offer qop auth-conf; it offers auth, auth-int"
    );
    let e = KerberosError::NoTicket {
        ccache: "FILE:/tmp/x".into(),
        principal: None,
        message: "m".into(),
    };
    assert!(e.to_string().contains("run kinit"), "{e}");
    let e = KerberosError::TicketExpired {
        principal: Some("u@R".into()),
        ccache: "FILE:/tmp/x".into(),
        expired_at: Some(std::time::UNIX_EPOCH),
    };
    assert_eq!(
        e.to_string(),
        "the Kerberos ticket for u@R in FILE:/tmp/x expired at 1970-01-01 00:00:00 UTC (run kinit again, or use a keytab)"
    );
    let e = KerberosError::FrameTooLarge {
        size: 1 << 30,
        max: 1 << 20,
    };
    assert!(e.to_string().contains("1073741824"), "{e}");
}

#[test]
fn a_missing_library_names_the_path() {
    // Only the constructor is exercised: the process-wide library is not replaced.
    match super::gss::Lib::open_for_test("/nonexistent/libgssapi_krb5.so.2") {
        Err(e @ KerberosError::LibraryNotFound { .. }) => {
            assert!(
                e.to_string().contains("/nonexistent/libgssapi_krb5.so.2"),
                "{e}"
            )
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn an_unreadable_keytab_is_reported_before_the_library_is_asked() {
    let config = super::Kerberos {
        keytab: Some("/nonexistent/client.keytab".into()),
        ..Default::default()
    };
    match super::Gss::new(&config) {
        Err(e @ KerberosError::KeytabUnreadable { .. }) => {
            assert!(e.to_string().contains("/nonexistent/client.keytab"), "{e}")
        }
        Err(KerberosError::LibraryNotFound { .. }) => {} // no MIT Kerberos on this machine
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_shared_types_are_send_and_sync_as_documented() {
    fn send<T: Send>(_: &T) {}
    fn send_sync<T: Send + Sync>() {}
    send_sync::<super::Gss>();
    send_sync::<std::sync::Arc<super::Gss>>();
    fn layer_is_send(layer: super::SaslLayer) -> impl Send {
        layer
    }
    let _ = layer_is_send;
    // The connection layer spawns the handshake: its future must be Send.
    fn connect_is_send(gss: &super::Gss, stream: &mut tokio::net::TcpStream) {
        send(&gss.sasl_connect(
            stream,
            "h",
            Qop::AuthConf,
            std::time::Duration::from_secs(1),
        ));
    }
    let _ = connect_is_send;
}

#[test]
fn the_layer_reader_never_panics_on_noise() {
    // Needs the library only to make a context handle: with none established, every unwrap
    // fails (MIT checks for GSS_C_NO_CONTEXT), which is the path garbage takes anyway.
    let Ok(lib) = super::gss::load() else {
        eprintln!("skipping: no GSSAPI library");
        return;
    };
    let mut seed = 0x2545_f491_4f6c_dd1d;
    for qop in [Qop::Auth, Qop::AuthInt, Qop::AuthConf] {
        let mut layer =
            super::SaslLayer::new(super::gss::Context::new(lib), qop, 0, 1 << 10).unwrap();
        for _ in 0..5_000 {
            let len = usize::from(noise(&mut seed) % 40);
            let mut wire: Vec<u8> = (0..len).map(|_| noise(&mut seed)).collect();
            if wire.len() >= 4 && !noise(&mut seed).is_multiple_of(3) {
                // A plausible length more often than not.
                let claim = u32::from(noise(&mut seed) % 48);
                wire[..4].copy_from_slice(&claim.to_be_bytes());
            }
            let mut plain = Vec::new();
            match layer.open(&wire, &mut plain) {
                Ok(used) => assert!(used <= wire.len()),
                Err(
                    KerberosError::FrameTooLarge { .. }
                    | KerberosError::Gss { .. }
                    | KerberosError::Protocol(_),
                ) => {}
                Err(other) => panic!("{other:?}"),
            }
        }
        // With no layer, frames are raw: whole ones are taken, a partial one waits.
        if qop == Qop::Auth {
            let mut plain = Vec::new();
            let wire = [0, 0, 0, 2, b'h', b'i', 0, 0, 0, 5, b'x'];
            assert_eq!(layer.open(&wire, &mut plain).unwrap(), 6);
            assert_eq!(plain, b"hi");
            assert!(matches!(
                layer.open(&[0, 0, 4, 1], &mut plain),
                Err(KerberosError::FrameTooLarge {
                    size: 1025,
                    max: 1024
                })
            ));
            let mut out = Vec::new();
            layer.seal(b"abc", &mut out).unwrap();
            assert_eq!(out, [0, 0, 0, 3, b'a', b'b', b'c']);
            layer.seal(b"", &mut out).unwrap();
            assert_eq!(out.len(), 7, "an empty message adds no frame");
        }
    }
}
