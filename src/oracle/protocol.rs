//! Wire format of the oracle protocol (specified in the [`oracle`](super) module docs).
//!
//! Pure encoding and decoding over byte slices, shared by the server and the client, so both
//! sides agree by construction and the parsers can be tested without sockets. Every decoder
//! bounds what it accepts: a peer can never make the other side allocate more than 1024 bytes
//! for one frame. What is public here is what a client speaking the raw protocol needs (the
//! protocol tests are one).
//!
//! ```
//! use std::io::{Read, Write};
//! use percolator::oracle::{protocol, MemoryStore, OracleServer};
//!
//! let oracle = OracleServer::start_local(MemoryStore::new())?;
//! let mut s = std::net::TcpStream::connect(oracle.local_addr())?;
//! s.write_all(&protocol::client_hello())?;
//! let mut hello = [0u8; protocol::HELLO_LEN];
//! s.read_exact(&mut hello)?;
//! protocol::check_server_hello(&hello)?;
//!
//! let mut request = Vec::new();
//! protocol::encode_timestamps_request(&mut request, 3);
//! s.write_all(&request)?;
//! let mut reply = [0u8; protocol::TIMESTAMPS_REPLY_LEN];
//! s.read_exact(&mut reply)?;
//! assert_eq!(reply[0], protocol::REP_TIMESTAMPS);
//! let first = u64::from_be_bytes(reply[1..].try_into()?);
//! assert!(first > 0); // this request got first, first + 1 and first + 2
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use super::auth::{AuthFailure, MAX_TOKEN_LEN};

/// First bytes of both hellos.
pub(crate) const MAGIC: [u8; 4] = *b"PTSO";
/// The protocol version this build speaks.
pub(crate) const VERSION: u16 = 1;
/// Length of the client hello and of the server hello: what to read before any request.
///
/// ```
/// use percolator::oracle::protocol;
/// assert_eq!(protocol::client_hello().len(), protocol::HELLO_LEN);
/// ```
pub const HELLO_LEN: usize = 8;
/// The largest `count` one request may ask for; larger needs take several requests.
///
/// ```
/// use percolator::oracle::{protocol, MemoryStore, OracleClient, OracleServer};
/// let oracle = OracleServer::start_local(MemoryStore::new())?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
/// assert!(client.get_timestamps(protocol::MAX_COUNT).is_ok());
/// assert!(client.get_timestamps(protocol::MAX_COUNT + 1).is_err());
/// # Ok::<(), percolator::Error>(())
/// ```
pub const MAX_COUNT: u32 = 1 << 16;
/// Bound on the variable-length part of a reply (error message, stats payload).
pub(crate) const MAX_MESSAGE_LEN: usize = 1024;

/// Request tag asking for timestamps (followed by a `u32` count); see
/// [`encode_timestamps_request`].
///
/// ```
/// use percolator::oracle::protocol;
/// let mut request = Vec::new();
/// protocol::encode_timestamps_request(&mut request, 1);
/// assert_eq!(request[0], protocol::REQ_TIMESTAMPS);
/// ```
pub const REQ_TIMESTAMPS: u8 = 0x01;
/// Request tag asking for the server's counters: the whole request is this one byte.
///
/// ```
/// use std::io::{Read, Write};
/// use percolator::oracle::{protocol, MemoryStore, OracleServer};
/// let oracle = OracleServer::start_local(MemoryStore::new())?;
/// let mut s = std::net::TcpStream::connect(oracle.local_addr())?;
/// s.write_all(&protocol::client_hello())?;
/// s.read_exact(&mut [0u8; protocol::HELLO_LEN])?;
/// s.write_all(&[protocol::REQ_STATS])?;
/// let mut head = [0u8; 3];
/// s.read_exact(&mut head)?;
/// assert_eq!(head[0], protocol::REP_STATS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const REQ_STATS: u8 = 0x02;
/// Length of a timestamps request: tag + u32 count.
pub(crate) const TIMESTAMPS_REQUEST_LEN: usize = 5;

