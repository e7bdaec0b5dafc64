//! One connection in HTTP mode, in the clear or over TLS: a thread per connection, like the
//! raw transport's (`conn`), with its own loop so that the raw path is left as it is.
//!
//! TLS runs through rustls's sans-IO `ServerConnection`: ciphertext read from the socket goes
//! in with `read_tls` and `process_new_packets`, plaintext comes out of `reader()`; replies go
//! in through `writer()` and leave with `write_tls`. Requests that arrived together (a
//! pipelining client) are answered in order, and their responses leave in one write.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection};

use crate::conn::ConnLimits;
use crate::handler::Handler;
use crate::http::{self, HttpSettings, Parsed};

const READ_CHUNK: usize = 64 * 1024;

/// What an HTTP-mode connection needs besides the handler.
#[derive(Debug)]
pub(crate) struct HttpMode {
    pub settings: HttpSettings,
    pub tls: Option<Arc<ServerConfig>>,
    /// Time each call takes before its response is written (`EmulatorConfig::service_time`).
    pub service_time: Duration,
}

/// Serves `stream` in HTTP mode until the client hangs up, a request is refused, or the server
/// shuts the socket down. A panic in here ends this connection only.
pub(crate) fn serve_http_connection(
    handler: &Handler,
    stream: TcpStream,
    limits: ConnLimits,
    mode: &HttpMode,
) {
    let peer = stream.peer_addr().ok();
    tracing::debug!(?peer, "HTTP connection opened");
    match catch_unwind(AssertUnwindSafe(|| run(handler, &stream, limits, mode))) {
        Ok(Ok(())) => tracing::debug!(?peer, "HTTP connection closed"),
        Ok(Err(e)) => tracing::info!(?peer, error = %e, "closing HTTP connection"),
        Err(_) => tracing::error!(?peer, "HTTP connection handler panicked; connection closed"),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// The socket, with or without TLS.
enum Transport<'s> {
    Plain(&'s TcpStream),
    Tls(Box<ServerConnection>, &'s TcpStream),
}

/// A read that found nothing for the idle timeout: the client is treated as gone.
fn idle(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Transport<'_> {
    /// Appends what arrives next to `input`; 0 when the client is gone.
    fn recv(&mut self, scratch: &mut [u8], input: &mut Vec<u8>) -> io::Result<usize> {
        match *self {
            Transport::Plain(mut stream) => loop {
                match stream.read(scratch) {
                    Ok(n) => {
                        input.extend_from_slice(&scratch[..n]);
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if idle(&e) => return Ok(0),
                    Err(e) => return Err(e),
                }
            },
            Transport::Tls(ref mut tls, mut stream) => loop {
                // Handshake messages (and alerts) go out before anything more is awaited.
                while tls.wants_write() {
                    tls.write_tls(&mut stream)?;
                }
                match tls.reader().read(scratch) {
                    Ok(n) => {
                        // 0: the client sent close_notify.
                        input.extend_from_slice(&scratch[..n]);
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // The socket closed without close_notify.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
                match tls.read_tls(&mut stream) {
                    Ok(0) => return Ok(0),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if idle(&e) => return Ok(0),
                    Err(e) => return Err(e),
                }
                if let Err(e) = tls.process_new_packets() {
                    // The alert that tells the client why.
                    let _ = tls.write_tls(&mut stream);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            },
        }
    }

    fn send(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        match *self {
            Transport::Plain(mut stream) => stream.write_all(bytes),
            Transport::Tls(ref mut tls, mut stream) => {
                while !bytes.is_empty() {
                    let n = tls.writer().write(bytes)?;
                    bytes = &bytes[n..];
                    while tls.wants_write() {
                        tls.write_tls(&mut stream)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Ends the session politely (TLS close_notify) before the socket is shut down.
    fn close(&mut self) {
        if let Transport::Tls(ref mut tls, mut stream) = *self {
            tls.send_close_notify();
            while tls.wants_write() {
                if tls.write_tls(&mut stream).is_err() {
                    break;
                }
            }
        }
    }
}

fn run(
    handler: &Handler,
    stream: &TcpStream,
    limits: ConnLimits,
    mode: &HttpMode,
) -> io::Result<()> {
    let mut transport = match &mode.tls {
        None => Transport::Plain(stream),
        Some(config) => {
            let tls = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
            Transport::Tls(Box::new(tls), stream)
        }
    };
    let mut scratch = vec![0u8; READ_CHUNK];
    let mut input: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    // Whether the request being received has had its `100 Continue`.
    let mut continued = false;
    loop {
        let mut start = 0;
        let mut open = true;
        while open {
            match http::parse(&input[start..], limits.max_frame_bytes) {
                Parsed::Incomplete { expect_continue } => {
                    if expect_continue && !continued {
                        out.extend_from_slice(http::CONTINUE);
                        continued = true;
                    }
                    break;
                }
                Parsed::Request(request) => {
                    continued = false;
                    if !mode.service_time.is_zero() {
                        std::thread::sleep(mode.service_time);
                    }
                    open = http::respond(handler, &mode.settings, &request, &mut out);
                    start += request.consumed;
                }
                Parsed::Error(e) => {
                    tracing::debug!(status = e.status, message = %e.message, "HTTP request refused");
                    http::error_response(&mut out, &e);
                    open = false;
                }
            }
        }
        input.drain(..start);
        if !out.is_empty() {
            transport.send(&out)?;
            out.clear();
        }
        if !open {
            transport.close();
            return Ok(());
        }
        if transport.recv(&mut scratch, &mut input)? == 0 {
            if !input.is_empty() {
                tracing::debug!(
                    bytes = input.len(),
                    "client left in the middle of a request"
                );
            }
            transport.close();
            return Ok(());
        }
    }
}
