//! HTTP mode and TLS, through a minimal HTTP/1.1 client (std sockets, rustls for TLS) that
//! carries Thrift messages encoded with the generated `THBaseService` types.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::{self, Cursor, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use hbase_emulator::rustls::{self, pki_types::ServerName, ClientConnection, StreamOwned};
use hbase_emulator::{self as emulator, EmulatorConfig, EmulatorHandle};
use percolator_thrift::hbase::{
    TColumn, TColumnFamilyDescriptor, TColumnValue, TGet, THBaseServiceSyncClient, TPut,
    TTHBaseServiceSyncClient, TTableDescriptor, TTableName,
};
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol,
    TFieldIdentifier, TInputProtocol, TMessageIdentifier, TMessageType, TOutputProtocol,
    TSerializable, TStructIdentifier, TType,
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Binary,
    Compact,
}

const TIMEOUT: Duration = Duration::from_secs(10);

fn start(config: EmulatorConfig) -> EmulatorHandle {
    emulator::start(TcpListener::bind("127.0.0.1:0").unwrap(), config).unwrap()
}

fn http_config() -> EmulatorConfig {
    EmulatorConfig {
        http: true,
        ..EmulatorConfig::default()
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s
}

// ---- HTTP client ----

#[derive(Debug)]
struct Response {
    status: u16,
    version: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads responses off a stream, keeping what arrived beyond the one returned.
struct Reader {
    buf: Vec<u8>,
}

impl Reader {
    fn new() -> Self {
        Reader { buf: Vec::new() }
    }

    fn fill(&mut self, s: &mut dyn Stream) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    fn read(&mut self, s: &mut dyn Stream) -> io::Result<Response> {
        let head_len = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            self.fill(s)?;
        };
        let head = String::from_utf8(self.buf[..head_len - 4].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap().to_string();
        let status: u16 = parts.next().unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.trim().to_string(), v.trim().to_string())
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        while self.buf.len() < head_len + len {
            self.fill(s)?;
        }
        let body = self.buf[head_len..head_len + len].to_vec();
        self.buf.drain(..head_len + len);
        Ok(Response {
            status,
            version,
            headers,
            body,
        })
    }
}

fn post(body: &[u8], extra_headers: &str) -> Vec<u8> {
    let mut req = format!(
        "POST /hbase HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-thrift\r\nAccept: application/x-thrift\r\nContent-Length: {}\r\n{extra_headers}\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

/// Whether the server has closed the connection (EOF or reset within the timeout).
fn is_closed(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    stream_closed(s)
}

fn stream_closed(s: &mut dyn Stream) -> bool {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
    }
}

// ---- Thrift messages ----

fn output<'a>(wire: Wire, buf: &'a mut Vec<u8>) -> Box<dyn TOutputProtocol + 'a> {
    match wire {
        Wire::Binary => Box::new(TBinaryOutputProtocol::new(buf, true)),
        Wire::Compact => Box::new(TCompactOutputProtocol::new(buf)),
    }
}

fn table_name(name: &str) -> TTableName {
    TTableName {
        ns: None,
        qualifier: name.into(),
    }
}

/// A `tableExists` call, encoded by hand (the generated argument structs are private).
fn table_exists_call(wire: Wire, seq: i32, table: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut o = output(wire, &mut buf);
        o.write_message_begin(&TMessageIdentifier::new(
            "tableExists",
            TMessageType::Call,
            seq,
        ))
        .unwrap();
        o.write_struct_begin(&TStructIdentifier::new("tableExists_args"))
            .unwrap();
        o.write_field_begin(&TFieldIdentifier::new("tableName", TType::Struct, 1))
            .unwrap();
        table_name(table).write_to_out_protocol(&mut *o).unwrap();
        o.write_field_end().unwrap();
        o.write_field_stop().unwrap();
        o.write_struct_end().unwrap();
        o.write_message_end().unwrap();
        o.flush().unwrap();
    }
    buf
}

