//! Behaviour of the client itself: every transport and protocol, the pool after dropped
//! connections or a restart, lost replies, and use from tokio. The cases that need a gateway
//! of their own (every transport and protocol: a real gateway speaks only the one it was
//! started with; a gateway restart) always run on an emulator; the rest run on the gateway
//! named by `HBASE_THRIFT=host:port` when it is set, through the fault-injecting proxy where
//! they need one.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::proxy::Proxy;
use common::{Gateway, TestTable};
use hbase_emulator::{self as emulator, EmulatorConfig};
use percolator::hbase::{
    Append, CheckAndMutate, CompareOp, FamilyDescriptor, Get, Increment, Protocol, Put, Scan,
    ServerType, TableDescriptor, Transport,
};
use percolator::{Error, HBaseClient, HBaseConfig, RetryClass};

fn client_for(addr: &str, config: impl FnOnce(HBaseConfig) -> HBaseConfig) -> HBaseClient {
    HBaseClient::connect(config(HBaseConfig::new(addr))).expect("connect")
}

fn create(client: &HBaseClient, name: &str) {
    let desc = TableDescriptor::new(name).family(FamilyDescriptor::new("f"));
    client.admin().create_table(&desc).expect("create table");
}

/// A table with family `f`, created through `client` and dropped after the test.
fn table(gw: &Gateway, client: &HBaseClient) -> TestTable {
    gw.table_via(client, vec![FamilyDescriptor::new("f")])
}

#[test]
fn every_transport_and_protocol_combination_works() {
    let gw = Gateway::emulator(EmulatorConfig::default());
    for transport in [Transport::Buffered, Transport::Framed] {
        for protocol in [Protocol::Binary, Protocol::Compact] {
            // Three requests per connection, so the pipelined batch below shares one.
            let c = client_for(gw.addr(), |cfg| {
                cfg.transport(transport)
                    .protocol(protocol)
                    .pipeline_per_connection(3)
            });
            let table = format!("combo_{transport:?}_{protocol:?}");
            create(&c, &table);
            assert_eq!(c.admin().server_type().unwrap(), ServerType::Two);
            c.put(&table, &Put::new("r").add("f", "q", "v")).unwrap();
            assert_eq!(
                c.get(&table, &Get::new("r")).unwrap().value(b"f", b"q"),
                Some(&b"v"[..])
            );
            let put = Put::new("r2").add("f", "q", "w");
            assert!(c
                .check_and_put(&table, b"r2", b"f", b"q", None, &put)
                .unwrap());
            let rows: Vec<_> = c
                .scan(&table, &Scan::new().caching(1))
                .unwrap()
                .map(|r| r.unwrap().row)
                .collect();
            assert_eq!(
                rows,
                vec![b"r".to_vec(), b"r2".to_vec()],
                "{transport:?}/{protocol:?}"
            );
            // Pipelined: several requests in one write, each with its own frame when framed.
            let cams: Vec<CheckAndMutate> = ["p1", "p2", "p3"]
                .iter()
                .map(|row| {
                    CheckAndMutate::new(*row, "f", "q", CompareOp::Equal, "")
                        .put(Put::new(*row).add("f", "q", "x"))
                })
                .collect();
            let calls: Vec<(&str, &CheckAndMutate)> =
                cams.iter().map(|cam| (table.as_str(), cam)).collect();
            let applied = c.check_and_mutate_all(&calls);
            assert!(
                applied.iter().all(|r| matches!(r, Ok(true))),
                "{transport:?}/{protocol:?}: {applied:?}"
            );
        }
    }
}

#[test]
fn pool_reconnects_after_the_gateway_restarts() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let first = emulator::start(listener, EmulatorConfig::default()).unwrap();
    let c = client_for(&addr.to_string(), |cfg| cfg);
    create(&c, "before");
    first.shutdown();

    let second =
        emulator::start(TcpListener::bind(addr).unwrap(), EmulatorConfig::default()).unwrap();
    let before = c.rpc_count();
    assert!(
        !c.admin().table_exists("before").unwrap(),
        "a new, empty emulator answered"
    );
    assert_eq!(
        c.rpc_count() - before,
        2,
        "one call on the dead connection, one replay"
    );
    create(&c, "after");
    let counter = c
        .increment("after", &Increment::new("r").add("f", "n", 1))
        .unwrap();
    assert!(counter.value(b"f", b"n").is_some());
    second.shutdown();
}