/// Reply tag of a timestamps reply (followed by the first timestamp, a `u64`).
///
/// ```
/// use percolator::oracle::protocol;
/// assert_eq!(protocol::REP_TIMESTAMPS, protocol::REQ_TIMESTAMPS, "a reply echoes its request");
/// ```
pub const REP_TIMESTAMPS: u8 = 0x01;
/// Reply tag of a stats reply (followed by a `u16` length and the `u64` fields, see
/// [`decode_stats_fields`]).
///
/// ```
/// use percolator::oracle::protocol;
/// assert_eq!(protocol::REP_STATS, protocol::REQ_STATS, "a reply echoes its request");
/// ```
pub const REP_STATS: u8 = 0x02;
/// Reply tag of an error reply, which may answer any request: `u16` [`ErrorCode`], `u16`
/// length, then a UTF-8 message.
///
/// ```
/// use percolator::oracle::protocol;
/// assert_ne!(protocol::REP_ERROR, protocol::REP_TIMESTAMPS);
/// assert_ne!(protocol::REP_ERROR, protocol::REP_STATS);
/// ```
pub const REP_ERROR: u8 = 0xEE;
/// Length of a timestamps reply: tag + u64 first timestamp.
///
/// ```
/// use percolator::oracle::protocol;
/// assert_eq!(protocol::TIMESTAMPS_REPLY_LEN, 1 + 8);
/// ```
pub const TIMESTAMPS_REPLY_LEN: usize = 9;

/// Status in the server hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HelloStatus {
    Ok = 0,
    UnsupportedVersion = 1,
    TooManyConnections = 2,
    /// A standby: another oracle owns the store; try the next address.
    Standby = 3,
    /// The server requires a token and the hello carried none.
    TokenRequired = 4,
    /// The hello's token is not the server's.
    TokenRejected = 5,
    /// The server requires a client certificate (mutual TLS) and the client showed none.
    CertificateRequired = 6,
    /// The client certificate's identity is not on the server's allowed list.
    IdentityNotAllowed = 7,
    /// The server speaks TLS only; sent in the clear to a client that spoke plain TCP.
    TlsRequired = 8,
}

impl HelloStatus {
    fn from_u16(v: u16) -> Option<Self> {
        match v {
            0 => Some(HelloStatus::Ok),
            1 => Some(HelloStatus::UnsupportedVersion),
            2 => Some(HelloStatus::TooManyConnections),
            3 => Some(HelloStatus::Standby),
            4 => Some(HelloStatus::TokenRequired),
            5 => Some(HelloStatus::TokenRejected),
            6 => Some(HelloStatus::CertificateRequired),
            7 => Some(HelloStatus::IdentityNotAllowed),
            8 => Some(HelloStatus::TlsRequired),
            _ => None,
        }
    }
}

/// Error codes carried by an error reply (`code as u16` on the wire): whether to retry, fail
/// over or give up.
///
/// ```
/// use percolator::oracle::protocol::ErrorCode;
/// assert_eq!(ErrorCode::Fenced as u16, 3);
/// assert_eq!(ErrorCode::Unavailable.to_string(), "unavailable");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// The request was malformed; the server closes the connection after this reply.
    BadRequest = 1,
    /// No window to serve from yet (starting up, or storage not keeping up): try again.
    Unavailable = 2,
    /// Another oracle claimed the window; this one stopped serving for good: fail over.
    Fenced = 3,
    /// The server is stopping: fail over.
    ShuttingDown = 4,
}

impl ErrorCode {
    pub(crate) fn from_u16(v: u16) -> Option<Self> {
        match v {
            1 => Some(ErrorCode::BadRequest),
            2 => Some(ErrorCode::Unavailable),
            3 => Some(ErrorCode::Fenced),
            4 => Some(ErrorCode::ShuttingDown),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorCode::BadRequest => "bad request",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Fenced => "fenced",
            ErrorCode::ShuttingDown => "shutting down",
        })
    }
}

/// The hello a client sends first on a new connection.
///
/// ```
/// use percolator::oracle::protocol;
/// assert_eq!(&protocol::client_hello()[..4], b"PTSO");
/// ```
pub fn client_hello() -> [u8; HELLO_LEN] {
    hello(0)
}

