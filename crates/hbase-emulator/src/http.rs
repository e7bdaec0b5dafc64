//! HTTP/1.1 framing for the gateway's HTTP mode, as HBase's Jetty serves its Thrift servlet.
//!
//! Sans-IO: `parse` looks at the bytes a connection has buffered and returns the first request
//! if all of it has arrived; `respond` serves it and appends the response. The connection loop
//! (`http_conn`) moves the bytes. What is accepted, and the statuses of what is not:
//! - a request line `METHOD target HTTP/1.1` (or `HTTP/1.0`), any target; another version is
//!   505, a malformed line or header 400 (and the connection closes);
//! - a head of at most 65534 bytes (HBase sets Jetty's request header size to that), else 431;
//! - a body by `Content-Length` or `Transfer-Encoding: chunked` (another transfer coding is
//!   501; both headers at once, or differing lengths, are 400), of at most `max_frame_bytes`,
//!   else 413 and the connection closes;
//! - HTTP/1.1 requires `Host` (Jetty answers 400 without one);
//! - `Expect: 100-continue` gets `100 Continue` once the head has arrived without the body.
//!
//! Methods, as HBase's servlet (`ThriftHttpServlet` over libthrift's `TServlet`) answers them:
//! POST and GET are served (`TServlet.doGet` calls `doPost`; a GET without a Thrift body fails
//! like any undecodable body, with 500); TRACE and OPTIONS are 403 (HBase's security
//! constraint on them); PUT and DELETE are 405 over HTTP/1.1 and 400 over HTTP/1.0 (the
//! servlet API's defaults); HEAD is GET without the response body (the servlet API's default);
//! any other method is 501.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::Cursor;

use crate::conn::serve_one;
use crate::handler::Handler;
use crate::wire::Wire;

/// Largest request head (request line and headers): Jetty's request header size as HBase's
/// Thrift HTTP server sets it (`Character.MAX_VALUE - 1`).
pub(crate) const MAX_HEAD: usize = 65534;
/// Longest chunk-size line (with extensions) accepted in a chunked body.
const MAX_CHUNK_LINE: usize = 1024;
/// The user HBase's gateway runs as, named in its refusal of an impersonation.
const SERVICE_USER: &str = "hbase";

/// What `parse` found at the start of the buffer.
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    /// Not all of the next request has arrived; `expect_continue` if its head has, and asks
    /// for a `100 Continue` before the client sends the body.
    Incomplete {
        expect_continue: bool,
    },
    Request(Request<'a>),
    /// Answer with this error and close the connection.
    Error(HttpError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Post,
    Get,
    Head,
    Put,
    Delete,
    Trace,
    Options,
    Other,
}

#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub method: Method,
    /// The method as sent, for error messages.
    pub method_name: String,
    pub http10: bool,
    /// Whether the connection stays open after the response.
    pub keep_alive: bool,
    /// The `doAs` header (any case), if sent.
    pub do_as: Option<String>,
    pub body: Cow<'a, [u8]>,
    /// Bytes of the buffer the request took, head and body.
    pub consumed: usize,
}

/// A request refused before it is served: answered, then the connection closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpError {
    pub status: u16,
    pub message: String,
    pub http10: bool,
}

fn error(status: u16, message: impl Into<String>) -> Parsed<'static> {
    Parsed::Error(HttpError {
        status,
        message: message.into(),
        http10: false,
    })
}

enum BodyKind {
    Length(usize),
    Chunked,
}

