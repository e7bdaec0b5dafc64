//! The server over real sockets: transports, protocols, hand-encoded requests that omit the
//! arguments HBase leaves optional, protocol errors, limits and shutdown.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol,
    TFieldIdentifier, TInputProtocol, TMessageIdentifier, TMessageType, TOutputProtocol,
    TSerializable, TStructIdentifier, TType,
};
use thrift::transport::{
    TBufferedReadTransport, TBufferedWriteTransport, TFramedReadTransport, TFramedWriteTransport,
};
use thrift::{ApplicationError, ApplicationErrorKind};

use crate::testutil::{cv, table_desc, table_name, tget, tput, tscan};
use crate::{start, start_local, EmulatorConfig, EmulatorHandle};
use percolator_thrift::hbase::{
    TCompareOp, THBaseServiceSyncClient, TIOError, TResult, TRowMutations,
    TTHBaseServiceSyncClient, TTableDescriptor, TTableName, TThriftServerType,
};

type Client = Box<dyn TTHBaseServiceSyncClient>;

/// An emulator with `config` on 127.0.0.1:0.
fn start_with(config: EmulatorConfig) -> EmulatorHandle {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    start(listener, config).unwrap()
}

/// An emulator whose every call costs `service_time`.
fn paced(service_time: Duration) -> EmulatorHandle {
    start_with(EmulatorConfig {
        service_time,
        ..EmulatorConfig::default()
    })
}

/// Runs `check` under both service times whose server-level behaviour must be the same: none
/// (a thread per connection) and one that sends every connection to the paced loop.
fn in_both_modes(check: fn(Duration)) {
    for service_time in [Duration::ZERO, Duration::from_millis(1)] {
        check(service_time);
    }
}

fn client(emu: &EmulatorHandle, framed: bool, compact: bool) -> Client {
    let s = TcpStream::connect(emu.local_addr()).unwrap();
    let r = s.try_clone().unwrap();
    macro_rules! build {
        ($read:expr, $write:expr) => {
            if compact {
                Box::new(THBaseServiceSyncClient::new(
                    TCompactInputProtocol::new($read),
                    TCompactOutputProtocol::new($write),
                )) as Client
            } else {
                Box::new(THBaseServiceSyncClient::new(
                    TBinaryInputProtocol::new($read, true),
                    TBinaryOutputProtocol::new($write, true),
                )) as Client
            }
        };
    }
    if framed {
        build!(TFramedReadTransport::new(r), TFramedWriteTransport::new(s))
    } else {
        build!(
            TBufferedReadTransport::new(r),
            TBufferedWriteTransport::new(s)
        )
    }
}

#[test]
fn every_transport_and_protocol_combination_is_served() {
    in_both_modes(every_combination_served);
}

fn every_combination_served(service_time: Duration) {
    let emu = paced(service_time);
    for (i, (framed, compact)) in [(false, false), (false, true), (true, false), (true, true)]
        .into_iter()
        .enumerate()
    {
        let mut c = client(&emu, framed, compact);
        assert_eq!(c.get_thrift_server_type().unwrap(), TThriftServerType::TWO);
        let table = format!("t{i}");
        c.create_table(table_desc(&table, &[("f", 1)]), vec![])
            .unwrap();
        c.put(
            table.clone().into_bytes(),
            tput("r", vec![cv("f", "q", Some(5), "v")]),
        )
        .unwrap();
        let r = c.get(table.clone().into_bytes(), tget(b"r")).unwrap();
        assert_eq!(r.column_values[0].value, b"v");
        assert_eq!(r.column_values[0].timestamp, Some(5));
        let err = c.get(b"missing".to_vec(), tget(b"r")).unwrap_err();
        let thrift::Error::User(e) = err else {
            panic!("expected TIOError, got {err:?}")
        };
        let io = e.downcast_ref::<TIOError>().unwrap();
        assert_eq!(io.can_retry, Some(false));
        // Raised by the gateway's own client, so only the bare name (see error.rs).
        assert_eq!(io.message.as_deref(), Some("missing"));
    }
    emu.shutdown();
}

