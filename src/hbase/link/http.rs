//! The gateway's HTTP mode: each Thrift request is the body of an HTTP/1.1 POST, each reply the
//! body of its response, on a kept-alive connection (responses come in request order, so
//! requests may be pipelined as on a raw socket).
//!
//! A response that is not `200` fails the connection with its status: the gateway's servlet
//! answers a refused request (SPNEGO, impersonation) with 401 or 403 and an HTML page, which is
//! reduced to its text for the message.

use std::fmt::Write as _;
use std::sync::Arc;

use super::Layer;
use crate::hbase::errors::{head_of, Cause};

/// Longest response head taken; a longer one is not a gateway's.
const MAX_HEAD: usize = 64 << 10;
/// Most of an error response's body kept for its message.
const MAX_ERROR_BODY: usize = 4 << 10;

/// Makes the `Authorization` header of one request (a fresh SPNEGO token each time).
pub(crate) type Authorize = Arc<dyn Fn() -> Result<String, Cause> + Send + Sync>;

pub(crate) struct Http {
    /// The request line and the headers every request carries, up to `Content-Length`.
    head: String,
    authorize: Option<Authorize>,
    reply: Reply,
    closing: bool,
    /// Whether a request went out on this connection, and any byte of a response came back.
    asked: bool,
    answered: bool,
}

/// Where the response being read is.
enum Reply {
    Head,
    Body {
        left: usize,
        status: Status,
    },
    ChunkSize {
        status: Status,
    },
    ChunkData {
        left: usize,
        status: Status,
    },
    ChunkEnd {
        status: Status,
    },
    Trailers {
        status: Status,
    },
    /// An error page without length or chunks: its body runs to the end of the stream.
    UntilClose {
        status: Status,
    },
}

/// A response's status, and its body so far when it is an error.
#[derive(Clone, Debug)]
struct Status {
    code: u16,
    reason: String,
    error_body: Vec<u8>,
}

impl Status {
    fn ok(&self) -> bool {
        self.code == 200
    }
}

impl Http {
    /// Requests to `path` on `host_header`, with `do_as` as the end user when set.
    pub(crate) fn new(
        host_header: &str,
        path: &str,
        do_as: Option<&str>,
        authorize: Option<Authorize>,
    ) -> Http {
        // Text is accepted after Thrift so that Jetty, whose error pages follow `Accept`, says
        // why it refused a request (a refused impersonation) instead of sending an empty page.
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host_header}\r\n\
             Content-Type: application/x-thrift\r\n\
             Accept: application/x-thrift, text/plain;q=0.5\r\n\
             User-Agent: percolator/{}\r\n",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(user) = do_as {
            let _ = write!(head, "doAs: {user}\r\n");
        }
        Http {
            head,
            authorize,
            reply: Reply::Head,
            closing: false,
            asked: false,
            answered: false,
        }
    }

    /// Reads a response head from the front of `wire`: its length and what follows it.
    fn head(&mut self, wire: &[u8]) -> Result<Option<(usize, Reply)>, Cause> {
        if !wire.starts_with(&b"HTTP/"[..wire.len().min(5)]) {
            return Err(Cause::NotHttp(head_of(wire)));
        }
        let Some(end) = find(wire, b"\r\n\r\n") else {
            if wire.len() > MAX_HEAD {
                return Err(Cause::Protocol(format!(
                    "an HTTP response head over {MAX_HEAD} bytes"
                )));
            }
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&wire[..end]);
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        let code = parts
            .next()
            .and_then(|c| c.parse::<u16>().ok())
            .ok_or_else(|| {
                Cause::Protocol(format!(
                    "an HTTP status line without a status: {status_line}"
                ))
            })?;
        let status = Status {
            code,
            reason: parts.next().unwrap_or_default().to_owned(),
            error_body: Vec::new(),
        };
        let mut length = None;
        let mut chunked = false;
        let mut keep_alive = version != "HTTP/1.0";
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().map_err(|_| {
                    Cause::Protocol(format!("an HTTP Content-Length of `{value}`"))
                })?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                let value = value.to_ascii_lowercase();
                if value.contains("close") {
                    keep_alive = false;
                } else if value.contains("keep-alive") {
                    keep_alive = true;
                }
            }
        }
        if (100..200).contains(&code) {
            // An interim response (100 Continue): the real one follows.
            return Ok(Some((end + 4, Reply::Head)));
        }
        self.closing = !keep_alive;
        let next = if chunked {
            Reply::ChunkSize { status }
        } else if let Some(left) = length {
            Reply::Body { left, status }
        } else if !status.ok() {
            // Jetty's error pages (a refused impersonation) end with the connection.
            Reply::UntilClose { status }
        } else {
            // A reply whose body ran to the end of the stream could not be told from a cut one.
            return Err(Cause::Protocol(
                "an HTTP response with neither Content-Length nor chunked encoding".into(),
            ));
        };
        Ok(Some((end + 4, next)))
    }
}