/// Parses the request at the start of `input`; bodies above `max_body` are refused.
pub(crate) fn parse(input: &[u8], max_body: usize) -> Parsed<'_> {
    // Empty lines before a request line are ignored (RFC 9112, 2.2).
    let skip = input
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(input.len());
    if skip > MAX_HEAD {
        return error(400, "Bad Request: too many empty lines");
    }
    let rest = &input[skip..];
    let Some(head_len) = head_end(rest) else {
        if rest.len() > MAX_HEAD {
            return error(431, "Request Header Fields Too Large");
        }
        // What is not HTTP at all (a raw Thrift client, say) is refused as soon as it is seen,
        // as Jetty's incremental parser does, instead of waiting for a head that never ends.
        if !plausible_request_line(rest) {
            return error(400, "Bad Request: not an HTTP request line");
        }
        return Parsed::Incomplete {
            expect_continue: false,
        };
    };
    if head_len > MAX_HEAD {
        return error(431, "Request Header Fields Too Large");
    }
    let head = match parse_head(&rest[..head_len]) {
        Ok(head) => head,
        Err(e) => return Parsed::Error(e),
    };
    let body_start = skip + head_len;
    let http10 = head.http10;
    let refuse = |status: u16, message: String| {
        Parsed::Error(HttpError {
            status,
            message,
            http10,
        })
    };
    let (body, consumed) = match head.body {
        BodyKind::Length(len) => {
            if len > max_body {
                return refuse(
                    413,
                    format!("Payload Too Large: {len} bytes (max {max_body})"),
                );
            }
            match input.get(body_start..body_start + len) {
                Some(body) => (Cow::Borrowed(body), body_start + len),
                None => {
                    return Parsed::Incomplete {
                        expect_continue: head.expect_continue,
                    }
                }
            }
        }
        BodyKind::Chunked => match dechunk(&input[body_start..], max_body) {
            Ok(Some((body, used))) => (Cow::Owned(body), body_start + used),
            Ok(None) => {
                return Parsed::Incomplete {
                    expect_continue: head.expect_continue,
                }
            }
            Err((status, message)) => return refuse(status, message),
        },
    };
    Parsed::Request(Request {
        method: head.method,
        method_name: head.method_name,
        http10,
        keep_alive: head.keep_alive,
        do_as: head.do_as,
        body,
        consumed,
    })
}

/// Whether the start of a request line (all of it, or what has arrived) can still become a
/// valid one: a method of token characters, then printable ASCII.
fn plausible_request_line(input: &[u8]) -> bool {
    let line = input.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let method_end = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
    (line.is_empty() || is_token(&line[..method_end]))
        && line[method_end..]
            .iter()
            .all(|&b| (b' '..0x7f).contains(&b))
}

/// The length of the head, its blank line included, if all of it is in `input`.
fn head_end(input: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(nl) = input[start..].iter().position(|&b| b == b'\n') {
        let line = &input[start..start + nl];
        if line.is_empty() || line == b"\r" {
            return Some(start + nl + 1);
        }
        start += nl + 1;
    }
    None
}

struct Head {
    method: Method,
    method_name: String,
    http10: bool,
    keep_alive: bool,
    expect_continue: bool,
    do_as: Option<String>,
    body: BodyKind,
}

fn is_token(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn bad(message: impl Into<String>, http10: bool) -> HttpError {
    HttpError {
        status: 400,
        message: format!("Bad Request: {}", message.into()),
        http10,
    }
}

fn parse_head(head: &[u8]) -> Result<Head, HttpError> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("malformed request line", false));
    };
    if !is_token(method) {
        return Err(bad("malformed method", false));
    }
    if target.is_empty() || target.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return Err(bad("malformed request target", false));
    }
    let http10 = match version {
        b"HTTP/1.1" => false,
        b"HTTP/1.0" => true,
        v if v.len() == 8
            && v.starts_with(b"HTTP/")
            && v[5].is_ascii_digit()
            && v[6] == b'.'
            && v[7].is_ascii_digit() =>
        {
            return Err(HttpError {
                status: 505,
                message: "HTTP Version Not Supported".into(),
                http10: false,
            })
        }
        _ => return Err(bad("malformed HTTP version", false)),
    };
    let method_name = String::from_utf8_lossy(method).into_owned();
    let method = match method {
        b"POST" => Method::Post,
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        b"PUT" => Method::Put,
        b"DELETE" => Method::Delete,
        b"TRACE" => Method::Trace,
        b"OPTIONS" => Method::Options,
        _ => Method::Other,
    };
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    let mut transfer_encoding = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    let mut host = false;
    let mut do_as = None;
    for line in lines {
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(bad("folded header line", http10));
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(bad("header line without a colon", http10));
        };
        let name = &line[..colon];
        if !is_token(name) {
            return Err(bad("malformed header name", http10));
        }
        let value = line[colon + 1..].trim_ascii();
        if value.iter().any(|&b| (b < b' ' && b != b'\t') || b == 0x7f) {
            return Err(bad("control character in a header value", http10));
        }
        let name = name.to_ascii_lowercase();
        match name.as_slice() {
            b"content-length" => {
                let len = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<usize>().ok())
                    .ok_or_else(|| bad("invalid Content-Length", http10))?;
                if content_length.is_some_and(|l| l != len) {
                    return Err(bad("conflicting Content-Length headers", http10));
                }
                content_length = Some(len);
            }
            b"transfer-encoding" => {
                transfer_encoding = true;
                if value.eq_ignore_ascii_case(b"chunked") && !chunked {
                    chunked = true;
                } else {
                    return Err(HttpError {
                        status: 501,
                        message: format!(
                            "Not Implemented: Transfer-Encoding {}",
                            String::from_utf8_lossy(value)
                        ),
                        http10,
                    });
                }
            }
            b"connection" => {
                for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            b"expect" => {
                if value.eq_ignore_ascii_case(b"100-continue") {
                    expect_continue = !http10;
                } else {
                    return Err(HttpError {
                        status: 417,
                        message: "Expectation Failed".into(),
                        http10,
                    });
                }
            }
            b"host" => host = true,
            // HBase reads the first header named `doAs` in any case (ProxyUserAuthenticationFilter
            // .getDoasFromHeader).
            b"doas" if do_as.is_none() => {
                do_as = Some(String::from_utf8_lossy(value).into_owned());
            }
            _ => {}
        }
    }
    if transfer_encoding && content_length.is_some() {
        return Err(bad("both Transfer-Encoding and Content-Length", http10));
    }
    if !http10 && !host {
        return Err(bad("No Host", http10));
    }
    let body = if chunked {
        BodyKind::Chunked
    } else {
        BodyKind::Length(content_length.unwrap_or(0))
    };
    Ok(Head {
        method,
        method_name,
        http10,
        keep_alive: !close && (!http10 || keep_alive_token),
        expect_continue,
        do_as,
        body,
    })
}

