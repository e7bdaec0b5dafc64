//! `wire`: requests byte for byte what the generated client writes, replies of every shape
//! decoded, a reply cut short asks for more bytes, and garbage is an error, never a panic.

use std::io::Write;
use std::sync::{Arc, Mutex};

use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol,
    TFieldIdentifier, TInputProtocol, TMessageIdentifier, TMessageType, TOutputProtocol,
    TSerializable, TStructIdentifier, TType,
};
use thrift::transport::{TBufferedWriteTransport, TFramedWriteTransport};
use thrift::ApplicationErrorKind;

use super::config::{Protocol, Transport};
use super::data::cam_args;
use super::errors::is_connection_failure;
use super::types::{CheckAndMutate, CompareOp, Get, Put, TableDescriptor};
use super::wire::*;
use super::{convert, FamilyDescriptor};
use crate::thrift::hbase::{
    THBaseServiceSyncClient, TIOError, TIllegalArgument, TResult, TTHBaseServiceSyncClient,
};

const CODECS: [Codec; 4] = [
    Codec {
        protocol: Protocol::Binary,
        transport: Transport::Buffered,
    },
    Codec {
        protocol: Protocol::Binary,
        transport: Transport::Framed,
    },
    Codec {
        protocol: Protocol::Compact,
        transport: Transport::Buffered,
    },
    Codec {
        protocol: Protocol::Compact,
        transport: Transport::Framed,
    },
];

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<u8>>>);

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

type Generated =
    THBaseServiceSyncClient<Box<dyn TInputProtocol + Send>, Box<dyn TOutputProtocol + Send>>;

/// What the generated client writes for its first call (sequence id 1).
fn generated(codec: Codec, call: impl FnOnce(&mut Generated)) -> Vec<u8> {
    let recorder = Recorder::default();
    let out: Box<dyn Write + Send> = match codec.transport {
        Transport::Buffered => Box::new(TBufferedWriteTransport::new(recorder.clone())),
        Transport::Framed => Box::new(TFramedWriteTransport::new(recorder.clone())),
    };
    let no_reply: &'static [u8] = &[];
    let (i, o): (
        Box<dyn TInputProtocol + Send>,
        Box<dyn TOutputProtocol + Send>,
    ) = match codec.protocol {
        Protocol::Binary => (
            Box::new(TBinaryInputProtocol::new(no_reply, false)),
            Box::new(TBinaryOutputProtocol::new(out, true)),
        ),
        Protocol::Compact => (
            Box::new(TCompactInputProtocol::new(no_reply)),
            Box::new(TCompactOutputProtocol::new(out)),
        ),
    };
    call(&mut THBaseServiceSyncClient::new(i, o));
    recorder.0.lock().unwrap().clone()
}

fn ours(codec: Codec, method: &'static str, args: &[(i16, Arg<'_>)]) -> Vec<u8> {
    encode(codec, method, 1, args).unwrap().bytes
}

#[test]
fn requests_are_what_the_generated_client_writes() {
    let get = convert::get(&Get::new("r").column("f", "q").max_versions(2));
    let gets = vec![get.clone(), convert::get(&Get::new("s"))];
    let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Greater, "v")
        .put(Put::new("r").add("f", "q", "w"));
    let mutations = convert::row_mutations(&cam.mutations);
    let desc =
        convert::table_descriptor(&TableDescriptor::new("t").family(FamilyDescriptor::new("f")));
    let splits = vec![b"m".to_vec(), b"t".to_vec()];
    let name = convert::table_name("ns:t");
    for codec in CODECS {
        let check = |method, args: &[(i16, Arg<'_>)], call: &dyn Fn(&mut Generated)| {
            let expected = generated(codec, |c| call(c));
            assert_eq!(ours(codec, method, args), expected, "{method} {codec:?}");
        };
        let t = b"t".as_slice();
        check(
            "get",
            &[(1, Arg::Binary(t)), (2, Arg::Struct(&get))],
            &|c| {
                let _ = c.get(t.to_vec(), get.clone());
            },
        );
        check(
            "getMultiple",
            &[(1, Arg::Binary(t)), (2, Arg::Structs(&gets))],
            &|c| {
                let _ = c.get_multiple(t.to_vec(), gets.clone());
            },
        );
        let cam_args = cam_args("t", &cam, &mutations);
        check("checkAndMutate", &cam_args, &|c| {
            let (row, family, qualifier) =
                (cam.row.clone(), cam.family.clone(), cam.qualifier.clone());
            let op = convert::compare_op(cam.op);
            let _ = c.check_and_mutate(
                t.to_vec(),
                row,
                family,
                qualifier,
                op,
                cam.value.clone(),
                mutations.clone(),
            );
        });
        check(
            "getScannerRows",
            &[(1, Arg::I32(7)), (2, Arg::I32(-3))],
            &|c| {
                let _ = c.get_scanner_rows(7, -3);
            },
        );
        check(
            "createTable",
            &[(1, Arg::Struct(&desc)), (2, Arg::Binaries(&splits))],
            &|c| {
                let _ = c.create_table(desc.clone(), splits.clone());
            },
        );
        check(
            "getTableNamesByPattern",
            &[(1, Arg::Text(".*")), (2, Arg::Bool(false))],
            &|c| {
                let _ = c.get_table_names_by_pattern(".*".into(), false);
            },
        );
        check(
            "truncateTable",
            &[(1, Arg::Struct(&name)), (2, Arg::Bool(true))],
            &|c| {
                let _ = c.truncate_table(name.clone(), true);
            },
        );
        check("listNamespaces", &[], &|c| {
            let _ = c.list_namespaces();
        });
    }
}