impl Layer for Http {
    fn seal(&mut self, request: &[u8], out: &mut Vec<u8>) -> Result<(), Cause> {
        self.asked = true;
        out.extend_from_slice(self.head.as_bytes());
        if let Some(authorize) = &self.authorize {
            let value = authorize()?;
            out.extend_from_slice(b"Authorization: ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let _ = write!(ByteWriter(out), "Content-Length: {}\r\n\r\n", request.len());
        out.extend_from_slice(request);
        Ok(())
    }

    fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, Cause> {
        self.answered |= !wire.is_empty();
        let mut at = 0;
        loop {
            let rest = &wire[at..];
            let reply = std::mem::replace(&mut self.reply, Reply::Head);
            let (used, next, done) = match reply {
                Reply::Head if rest.is_empty() => (0, Reply::Head, None),
                Reply::Head => match self.head(rest)? {
                    None => (0, Reply::Head, None),
                    Some((used, next)) => (used, next, None),
                },
                Reply::Body { left, mut status } => {
                    let take = left.min(rest.len());
                    body(&mut status, &rest[..take], plain);
                    if take == left {
                        (take, Reply::Head, Some(status))
                    } else {
                        (
                            take,
                            Reply::Body {
                                left: left - take,
                                status,
                            },
                            None,
                        )
                    }
                }
                Reply::ChunkSize { status } => match line(rest)? {
                    None => (0, Reply::ChunkSize { status }, None),
                    Some((used, text)) => {
                        let size = text.split(';').next().unwrap_or_default().trim();
                        let size = usize::from_str_radix(size, 16).map_err(|_| {
                            Cause::Protocol(format!("an HTTP chunk size of `{size}`"))
                        })?;
                        if size == 0 {
                            (used, Reply::Trailers { status }, None)
                        } else {
                            (used, Reply::ChunkData { left: size, status }, None)
                        }
                    }
                },
                Reply::ChunkData { left, mut status } => {
                    let take = left.min(rest.len());
                    body(&mut status, &rest[..take], plain);
                    if take == left {
                        (take, Reply::ChunkEnd { status }, None)
                    } else {
                        (
                            take,
                            Reply::ChunkData {
                                left: left - take,
                                status,
                            },
                            None,
                        )
                    }
                }
                Reply::ChunkEnd { status } => {
                    if rest.len() < 2 {
                        (0, Reply::ChunkEnd { status }, None)
                    } else if &rest[..2] == b"\r\n" {
                        (2, Reply::ChunkSize { status }, None)
                    } else {
                        return Err(Cause::Protocol("an HTTP chunk not ended by CRLF".into()));
                    }
                }
                Reply::UntilClose { mut status } => {
                    body(&mut status, rest, plain);
                    (rest.len(), Reply::UntilClose { status }, None)
                }
                Reply::Trailers { status } => match line(rest)? {
                    None => (0, Reply::Trailers { status }, None),
                    Some((used, "")) => (used, Reply::Head, Some(status)),
                    Some((used, _)) => (used, Reply::Trailers { status }, None),
                },
            };
            // No byte taken and no response ended: the state needs more input.
            let waiting = used == 0 && done.is_none();
            self.reply = next;
            at += used;
            if let Some(status) = done
                && !status.ok()
            {
                return Err(Cause::Http {
                    status: status.code,
                    reason: status.reason,
                    detail: page_text(&status.error_body),
                });
            }
            if waiting {
                return Ok(at);
            }
        }
    }

    fn closing(&self) -> bool {
        self.closing && matches!(self.reply, Reply::Head)
    }

    fn closed(&mut self) -> Option<Cause> {
        match std::mem::replace(&mut self.reply, Reply::Head) {
            Reply::UntilClose { status } => Some(Cause::Http {
                status: status.code,
                reason: status.reason,
                detail: page_text(&status.error_body),
            }),
            // A raw-socket Thrift gateway takes `POST` for the start of a Thrift message,
            // finds it malformed and hangs up without a word. Still a transport failure, so
            // still retried: a gateway restarting closes connections in the same way.
            Reply::Head if self.asked && !self.answered => Some(Cause::Io(
                std::io::ErrorKind::UnexpectedEof,
                "the gateway closed the connection without answering the HTTP request, as a \
                 raw-socket Thrift gateway does; if it serves raw Thrift, give its address as \
                 host:port, without http://"
                    .into(),
            )),
            _ => None,
        }
    }
}

/// Hands body bytes on: to the reply stream when the status is 200, else kept for the error.
fn body(status: &mut Status, bytes: &[u8], plain: &mut Vec<u8>) {
    if status.ok() {
        plain.extend_from_slice(bytes);
    } else {
        let room = MAX_ERROR_BODY.saturating_sub(status.error_body.len());
        status
            .error_body
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// One CRLF-ended line at the front of `bytes`: its length with the CRLF, and its text.
fn line(bytes: &[u8]) -> Result<Option<(usize, &str)>, Cause> {
    match find(bytes, b"\r\n") {
        Some(end) => {
            let text = std::str::from_utf8(&bytes[..end])
                .map_err(|_| Cause::Protocol("an HTTP chunk line that is not text".into()))?;
            Ok(Some((end + 2, text)))
        }
        None if bytes.len() > 1024 => Err(Cause::Protocol("an HTTP chunk line over 1 KiB".into())),
        None => Ok(None),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The text of an error page, tags and runs of white space dropped, for a one-line message.
fn page_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if in_tag => {}
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let mut joined = words.join(" ");
    if joined.len() > 300 {
        let mut cut = 300;
        while !joined.is_char_boundary(cut) {
            cut -= 1;
        }
        joined.truncate(cut);
        joined.push('…');
    }
    joined
}

/// `write!` into a byte vector.
struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http() -> Http {
        Http::new("gw:9090", "/", None, None)
    }

    fn open_all(http: &mut Http, pieces: &[&[u8]]) -> Result<Vec<u8>, Cause> {
        let mut plain = Vec::new();
        let mut pending = Vec::new();
        for piece in pieces {
            pending.extend_from_slice(piece);
            let used = http.open(&pending, &mut plain)?;
            pending.drain(..used);
        }
        assert!(pending.is_empty(), "left over: {pending:?}");
        Ok(plain)
    }

    #[test]
    fn a_request_is_a_post_with_its_length_and_the_end_user() {
        let mut http = Http::new("gw:9090", "/thrift", Some("alice"), None);
        let mut out = Vec::new();
        http.seal(b"\x80\x01", &mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("POST /thrift HTTP/1.1\r\nHost: gw:9090\r\n"),
            "{text}"
        );
        assert!(text.contains("Content-Type: application/x-thrift\r\n"));
        assert!(text.contains("doAs: alice\r\n"));
        assert!(
            text.ends_with("Content-Length: 2\r\n\r\n\u{fffd}\u{1}"),
            "{text:?}"
        );
    }

    #[test]
    fn each_request_carries_a_fresh_authorization() {
        let count = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = Arc::clone(&count);
        let authorize: Authorize = Arc::new(move || {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(format!("Negotiate token{n}"))
        });
        let mut http = Http::new("gw", "/", None, Some(authorize));
        let mut out = Vec::new();
        http.seal(b"a", &mut out).unwrap();
        http.seal(b"b", &mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("Authorization: Negotiate token0\r\n"));
        assert!(text.contains("Authorization: Negotiate token1\r\n"));
    }

    #[test]
    fn bodies_by_length_and_by_chunks_arrive_in_any_pieces() {
        let response: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc\
            HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nde\r\n1\r\nf\r\n0\r\nT: v\r\n\r\n";
        let whole = open_all(&mut http(), &[response]).unwrap();
        assert_eq!(whole, b"abcdef");
        let bytes: Vec<&[u8]> = response.chunks(1).collect();
        assert_eq!(open_all(&mut http(), &bytes).unwrap(), b"abcdef");
    }

    #[test]
    fn an_interim_response_is_skipped() {
        let response: &[u8] =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(open_all(&mut http(), &[response]).unwrap(), b"x");
    }

    #[test]
    fn an_error_status_fails_with_the_page_text() {
        let page = b"<html><head><title>Error 401</title></head>\n<body><h2>HTTP ERROR 401 \
            Authentication required</h2></body></html>";
        let mut response = format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\n\r\n",
            page.len()
        )
        .into_bytes();
        response.extend_from_slice(page);
        match open_all(&mut http(), &[&response]) {
            Err(Cause::Http {
                status,
                reason,
                detail,
            }) => {
                assert_eq!((status, reason.as_str()), (401, "Unauthorized"));
                assert_eq!(detail, "Error 401 HTTP ERROR 401 Authentication required");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_error_page_that_runs_to_the_end_of_the_stream_is_reported_when_it_ends() {
        let mut http = http();
        let mut plain = Vec::new();
        let response = b"HTTP/1.1 500 Server Error\r\nConnection: close\r\n\r\n<h2>AuthorizationException: no</h2>";
        assert_eq!(http.open(response, &mut plain).unwrap(), response.len());
        assert!(plain.is_empty());
        match http.closed() {
            Some(Cause::Http {
                status: 500,
                detail,
                ..
            }) => {
                assert_eq!(detail, "AuthorizationException: no")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            self::http().closed().is_none(),
            "a plain close is just a close"
        );
    }

    #[test]
    fn connection_close_is_noticed_after_the_body() {
        let mut http = http();
        let mut plain = Vec::new();
        let head = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n";
        let used = http.open(head, &mut plain).unwrap();
        assert_eq!(used, head.len());
        assert!(!http.closing(), "the body is still to come");
        http.open(b"ok", &mut plain).unwrap();
        assert!(http.closing());
        assert!(!self::http().closing());
    }

    #[test]
    fn what_is_not_http_is_named() {
        for garbage in [&b"\x80\x01\x00\x02"[..], b"SSH-2.0-OpenSSH\r\n", b"HTTQ"] {
            match http().open(garbage, &mut Vec::new()) {
                Err(Cause::NotHttp(head)) => assert_eq!(head, garbage),
                other => panic!("{garbage:?}: {other:?}"),
            }
        }
        assert_eq!(
            http().open(b"HTT", &mut Vec::new()).unwrap(),
            0,
            "maybe HTTP"
        );
    }

    #[test]
    fn malformed_responses_are_protocol_errors_not_panics() {
        let cases: [&[u8]; 6] = [
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffff\r\n",
        ];
        for case in cases {
            assert!(
                matches!(http().open(case, &mut Vec::new()), Err(Cause::Protocol(_))),
                "{:?}",
                String::from_utf8_lossy(case)
            );
        }
        let mut endless = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        endless.resize(MAX_HEAD + 10, b'a');
        assert!(matches!(
            http().open(&endless, &mut Vec::new()),
            Err(Cause::Protocol(_))
        ));
    }
}