/// Decodes a chunked body at the start of `input`: the body and the bytes it took, `None` if
/// not all of it has arrived, or the status to refuse it with.
#[allow(clippy::type_complexity)]
fn dechunk(input: &[u8], max_body: usize) -> Result<Option<(Vec<u8>, usize)>, (u16, String)> {
    let malformed = |what: &str| (400, format!("Bad Request: {what}"));
    let mut body = Vec::new();
    let mut pos = 0;
    // Chunk framing may not take much more room than the body it carries.
    let max_raw = max_body.saturating_mul(2).saturating_add(MAX_HEAD);
    loop {
        if pos > max_raw {
            return Err((
                413,
                format!("Payload Too Large: chunk framing above {max_raw} bytes"),
            ));
        }
        let rest = &input[pos..];
        let Some(nl) = rest.iter().take(MAX_CHUNK_LINE).position(|&b| b == b'\n') else {
            if rest.len() >= MAX_CHUNK_LINE {
                return Err(malformed("chunk size line too long"));
            }
            return Ok(None);
        };
        let line = rest[..nl].strip_suffix(b"\r").unwrap_or(&rest[..nl]);
        let size_text = line
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        if size_text.is_empty()
            || size_text.len() > 16
            || !size_text.iter().all(u8::is_ascii_hexdigit)
        {
            return Err(malformed("invalid chunk size"));
        }
        let size = usize::from_str_radix(std::str::from_utf8(size_text).unwrap_or("x"), 16)
            .map_err(|_| malformed("invalid chunk size"))?;
        pos += nl + 1;
        if size == 0 {
            // Trailer fields, then a blank line.
            let Some(trailers) = head_end(&input[pos..]) else {
                if input.len() - pos > MAX_HEAD {
                    return Err((431, "Request Header Fields Too Large".into()));
                }
                return Ok(None);
            };
            return Ok(Some((body, pos + trailers)));
        }
        if body.len().saturating_add(size) > max_body {
            return Err((
                413,
                format!("Payload Too Large: chunked body above {max_body} bytes"),
            ));
        }
        let Some(data) = input.get(pos..pos.saturating_add(size)) else {
            return Ok(None);
        };
        let after = pos + size;
        match input.get(after..after + 2) {
            Some(b"\r\n") => pos = after + 2,
            Some(_) if input[after] == b'\n' => pos = after + 1,
            Some(_) => return Err(malformed("chunk not followed by CRLF")),
            None if input.len() > after && input[after] != b'\r' && input[after] != b'\n' => {
                return Err(malformed("chunk not followed by CRLF"))
            }
            None => return Ok(None),
        }
        body.extend_from_slice(data);
    }
}

/// The HTTP settings of an emulator in HTTP mode.
#[derive(Debug, Default)]
pub(crate) struct HttpSettings {
    /// `Some`: impersonation is supported, of these users only.
    pub proxy_users: Option<HashSet<String>>,
}