/// A raw binary-protocol call: `args` writes the argument fields.
fn send(s: &mut TcpStream, name: &str, args: impl FnOnce(&mut dyn TOutputProtocol)) {
    s.write_all(&message(name, args)).unwrap();
}

fn message(name: &str, args: impl FnOnce(&mut dyn TOutputProtocol)) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut buf, true);
        o.write_message_begin(&TMessageIdentifier::new(name, TMessageType::Call, 1))
            .unwrap();
        o.write_struct_begin(&TStructIdentifier::new("args"))
            .unwrap();
        args(&mut o);
        o.write_field_stop().unwrap();
        o.write_struct_end().unwrap();
        o.write_message_end().unwrap();
    }
    buf
}

fn field(
    o: &mut dyn TOutputProtocol,
    id: i16,
    ty: TType,
    write: impl FnOnce(&mut dyn TOutputProtocol),
) {
    o.write_field_begin(&TFieldIdentifier::new("f", ty, id))
        .unwrap();
    write(o);
    o.write_field_end().unwrap();
}

fn bytes(o: &mut dyn TOutputProtocol, id: i16, v: &[u8]) {
    field(o, id, TType::String, |o| o.write_bytes(v).unwrap());
}

fn strukt(o: &mut dyn TOutputProtocol, id: i16, v: &impl TSerializable) {
    field(o, id, TType::Struct, |o| {
        v.write_to_out_protocol(o).unwrap()
    });
}

#[derive(Debug)]
enum Failure {
    App(ApplicationError),
    // Read only through Debug, when a test fails.
    #[allow(dead_code)]
    Io(TIOError),
}

/// Reads one reply; `success` decodes field 0 if the method returns a value.
fn receive<T>(
    s: &mut TcpStream,
    success: impl FnOnce(&mut dyn TInputProtocol) -> T,
) -> Result<Option<T>, Failure> {
    let mut i = TBinaryInputProtocol::new(s, true);
    let ident = i.read_message_begin().unwrap();
    if ident.message_type == TMessageType::Exception {
        return Err(Failure::App(
            thrift::Error::read_application_error_from_in_protocol(&mut i).unwrap(),
        ));
    }
    i.read_struct_begin().unwrap();
    let mut out = None;
    let mut success = Some(success);
    loop {
        let f = i.read_field_begin().unwrap();
        match (f.field_type, f.id) {
            (TType::Stop, _) => break,
            (_, Some(0)) => out = Some((success.take().unwrap())(&mut i)),
            (_, Some(1)) => {
                return Err(Failure::Io(
                    TIOError::read_from_in_protocol(&mut i).unwrap(),
                ))
            }
            (t, _) => i.skip(t).unwrap(),
        }
        i.read_field_end().unwrap();
    }
    i.read_struct_end().unwrap();
    Ok(out)
}

fn read_bool(i: &mut dyn TInputProtocol) -> bool {
    i.read_bool().unwrap()
}

fn read_list<T>(
    i: &mut dyn TInputProtocol,
    read: impl Fn(&mut dyn TInputProtocol) -> thrift::Result<T>,
) -> Vec<T> {
    let l = i.read_list_begin().unwrap();
    let out = (0..l.size).map(|_| read(i).unwrap()).collect();
    i.read_list_end().unwrap();
    out
}

fn read_results(i: &mut dyn TInputProtocol) -> Vec<TResult> {
    read_list(i, TResult::read_from_in_protocol)
}

fn app_error_kind(r: Result<impl std::fmt::Debug, Failure>) -> ApplicationErrorKind {
    match r {
        Err(Failure::App(e)) => e.kind,
        other => panic!("expected an application exception, got {other:?}"),
    }
}

fn setup() -> (EmulatorHandle, TcpStream) {
    setup_with(Duration::ZERO)
}

