//! Pipelined connections against a scripted gateway (framed binary, so it can split requests
//! without decoding them): several calls in flight answered in order, and a connection dying
//! mid-pipeline (sent calls follow the retry rules, unsent ones are replayed).

use std::io::{Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TFieldIdentifier, TInputProtocol,
    TMessageIdentifier, TMessageType, TOutputProtocol, TSerializable, TStructIdentifier, TType,
};

use super::{AsyncHBaseClient, CheckAndMutate, CompareOp, Get, HBaseConfig, Put, Transport};
use crate::thrift::hbase::{TGet, TResult};
use crate::Error;

/// What the gateway does on one accepted connection.
#[derive(Clone)]
enum Script {
    /// Answers every request as it comes.
    Serve,
    /// Answers every request as it comes, and reports how many each read of the socket brought.
    ServeCountingReads(mpsc::Sender<usize>),
    /// Reads `read` requests, answers the first `answer` of them in one write, then hangs up.
    ReadThenAnswer { read: usize, answer: usize },
    /// Reads one request and never answers (until the client gives up).
    Stall,
    /// Reads nothing for a while, then hangs up.
    DeafThenClose,
}

/// A gateway on 127.0.0.1 that runs `scripts` on its connections in order, then `Serve`.
fn gateway(scripts: Vec<Script>) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let thread = std::thread::spawn(move || {
        let mut scripts = scripts.into_iter();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let script = scripts.next().unwrap_or(Script::Serve);
            std::thread::spawn(move || run(stream, script));
        }
    });
    (addr, thread)
}

fn run(mut stream: TcpStream, script: Script) {
    match script {
        Script::Serve => {
            while let Some(frame) = read_frame(&mut stream) {
                if stream.write_all(&answer(&frame)).is_err() {
                    return;
                }
            }
        }
        Script::ServeCountingReads(reads) => {
            let mut buf = vec![0u8; 64 << 10];
            while let Ok(n @ 1..) = stream.read(&mut buf) {
                let mut got = Cursor::new(&buf[..n]);
                let mut count = 0;
                while let Some(frame) = read_frame(&mut got) {
                    count += 1;
                    if stream.write_all(&answer(&frame)).is_err() {
                        return;
                    }
                }
                assert_eq!(got.position() as usize, n, "the test's requests are small");
                let _ = reads.send(count);
            }
        }
        Script::ReadThenAnswer { read, answer: n } => {
            let frames: Vec<Vec<u8>> = (0..read).map_while(|_| read_frame(&mut stream)).collect();
            let replies: Vec<u8> = frames.iter().take(n).flat_map(|f| answer(f)).collect();
            let _ = stream.write_all(&replies);
        }
        Script::Stall => {
            let _ = read_frame(&mut stream);
            std::thread::sleep(Duration::from_secs(2));
        }
        Script::DeafThenClose => std::thread::sleep(Duration::from_millis(300)),
    }
}

fn read_frame(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    stream.read_exact(&mut frame).ok()?;
    Some(frame)
}

/// The reply to a get (the row asked for) or a checkAndMutate (applied), framed.
fn answer(frame: &[u8]) -> Vec<u8> {
    let mut i = TBinaryInputProtocol::new(frame, true);
    let call = i.read_message_begin().unwrap();
    let mut row = Vec::new();
    i.read_struct_begin().unwrap();
    loop {
        let f = i.read_field_begin().unwrap();
        match (f.field_type, f.id) {
            (TType::Stop, _) => break,
            (TType::Struct, Some(2)) if call.name == "get" => {
                row = TGet::read_from_in_protocol(&mut i).unwrap().row
            }
            (other, _) => i.skip(other).unwrap(),
        }
    }
    let mut message = Vec::new();
    let mut o = TBinaryOutputProtocol::new(&mut message, true);
    let ident =
        TMessageIdentifier::new(call.name.clone(), TMessageType::Reply, call.sequence_number);
    o.write_message_begin(&ident).unwrap();
    o.write_struct_begin(&TStructIdentifier::new("result"))
        .unwrap();
    if call.name == "get" {
        o.write_field_begin(&TFieldIdentifier::new("success", TType::Struct, 0))
            .unwrap();
        TResult::new(row, Vec::new(), None, None)
            .write_to_out_protocol(&mut o)
            .unwrap();
    } else {
        o.write_field_begin(&TFieldIdentifier::new("success", TType::Bool, 0))
            .unwrap();
        o.write_bool(true).unwrap();
    }
    o.write_field_end().unwrap();
    o.write_field_stop().unwrap();
    o.write_struct_end().unwrap();
    o.write_message_end().unwrap();
    let mut framed = (message.len() as u32).to_be_bytes().to_vec();
    framed.extend(message);
    framed
}