/// Serves `req` and appends the response to `out`; returns whether the connection stays open.
pub(crate) fn respond(
    handler: &Handler,
    settings: &HttpSettings,
    req: &Request<'_>,
    out: &mut Vec<u8>,
) -> bool {
    let (status, content_type, body) = outcome(handler, settings, req);
    response(
        out,
        req.http10,
        status,
        content_type,
        &body,
        !req.keep_alive,
    );
    if req.method == Method::Head {
        // The servlet API runs GET for HEAD, and sends its headers only.
        out.truncate(out.len() - body.len());
    }
    req.keep_alive
}

const TEXT: &str = "text/plain;charset=utf-8";

/// The status, content type and body of the response to `req`.
fn outcome(
    handler: &Handler,
    settings: &HttpSettings,
    req: &Request<'_>,
) -> (u16, &'static str, Vec<u8>) {
    let text = |status: u16, message: String| (status, TEXT, message.into_bytes());
    match req.method {
        Method::Post | Method::Get | Method::Head => {}
        Method::Trace | Method::Options => return text(403, "!role".into()),
        Method::Put | Method::Delete => {
            let message = format!(
                "HTTP method {} is not supported by this URL",
                req.method_name
            );
            return text(if req.http10 { 400 } else { 405 }, message);
        }
        Method::Other => {
            let message = format!(
                "Method {} is not implemented by this Servlet for this URI",
                req.method_name
            );
            return text(501, message);
        }
    }
    // ThriftHttpServlet.doPost: a doAs needs hbase.thrift.support.proxyuser, and the proxy
    // user's authorization; either refusal is a ServletException, which Jetty answers with 500.
    if let Some(user) = &req.do_as {
        let refused = match &settings.proxy_users {
            None => Some(
                "javax.servlet.ServletException: Support for proxyuser is not configured"
                    .to_string(),
            ),
            Some(_) if user.is_empty() => {
                Some("java.lang.IllegalArgumentException: Null user".to_string())
            }
            Some(allowed) if !allowed.contains(user) => Some(format!(
                "javax.servlet.ServletException: \
                 org.apache.hadoop.security.authorize.AuthorizationException: \
                 User: {SERVICE_USER} is not allowed to impersonate {user}"
            )),
            Some(_) => None,
        };
        if let Some(message) = refused {
            return text(500, message);
        }
    }
    let mut reply = Vec::new();
    match serve_body(handler, &req.body, &mut reply) {
        Ok(()) => (200, "application/x-thrift", reply),
        // TServlet turns a TException into a ServletException: 500.
        Err(e) => {
            tracing::debug!(error = %e, "undecodable Thrift body");
            text(500, format!("javax.servlet.ServletException: {e}"))
        }
    }
}