fn setup_with(service_time: Duration) -> (EmulatorHandle, TcpStream) {
    let emu = paced(service_time);
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    // createTable without splitKeys.
    send(&mut s, "createTable", |o| {
        strukt(o, 1, &table_desc("t", &[("f", 1)]))
    });
    receive(&mut s, |_| ()).unwrap();
    (emu, s)
}

#[test]
fn check_and_put_and_delete_accept_an_omitted_value_as_must_not_exist() {
    let (_emu, mut s) = setup();
    let put = |s: &mut TcpStream| {
        send(s, "checkAndPut", |o| {
            bytes(o, 1, b"t");
            bytes(o, 2, b"r");
            bytes(o, 3, b"f");
            bytes(o, 4, b"q");
            strukt(o, 6, &tput("r", vec![cv("f", "q", None, "v")]));
        });
        receive(s, read_bool).unwrap().unwrap()
    };
    assert!(put(&mut s));
    assert!(!put(&mut s));
    send(&mut s, "checkAndDelete", |o| {
        bytes(o, 1, b"t");
        bytes(o, 2, b"r");
        bytes(o, 3, b"f");
        bytes(o, 4, b"other");
        strukt(o, 6, &crate::testutil::tdelete("r", None, None));
    });
    assert!(receive(&mut s, read_bool).unwrap().unwrap());
}

#[test]
fn check_and_mutate_with_an_omitted_value_is_an_internal_error() {
    let (_emu, mut s) = setup();
    let rm = TRowMutations {
        row: b"r".to_vec(),
        mutations: vec![],
    };
    send(&mut s, "checkAndMutate", |o| {
        bytes(o, 1, b"t");
        bytes(o, 2, b"r");
        bytes(o, 3, b"f");
        bytes(o, 4, b"q");
        field(o, 5, TType::I32, |o| {
            o.write_i32(TCompareOp::EQUAL.0).unwrap()
        });
        strukt(o, 7, &rm);
    });
    assert_eq!(
        app_error_kind(receive(&mut s, read_bool)),
        ApplicationErrorKind::InternalError
    );
    // The connection is still good, and an empty value works.
    send(&mut s, "checkAndMutate", |o| {
        bytes(o, 1, b"t");
        bytes(o, 2, b"r");
        bytes(o, 3, b"f");
        bytes(o, 4, b"q");
        field(o, 5, TType::I32, |o| {
            o.write_i32(TCompareOp::EQUAL.0).unwrap()
        });
        bytes(o, 6, b"");
        strukt(o, 7, &rm);
    });
    assert!(receive(&mut s, read_bool).unwrap().unwrap());
}

#[test]
fn scanner_calls_default_num_rows_to_one() {
    let (_emu, mut s) = setup();
    for row in ["a", "b", "c"] {
        send(&mut s, "put", |o| {
            bytes(o, 1, b"t");
            strukt(o, 2, &tput(row, vec![cv("f", "q", None, "v")]));
        });
        receive(&mut s, |_| ()).unwrap();
    }
    send(&mut s, "getScannerResults", |o| {
        bytes(o, 1, b"t");
        strukt(o, 2, &tscan());
    });
    assert_eq!(receive(&mut s, read_results).unwrap().unwrap().len(), 1);
    send(&mut s, "openScanner", |o| {
        bytes(o, 1, b"t");
        strukt(o, 2, &tscan());
    });
    let id = receive(&mut s, |i| i.read_i32().unwrap()).unwrap().unwrap();
    // Scanner ids are valid on every connection.
    let mut other = TcpStream::connect(s.peer_addr().unwrap()).unwrap();
    send(&mut other, "getScannerRows", |o| {
        field(o, 1, TType::I32, |o| o.write_i32(id).unwrap())
    });
    let rows = receive(&mut other, read_results).unwrap().unwrap();
    assert_eq!(rows[0].row.as_deref(), Some(&b"a"[..]));
    send(&mut other, "getScannerRows", |o| {
        field(o, 1, TType::I32, |o| o.write_i32(id + 100).unwrap())
    });
    let mut i = TBinaryInputProtocol::new(&mut other, true);
    i.read_message_begin().unwrap();
    i.read_struct_begin().unwrap();
    let f = i.read_field_begin().unwrap();
    assert_eq!(f.id, Some(2), "invalid ids answer TIllegalArgument");
}

