//! Wire format of the oracle protocol (specified in the `oracle` module docs).
//!
//! Pure encoding and decoding over byte slices, shared by the server and the client, so both
//! sides agree by construction and the parsers can be tested without sockets. Every decoder
//! bounds what it accepts: a peer can never make the other side allocate more than
//! [`MAX_MESSAGE_LEN`] bytes for one frame.

use std::fmt;

/// First bytes of both hellos.
pub const MAGIC: [u8; 4] = *b"PTSO";
/// The protocol version this build speaks.
pub const VERSION: u16 = 1;
/// Length of the client hello and of the server hello.
pub const HELLO_LEN: usize = 8;
/// The largest `count` one request may ask for.
pub const MAX_COUNT: u32 = 1 << 16;
/// Bound on the variable-length part of a reply (error message, stats payload).
pub const MAX_MESSAGE_LEN: usize = 1024;

/// Request tags.
pub const REQ_TIMESTAMPS: u8 = 0x01;
pub const REQ_STATS: u8 = 0x02;
/// Length of a timestamps request: tag + u32 count.
pub const TIMESTAMPS_REQUEST_LEN: usize = 5;

/// Reply tags.
pub const REP_TIMESTAMPS: u8 = 0x01;
pub const REP_STATS: u8 = 0x02;
pub const REP_ERROR: u8 = 0xEE;
/// Length of a timestamps reply: tag + u64 first timestamp.
pub const TIMESTAMPS_REPLY_LEN: usize = 9;

/// Status in the server hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelloStatus {
    Ok = 0,
    UnsupportedVersion = 1,
    TooManyConnections = 2,
}

impl HelloStatus {
    fn from_u16(v: u16) -> Option<Self> {
        match v {
            0 => Some(HelloStatus::Ok),
            1 => Some(HelloStatus::UnsupportedVersion),
            2 => Some(HelloStatus::TooManyConnections),
            _ => None,
        }
    }
}

/// Error codes carried by an error reply.
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
    pub fn from_u16(v: u16) -> Option<Self> {
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

pub fn client_hello() -> [u8; HELLO_LEN] {
    hello(0)
}

pub fn server_hello(status: HelloStatus) -> [u8; HELLO_LEN] {
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
pub enum HelloError {
    BadMagic([u8; 4]),
    UnsupportedVersion(u16),
}

impl fmt::Display for HelloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HelloError::BadMagic(m) => write!(f, "bad magic {m:02x?}"),
            HelloError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported protocol version {v} (this server speaks {VERSION})"
                )
            }
        }
    }
}

pub fn check_client_hello(b: &[u8; HELLO_LEN]) -> Result<(), HelloError> {
    let magic = [b[0], b[1], b[2], b[3]];
    if magic != MAGIC {
        return Err(HelloError::BadMagic(magic));
    }
    let version = u16::from_be_bytes([b[4], b[5]]);
    if version != VERSION {
        return Err(HelloError::UnsupportedVersion(version));
    }
    Ok(())
}

/// Checks the server hello; `Err` carries a description for the caller's error.
pub fn check_server_hello(b: &[u8; HELLO_LEN]) -> Result<(), String> {
    if b[..4] != MAGIC {
        return Err(format!("not a timestamp oracle (magic {:02x?})", &b[..4]));
    }
    let version = u16::from_be_bytes([b[4], b[5]]);
    match HelloStatus::from_u16(u16::from_be_bytes([b[6], b[7]])) {
        Some(HelloStatus::Ok) if version == VERSION => Ok(()),
        Some(HelloStatus::Ok) => Err(format!("server speaks protocol version {version}")),
        Some(HelloStatus::UnsupportedVersion) => Err(format!(
            "server refused protocol version {VERSION} (it speaks {version})"
        )),
        Some(HelloStatus::TooManyConnections) => Err("server has too many connections".into()),
        None => Err(format!("unknown hello status in {b:02x?}")),
    }
}

/// A decoded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Timestamps(u32),
    Stats,
}

/// Why a request could not be decoded. The server logs it and closes the connection.
#[derive(Debug, PartialEq, Eq)]
pub enum RequestError {
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
pub fn decode_request(buf: &[u8]) -> Result<Option<(Request, usize)>, RequestError> {
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

pub fn encode_timestamps_request(out: &mut Vec<u8>, count: u32) {
    out.push(REQ_TIMESTAMPS);
    out.extend_from_slice(&count.to_be_bytes());
}

pub fn encode_timestamps_reply(out: &mut Vec<u8>, first: u64) {
    out.push(REP_TIMESTAMPS);
    out.extend_from_slice(&first.to_be_bytes());
}

pub fn encode_error_reply(out: &mut Vec<u8>, code: ErrorCode, message: &str) {
    let mut end = message.len().min(MAX_MESSAGE_LEN);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    out.push(REP_ERROR);
    out.extend_from_slice(&(code as u16).to_be_bytes());
    out.extend_from_slice(&(end as u16).to_be_bytes());
    out.extend_from_slice(&message.as_bytes()[..end]);
}

pub fn encode_stats_reply(out: &mut Vec<u8>, fields: &[u64]) {
    let fields = &fields[..fields.len().min(MAX_MESSAGE_LEN / 8)];
    out.push(REP_STATS);
    out.extend_from_slice(&((fields.len() * 8) as u16).to_be_bytes());
    for f in fields {
        out.extend_from_slice(&f.to_be_bytes());
    }
}

/// Decodes the two-byte length that follows an error code or a stats tag, bounded.
pub fn decode_message_len(b: [u8; 2]) -> Result<usize, String> {
    let len = u16::from_be_bytes(b) as usize;
    if len > MAX_MESSAGE_LEN {
        return Err(format!(
            "reply length {len} over the limit {MAX_MESSAGE_LEN}"
        ));
    }
    Ok(len)
}

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
        assert_eq!(check_client_hello(&client_hello()), Ok(()));
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
