//! One client connection: transport and protocol detection, framing, and the request loop.
//!
//! The first byte decides, once per connection: 0x80 is an unframed strict-binary message,
//! 0x82 an unframed compact one, anything else the first byte of a 4-byte big-endian frame
//! length (frames are at most `max_frame_bytes`, so that byte is 0x00 in practice), after which
//! the frame's own first byte tells the protocol. Requests are served one at a time, as a
//! Thrift client sends them, and each reply is written with a single write.
//!
//! With a service time (`EmulatorConfig::service_time`, the cluster profile), every call costs
//! that long before its reply is written, one call after another per connection, as a real
//! gateway serves a connection whose calls each cost a region server round trip. A call is
//! served once its predecessor's service time is over; its reply is handed to the emulator's
//! reply sender (`delay`), which sends it when its own service time is over.

use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thrift::protocol::{TBinaryOutputProtocol, TCompactOutputProtocol, TOutputProtocol};

use crate::emulator::delay::{DelayedReplies, Outbox};
use crate::emulator::dispatch::{self, After};
use crate::emulator::handler::Handler;
use crate::emulator::wire::{request_input, Source, Wire};

const READ_BUFFER: usize = 64 * 1024;
const FRAME_HEADER: usize = 4;
/// Frame buffers up to this size are kept between requests.
const RETAINED_FRAME: usize = 1 << 20;

/// What bounds one connection's requests.
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    pub max_frame_bytes: usize,
    /// The socket's read timeout: a client silent for this long is disconnected.
    pub idle_timeout: Duration,
}

/// Serves `stream` until the client hangs up, sends something undecodable, or the server
/// shuts the socket down. A panic in here ends this connection only. `replies`, there when
/// calls have a service time, sends the replies when it is over.
pub fn serve_connection(
    handler: &Handler,
    stream: TcpStream,
    limits: ConnLimits,
    replies: Option<&DelayedReplies>,
) {
    let peer = stream.peer_addr().ok();
    tracing::debug!(?peer, "connection opened");
    match catch_unwind(AssertUnwindSafe(|| run(handler, &stream, limits, replies))) {
        Ok(Ok(())) => tracing::debug!(?peer, "connection closed"),
        Ok(Err(e)) => tracing::info!(?peer, error = %e, "closing connection"),
        Err(_) => tracing::error!(?peer, "connection handler panicked; connection closed"),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn bad_input(message: String) -> thrift::Error {
    thrift::Error::from(io::Error::new(io::ErrorKind::InvalidData, message))
}

/// A connection's held-back replies (with a service time): where they go, and when this
/// connection's current call is over.
struct Paced<'a> {
    replies: &'a DelayedReplies,
    outbox: Arc<Outbox>,
    free_at: Instant,
}

impl Paced<'_> {
    /// Waits for the previous call's service time to end (a client that pipelines sent this
    /// call early) and starts this call's.
    fn start_call(&mut self) {
        let now = Instant::now();
        if now < self.free_at {
            std::thread::sleep(self.free_at - now);
        }
        self.free_at = Instant::now().max(self.free_at) + self.replies.service_time();
    }

    fn hand_over(&self, out: &mut Vec<u8>) {
        self.replies
            .send_at(&self.outbox, self.free_at, std::mem::take(out));
    }
}

fn run(
    handler: &Handler,
    stream: &TcpStream,
    limits: ConnLimits,
    replies: Option<&DelayedReplies>,
) -> thrift::Result<()> {
    let mut paced = match replies {
        Some(replies) => Some(Paced {
            replies,
            outbox: Outbox::new(stream)?,
            free_at: Instant::now(),
        }),
        None => None,
    };
    let mut out = Vec::new();
    let result = serve_all(
        handler,
        stream,
        limits.max_frame_bytes,
        paced.as_mut(),
        &mut out,
    );
    // Replies already made go out whatever ended the connection; its own error comes first.
    let mut writer = stream;
    let flushed = writer.write_all(&out);
    if let Some(paced) = &paced {
        paced.outbox.drain(paced.replies);
    }
    result?;
    Ok(flushed?)
}