#[test]
fn admin_calls_with_omitted_optional_arguments() {
    let (_emu, mut s) = setup();
    send(&mut s, "getTableNamesByPattern", |_| {});
    let names = receive(&mut s, |i| read_list(i, TTableName::read_from_in_protocol));
    assert_eq!(
        names.unwrap().unwrap(),
        vec![table_name("t")]
            .into_iter()
            .map(|mut t| {
                t.ns = Some(b"default".to_vec());
                t
            })
            .collect::<Vec<_>>()
    );
    send(&mut s, "getTableDescriptorsByPattern", |o| {
        field(o, 1, TType::String, |o| o.write_string("nomatch").unwrap())
    });
    let found = receive(&mut s, |i| {
        read_list(i, TTableDescriptor::read_from_in_protocol)
    });
    assert!(found.unwrap().unwrap().is_empty());
    send(&mut s, "getRegionLocation", |o| {
        bytes(o, 1, b"t");
        bytes(o, 2, b"r");
    });
    assert!(receive(&mut s, |i| {
        percolator_thrift::hbase::THRegionLocation::read_from_in_protocol(i).unwrap()
    })
    .unwrap()
    .is_some());
    send(&mut s, "disableTable", |o| strukt(o, 1, &table_name("t")));
    receive(&mut s, |_| ()).unwrap();
    send(&mut s, "truncateTable", |o| strukt(o, 1, &table_name("t")));
    receive(&mut s, |_| ()).unwrap();
    send(&mut s, "isTableEnabled", |o| strukt(o, 1, &table_name("t")));
    assert!(receive(&mut s, read_bool).unwrap().unwrap());
}

#[test]
fn missing_required_arguments_and_unknown_methods_fail_only_that_call() {
    in_both_modes(fail_only_that_call);
}

fn fail_only_that_call(service_time: Duration) {
    let (_emu, mut s) = setup_with(service_time);
    send(&mut s, "get", |o| bytes(o, 1, b"t"));
    assert_eq!(
        app_error_kind(receive(&mut s, |_| ())),
        ApplicationErrorKind::ProtocolError
    );
    send(&mut s, "checkAndPut", |o| bytes(o, 1, b"t"));
    assert_eq!(
        app_error_kind(receive(&mut s, |_| ())),
        ApplicationErrorKind::ProtocolError
    );
    send(&mut s, "noSuchMethod", |o| bytes(o, 1, b"t"));
    assert_eq!(
        app_error_kind(receive(&mut s, |_| ())),
        ApplicationErrorKind::UnknownMethod
    );
    send(&mut s, "get", |o| {
        bytes(o, 1, b"t");
        strukt(o, 2, &tget(b""));
    });
    assert_eq!(
        app_error_kind(receive(&mut s, |_| ())),
        ApplicationErrorKind::InternalError
    );
    send(&mut s, "getThriftServerType", |_| {});
    assert_eq!(receive(&mut s, |i| i.read_i32().unwrap()).unwrap(), Some(2));
}

fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

#[test]
fn oversized_or_garbage_input_closes_only_that_connection() {
    in_both_modes(close_only_that_connection);
}