/// Bit of the client hello's flags (its last `u16`): a token frame, `u16 len` then `len`
/// (1..=1024) bytes, follows the hello.
pub const FLAG_TOKEN: u16 = 1;

/// The client hello followed by a token frame, for an oracle that requires a token.
///
/// ```
/// use percolator::oracle::protocol;
/// let hello = protocol::client_hello_with_token(b"s3cret");
/// assert_eq!(&hello[6..8], &protocol::FLAG_TOKEN.to_be_bytes());
/// assert_eq!(&hello[8..10], &6u16.to_be_bytes());
/// assert_eq!(&hello[10..], b"s3cret");
/// ```
pub fn client_hello_with_token(token: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HELLO_LEN + 2 + token.len());
    out.extend_from_slice(&hello(FLAG_TOKEN));
    out.extend_from_slice(&(token.len() as u16).to_be_bytes());
    out.extend_from_slice(token);
    out
}

pub(crate) fn server_hello(status: HelloStatus) -> [u8; HELLO_LEN] {
    hello(status as u16)
}

fn hello(last: u16) -> [u8; HELLO_LEN] {
    let mut b = [0u8; HELLO_LEN];
    b[..4].copy_from_slice(&MAGIC);
    b[4..6].copy_from_slice(&VERSION.to_be_bytes());
    b[6..8].copy_from_slice(&last.to_be_bytes());
    b
}

/// Why a client hello was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HelloError {
    BadMagic([u8; 4]),
    UnsupportedVersion(u16),
    BadTokenLength(usize),
}

impl fmt::Display for HelloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A TLS record starts with 0x16 0x03: a client configured for TLS.
            HelloError::BadMagic([0x16, 0x03, ..]) => {
                f.write_str("a TLS handshake on a plain TCP port (is the client set for TLS?)")
            }
            HelloError::BadMagic(m) => write!(f, "bad magic {m:02x?}"),
            HelloError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported protocol version {v} (this server speaks {VERSION})"
                )
            }
            HelloError::BadTokenLength(len) => {
                write!(f, "token length {len} outside 1..={MAX_TOKEN_LEN}")
            }
        }
    }
}

/// Checks a client hello; `Ok` says whether a token frame follows it.
pub(crate) fn check_client_hello(b: &[u8; HELLO_LEN]) -> Result<bool, HelloError> {
    let magic = [b[0], b[1], b[2], b[3]];
    if magic != MAGIC {
        return Err(HelloError::BadMagic(magic));
    }
    let version = u16::from_be_bytes([b[4], b[5]]);
    if version != VERSION {
        return Err(HelloError::UnsupportedVersion(version));
    }
    // Other bits are ignored, as every server before the token did, so that flags added
    // later reach old servers harmlessly.
    Ok(u16::from_be_bytes([b[6], b[7]]) & FLAG_TOKEN != 0)
}

/// Decodes the length of a token frame, bounded.
pub(crate) fn decode_token_len(b: [u8; 2]) -> Result<usize, HelloError> {
    let len = u16::from_be_bytes(b) as usize;
    if len == 0 || len > MAX_TOKEN_LEN {
        return Err(HelloError::BadTokenLength(len));
    }
    Ok(len)
}

/// Why a server hello did not let the client in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelloRefusal {
    /// Not an oracle, another version, too many connections, a standby: try the next address.
    Other(String),
    /// The server refused the client's credentials, or wants TLS: no address will do better.
    Auth(AuthFailure),
}

impl fmt::Display for HelloRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HelloRefusal::Other(why) => f.write_str(why),
            HelloRefusal::Auth(failure) => write!(f, "{failure}"),
        }
    }
}

impl std::error::Error for HelloRefusal {}