/// A reply message to `method` as a server writes it; `body` writes the result struct's fields.
fn reply(
    codec: Codec,
    method: &str,
    seq: i32,
    kind: TMessageType,
    body: impl FnOnce(&mut dyn TOutputProtocol),
) -> Vec<u8> {
    let mut message = Vec::new();
    {
        let mut o: Box<dyn TOutputProtocol> = match codec.protocol {
            Protocol::Binary => Box::new(TBinaryOutputProtocol::new(&mut message, true)),
            Protocol::Compact => Box::new(TCompactOutputProtocol::new(&mut message)),
        };
        o.write_message_begin(&TMessageIdentifier::new(method, kind, seq))
            .unwrap();
        if kind == TMessageType::Exception {
            body(&mut *o);
        } else {
            o.write_struct_begin(&TStructIdentifier::new("result"))
                .unwrap();
            body(&mut *o);
            o.write_field_stop().unwrap();
            o.write_struct_end().unwrap();
        }
        o.write_message_end().unwrap();
        o.flush().unwrap();
    }
    match codec.transport {
        Transport::Buffered => message,
        Transport::Framed => {
            let mut framed = (message.len() as u32).to_be_bytes().to_vec();
            framed.extend(message);
            framed
        }
    }
}

fn field(
    o: &mut dyn TOutputProtocol,
    ttype: TType,
    id: i16,
    value: impl FnOnce(&mut dyn TOutputProtocol),
) {
    o.write_field_begin(&TFieldIdentifier::new("f", ttype, id))
        .unwrap();
    value(o);
    o.write_field_end().unwrap();
}

fn answer<T: Success>(codec: Codec, bytes: &[u8], method: &str) -> thrift::Result<T> {
    match decode::<T>(codec, bytes, method, 9) {
        Decoded::Reply { len, result } => {
            assert_eq!(len, bytes.len(), "the whole message was consumed");
            result
        }
        Decoded::Incomplete => panic!("{method}: a whole reply decoded as incomplete"),
    }
}

fn row(name: &str) -> TResult {
    TResult::new(name.as_bytes().to_vec(), Vec::new(), None, None)
}