fn close_only_that_connection(service_time: Duration) {
    let config = EmulatorConfig {
        max_frame_bytes: 1024,
        service_time,
        ..EmulatorConfig::default()
    };
    let emu = start_with(config);
    let mut healthy = client(&emu, false, false);
    healthy
        .create_table(table_desc("t", &[("f", 1)]), vec![])
        .unwrap();

    // An unframed binary call whose table argument claims 2 GiB.
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    let mut msg = vec![0x80, 0x01, 0x00, 0x01];
    msg.extend_from_slice(&3u32.to_be_bytes());
    msg.extend_from_slice(b"get");
    msg.extend_from_slice(&1u32.to_be_bytes());
    msg.extend_from_slice(&[11, 0, 1]);
    msg.extend_from_slice(&0x7fff_fff0u32.to_be_bytes());
    s.write_all(&msg).unwrap();
    assert!(closed_by_server(&mut s));

    // A frame larger than the limit.
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    s.write_all(&4096u32.to_be_bytes()).unwrap();
    assert!(closed_by_server(&mut s));

    // An unframed request that goes on past the limit.
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    send(&mut s, "put", |o| {
        bytes(o, 1, b"t");
        strukt(
            o,
            2,
            &tput("r", vec![cv("f", "q", None, &"x".repeat(2000))]),
        );
    });
    assert!(closed_by_server(&mut s));

    // Not Thrift at all.
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert!(closed_by_server(&mut s));

    // Nothing was stored, and the other connection still works.
    let r = healthy.get(b"t".to_vec(), tget(b"r")).unwrap();
    assert!(r.column_values.is_empty());
    emu.shutdown();
}

#[test]
fn pipelined_requests_are_answered_in_order_up_to_a_broken_one() {
    in_both_modes(answered_up_to_a_broken_one);
}

fn answered_up_to_a_broken_one(service_time: Duration) {
    let (emu, mut s) = setup_with(service_time);
    let put = |row: &str| {
        message("put", |o| {
            bytes(o, 1, b"t");
            strukt(o, 2, &tput(row, vec![cv("f", "q", None, "x")]));
        })
    };
    let mut burst = put("r1");
    burst.extend(put("r2"));
    burst.extend(message("get", |o| {
        bytes(o, 1, b"t");
        strukt(o, 2, &tget(b"r1"));
    }));
    // A get whose first argument has no valid type: the stream is lost from there, while a
    // well-formed request still waits behind it.
    burst.extend_from_slice(&[0x80, 0x01, 0x00, 0x01]);
    burst.extend_from_slice(&3u32.to_be_bytes());
    burst.extend_from_slice(b"get");
    burst.extend_from_slice(&1u32.to_be_bytes());
    burst.extend_from_slice(&[0x7f, 0, 1]);
    burst.extend(put("r3"));
    s.write_all(&burst).unwrap();
    assert!(receive(&mut s, |_| ()).is_ok());
    assert!(receive(&mut s, |_| ()).is_ok());
    let got = receive(&mut s, |i| TResult::read_from_in_protocol(i).unwrap());
    assert_eq!(got.unwrap().unwrap().column_values.len(), 1);
    // Whatever the broken request gets, the connection closes and nothing after it is served.
    assert!(closed_by_server(&mut s));
    let mut other = client(&emu, false, false);
    let r3 = other.get(b"t".to_vec(), tget(b"r3")).unwrap();
    assert!(r3.column_values.is_empty());
    emu.shutdown();
}

#[test]
fn shutdown_closes_live_connections_and_frees_the_port() {
    in_both_modes(shutdown_closes_and_frees);
}

fn shutdown_closes_and_frees(service_time: Duration) {
    let emu = paced(service_time);
    let addr = emu.local_addr();
    let mut idle = TcpStream::connect(addr).unwrap();
    let mut c = client(&emu, true, true);
    assert_eq!(c.get_thrift_server_type().unwrap(), TThriftServerType::TWO);
    emu.shutdown();
    assert!(closed_by_server(&mut idle));
    assert!(c.get_thrift_server_type().is_err());
    // The listener is gone: binding the same port works again.
    std::net::TcpListener::bind(addr).unwrap();
}