#[test]
fn stale_pooled_connections_are_replaced_without_an_extra_rpc() {
    let gw = Gateway::from_env();
    let proxy = Proxy::start(gw.addr());
    let max_idle = Duration::from_millis(100);
    let c = client_for(&proxy.addr(), |cfg| cfg.max_idle(max_idle));
    let t = table(&gw, &c);
    // The gateway drops the idle connection; the client does not notice until it uses it.
    proxy.sever_all();
    std::thread::sleep(max_idle * 3);

    let before = c.rpc_count();
    let counter = c
        .increment(t.name(), &Increment::new("r").add("f", "n", 1))
        .expect("a fresh connection, not the dead one");
    assert_eq!(counter.value(b"f", b"n"), Some(&1i64.to_be_bytes()[..]));
    assert_eq!(c.rpc_count() - before, 1);
    assert_eq!(proxy.accepted(), 2);
}

#[test]
fn a_dropped_connection_replays_idempotent_calls_once() {
    let gw = Gateway::from_env();
    let proxy = Proxy::start(gw.addr());
    let c = client_for(&proxy.addr(), |cfg| cfg);
    let t = table(&gw, &c);
    c.put(t.name(), &Put::new("r").add("f", "q", "v")).unwrap();
    proxy.sever_all();
    let before = c.rpc_count();
    assert_eq!(
        c.get(t.name(), &Get::new("r")).unwrap().value(b"f", b"q"),
        Some(&b"v"[..])
    );
    assert_eq!(c.rpc_count() - before, 2);

    proxy.lose_next_reply();
    let before = c.rpc_count();
    c.put(t.name(), &Put::new("r").add_at("f", "q", 7, "again"))
        .expect("puts are replayed too");
    assert_eq!(c.rpc_count() - before, 2);
}