/// Checks the server hello; `Err` says why the server did not let the client in.
///
/// ```
/// use percolator::oracle::protocol;
/// let err = protocol::check_server_hello(b"HTTP/1.1").unwrap_err();
/// assert!(err.to_string().contains("not a timestamp oracle"), "{err}");
/// ```
pub fn check_server_hello(b: &[u8; HELLO_LEN]) -> Result<(), HelloRefusal> {
    let other = |why: String| Err(HelloRefusal::Other(why));
    let auth = |failure: AuthFailure| Err(HelloRefusal::Auth(failure));
    if b[..4] != MAGIC {
        return other(format!("not a timestamp oracle (magic {:02x?})", &b[..4]));
    }
    let version = u16::from_be_bytes([b[4], b[5]]);
    match HelloStatus::from_u16(u16::from_be_bytes([b[6], b[7]])) {
        Some(HelloStatus::Ok) if version == VERSION => Ok(()),
        Some(HelloStatus::Ok) => other(format!("server speaks protocol version {version}")),
        Some(HelloStatus::UnsupportedVersion) => other(format!(
            "server refused protocol version {VERSION} (it speaks {version})"
        )),
        Some(HelloStatus::TooManyConnections) => other("server has too many connections".into()),
        Some(HelloStatus::Standby) => {
            other("server is a standby: another oracle serves the store".into())
        }
        Some(HelloStatus::TokenRequired) => auth(AuthFailure::TokenRequired),
        Some(HelloStatus::TokenRejected) => auth(AuthFailure::TokenRejected),
        Some(HelloStatus::CertificateRequired) => auth(AuthFailure::CertificateRequired),
        Some(HelloStatus::IdentityNotAllowed) => auth(AuthFailure::IdentityNotAllowed),
        Some(HelloStatus::TlsRequired) => auth(AuthFailure::TlsRequired),
        None => other(format!("unknown hello status in {b:02x?}")),
    }
}

/// A decoded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    Timestamps(u32),
    Stats,
}

/// Why a request could not be decoded. The server logs it and closes the connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RequestError {
    UnknownTag(u8),
    BadCount(u32),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::UnknownTag(t) => write!(f, "unknown request tag 0x{t:02x}"),
            RequestError::BadCount(c) => write!(f, "count {c} outside 1..={MAX_COUNT}"),
        }
    }
}

/// Decodes one request from the front of `buf`: `Ok(None)` if it is not complete yet, else the
/// request and its length in bytes.
pub(crate) fn decode_request(buf: &[u8]) -> Result<Option<(Request, usize)>, RequestError> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    match tag {
        REQ_TIMESTAMPS => {
            if buf.len() < TIMESTAMPS_REQUEST_LEN {
                return Ok(None);
            }
            let count = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
            if count == 0 || count > MAX_COUNT {
                return Err(RequestError::BadCount(count));
            }
            Ok(Some((Request::Timestamps(count), TIMESTAMPS_REQUEST_LEN)))
        }
        REQ_STATS => Ok(Some((Request::Stats, 1))),
        other => Err(RequestError::UnknownTag(other)),
    }
}

/// Appends a request for `count` (1..=[`MAX_COUNT`]) timestamps to `out`; requests may be
/// pipelined.
///
/// ```
/// use percolator::oracle::protocol;
/// let mut out = Vec::new();
/// protocol::encode_timestamps_request(&mut out, 2);
/// assert_eq!(out, [protocol::REQ_TIMESTAMPS, 0, 0, 0, 2]);
/// ```
pub fn encode_timestamps_request(out: &mut Vec<u8>, count: u32) {
    out.push(REQ_TIMESTAMPS);
    out.extend_from_slice(&count.to_be_bytes());
}

pub(crate) fn encode_timestamps_reply(out: &mut Vec<u8>, first: u64) {
    out.push(REP_TIMESTAMPS);
    out.extend_from_slice(&first.to_be_bytes());
}

pub(crate) fn encode_error_reply(out: &mut Vec<u8>, code: ErrorCode, message: &str) {
    let mut end = message.len().min(MAX_MESSAGE_LEN);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    out.push(REP_ERROR);
    out.extend_from_slice(&(code as u16).to_be_bytes());
    out.extend_from_slice(&(end as u16).to_be_bytes());
    out.extend_from_slice(&message.as_bytes()[..end]);
}