/// Serves requests until the client leaves or the stream is lost. Replies gather in `out`:
/// those to requests that arrived together (a pipelining client) leave in one write, so the
/// client wakes once for all of them.
fn serve_all(
    handler: &Handler,
    stream: &TcpStream,
    max_frame_bytes: usize,
    mut paced: Option<&mut Paced<'_>>,
    out: &mut Vec<u8>,
) -> thrift::Result<()> {
    let mut reader = BufReader::with_capacity(READ_BUFFER, stream);
    let mut writer = stream;
    if !request_waiting(&mut reader)? {
        return Ok(());
    }
    let first = reader.buffer()[0];
    let unframed = Wire::detect(first);
    let mut framed_wire = None;
    // Reused: a frame costs no allocation once the buffer has grown to the usual size.
    let mut frame = Vec::new();
    loop {
        let start = out.len();
        let served = match unframed {
            Some(wire) => {
                if !request_waiting(&mut reader)? {
                    return Ok(());
                }
                if let Some(p) = paced.as_deref_mut() {
                    p.start_call();
                }
                serve_one(handler, wire, &mut reader, max_frame_bytes, out)
            }
            None => {
                if !read_frame(&mut reader, max_frame_bytes, &mut frame)? {
                    return Ok(());
                }
                let wire = Wire::detect(frame[0])
                    .ok_or_else(|| bad_input(format!("unknown protocol byte {:#04x}", frame[0])))?;
                if *framed_wire.get_or_insert(wire) != wire {
                    return Err(bad_input("protocol changed within a connection".into()));
                }
                if let Some(p) = paced.as_deref_mut() {
                    p.start_call();
                }
                out.extend_from_slice(&[0; FRAME_HEADER]);
                // Frame boundaries resynchronise the stream, whatever happened inside a frame.
                serve_one(handler, wire, Cursor::new(&frame[..]), frame.len(), out).map(|_| {
                    let body_len = (out.len() - start - FRAME_HEADER) as u32;
                    out[start..start + FRAME_HEADER].copy_from_slice(&body_len.to_be_bytes());
                    After::Continue
                })
            }
        };
        match served {
            Ok(After::Desynced) => return Ok(()),
            Ok(After::Continue) => {}
            Err(e) => {
                // A reply half made never goes out.
                out.truncate(start);
                return Err(e);
            }
        }
        if let Some(p) = paced.as_deref() {
            p.hand_over(out);
        } else if reader.buffer().is_empty() {
            writer.write_all(out)?;
            out.clear();
        }
    }
}

/// Whether another request has begun to arrive: false when the client hung up, or sent nothing
/// for the idle timeout (the socket's read timeout), after which the real gateway closes the
/// connection too.
fn request_waiting<R: BufRead>(reader: &mut R) -> io::Result<bool> {
    match reader.fill_buf() {
        Ok(buf) => Ok(!buf.is_empty()),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            tracing::debug!("idle connection closed");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Decodes one request from `reader` (at most `budget` bytes) and appends the reply to `out`.
fn serve_one<R: Read>(
    handler: &Handler,
    wire: Wire,
    reader: R,
    budget: usize,
    out: &mut Vec<u8>,
) -> thrift::Result<After> {
    let mut input = request_input(wire, Source::new(reader, budget));
    let mut output: Box<dyn TOutputProtocol + '_> = match wire {
        Wire::Binary => Box::new(TBinaryOutputProtocol::new(out, true)),
        Wire::Compact => Box::new(TCompactOutputProtocol::new(out)),
    };
    dispatch::serve(handler, &mut input, &mut *output)
}

/// Reads the next frame into `frame`; false if the client closed the connection between
/// frames.
fn read_frame<R: BufRead>(
    reader: &mut R,
    max_frame_bytes: usize,
    frame: &mut Vec<u8>,
) -> io::Result<bool> {
    if !request_waiting(reader)? {
        return Ok(false);
    }
    let mut header = [0u8; FRAME_HEADER];
    reader.read_exact(&mut header)?;
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 || len > max_frame_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes (max_frame_bytes is {max_frame_bytes})"),
        ));
    }
    if frame.capacity() > RETAINED_FRAME && len <= RETAINED_FRAME {
        // One huge batch does not pin its buffer for the connection's life.
        *frame = Vec::new();
    }
    frame.resize(len, 0);
    reader.read_exact(frame)?;
    Ok(true)
}