/// The sequence number and boolean result of a `tableExists` reply.
fn table_exists_reply(wire: Wire, body: &[u8]) -> (i32, bool) {
    let mut i: Box<dyn TInputProtocol> = match wire {
        Wire::Binary => Box::new(TBinaryInputProtocol::new(Cursor::new(body), true)),
        Wire::Compact => Box::new(TCompactInputProtocol::new(Cursor::new(body))),
    };
    let ident = i.read_message_begin().unwrap();
    assert_eq!(ident.name, "tableExists");
    assert_eq!(ident.message_type, TMessageType::Reply);
    i.read_struct_begin().unwrap();
    let field = i.read_field_begin().unwrap();
    assert_eq!(
        (field.id, field.field_type),
        (Some(0), TType::Bool),
        "{field:?}"
    );
    (ident.sequence_number, i.read_bool().unwrap())
}

/// A Thrift transport that sends each message as an HTTP POST, as a THttpClient does.
struct HttpTransport {
    stream: Box<dyn Stream>,
    reader: Reader,
    request: Vec<u8>,
    reply: Cursor<Vec<u8>>,
    calls: usize,
}

#[derive(Clone)]
struct Shared(Rc<RefCell<HttpTransport>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().request.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut t = self.0.borrow_mut();
        let t = &mut *t;
        let req = post(&std::mem::take(&mut t.request), "");
        t.stream.write_all(&req)?;
        let resp = t.reader.read(&mut *t.stream)?;
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert_eq!(resp.header("content-type"), Some("application/x-thrift"));
        t.reply = Cursor::new(resp.body);
        t.calls += 1;
        Ok(())
    }
}

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.borrow_mut().reply.read(buf)
    }
}

type Client = THBaseServiceSyncClient<Box<dyn TInputProtocol>, Box<dyn TOutputProtocol>>;

fn thrift_client(wire: Wire, stream: Box<dyn Stream>) -> (Client, Shared) {
    let shared = Shared(Rc::new(RefCell::new(HttpTransport {
        stream,
        reader: Reader::new(),
        request: Vec::new(),
        reply: Cursor::new(Vec::new()),
        calls: 0,
    })));
    let (i, o): (Box<dyn TInputProtocol>, Box<dyn TOutputProtocol>) = match wire {
        Wire::Binary => (
            Box::new(TBinaryInputProtocol::new(shared.clone(), true)),
            Box::new(TBinaryOutputProtocol::new(shared.clone(), true)),
        ),
        Wire::Compact => (
            Box::new(TCompactInputProtocol::new(shared.clone())),
            Box::new(TCompactOutputProtocol::new(shared.clone())),
        ),
    };
    (THBaseServiceSyncClient::new(i, o), shared)
}

fn family(name: &str) -> TColumnFamilyDescriptor {
    TColumnFamilyDescriptor {
        name: name.into(),
        attributes: None,
        configuration: None,
        block_size: None,
        bloomn_filter_type: None,
        compression_type: None,
        dfs_replication: None,
        data_block_encoding: None,
        keep_deleted_cells: None,
        max_versions: None,
        min_versions: None,
        scope: None,
        time_to_live: None,
        block_cache_enabled: None,
        cache_blooms_on_write: None,
        cache_data_on_write: None,
        cache_indexes_on_write: None,
        compress_tags: None,
        evict_blocks_on_close: None,
        in_memory: None,
    }
}

/// Creates a table, writes a cell and reads it back, all on one keep-alive connection.
fn round_trip(wire: Wire, stream: Box<dyn Stream>) {
    round_trip_with(wire, stream, b"v");
}