#[test]
fn replies_of_every_shape_decode() {
    for codec in CODECS {
        let ok = |method, body: &dyn Fn(&mut dyn TOutputProtocol)| {
            reply(codec, method, 9, TMessageType::Reply, |o| body(o))
        };
        let applied = ok("checkAndMutate", &|o| {
            field(o, TType::Bool, 0, |o| o.write_bool(true).unwrap())
        });
        assert!(answer::<bool>(codec, &applied, "checkAndMutate").unwrap());
        let got = ok("get", &|o| {
            field(o, TType::Struct, 0, |o| {
                row("r").write_to_out_protocol(o).unwrap()
            })
        });
        assert_eq!(answer::<TResult>(codec, &got, "get").unwrap(), row("r"));
        let rows = ok("getMultiple", &|o| {
            field(o, TType::List, 0, |o| {
                o.write_list_begin(&thrift::protocol::TListIdentifier::new(TType::Struct, 2))
                    .unwrap();
                row("a").write_to_out_protocol(o).unwrap();
                row("b").write_to_out_protocol(o).unwrap();
                o.write_list_end().unwrap();
            })
        });
        assert_eq!(
            answer::<Vec<TResult>>(codec, &rows, "getMultiple").unwrap(),
            [row("a"), row("b")]
        );
        answer::<()>(codec, &ok("put", &|_| {}), "put").unwrap();
        let id = ok("openScanner", &|o| {
            field(o, TType::I32, 0, |o| o.write_i32(42).unwrap())
        });
        assert_eq!(answer::<i32>(codec, &id, "openScanner").unwrap(), 42);

        let io = ok("put", &|o| {
            field(o, TType::Struct, 1, |o| {
                TIOError::new("boom".to_owned(), true)
                    .write_to_out_protocol(o)
                    .unwrap()
            })
        });
        match answer::<()>(codec, &io, "put") {
            Err(thrift::Error::User(e)) => assert!(e.downcast_ref::<TIOError>().is_some()),
            other => panic!("expected TIOError, got {other:?}"),
        }
        let ia = ok("getScannerRows", &|o| {
            field(o, TType::Struct, 2, |o| {
                TIllegalArgument::new("id".to_owned())
                    .write_to_out_protocol(o)
                    .unwrap()
            })
        });
        match answer::<Vec<TResult>>(codec, &ia, "getScannerRows") {
            Err(thrift::Error::User(e)) => assert!(e.downcast_ref::<TIllegalArgument>().is_some()),
            other => panic!("expected TIllegalArgument, got {other:?}"),
        }
        let missing = answer::<bool>(codec, &ok("exists", &|_| {}), "exists").unwrap_err();
        assert!(
            matches!(&missing, thrift::Error::Application(a) if a.kind == ApplicationErrorKind::MissingResult)
        );
        assert!(!is_connection_failure(&missing));

        let exception = reply(codec, "get", 9, TMessageType::Exception, |o| {
            let app = thrift::ApplicationError::new(
                ApplicationErrorKind::InternalError,
                "Internal error processing get",
            );
            thrift::Error::write_application_error_to_out_protocol(&app, o).unwrap();
        });
        match answer::<TResult>(codec, &exception, "get") {
            Err(thrift::Error::Application(app)) => {
                assert_eq!(app.kind, ApplicationErrorKind::InternalError);
                assert_eq!(app.message, "Internal error processing get");
                let e = thrift::Error::Application(app);
                assert!(!is_connection_failure(&e), "the connection stays in step");
            }
            other => panic!("expected an application error, got {other:?}"),
        }
    }
}