pub(crate) fn encode_stats_reply(out: &mut Vec<u8>, fields: &[u64]) {
    let fields = &fields[..fields.len().min(MAX_MESSAGE_LEN / 8)];
    out.push(REP_STATS);
    out.extend_from_slice(&((fields.len() * 8) as u16).to_be_bytes());
    for f in fields {
        out.extend_from_slice(&f.to_be_bytes());
    }
}

/// Decodes the two-byte length that follows an error code or a stats tag, bounded.
pub(crate) fn decode_message_len(b: [u8; 2]) -> Result<usize, String> {
    let len = u16::from_be_bytes(b) as usize;
    if len > MAX_MESSAGE_LEN {
        return Err(format!(
            "reply length {len} over the limit {MAX_MESSAGE_LEN}"
        ));
    }
    Ok(len)
}

/// The `u64` fields of a stats reply's payload, for
/// [`StatsSnapshot::from_fields`](super::StatsSnapshot::from_fields).
///
/// ```
/// use percolator::oracle::protocol;
/// let payload = [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 1, 0];
/// assert_eq!(protocol::decode_stats_fields(&payload), [7, 256]);
/// ```
pub fn decode_stats_fields(payload: &[u8]) -> Vec<u64> {
    payload
        .chunks_exact(8)
        .map(|c| u64::from_be_bytes(c.try_into().expect("chunks_exact yields 8 bytes")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_round_trip_and_reject_strangers() {
        assert_eq!(check_client_hello(&client_hello()), Ok(false));
        let with_token = client_hello_with_token(b"t");
        assert_eq!(
            check_client_hello(&with_token[..HELLO_LEN].try_into().unwrap()),
            Ok(true)
        );
        assert_eq!(decode_token_len([0, 1]), Ok(1));
        assert!(decode_token_len([0, 0]).is_err());
        assert!(decode_token_len([0xff, 0xff]).is_err());
        assert_eq!(
            check_server_hello(&server_hello(HelloStatus::TokenRejected)),
            Err(HelloRefusal::Auth(AuthFailure::TokenRejected))
        );
        assert_eq!(check_server_hello(&server_hello(HelloStatus::Ok)), Ok(()));
        let mut bad = client_hello();
        bad[0] = b'X';
        assert!(matches!(
            check_client_hello(&bad),
            Err(HelloError::BadMagic(_))
        ));
        let mut v2 = client_hello();
        v2[5] = 2;
        assert_eq!(
            check_client_hello(&v2),
            Err(HelloError::UnsupportedVersion(2))
        );
        assert!(check_server_hello(&server_hello(HelloStatus::TooManyConnections)).is_err());
        assert!(check_server_hello(&server_hello(HelloStatus::Standby))
            .unwrap_err()
            .to_string()
            .contains("standby"));
    }

    #[test]
    fn requests_decode_incrementally_and_bound_counts() {
        let mut buf = Vec::new();
        encode_timestamps_request(&mut buf, 7);
        buf.push(REQ_STATS);
        assert_eq!(decode_request(&buf[..3]), Ok(None));
        assert_eq!(
            decode_request(&buf),
            Ok(Some((Request::Timestamps(7), TIMESTAMPS_REQUEST_LEN)))
        );
        assert_eq!(
            decode_request(&buf[TIMESTAMPS_REQUEST_LEN..]),
            Ok(Some((Request::Stats, 1)))
        );
        for bad in [0, MAX_COUNT + 1, u32::MAX] {
            let mut b = Vec::new();
            encode_timestamps_request(&mut b, bad);
            assert_eq!(decode_request(&b), Err(RequestError::BadCount(bad)));
        }
        assert_eq!(
            decode_request(b"GET /"),
            Err(RequestError::UnknownTag(b'G'))
        );
    }

    #[test]
    fn error_messages_are_truncated_on_char_boundaries() {
        let mut out = Vec::new();
        let long = "é".repeat(MAX_MESSAGE_LEN);
        encode_error_reply(&mut out, ErrorCode::Fenced, &long);
        let len = decode_message_len([out[3], out[4]]).unwrap();
        assert!(len <= MAX_MESSAGE_LEN);
        assert!(std::str::from_utf8(&out[5..5 + len]).is_ok());
        assert_eq!(out.len(), 5 + len);
    }
}