/// One connection that takes every call pipelined.
async fn client(addr: &str, tune: impl FnOnce(HBaseConfig) -> HBaseConfig) -> AsyncHBaseClient {
    let config = HBaseConfig::new(addr)
        .transport(Transport::Framed)
        .pool_size(1)
        .pipeline_per_connection(8);
    AsyncHBaseClient::connect(tune(config)).await.unwrap()
}

fn cam(value: Vec<u8>) -> CheckAndMutate {
    CheckAndMutate::new("c", "f", "q", CompareOp::Equal, "").put(Put::new("c").add("f", "q", value))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_together_are_answered_in_order() {
    // Nothing is answered before four requests arrived: only pipelining gets past it.
    let (addr, _gw) = gateway(vec![Script::ReadThenAnswer { read: 4, answer: 4 }]);
    let c = client(&addr, |c| c).await;
    let gets: Vec<Get> = (0..4).map(|i| Get::new(format!("r{i}"))).collect();
    let (a, b, d, e) = tokio::join!(
        c.get("t", &gets[0]),
        c.get("t", &gets[1]),
        c.get("t", &gets[2]),
        c.get("t", &gets[3]),
    );
    let rows: Vec<Vec<u8>> = [a, b, d, e].into_iter().map(|r| r.unwrap().row).collect();
    assert_eq!(rows, [b"r0", b"r1", b"r2", b"r3"]);
    assert_eq!(c.rpc_count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn calls_made_ready_by_one_event_leave_in_one_write() {
    let (reads_tx, reads) = mpsc::channel();
    let (addr, _gw) = gateway(vec![Script::ServeCountingReads(reads_tx)]);
    let c = Arc::new(client(&addr, |c| c).await);
    c.get("t", &Get::new("warm")).await.unwrap();
    assert_eq!(reads.recv().unwrap(), 1);
    // Four tasks woken by one event on the runtime's thread, as transactions are by one
    // oracle answer.
    let (go, ready) = tokio::sync::watch::channel(false);
    let calls: Vec<_> = (0..4)
        .map(|i| {
            let (c, mut ready) = (Arc::clone(&c), ready.clone());
            tokio::spawn(async move {
                ready.wait_for(|go| *go).await.unwrap();
                c.get("t", &Get::new(format!("r{i}"))).await.unwrap().row
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    tokio::spawn(async move { go.send(true).unwrap() })
        .await
        .unwrap();
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap(), format!("r{i}").into_bytes());
    }
    assert_eq!(
        reads.recv().unwrap(),
        4,
        "the four requests left in one write"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_dying_mid_pipeline_settles_each_call_by_the_retry_rules() {
    // Three requests arrive, one reply leaves, the connection dies.
    let (addr, _gw) = gateway(vec![Script::ReadThenAnswer { read: 3, answer: 1 }]);
    let c = client(&addr, |c| c).await;
    let (g0, g2) = (Get::new("r0"), Get::new("r2"));
    let cam = cam(b"x".to_vec());
    let (first, cas, last) = tokio::join!(
        c.get("t", &g0),
        c.check_and_mutate("t", &cam),
        c.get("t", &g2),
    );
    assert_eq!(
        first.unwrap().row,
        b"r0",
        "answered before the connection died"
    );
    match cas {
        Err(Error::OutcomeUnknown { method, source, .. }) => {
            assert_eq!(method, "checkAndMutate");
            assert!(matches!(*source, Error::Transport { .. }), "{source:?}");
        }
        other => panic!("a sent checkAndMutate is never resent: {other:?}"),
    }
    assert_eq!(last.unwrap().row, b"r2", "a sent get is replayed");
    assert_eq!(c.rpc_count(), 4, "three calls and one replay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_never_fully_left_is_replayed_whatever_it_is() {
    // Too big for the socket buffers of a gateway that reads nothing and then hangs up.
    let (addr, _gw) = gateway(vec![Script::DeafThenClose]);
    let c = client(&addr, |c| c).await;
    let applied = c.check_and_mutate("t", &cam(vec![7; 48 << 20])).await;
    assert!(applied.unwrap(), "replayed on a fresh connection");
    assert_eq!(c.rpc_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_timeout_breaks_the_connection_and_follows_the_retry_rules() {
    let (addr, _gw) = gateway(vec![Script::Stall, Script::Stall]);
    // A call timeout above the read timeout leaves time to replay a call that got no reply.
    let c = client(&addr, |c| {
        c.read_timeout(Duration::from_millis(200))
            .call_timeout(Duration::from_secs(5))
    })
    .await;
    match c.check_and_mutate("t", &cam(b"x".to_vec())).await {
        Err(Error::OutcomeUnknown { source, .. }) => match *source {
            Error::Transport { source, .. } => {
                assert_eq!(source.kind(), std::io::ErrorKind::TimedOut)
            }
            other => panic!("expected a transport error, got {other:?}"),
        },
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    // The stalled connection was discarded; a get is replayed past the second stall.
    assert_eq!(c.get("t", &Get::new("r")).await.unwrap().row, b"r");
    assert_eq!(c.rpc_count(), 3);
}

#[test]
fn blocking_calls_work_from_any_thread_and_inside_runtimes() {
    let (_emulator, client) = emulated_table();
    client.put("t", &Put::new("r").add("f", "q", "v")).unwrap();
    let get = || {
        client
            .get("t", &Get::new("r"))
            .unwrap()
            .value(b"f", b"q")
            .map(<[u8]>::to_vec)
    };
    assert_eq!(get(), Some(b"v".to_vec()));
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(current.block_on(async { get() }), Some(b"v".to_vec()));
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(multi.block_on(async { get() }), Some(b"v".to_vec()));
    let spawned = {
        let client = client.clone();
        multi.spawn(async move { client.get("t", &Get::new("r")).map(|r| r.cells.len()) })
    };
    assert_eq!(multi.block_on(spawned).unwrap().unwrap(), 1);
    // An async client made inside a multi-thread runtime, used blocking from a plain thread.
    let addr = client.config().addr.clone();
    let ambient = multi
        .block_on(AsyncHBaseClient::connect(HBaseConfig::new(addr)))
        .unwrap();
    let blocking = ambient.blocking();
    let got = std::thread::spawn(move || blocking.get("t", &Get::new("r")).unwrap())
        .join()
        .unwrap();
    assert_eq!(got.value(b"f", b"q"), Some(&b"v"[..]));
}

/// Every future the async client returns can move between threads (never polled here).
#[test]
fn every_async_call_is_send() {
    fn send<T: Send>(_: T) {}
    let (_emulator, blocking) = emulated_table();
    let c = blocking.asynchronous();
    let (get, put, scan) = (
        Get::new("r"),
        Put::new("r").add("f", "q", "v"),
        super::Scan::new(),
    );
    let (delete, cam) = (super::Delete::new("r"), cam(b"x".to_vec()));
    let (inc, app) = (super::Increment::new("r"), super::Append::new("r"));
    let mutations = super::RowMutations::new("r");
    send(AsyncHBaseClient::connect(HBaseConfig::new("127.0.0.1:1")));
    send(c.get("t", &get));
    send(c.get_many("t", std::slice::from_ref(&get)));
    send(c.exists("t", &get));
    send(c.put("t", &put));
    send(c.put_many("t", std::slice::from_ref(&put)));
    send(c.delete("t", &delete));
    send(c.delete_many("t", std::slice::from_ref(&delete)));
    send(c.check_and_mutate("t", &cam));
    send(c.check_and_mutate_all(&[("t", &cam)]));
    send(c.check_and_put("t", b"r", b"f", b"q", None, &put));
    send(c.check_and_delete("t", b"r", b"f", b"q", Some(b"v"), &delete));
    send(c.mutate_row("t", &mutations));
    send(c.increment("t", &inc));
    send(c.append("t", &app));
    send(c.scan_all("t", &scan));
    send(c.scan_results("t", &scan, 10));
    send(c.open_scanner("t", &scan));
    send(c.close_scanner(1));
    send(c.table_descriptor("t"));
}

/// An emulator on 127.0.0.1 and a pooled client of it, with table `t` (family `f`) created.
fn emulated_table() -> (hbase_emulator::EmulatorHandle, super::HBaseClient) {
    use super::{FamilyDescriptor, HBaseClient, TableDescriptor};
    let emulator = hbase_emulator::start_local().unwrap();
    let client = HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string())).unwrap();
    client
        .admin()
        .create_table(&TableDescriptor::new("t").family(FamilyDescriptor::new("f")))
        .unwrap();
    (emulator, client)
}