#[test]
fn a_reply_to_another_call_is_a_connection_failure() {
    for codec in CODECS {
        let bytes = reply(codec, "put", 9, TMessageType::Reply, |_| {});
        for (method, seq) in [("put", 8), ("delete", 9)] {
            match decode::<()>(codec, &bytes, method, seq) {
                Decoded::Reply { result: Err(e), .. } => assert!(is_connection_failure(&e), "{e}"),
                other => panic!("{method}/{seq}: expected a failure, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_reply_cut_short_asks_for_more_bytes() {
    for codec in CODECS {
        let whole = reply(codec, "get", 9, TMessageType::Reply, |o| {
            field(o, TType::Struct, 0, |o| {
                row("some row").write_to_out_protocol(o).unwrap()
            })
        });
        for cut in 0..whole.len() {
            assert!(
                matches!(
                    decode::<TResult>(codec, &whole[..cut], "get", 9),
                    Decoded::Incomplete
                ),
                "{codec:?}: {cut} of {} bytes",
                whole.len()
            );
        }
        // The next reply already behind it is left for later.
        let mut two = whole.clone();
        two.extend_from_slice(&whole);
        match decode::<TResult>(codec, &two, "get", 9) {
            Decoded::Reply { len, result } => {
                assert_eq!(len, whole.len());
                assert_eq!(result.unwrap(), row("some row"));
            }
            Decoded::Incomplete => panic!("incomplete"),
        }
    }
}

#[test]
fn old_non_strict_binary_replies_are_accepted() {
    let codec = CODECS[0];
    let mut bytes = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut bytes, false);
        o.write_message_begin(&TMessageIdentifier::new("exists", TMessageType::Reply, 9))
            .unwrap();
        o.write_struct_begin(&TStructIdentifier::new("r")).unwrap();
        field(&mut o, TType::Bool, 0, |o| o.write_bool(true).unwrap());
        o.write_field_stop().unwrap();
        o.write_struct_end().unwrap();
        o.write_message_end().unwrap();
    }
    assert!(answer::<bool>(codec, &bytes, "exists").unwrap());
}

fn failed<T: Success>(codec: Codec, bytes: &[u8]) -> thrift::Error {
    match decode::<T>(codec, bytes, "get", 9) {
        Decoded::Reply { result: Err(e), .. } => e,
        other => panic!(
            "expected garbage to fail: {}",
            matches!(other, Decoded::Incomplete)
        ),
    }
}

#[test]
fn garbage_is_an_error_and_never_a_panic() {
    let binary = CODECS[0];
    // Not a Thrift message at all.
    assert!(is_connection_failure(&failed::<TResult>(
        binary,
        b"HTTP/1.1 400 Bad Request\r\n"
    )));
    assert!(is_connection_failure(&failed::<TResult>(
        CODECS[2],
        &[0x13, 0x37, 0, 0]
    )));
    // A frame whose length is negative or absurd.
    let framed = CODECS[1];
    assert!(is_connection_failure(&failed::<TResult>(
        framed,
        &(-1i32).to_be_bytes()
    )));
    // A string length beyond any reply, and a negative list size: refused before allocating.
    let mut huge = reply(binary, "get", 9, TMessageType::Reply, |_| {});
    huge.truncate(huge.len() - 1);
    huge.extend([11, 0, 0]);
    huge.extend(0x7fff_fff0i32.to_be_bytes());
    assert!(is_connection_failure(&failed::<TResult>(binary, &huge)));
    let mut negative = reply(binary, "getMultiple", 9, TMessageType::Reply, |_| {});
    negative.truncate(negative.len() - 1);
    negative.extend([15, 0, 0, 12]);
    negative.extend((-2i32).to_be_bytes());
    match decode::<Vec<TResult>>(binary, &negative, "getMultiple", 9) {
        Decoded::Reply { result: Err(e), .. } => assert!(is_connection_failure(&e)),
        other => panic!("expected a failure, got {other:?}"),
    }
    // Random bytes after a valid header: any outcome but a panic.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        for codec in CODECS {
            let mut bytes = reply(codec, "get", 9, TMessageType::Reply, |_| {});
            bytes.truncate(bytes.len().saturating_sub(2));
            for _ in 0..(state % 40) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push(state as u8);
            }
            let _ = decode::<TResult>(codec, &bytes, "get", 9);
            let _ = decode::<Vec<TResult>>(codec, &bytes, "get", 9);
        }
    }
}

#[test]
fn a_reply_start_tells_thrift_from_anything_else() {
    for codec in CODECS {
        // Every reply a gateway sends starts like one, however little of it has arrived.
        let shapes = [
            reply(codec, "get", 9, TMessageType::Reply, |_| {}),
            reply(codec, "get", 9, TMessageType::Exception, |o| {
                let app = thrift::ApplicationError::new(ApplicationErrorKind::InternalError, "x");
                thrift::Error::write_application_error_to_out_protocol(&app, o).unwrap();
            }),
        ];
        for bytes in shapes {
            for end in 1..=bytes.len() {
                let start = start(codec, &bytes[..end]);
                assert_ne!(start, Start::NotThrift, "{codec:?}: {:?}", &bytes[..end]);
            }
            assert_eq!(start(codec, &bytes), Start::Reply, "{codec:?}");
        }
        // An HTTP answer is waited for until it can be named, then refused.
        for end in 1..5 {
            assert_eq!(start(codec, &b"HTTP/1.1"[..end]), Start::More, "{codec:?}");
        }
        for other in [
            &b"HTTP/1.1 400 Bad Request\r\n\r\n"[..],
            b"SSH-2.0-OpenSSH_9.6\r\n",
            &[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50],
            &[0x01, 0x02, 0x03, 0x04, 0x05],
            b"<html>",
            &[0xff],
        ] {
            assert_eq!(
                start(codec, other),
                Start::NotThrift,
                "{codec:?}: {other:?}"
            );
        }
    }
    // Old non-strict binary replies start with the name's length.
    let binary = CODECS[0];
    assert_eq!(start(binary, &[0, 0, 0, 6, b'e']), Start::Reply);
    // Another transport or protocol than the gateway's is told at once too.
    let framed_compact = reply(CODECS[3], "get", 9, TMessageType::Reply, |_| {});
    assert_eq!(start(CODECS[1], &framed_compact), Start::NotThrift);
    let buffered_binary = reply(CODECS[0], "get", 9, TMessageType::Reply, |_| {});
    assert_eq!(start(CODECS[1], &buffered_binary), Start::NotThrift);
    assert_eq!(start(CODECS[2], &buffered_binary), Start::NotThrift);
}