fn assert_outcome_unknown(err: Error, method: &str, table: &str, row: &[u8]) {
    assert_eq!(err.retry_class(), RetryClass::Undetermined);
    match err {
        Error::OutcomeUnknown {
            method: m,
            table: t,
            row: r,
            source,
        } => {
            assert_eq!((m, t.as_str(), r.as_slice()), (method, table, row));
            assert!(matches!(*source, Error::Transport { .. }), "{source:?}");
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
}

#[test]
fn lost_replies_of_non_idempotent_calls_are_outcome_unknown() {
    let gw = Gateway::from_env();
    let proxy = Proxy::start(gw.addr());
    let c = client_for(&proxy.addr(), |cfg| cfg);
    let table = table(&gw, &c);
    let t = table.name();
    let value = |row: &str, q: &str| {
        c.get(t, &Get::new(row))
            .unwrap()
            .value(b"f", q.as_bytes())
            .map(<[u8]>::to_vec)
    };

    proxy.lose_next_reply();
    let put = Put::new("a").add("f", "q", "1");
    let err = c
        .check_and_put(t, b"a", b"f", b"q", None, &put)
        .unwrap_err();
    assert_outcome_unknown(err, "checkAndPut", t, b"a");
    assert_eq!(
        value("a", "q"),
        Some(b"1".to_vec()),
        "the gateway applied it; only the reply was lost"
    );

    proxy.lose_next_reply();
    let cam = CheckAndMutate::new("a", "f", "q", CompareOp::Equal, "1")
        .put(Put::new("a").add("f", "q", "2"));
    assert_outcome_unknown(
        c.check_and_mutate(t, &cam).unwrap_err(),
        "checkAndMutate",
        t,
        b"a",
    );
    assert_eq!(value("a", "q"), Some(b"2".to_vec()));

    proxy.lose_next_reply();
    let err = c
        .increment(t, &Increment::new("n").add("f", "c", 1))
        .unwrap_err();
    assert_outcome_unknown(err, "increment", t, b"n");
    assert_eq!(
        value("n", "c"),
        Some(1i64.to_be_bytes().to_vec()),
        "applied exactly once: never replayed"
    );

    proxy.lose_next_reply();
    let err = c
        .append(t, &Append::new("s").add("f", "c", "x"))
        .unwrap_err();
    assert_outcome_unknown(err, "append", t, b"s");
    assert_eq!(value("s", "c"), Some(b"x".to_vec()));
}

#[test]
fn a_lost_scanner_page_fails_instead_of_skipping_rows() {
    let gw = Gateway::from_env();
    let proxy = Proxy::start(gw.addr());
    let c = client_for(&proxy.addr(), |cfg| cfg);
    let t = table(&gw, &c);
    let puts: Vec<Put> = (0..6)
        .map(|i| Put::new(format!("r{i}")).add("f", "q", "v"))
        .collect();
    c.put_many(t.name(), &puts).unwrap();

    let mut scanner = c.scan(t.name(), &Scan::new().caching(2)).unwrap();
    assert_eq!(scanner.next().unwrap().unwrap().row, b"r0");
    assert_eq!(scanner.next().unwrap().unwrap().row, b"r1");
    proxy.lose_next_reply();
    let err = scanner.next().unwrap().unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(scanner.next().is_none());
}

#[test]
fn an_unreachable_gateway_is_a_transport_error() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = HBaseClient::connect(HBaseConfig::new(addr.to_string())).unwrap_err();
    match err {
        Error::Transport {
            addr: a, source, ..
        } => {
            assert_eq!(a, addr.to_string());
            assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
        }
        other => panic!("expected Transport, got {other:?}"),
    }
    let zero = HBaseClient::connect(HBaseConfig::new(addr.to_string()).pool_size(0)).unwrap_err();
    assert!(matches!(zero, Error::IllegalArgument { .. }));
}

#[test]
fn clones_share_the_pool_and_the_rpc_count() {
    let gw = Gateway::from_env();
    let c = client_for(gw.addr(), |cfg| cfg);
    let clone = c.clone();
    let before = c.rpc_count();
    clone.admin().list_tables().unwrap();
    c.admin().list_namespaces().unwrap();
    assert_eq!(c.rpc_count() - before, 2);
    assert_eq!(clone.rpc_count(), c.rpc_count());
}

#[test]
fn async_calls_do_not_block_a_current_thread_runtime() {
    let gw = Gateway::from_env();
    let proxy = Proxy::start(gw.addr());
    let c = client_for(&proxy.addr(), |cfg| cfg.pool_size(4));
    let table = table(&gw, &c);
    let t = table.name().to_owned();
    c.put(&t, &Put::new("r").add("f", "q", "v")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let async_client = c.asynchronous();
    runtime.block_on(async {
        let mut gets = tokio::task::JoinSet::new();
        for _ in 0..64 {
            let a = async_client.clone();
            let t = t.clone();
            gets.spawn(async move { a.get(&t, &Get::new("r")).await });
        }
        let mut done = 0;
        while let Some(result) = gets.join_next().await {
            assert_eq!(result.unwrap().unwrap().value(b"f", b"q"), Some(&b"v"[..]));
            done += 1;
        }
        assert_eq!(done, 64);

        // With every reply held back, the runtime's only thread must still run timers.
        proxy.pause();
        let stalled = {
            let (a, t) = (async_client.clone(), t.clone());
            tokio::spawn(async move { a.get(&t, &Get::new("r")).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !stalled.is_finished(),
            "the get cannot finish while its reply is held"
        );
        proxy.resume();
        let got = stalled.await.unwrap().unwrap();
        assert_eq!(got.value(b"f", b"q"), Some(&b"v"[..]));
    });
}

/// A server on 127.0.0.1 that is not a Thrift gateway: on each connection it answers the
/// client's first bytes with `answer` (nothing, if empty), then reads whatever else comes
/// without a word, until the client closes the connection.
fn impostor(answer: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut answered = answer.is_empty();
                while let Ok(1..) = stream.read(&mut buf) {
                    if !answered {
                        answered = stream.write_all(answer).is_ok();
                    }
                }
            });
        }
    });
    addr
}

/// A get from a fresh client of `transport` and `protocol` to `addr`, which must fail, and
/// within 5 s: the client and the get's error.
fn get_fails_at_once(addr: &str, transport: Transport, protocol: Protocol) -> (HBaseClient, Error) {
    let c = client_for(addr, |cfg| {
        cfg.transport(transport)
            .protocol(protocol)
            .read_timeout(Duration::from_secs(20))
    });
    let started = Instant::now();
    let err = c.get("t", &Get::new("r")).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{transport:?} {protocol:?}: {:?} to fail: {err}",
        started.elapsed()
    );
    (c, err)
}

const HTTP_400: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html;charset=iso-8859-1\r\nContent-Length: 50\r\nConnection: close\r\n\r\n<h1>Bad Message 400</h1><pre>reason: Bad Request</pre>";