/// Serves the Thrift message in `body` (binary or compact, told by its first byte).
fn serve_body(handler: &Handler, body: &[u8], reply: &mut Vec<u8>) -> thrift::Result<()> {
    let first = body.first().copied().ok_or_else(|| {
        thrift::Error::Transport(thrift::TransportError::new(
            thrift::TransportErrorKind::EndOfFile,
            "empty request body",
        ))
    })?;
    let wire = Wire::detect(first).ok_or_else(|| {
        thrift::Error::Protocol(thrift::ProtocolError::new(
            thrift::ProtocolErrorKind::BadVersion,
            format!("unknown protocol byte {first:#04x}"),
        ))
    })?;
    // The body's end resynchronises, whatever happened inside it.
    serve_one(handler, wire, Cursor::new(body), body.len(), reply).map(|_| ())
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Server Error",
        501 => "Not Implemented",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// Appends a response with a body to `out`.
pub(crate) fn response(
    out: &mut Vec<u8>,
    http10: bool,
    status: u16,
    content_type: &str,
    body: &[u8],
    close: bool,
) {
    use std::io::Write;
    let version = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let _ = write!(
        out,
        "{version} {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        reason(status),
        body.len()
    );
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// Appends the response to a request refused by `parse`: the connection closes after it.
pub(crate) fn error_response(out: &mut Vec<u8>, e: &HttpError) {
    response(out, e.http10, e.status, TEXT, e.message.as_bytes(), true);
}

pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn request(input: &[u8]) -> Request<'_> {
        match parse(input, 100) {
            Parsed::Request(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn status(input: &[u8]) -> u16 {
        match parse(input, 100) {
            Parsed::Error(e) => e.status,
            other => panic!("{other:?}"),
        }
    }

    fn incomplete(input: &[u8]) -> bool {
        matches!(parse(input, 100), Parsed::Incomplete { .. })
    }

    #[test]
    fn content_length_bodies_and_pipelining() {
        let two = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcPOST /x HTTP/1.1\r\nHost: h\r\ncontent-length:1\r\n\r\nz";
        let r = request(two);
        assert_eq!(
            (r.method, &*r.body, r.keep_alive),
            (Method::Post, &b"abc"[..], true)
        );
        let r2 = request(&two[r.consumed..]);
        assert_eq!(&*r2.body, b"z");
        assert_eq!(r.consumed + r2.consumed, two.len());
        for cut in 0..two.len() - r2.consumed {
            assert!(incomplete(&two[..cut.min(r.consumed - 1)]));
        }
    }

    #[test]
    fn chunked_bodies() {
        let input = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\nrest";
        let r = request(input);
        assert_eq!(&*r.body, b"abcde");
        assert_eq!(&input[r.consumed..], b"rest");
        for cut in 0..r.consumed {
            assert!(incomplete(&input[..cut]), "cut at {cut}");
        }
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            400
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX"),
            400
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n"),
            413
        );
        assert_eq!(status(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"), 400);
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n"),
            501
        );
        // Tiny chunks with long extensions: the framing is bounded too.
        let mut many = Vec::new();
        while many.len() < 90_000 {
            many.extend_from_slice(b"1;xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\na\r\n");
        }
        assert!(matches!(dechunk(&many, 10_000), Err((413, _))));
    }

    #[test]
    fn connection_persistence() {
        assert!(!request(b"POST / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(!request(b"POST / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(request(b"POST / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(request(b"\r\nPOST / HTTP/1.1\r\nHost: h\r\n\r\n").keep_alive);
    }

    #[test]
    fn malformed_heads() {
        for input in [
            &b"garbage\r\n\r\n"[..],
            b"POST /  HTTP/1.1\r\nHost: h\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost : h\r\n\r\n",
            b"POST / HTTP/1.1\r\n\r\n",
            b"P\xffST / HTTP/1.1\r\nHost: h\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: h\x01\r\n\r\n",
        ] {
            assert_eq!(status(input), 400, "{}", String::from_utf8_lossy(input));
        }
        assert_eq!(status(b"POST / HTTP/2.0\r\n\r\n"), 505);
        // Not HTTP: refused before a head could end.
        assert_eq!(status(b"\x80\x01\x00\x01"), 400);
        assert_eq!(status(b"\x00\x00\x00\x10\x80"), 400);
        assert_eq!(status(b"POST /\x00"), 400);
        assert!(incomplete(b"POS"));
        assert!(incomplete(b"POST /x HTTP/1.1\r"));
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n"),
            413
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: h\r\nExpect: teapot\r\n\r\n"),
            417
        );
        let mut huge = b"POST / HTTP/1.1\r\nHost: h\r\nX: ".to_vec();
        huge.resize(MAX_HEAD + 10, b'a');
        assert_eq!(status(&huge), 431);
        huge.extend_from_slice(b"\r\n\r\n");
        assert_eq!(status(&huge), 431);
    }

    #[test]
    fn expect_continue_is_reported_once_the_head_is_in() {
        let head =
            b"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
        assert!(matches!(
            parse(head, 100),
            Parsed::Incomplete {
                expect_continue: true
            }
        ));
        assert!(matches!(
            parse(&head[..head.len() - 1], 100),
            Parsed::Incomplete {
                expect_continue: false
            }
        ));
    }

    #[test]
    fn do_as_is_read_in_any_case() {
        let r = request(b"POST / HTTP/1.1\r\nHost: h\r\nDOAS: alice\r\n\r\n");
        assert_eq!(r.do_as.as_deref(), Some("alice"));
    }

    #[test]
    fn no_panic_on_any_prefix_of_varied_inputs() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"POST GET / HTTP/1.1\r\n:Host h Content-Length 0123456789abcdef chunked Transfer-Encoding ;\xff\x00";
        for _ in 0..3000 {
            let mut input = Vec::new();
            for _ in 0..(seed % 200) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                input.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            let _ = parse(&input, 50);
            let mut valid =
                b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            valid.extend_from_slice(&input);
            let _ = parse(&valid, 50);
        }
    }
}