/// `round_trip`, writing and reading back `value`.
fn round_trip_with(wire: Wire, stream: Box<dyn Stream>, value: &[u8]) {
    let (mut client, shared) = thrift_client(wire, stream);
    assert!(!client.table_exists(table_name("t")).unwrap());
    client
        .create_table(
            TTableDescriptor {
                table_name: table_name("t"),
                columns: Some(vec![family("f")]),
                attributes: None,
                durability: None,
            },
            vec![],
        )
        .unwrap();
    assert!(client.table_exists(table_name("t")).unwrap());
    client
        .put(
            b"t".to_vec(),
            TPut {
                row: b"r".to_vec(),
                column_values: vec![TColumnValue {
                    family: b"f".to_vec(),
                    qualifier: b"q".to_vec(),
                    value: value.to_vec(),
                    timestamp: None,
                    tags: None,
                    type_: None,
                }],
                timestamp: None,
                attributes: None,
                durability: None,
                cell_visibility: None,
            },
        )
        .unwrap();
    let get = TGet {
        row: b"r".to_vec(),
        columns: Some(vec![TColumn {
            family: b"f".to_vec(),
            qualifier: None,
            timestamp: None,
        }]),
        timestamp: None,
        time_range: None,
        max_versions: None,
        filter_string: None,
        attributes: None,
        authorizations: None,
        consistency: None,
        target_replica_id: None,
        cache_blocks: None,
        store_limit: None,
        store_offset: None,
        existence_only: None,
        filter_bytes: None,
    };
    let result = client.get(b"t".to_vec(), get).unwrap();
    let values: Vec<&[u8]> = result
        .column_values
        .iter()
        .map(|c| c.value.as_slice())
        .collect();
    assert!(values == [value], "the value written is read back");
    // A call that fails in HBase's way is a Thrift exception inside a 200.
    let err = client.put(
        b"missing".to_vec(),
        TPut {
            row: b"r".to_vec(),
            column_values: vec![],
            timestamp: None,
            attributes: None,
            durability: None,
            cell_visibility: None,
        },
    );
    assert!(err.is_err());
    assert_eq!(shared.0.borrow().calls, 6, "all calls on one connection");
}