/// Round-trip throughput over loopback, printed rather than asserted. Runs only with
/// `EMU_BENCH=1` (e.g. `EMU_BENCH=1 cargo test --release --lib emulator::server_tests::bench
/// -- --nocapture`).
#[test]
fn bench_round_trips() {
    if std::env::var_os("EMU_BENCH").is_none() {
        return;
    }
    let emu = start_local().unwrap();
    client(&emu, false, false)
        .create_table(table_desc("bench", &[("f", 1)]), vec![])
        .unwrap();
    const THREADS: usize = 4;
    const OPS: usize = 5_000;
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let emu = &emu;
            scope.spawn(move || {
                let mut c = client(emu, false, false);
                for n in 0..OPS {
                    let row = format!("r{t}-{}", n % 100);
                    let value = n.to_string();
                    c.put(
                        b"bench".to_vec(),
                        tput(&row, vec![cv("f", "q", None, &value)]),
                    )
                    .unwrap();
                    let r = c.get(b"bench".to_vec(), tget(row.as_bytes())).unwrap();
                    assert_eq!(r.column_values[0].value, value.as_bytes());
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let calls = (THREADS * OPS * 2) as f64;
    println!(
        "emulator: {calls} calls (put+get, {THREADS} connections) in {elapsed:?}: {:.0} calls/s",
        calls / elapsed.as_secs_f64()
    );
    emu.shutdown();
}

#[test]
fn a_service_time_is_paid_by_every_call_in_turn_per_connection() {
    let service_time = Duration::from_millis(40);
    let emu = paced(service_time);
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    // Three calls in one write: the replies leave one service time apart, never together.
    let one = message("getThriftServerType", |_| {});
    let started = Instant::now();
    s.write_all(&[one.clone(), one.clone(), one].concat())
        .unwrap();
    let mut arrivals = Vec::new();
    for _ in 0..3 {
        receive(&mut s, |i| i.read_i32().unwrap()).unwrap();
        arrivals.push(started.elapsed());
    }
    for (n, arrived) in arrivals.iter().enumerate() {
        assert!(
            *arrived >= service_time * (n as u32 + 1),
            "reply {n} after {arrived:?}: {arrivals:?}"
        );
    }
    // Not gathered into one write at the end: the last left well after the first.
    assert!(arrivals[2] - arrivals[0] >= service_time, "{arrivals:?}");
    emu.shutdown();
}

#[test]
fn connections_with_a_service_time_are_served_side_by_side() {
    let service_time = Duration::from_millis(100);
    let emu = paced(service_time);
    let mut conns: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(emu.local_addr()).unwrap())
        .collect();
    let one = message("getThriftServerType", |_| {});
    let started = Instant::now();
    for s in &mut conns {
        s.write_all(&one).unwrap();
    }
    for s in &mut conns {
        receive(s, |i| i.read_i32().unwrap()).unwrap();
    }
    let elapsed = started.elapsed();
    assert!(elapsed >= service_time, "{elapsed:?}");
    // In turn, eight calls would take eight service times.
    assert!(elapsed < service_time * 4, "{elapsed:?}");
    emu.shutdown();
}

#[test]
fn a_reply_still_due_when_the_client_stops_sending_is_delivered() {
    let service_time = Duration::from_millis(50);
    let emu = paced(service_time);
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    let started = Instant::now();
    send(&mut s, "getThriftServerType", |_| {});
    // The connection's thread sees the end of the requests before the reply is due, and must
    // not close the socket under it.
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(receive(&mut s, |i| i.read_i32().unwrap()).is_ok());
    assert!(started.elapsed() >= service_time);
    // Closed once the reply is out, not left open until the idle timeout.
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(matches!(s.read(&mut [0u8; 1]), Ok(0)));
    emu.shutdown();
}

#[test]
fn shutdown_drops_replies_still_due_instead_of_waiting_for_them() {
    let service_time = Duration::from_secs(30);
    let emu = paced(service_time);
    let mut s = TcpStream::connect(emu.local_addr()).unwrap();
    send(&mut s, "getThriftServerType", |_| {});
    // Let the call be served, so that its reply waits.
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    emu.shutdown();
    assert!(
        started.elapsed() < service_time / 2,
        "{:?}",
        started.elapsed()
    );
    assert!(closed_by_server(&mut s));
}

#[test]
fn a_connection_idle_past_the_timeout_is_closed_and_a_busy_one_is_not() {
    in_both_modes(idle_closed_busy_not);
}

fn idle_closed_busy_not(service_time: Duration) {
    let idle_timeout = Duration::from_millis(300);
    let config = EmulatorConfig {
        idle_timeout,
        service_time,
        ..EmulatorConfig::default()
    };
    let emu = start_with(config);
    let mut busy = client(&emu, false, false);
    let mut idle = TcpStream::connect(emu.local_addr()).unwrap();
    send(&mut idle, "getThriftServerType", |_| {});
    receive(&mut idle, |i| i.read_i32().unwrap()).unwrap();
    // The busy client calls more often than the timeout, for longer than it.
    let until = Instant::now() + idle_timeout * 3;
    while Instant::now() < until {
        assert_eq!(
            busy.get_thrift_server_type().unwrap(),
            TThriftServerType::TWO
        );
        std::thread::sleep(idle_timeout / 4);
    }
    assert!(closed_by_server(&mut idle));
    emu.shutdown();
}

#[test]
fn a_request_that_arrives_in_pieces_is_served_once_whole() {
    in_both_modes(|service_time| {
        for framed in [false, true] {
            served_once_whole(service_time, framed);
        }
    });
}

fn served_once_whole(service_time: Duration, framed: bool) {
    let (emu, mut s) = setup_with(service_time);
    let call = message("put", |o| {
        bytes(o, 1, b"t");
        strukt(o, 2, &tput("r", vec![cv("f", "q", None, "v")]));
    });
    let mut s2 = TcpStream::connect(emu.local_addr()).unwrap();
    let wire = if framed {
        [(call.len() as u32).to_be_bytes().to_vec(), call].concat()
    } else {
        call
    };
    // Byte by byte, each in its own segment, with a pause in the middle.
    s2.set_nodelay(true).unwrap();
    for (n, b) in wire.iter().enumerate() {
        s2.write_all(&[*b]).unwrap();
        if n == wire.len() / 2 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if framed {
        s2.read_exact(&mut [0u8; 4]).unwrap();
    }
    let reply = receive(&mut s2, |_| ());
    assert!(reply.is_ok(), "{reply:?}");
    // Served exactly once: the row holds the value.
    send(&mut s, "get", |o| {
        bytes(o, 1, b"t");
        strukt(o, 2, &tget(b"r"));
    });
    let got = receive(&mut s, |i| TResult::read_from_in_protocol(i).unwrap());
    assert_eq!(got.unwrap().unwrap().column_values[0].value, b"v");
    emu.shutdown();
}

#[test]
fn replies_larger_than_the_socket_takes_at_once_arrive_whole_and_in_order() {
    in_both_modes(larger_than_the_socket);
}

fn larger_than_the_socket(service_time: Duration) {
    let (emu, mut s) = setup_with(service_time);
    // Eight replies of 1 MiB each, asked for at once and left unread for a while: far more
    // than the socket buffers hold, so the server must wait for room more than once.
    let rows: Vec<String> = (0..8).map(|i| format!("r{i}")).collect();
    let mut c = client(&emu, true, false);
    for (i, row) in rows.iter().enumerate() {
        let mut cell = cv("f", "q", None, "");
        cell.value = vec![b'a' + i as u8; 1 << 20];
        c.put(b"t".to_vec(), tput(row, vec![cell])).unwrap();
    }
    let burst: Vec<u8> = rows
        .iter()
        .flat_map(|row| {
            message("get", |o| {
                bytes(o, 1, b"t");
                strukt(o, 2, &tget(row.as_bytes()));
            })
        })
        .collect();
    s.write_all(&burst).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // Another connection is served meanwhile.
    let mut other = client(&emu, false, false);
    assert_eq!(
        other.get_thrift_server_type().unwrap(),
        TThriftServerType::TWO
    );
    // A server that stopped writing when the socket was full would leave this waiting.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for i in 0..rows.len() {
        let got = receive(&mut s, |i| TResult::read_from_in_protocol(i).unwrap());
        let value = &got.unwrap().unwrap().column_values[0].value;
        assert_eq!(value.len(), 1 << 20);
        assert!(value.iter().all(|b| *b == b'a' + i as u8), "reply {i}");
    }
    emu.shutdown();
}