#[test]
fn an_http_server_on_the_gateway_address_is_named_at_once() {
    let addr = impostor(HTTP_400);
    for transport in [Transport::Buffered, Transport::Framed] {
        for protocol in [Protocol::Binary, Protocol::Compact] {
            let (c, err) = get_fails_at_once(&addr, transport, protocol);
            match &err {
                Error::NotThrift {
                    addr: a,
                    head,
                    http,
                } => {
                    assert_eq!(a, &addr);
                    assert!(http, "{err:?}");
                    assert!(head.starts_with(b"HTTP/1.1 400 Bad Request"), "{head:?}");
                }
                other => panic!("{transport:?} {protocol:?}: expected NotThrift, got {other:?}"),
            }
            assert_eq!(err.retry_class(), RetryClass::Fatal);
            let text = err.to_string();
            assert!(
                text.starts_with(&format!(
                    "the HBase gateway at {addr} answered in HTTP (HTTP/1.1 400 Bad Request): \
                     it may be running in HTTP mode (hbase.regionserver.thrift.http=true); use \
                     http://{addr}"
                )),
                "{text}"
            );
            assert!(!text.contains('\n'), "{text}");
            // Nothing reached a gateway: not an unknown outcome, and nothing replayed.
            let before = c.rpc_count();
            let put = Put::new("r").add("f", "q", "v");
            let cas = c.check_and_put("t", b"r", b"f", b"q", None, &put);
            assert!(matches!(cas, Err(Error::NotThrift { .. })), "{cas:?}");
            assert_eq!(c.rpc_count() - before, 1);
        }
    }
}

#[test]
fn a_server_answering_garbage_is_named_at_once() {
    const GARBAGE: [&[u8]; 3] = [
        b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n",
        // A TLS alert, as a TLS port answers plain bytes.
        &[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32],
        // Taken for a binary message's name length, these asked for 16 MiB more and waited.
        &[0x01, 0x02, 0x03, 0x04, 0x9a, 0x7f, 0x11, 0xe0, 0x00, 0x42],
    ];
    for garbage in GARBAGE {
        let addr = impostor(garbage);
        let c = client_for(&addr, |cfg| cfg.read_timeout(Duration::from_secs(20)));
        let started = Instant::now();
        let err = c.get("t", &Get::new("r")).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?} to fail: {err}",
            started.elapsed()
        );
        match &err {
            Error::NotThrift {
                addr: a,
                head,
                http,
            } => {
                assert_eq!(a, &addr);
                assert!(!http);
                assert_eq!(head.as_slice(), garbage);
            }
            other => panic!("expected NotThrift, got {other:?}"),
        }
        let text = err.to_string();
        if garbage[0] == 0x15 {
            // A TLS port: the advice is the scheme, also for an HTTP request sent to it.
            assert_eq!(
                text,
                format!(
                    "the HBase gateway at {addr} answered in TLS (\\x15\\x03\\x03\\x00\\x02\\x022): \
                     it serves HTTPS (hbase.thrift.ssl.enabled); use https://{addr}"
                )
            );
            let over_http = client_for(&format!("http://{addr}"), |cfg| cfg);
            let err = over_http.get("t", &Get::new("r")).unwrap_err().to_string();
            assert!(
                err.contains("answered an HTTP request in TLS") && err.contains("use https://"),
                "{err}"
            );
            continue;
        }
        assert!(
            text.starts_with(&format!(
                "the HBase gateway at {addr} answered with bytes that cannot begin a Thrift reply ("
            )),
            "{text}"
        );
        assert!(text.contains("transport (buffered or framed)"), "{text}");
    }
}

/// What the old client did against a gateway that accepts connections and never answers: the
/// read timeout ran out, the get was replayed on a fresh connection, and ran out again.
#[test]
fn a_silent_gateway_fails_a_call_within_the_read_timeout() {
    let addr = impostor(b"");
    let read = Duration::from_secs(2);
    let c = client_for(&addr, |cfg| cfg.read_timeout(read));
    let started = Instant::now();
    let err = c.get("t", &Get::new("r")).unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed >= read, "gave up early, after {elapsed:?}");
    assert!(
        elapsed < read * 2,
        "took {elapsed:?} for a read timeout of {read:?}"
    );
    assert_eq!(c.rpc_count(), 1, "no time was left for a replay");
    assert_eq!(err.retry_class(), RetryClass::Retry);
    match &err {
        Error::Transport {
            addr: a, source, ..
        } => {
            assert_eq!(a, &addr);
            assert_eq!(source.kind(), std::io::ErrorKind::TimedOut);
        }
        other => panic!("expected Transport, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("transport error talking to the HBase gateway at {addr}: no reply within the read timeout of 2s")
    );
    // A call that may have been applied says so, with the same cause and bound.
    let started = Instant::now();
    let put = Put::new("r").add("f", "q", "v");
    let err = c
        .check_and_put("t", b"r", b"f", b"q", None, &put)
        .unwrap_err();
    assert!(started.elapsed() < read * 2, "took {:?}", started.elapsed());
    assert_outcome_unknown(err, "checkAndPut", "t", b"r");
}