#[test]
fn thrift_calls_over_http_binary_and_compact() {
    for wire in [Wire::Binary, Wire::Compact] {
        let emu = start(http_config());
        round_trip(wire, Box::new(connect(emu.local_addr())));
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let emu = start(http_config());
    let mut s = connect(emu.local_addr());
    let mut all = Vec::new();
    for seq in 1..=5 {
        all.extend(post(&table_exists_call(Wire::Binary, seq, "t"), ""));
    }
    s.write_all(&all).unwrap();
    let mut reader = Reader::new();
    for seq in 1..=5 {
        let resp = reader.read(&mut s).unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(table_exists_reply(Wire::Binary, &resp.body), (seq, false));
    }
}

#[test]
fn chunked_bodies_and_expect_continue() {
    let emu = start(http_config());
    let mut s = connect(emu.local_addr());
    let mut reader = Reader::new();
    let call = table_exists_call(Wire::Compact, 9, "t");
    let mut req =
        b"POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for piece in call.chunks(3) {
        req.extend(format!("{:x}\r\n", piece.len()).into_bytes());
        req.extend_from_slice(piece);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    // Sent in small pieces, as a slow client would.
    for piece in req.chunks(7) {
        s.write_all(piece).unwrap();
        s.flush().unwrap();
    }
    let resp = reader.read(&mut s).unwrap();
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(table_exists_reply(Wire::Compact, &resp.body), (9, false));

    // Expect: 100-continue gets its interim response before the body is sent.
    let call = table_exists_call(Wire::Binary, 10, "t");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        call.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let interim = reader.read(&mut s).unwrap();
    assert_eq!(interim.status, 100);
    s.write_all(&call).unwrap();
    let resp = reader.read(&mut s).unwrap();
    assert_eq!(table_exists_reply(Wire::Binary, &resp.body), (10, false));
}

#[test]
fn connection_close_and_http_1_0() {
    let emu = start(http_config());
    let call = table_exists_call(Wire::Binary, 1, "t");

    let mut s = connect(emu.local_addr());
    s.write_all(&post(&call, "Connection: close\r\n")).unwrap();
    let resp = Reader::new().read(&mut s).unwrap();
    assert_eq!(
        (resp.status, resp.header("connection")),
        (200, Some("close"))
    );
    assert!(is_closed(&mut s));

    // HTTP/1.0 closes after the reply unless asked to keep the connection.
    let mut s = connect(emu.local_addr());
    let mut req = format!("POST / HTTP/1.0\r\nContent-Length: {}\r\n\r\n", call.len()).into_bytes();
    req.extend_from_slice(&call);
    s.write_all(&req).unwrap();
    let resp = Reader::new().read(&mut s).unwrap();
    assert_eq!((resp.status, resp.version.as_str()), (200, "HTTP/1.0"));
    assert!(is_closed(&mut s));

    let mut s = connect(emu.local_addr());
    let mut req = format!(
        "POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: {}\r\n\r\n",
        call.len()
    )
    .into_bytes();
    req.extend_from_slice(&call);
    let mut reader = Reader::new();
    for _ in 0..2 {
        s.write_all(&req).unwrap();
        let resp = reader.read(&mut s).unwrap();
        assert_eq!(
            (resp.status, resp.header("connection")),
            (200, Some("keep-alive"))
        );
    }
}

/// Sends `request` on a new connection; the response, and whether the server then closed.
fn exchange(addr: SocketAddr, request: &[u8]) -> (Response, bool) {
    let mut s = connect(addr);
    s.write_all(request).unwrap();
    let resp = Reader::new()
        .read(&mut s)
        .unwrap_or_else(|e| panic!("{e} after {:?}", String::from_utf8_lossy(request)));
    let closed = is_closed(&mut s);
    (resp, closed)
}

#[test]
fn refused_requests_get_hbase_statuses() {
    let config = EmulatorConfig {
        max_frame_bytes: 1000,
        ..http_config()
    };
    let emu = start(config);
    let addr = emu.local_addr();

    // TServlet.doGet serves like doPost: a GET without a Thrift body is a 500.
    let (resp, closed) = exchange(addr, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!((resp.status, closed), (500, false), "{}", resp.text());
    let (resp, closed) = exchange(
        addr,
        b"PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!((resp.status, closed), (405, false));
    assert_eq!(resp.text(), "HTTP method PUT is not supported by this URL");
    // HEAD is GET without the body: the status and headers only.
    let mut s = connect(addr);
    s.write_all(b"HEAD / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let all = String::from_utf8(all).unwrap();
    assert!(all.starts_with("HTTP/1.1 500 "), "{all}");
    assert!(all.ends_with("\r\n\r\n"), "{all}");
    let (resp, _) = exchange(addr, b"TRACE / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(resp.status, 403);
    let (resp, _) = exchange(addr, b"BREW / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(resp.status, 501);
    // A body that is not Thrift: 500, and the connection stays usable.
    let (resp, closed) = exchange(addr, &post(b"hello", ""));
    assert_eq!((resp.status, closed), (500, false));

    // Too large: 413, and the connection closes.
    let (resp, closed) = exchange(addr, &post(&[0x80; 1001], ""));
    assert_eq!((resp.status, closed), (413, true));
    let (resp, closed) = exchange(
        addr,
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n",
    );
    assert_eq!((resp.status, closed), (413, true));
    // Malformed: 400, and the connection closes.
    for garbage in [
        &b"\x00\x01\x02\x03 garbage\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    ] {
        let (resp, closed) = exchange(addr, garbage);
        assert_eq!((resp.status, closed), (400, true), "{}", resp.text());
    }
    // A raw Thrift message is not HTTP.
    let (resp, closed) = exchange(addr, &table_exists_call(Wire::Binary, 1, "t"));
    assert_eq!((resp.status, closed), (400, true));
    // Headers above 64 KiB: 431, and the connection closes.
    let mut huge = b"POST / HTTP/1.1\r\nHost: h\r\nX-Big: ".to_vec();
    huge.resize(70_000, b'a');
    let (resp, closed) = exchange(addr, &huge);
    assert_eq!((resp.status, closed), (431, true));

    // A client that leaves in the middle of a head does no harm.
    for partial in [
        &b"POST / HTTP/1.1\r\nHost"[..],
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nab",
    ] {
        let mut s = connect(addr);
        s.write_all(partial).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        assert!(is_closed(&mut s));
    }
    // Still serving.
    let (resp, _) = exchange(addr, &post(&table_exists_call(Wire::Binary, 2, "t"), ""));
    assert_eq!(table_exists_reply(Wire::Binary, &resp.body), (2, false));
}

#[test]
fn random_bytes_never_stop_the_server() {
    let emu = start(http_config());
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..200 {
        let mut bytes = if round % 2 == 0 {
            b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec()
        } else {
            Vec::new()
        };
        for _ in 0..(seed % 300) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let alphabet = b"POST / HTTP/1.1\r\n:Host0123456789abcdef\x80\x82\x00\xff;";
            bytes.push(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        let mut s = connect(emu.local_addr());
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(Shutdown::Write);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    let (resp, _) = exchange(
        emu.local_addr(),
        &post(&table_exists_call(Wire::Binary, 3, "t"), ""),
    );
    assert_eq!(table_exists_reply(Wire::Binary, &resp.body), (3, false));
}

#[test]
fn do_as_is_checked_as_hbase_does() {
    let call = table_exists_call(Wire::Binary, 1, "t");
    // Without proxy-user support, any doAs is refused.
    let emu = start(http_config());
    let (resp, closed) = exchange(emu.local_addr(), &post(&call, "doAs: alice\r\n"));
    assert_eq!((resp.status, closed), (500, false));
    assert!(
        resp.text()
            .contains("Support for proxyuser is not configured"),
        "{}",
        resp.text()
    );
    let (resp, _) = exchange(emu.local_addr(), &post(&call, ""));
    assert_eq!(resp.status, 200);

    let emu = start(EmulatorConfig {
        proxy_users: Some(HashSet::from(["alice".to_string()])),
        ..http_config()
    });
    let (resp, _) = exchange(emu.local_addr(), &post(&call, "DoAs: alice\r\n"));
    assert_eq!(resp.status, 200);
    let (resp, _) = exchange(emu.local_addr(), &post(&call, "doAs: mallory\r\n"));
    assert_eq!(resp.status, 500);
    assert!(
        resp.text()
            .contains("User: hbase is not allowed to impersonate mallory"),
        "{}",
        resp.text()
    );
    let (resp, _) = exchange(emu.local_addr(), &post(&call, ""));
    assert_eq!(resp.status, 200);
}

#[test]
fn service_time_applies_in_http_mode() {
    let emu = start(EmulatorConfig {
        service_time: Duration::from_millis(30),
        ..http_config()
    });
    let started = std::time::Instant::now();
    round_trip(Wire::Binary, Box::new(connect(emu.local_addr())));
    assert!(started.elapsed() >= Duration::from_millis(6 * 30));
}

// ---- TLS ----

struct Pki {
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "emulator test CA");
        let ca = params.self_signed(&ca_key).unwrap();
        Pki { ca, ca_key }
    }

    /// A certificate and its key, in PEM.
    fn issue(&self, name: &str, usage: rcgen::ExtendedKeyUsagePurpose) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn ca_pem(&self) -> String {
        self.ca.pem()
    }
}

fn tls_emulator(pki: &Pki, require_client_cert: bool) -> EmulatorHandle {
    let (cert, key) = pki.issue("localhost", rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    let ca = pki.ca_pem();
    let tls = emulator::tls_config_from_pem(
        cert.as_bytes(),
        key.as_bytes(),
        require_client_cert.then_some(ca.as_bytes()),
    )
    .unwrap();
    start(EmulatorConfig {
        tls: Some(tls),
        ..http_config()
    })
}

fn tls_client(
    pki: &Pki,
    addr: SocketAddr,
    client_cert: Option<(String, String)>,
) -> StreamOwned<ClientConnection, TcpStream> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let ca = rustls::pki_types::CertificateDer::from(pki.ca.der().to_vec());
    roots.add(ca).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            use rustls::pki_types::pem::PemObject;
            let chain =
                vec![rustls::pki_types::CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()];
            let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    let conn = ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
        .unwrap();
    StreamOwned::new(conn, connect(addr))
}

#[test]
fn thrift_calls_over_https() {
    let pki = Pki::new();
    let emu = tls_emulator(&pki, false);
    for wire in [Wire::Binary, Wire::Compact] {
        let emu = tls_emulator(&pki, false);
        round_trip(wire, Box::new(tls_client(&pki, emu.local_addr(), None)));
    }
    // Pipelined requests over TLS, then Connection: close ends the session.
    let mut s = tls_client(&pki, emu.local_addr(), None);
    let mut all = Vec::new();
    for seq in 1..=3 {
        let close = if seq == 3 {
            "Connection: close\r\n"
        } else {
            ""
        };
        all.extend(post(&table_exists_call(Wire::Binary, seq, "t"), close));
    }
    s.write_all(&all).unwrap();
    let mut reader = Reader::new();
    for seq in 1..=3 {
        let resp = reader.read(&mut s).unwrap();
        assert_eq!(table_exists_reply(Wire::Binary, &resp.body), (seq, false));
    }
    s.sock
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(stream_closed(&mut s));
}

#[test]
fn large_calls_over_https() {
    let pki = Pki::new();
    let emu = tls_emulator(&pki, false);
    let value: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
    round_trip_with(
        Wire::Binary,
        Box::new(tls_client(&pki, emu.local_addr(), None)),
        &value,
    );
}

#[test]
fn a_required_client_certificate_is_checked() {
    let pki = Pki::new();
    let emu = tls_emulator(&pki, true);
    let call = post(&table_exists_call(Wire::Binary, 1, "t"), "");

    let client = pki.issue("client", rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let mut s = tls_client(&pki, emu.local_addr(), Some(client));
    s.write_all(&call).unwrap();
    assert_eq!(Reader::new().read(&mut s).unwrap().status, 200);

    // Without one, the handshake fails: no response ever arrives.
    let mut s = tls_client(&pki, emu.local_addr(), None);
    let err = s
        .write_all(&call)
        .and_then(|()| s.flush())
        .and_then(|()| Reader::new().read(&mut s).map(|_| ()))
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            io::ErrorKind::InvalidData
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
        ),
        "{err:?}"
    );
    // A certificate from another authority is refused too.
    let other = Pki::new().issue("client", rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let mut s = tls_client(&pki, emu.local_addr(), Some(other));
    let refused = s
        .write_all(&call)
        .and_then(|()| s.flush())
        .and_then(|()| Reader::new().read(&mut s).map(|_| ()));
    assert!(refused.is_err());
    // The emulator still serves clients with a good certificate.
    let client = pki.issue("client", rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let mut s = tls_client(&pki, emu.local_addr(), Some(client));
    s.write_all(&call).unwrap();
    assert_eq!(Reader::new().read(&mut s).unwrap().status, 200);
}

#[test]
fn plain_http_to_a_tls_port_is_refused() {
    let pki = Pki::new();
    let emu = tls_emulator(&pki, false);
    let mut s = connect(emu.local_addr());
    s.write_all(&post(&table_exists_call(Wire::Binary, 1, "t"), ""))
        .unwrap();
    let mut sink = Vec::new();
    // The server answers with a TLS alert (or nothing), then closes.
    let _ = s.read_to_end(&mut sink);
    assert!(!sink.starts_with(b"HTTP/"));
    // And keeps serving TLS clients.
    round_trip(
        Wire::Binary,
        Box::new(tls_client(&pki, emu.local_addr(), None)),
    );
}

#[test]
fn tls_without_http_is_refused() {
    let pki = Pki::new();
    let (cert, key) = pki.issue("localhost", rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    let tls = emulator::tls_config_from_pem(cert.as_bytes(), key.as_bytes(), None).unwrap();
    let err = emulator::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        EmulatorConfig {
            tls: Some(tls),
            ..EmulatorConfig::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn bad_pem_is_an_error_not_a_panic() {
    assert!(emulator::tls_config_from_pem(b"nothing", b"nothing", None).is_err());
    let pki = Pki::new();
    let (cert, key) = pki.issue("localhost", rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    assert!(emulator::tls_config_from_pem(cert.as_bytes(), key.as_bytes(), Some(b"x")).is_err());
    assert!(emulator::tls_config_from_pem(key.as_bytes(), cert.as_bytes(), None).is_err());
}

#[test]
fn idle_connections_are_closed_in_http_mode_too() {
    let pki = Pki::new();
    let (cert, key) = pki.issue("localhost", rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    for tls in [
        None,
        Some(emulator::tls_config_from_pem(cert.as_bytes(), key.as_bytes(), None).unwrap()),
    ] {
        let emu = start(EmulatorConfig {
            idle_timeout: Duration::from_millis(200),
            tls,
            ..http_config()
        });
        let mut s = connect(emu.local_addr());
        let started = std::time::Instant::now();
        let mut sink = Vec::new();
        // A TLS server waits for a ClientHello that never comes; both close at the timeout.
        let _ = s.read_to_end(&mut sink);
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert!(started.elapsed() < TIMEOUT);
    }
}
