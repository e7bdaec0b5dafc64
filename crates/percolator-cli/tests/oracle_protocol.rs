//! Bad input closes only the offending connection: garbage, wrong magic or version, absurd
//! counts, unknown requests, silent and stalled peers, too many connections. Meanwhile a real
//! client is served throughout. Also pipelining and the stats request on the raw protocol.

mod oracle_common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use oracle_common::{assert_unique_and_increasing, Requesters};
use percolator::oracle::protocol::{self, ErrorCode};
use percolator::oracle::{ClientConfig, MemoryStore, OracleServer, ServerConfig};
use percolator::OracleClient;

fn strict_server() -> percolator::OracleHandle {
    let config = ServerConfig {
        handshake_timeout: Duration::from_millis(300),
        frame_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(800),
        max_connections: 8,
        ..ServerConfig::default()
    };
    OracleServer::start("127.0.0.1:0", MemoryStore::new(), config).unwrap()
}

fn raw(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

fn shake_hands(addr: &str) -> TcpStream {
    let mut s = raw(addr);
    s.write_all(&protocol::client_hello()).unwrap();
    let mut hello = [0u8; protocol::HELLO_LEN];
    s.read_exact(&mut hello).unwrap();
    protocol::check_server_hello(&hello).unwrap();
    s
}

/// Reads until the server closes the connection; returns what it sent before.
fn read_until_closed(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => got,
        Err(e) if e.kind() == ErrorKind::ConnectionReset => got,
        Err(e) => panic!("expected the server to close the connection, got {e}"),
    }
}

fn expect_error_reply(bytes: &[u8], code: ErrorCode) {
    assert_eq!(bytes.first(), Some(&protocol::REP_ERROR), "{bytes:?}");
    assert_eq!(u16::from_be_bytes([bytes[1], bytes[2]]), code as u16);
    let len = u16::from_be_bytes([bytes[3], bytes[4]]) as usize;
    assert_eq!(bytes.len(), 5 + len, "nothing follows the error reply");
}

fn timestamps_request(count: u32) -> Vec<u8> {
    let mut v = Vec::new();
    protocol::encode_timestamps_request(&mut v, count);
    v
}

#[test]
fn bad_peers_are_disconnected_while_everyone_else_is_served() {
    let server = strict_server();
    let addr = server.local_addr().to_string();
    let client = Arc::new(
        OracleClient::connect(std::slice::from_ref(&addr), ClientConfig::default()).unwrap(),
    );
    let requesters = Requesters::start(&[Arc::clone(&client)], 2);

    // Garbage instead of a hello: closed without an answer.
    let mut s = raw(&addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_until_closed(&mut s), b"");

    // A future protocol version: told so, then closed.
    let mut s = raw(&addr);
    let mut hello = protocol::client_hello();
    hello[4..6].copy_from_slice(&9u16.to_be_bytes());
    s.write_all(&hello).unwrap();
    let reply = read_until_closed(&mut s);
    assert_eq!(reply.len(), protocol::HELLO_LEN);
    assert!(protocol::check_server_hello(&reply.try_into().unwrap()).is_err());

    // Absurd counts and unknown requests: a bad-request reply, then closed.
    for request in [
        timestamps_request(0),
        timestamps_request(protocol::MAX_COUNT + 1),
        timestamps_request(u32::MAX),
        vec![0x7f, 1, 2, 3],
    ] {
        let mut s = shake_hands(&addr);
        s.write_all(&request).unwrap();
        expect_error_reply(&read_until_closed(&mut s), ErrorCode::BadRequest);
    }

    // A silent peer is dropped after the handshake timeout, a stalled request after the frame
    // timeout, and an idle connection after the idle timeout.
    let mut silent = raw(&addr);
    assert_eq!(read_until_closed(&mut silent), b"");
    let mut stalled = shake_hands(&addr);
    stalled.write_all(&[protocol::REQ_TIMESTAMPS, 0]).unwrap();
    assert_eq!(read_until_closed(&mut stalled), b"");
    let mut idle = shake_hands(&addr);
    assert_eq!(read_until_closed(&mut idle), b"");

    // The well-behaved client was served throughout (and reconnected after idling out).
    requesters.wait_for_more(1000);
    let (sequences, errors) = requesters.finish();
    assert!(errors.is_empty(), "{errors:?}");
    assert_unique_and_increasing(&sequences);
    // Idle longer than the idle timeout: the server drops the client's connections, and the
    // next ask reconnects.
    std::thread::sleep(Duration::from_secs(1));
    client
        .get_timestamp()
        .expect("reconnect after the idle timeout");

    let stats = client.server_stats().unwrap();
    assert!(stats.bad_requests >= 8, "{stats:?}");
    assert!(stats.requests > 0 && stats.timestamps >= stats.requests);
    assert!(stats.last_timestamp <= stats.window_top);
}

#[test]
fn connections_beyond_the_limit_are_refused_with_a_reason() {
    let server = strict_server();
    let addr = server.local_addr().to_string();
    let held: Vec<TcpStream> = (0..8).map(|_| shake_hands(&addr)).collect();
    let mut extra = raw(&addr);
    extra.write_all(&protocol::client_hello()).unwrap();
    let reply = read_until_closed(&mut extra);
    let err = protocol::check_server_hello(&reply.try_into().unwrap()).unwrap_err();
    assert!(err.to_string().contains("too many connections"), "{err}");
    drop(held);
}

#[test]
fn pipelined_requests_are_answered_in_order_with_disjoint_ranges() {
    let server = strict_server();
    let mut s = shake_hands(&server.local_addr().to_string());
    let mut requests = timestamps_request(1);
    requests.extend(timestamps_request(500));
    requests.push(protocol::REQ_STATS);
    requests.extend(timestamps_request(2));
    s.write_all(&requests).unwrap();

    let read_first = |s: &mut TcpStream| {
        let mut reply = [0u8; protocol::TIMESTAMPS_REPLY_LEN];
        s.read_exact(&mut reply).unwrap();
        assert_eq!(reply[0], protocol::REP_TIMESTAMPS);
        u64::from_be_bytes(reply[1..].try_into().unwrap())
    };
    let a = read_first(&mut s);
    let b = read_first(&mut s);
    let mut head = [0u8; 3];
    s.read_exact(&mut head).unwrap();
    assert_eq!(head[0], protocol::REP_STATS);
    let mut fields = vec![0u8; u16::from_be_bytes([head[1], head[2]]) as usize];
    s.read_exact(&mut fields).unwrap();
    let stats =
        percolator::oracle::StatsSnapshot::from_fields(&protocol::decode_stats_fields(&fields));
    let c = read_first(&mut s);
    assert!(b > a, "{a} then {b}");
    assert!(c >= b + 500, "{b}+500 then {c}");
    assert_eq!(stats.timestamps, 501);
    assert_eq!(stats.last_timestamp, b + 499);
}