#[test]
fn a_call_timeout_bounds_the_whole_call_and_its_replay() {
    let addr = impostor(b"");
    // Above the read timeout: the get that got no reply is replayed once, within it.
    let read = Duration::from_secs(1);
    let c = client_for(&addr, |cfg| {
        cfg.read_timeout(read).call_timeout(Duration::from_secs(10))
    });
    let started = Instant::now();
    let err = c.get("t", &Get::new("r")).unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= read * 2 && elapsed < read * 4,
        "took {elapsed:?}"
    );
    assert_eq!(c.rpc_count(), 2);
    let text = err.to_string();
    let prefix = format!(
        "transport error talking to the HBase gateway at {addr}: no reply within the read timeout of 1s; 2 tries took "
    );
    assert!(
        text.starts_with(&prefix) && text.ends_with("s in all"),
        "{text}"
    );

    // Below it: the call timeout ends the wait, and the message says which limit ran out.
    let call = Duration::from_secs(1);
    let c = client_for(&addr, |cfg| {
        cfg.read_timeout(Duration::from_secs(30)).call_timeout(call)
    });
    let started = Instant::now();
    let err = c.get("t", &Get::new("r")).unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed >= call && elapsed < call * 2, "took {elapsed:?}");
    assert_eq!(
        err.to_string(),
        format!("transport error talking to the HBase gateway at {addr}: no reply within the call timeout of 1s")
    );
}

/// A raw Thrift gateway hangs up on an HTTP request and on a TLS handshake without a word;
/// the error then says which scheme to drop, and stays a transport error (retried), since a
/// restarting gateway hangs up in the same way.
#[test]
fn a_raw_gateway_reached_with_a_scheme_is_told_to_drop_it() {
    let gw = Gateway::from_env();
    if gw.addr().contains("://") {
        eprintln!("skipped: the gateway in the environment is not a raw socket");
        return;
    }
    for (scheme, advice) in [
        ("http://", "give its address as host:port, without http://"),
        ("https://", "or http://host:port, without https://"),
    ] {
        let addr = format!("{scheme}{}", gw.addr());
        let started = Instant::now();
        let err = HBaseClient::connect(
            HBaseConfig::new(&addr)
                .connect_timeout(Duration::from_secs(10))
                .read_timeout(Duration::from_secs(10)),
        )
        .and_then(|c| c.get("t", &Get::new("r")))
        .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "{addr}: {:?} to fail: {err}",
            started.elapsed()
        );
        assert!(matches!(err, Error::Transport { .. }), "{addr}: {err:?}");
        assert!(err.to_string().contains(advice), "{addr}: {err}");
    }
}

/// A gateway that requires Kerberos refuses plain Thrift with a SASL negotiation frame (status
/// ERROR, a length, the reason); the error names Kerberos and the settings, at once, for every
/// transport and protocol.
#[test]
fn a_sasl_refusal_names_kerberos_at_once() {
    let addr = impostor(b"\x04\x00\x00\x00\x13Invalid status -128");
    for transport in [Transport::Buffered, Transport::Framed] {
        for protocol in [Protocol::Binary, Protocol::Compact] {
            let (_, err) = get_fails_at_once(&addr, transport, protocol);
            assert!(matches!(err, Error::NotThrift { .. }), "{err:?}");
            assert_eq!(err.retry_class(), RetryClass::Fatal);
            let text = err.to_string();
            assert!(
                text.contains("SASL refusal (\"Invalid status -128\")")
                    && text.contains("requires Kerberos")
                    && text.contains("--kerberos-principal"),
                "{text}"
            );
        }
    }
}

/// HBase's gateway with `hbase.thrift.security.qop` set neither answers nor closes a plain
/// request; it refuses only a SASL negotiation. The client's probe after a second of silence
/// finds that, and the call fails naming Kerberos, long before the read timeout.
#[test]
fn a_silent_sasl_gateway_is_found_by_its_refusal_of_a_sasl_start() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut first = [0u8; 5];
                if stream.read_exact(&mut first).is_ok() && first[0] == 1 {
                    let _ = stream.write_all(b"\x03\x00\x00\x00\x13GSS initiate failed");
                }
                // Anything else: held open, unanswered.
                let mut rest = [0u8; 4096];
                while let Ok(1..) = stream.read(&mut rest) {}
            });
        }
    });
    let c = client_for(&addr, |cfg| cfg.read_timeout(Duration::from_secs(20)));
    let started = Instant::now();
    let err = c.get("t", &Get::new("r")).unwrap_err();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "{took:?}: {err}");
    assert_eq!(err.retry_class(), RetryClass::Fatal, "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("SASL refusal (\"GSS initiate failed\")")
            && text.contains("requires Kerberos"),
        "{text}"
    );
}
