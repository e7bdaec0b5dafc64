//! One client connection: transport and protocol detection, framing, and the request loop.
//!
//! The first byte decides, once per connection: 0x80 is an unframed strict-binary message,
//! 0x82 an unframed compact one, anything else the first byte of a 4-byte big-endian frame
//! length (frames are at most `max_frame_bytes`, so that byte is 0x00 in practice), after which
//! the frame's own first byte tells the protocol. Requests are served one at a time, as a
//! Thrift client sends them, and each reply is written with a single write.
//!
//! Connections whose calls cost a service time are served by the paced loop (`paced`) instead,
//! through the same decoding (`Framing`, `serve_request`).

use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use thrift::protocol::{TBinaryOutputProtocol, TCompactOutputProtocol, TOutputProtocol};

use crate::dispatch::{self, After};
use crate::handler::Handler;
use crate::wire::{request_input, Source, Wire};

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
/// shuts the socket down. A panic in here ends this connection only.
pub fn serve_connection(handler: &Handler, stream: TcpStream, limits: ConnLimits) {
    let peer = stream.peer_addr().ok();
    tracing::debug!(?peer, "connection opened");
    match catch_unwind(AssertUnwindSafe(|| run(handler, &stream, limits))) {
        Ok(Ok(())) => tracing::debug!(?peer, "connection closed"),
        Ok(Err(e)) => tracing::info!(?peer, error = %e, "closing connection"),
        Err(_) => tracing::error!(?peer, "connection handler panicked; connection closed"),
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn bad_input(message: String) -> thrift::Error {
    thrift::Error::from(io::Error::new(io::ErrorKind::InvalidData, message))
}

fn run(handler: &Handler, stream: &TcpStream, limits: ConnLimits) -> thrift::Result<()> {
    let mut out = Vec::new();
    let result = serve_all(handler, stream, limits.max_frame_bytes, &mut out);
    // Replies already made go out whatever ended the connection; its own error comes first.
    let mut writer = stream;
    let flushed = writer.write_all(&out);
    result?;
    Ok(flushed?)
}

/// How a connection's requests are delimited, decided once by its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    Unframed(Wire),
    /// Each frame's first byte tells the protocol (known after the first frame), which must
    /// not change within the connection.
    Framed(Option<Wire>),
}

impl Framing {
    pub fn detect(first: u8) -> Framing {
        Wire::detect(first).map_or(Framing::Framed(None), Framing::Unframed)
    }
}

/// Serves one whole frame, appending the framed reply to `out`.
fn serve_frame(
    handler: &Handler,
    framed_wire: &mut Option<Wire>,
    frame: &[u8],
    out: &mut Vec<u8>,
) -> thrift::Result<()> {
    let wire = Wire::detect(frame[0])
        .ok_or_else(|| bad_input(format!("unknown protocol byte {:#04x}", frame[0])))?;
    if *framed_wire.get_or_insert(wire) != wire {
        return Err(bad_input("protocol changed within a connection".into()));
    }
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    // Frame boundaries resynchronise the stream, whatever happened inside a frame.
    serve_one(handler, wire, Cursor::new(frame), frame.len(), out)?;
    let body_len = (out.len() - start - FRAME_HEADER) as u32;
    out[start..start + FRAME_HEADER].copy_from_slice(&body_len.to_be_bytes());
    Ok(())
}

/// A request served from a buffer.
pub(crate) struct Served {
    /// Bytes of the buffer the request took.
    pub consumed: usize,
    /// The stream is out of step (an unframed request failed half-read): close after the reply.
    pub close: bool,
}

/// Serves the request at the start of `input` if all of it has arrived (`None` if not),
/// appending its reply to `out`.
pub(crate) fn serve_request(
    handler: &Handler,
    framing: &mut Framing,
    input: &[u8],
    max_frame_bytes: usize,
    out: &mut Vec<u8>,
) -> thrift::Result<Option<Served>> {
    match framing {
        Framing::Framed(framed_wire) => {
            let Some(header) = input.get(..FRAME_HEADER) else {
                return Ok(None);
            };
            let len = frame_len(header.try_into().expect("four bytes"), max_frame_bytes)?;
            let Some(frame) = input.get(FRAME_HEADER..FRAME_HEADER + len) else {
                return Ok(None);
            };
            serve_frame(handler, framed_wire, frame, out)?;
            Ok(Some(Served {
                consumed: FRAME_HEADER + len,
                close: false,
            }))
        }
        Framing::Unframed(wire) => {
            let start = out.len();
            let mut cursor = Cursor::new(input);
            match serve_one(handler, *wire, &mut cursor, max_frame_bytes, out) {
                Ok(after) => Ok(Some(Served {
                    consumed: cursor.position() as usize,
                    close: after == After::Desynced,
                })),
                // An unframed request's end is known only by decoding it; the arguments are
                // read whole before anything is done, so a short one has changed nothing.
                Err(thrift::Error::Transport(e))
                    if e.kind == thrift::TransportErrorKind::EndOfFile =>
                {
                    out.truncate(start);
                    Ok(None)
                }
                Err(e) => {
                    out.truncate(start);
                    Err(e)
                }
            }
        }
    }
}

/// Serves requests until the client leaves or the stream is lost. Replies gather in `out`:
/// those to requests that arrived together (a pipelining client) leave in one write, so the
/// client wakes once for all of them.
fn serve_all(
    handler: &Handler,
    stream: &TcpStream,
    max_frame_bytes: usize,
    out: &mut Vec<u8>,
) -> thrift::Result<()> {
    let mut reader = BufReader::with_capacity(READ_BUFFER, stream);
    let mut writer = stream;
    if !request_waiting(&mut reader)? {
        return Ok(());
    }
    let mut framing = Framing::detect(reader.buffer()[0]);
    // Reused: a frame costs no allocation once the buffer has grown to the usual size.
    let mut frame = Vec::new();
    loop {
        let start = out.len();
        let served = match &mut framing {
            Framing::Unframed(wire) => {
                if !request_waiting(&mut reader)? {
                    return Ok(());
                }
                serve_one(handler, *wire, &mut reader, max_frame_bytes, out)
            }
            Framing::Framed(framed_wire) => {
                if !read_frame(&mut reader, max_frame_bytes, &mut frame)? {
                    return Ok(());
                }
                serve_frame(handler, framed_wire, &frame, out).map(|()| After::Continue)
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
        if reader.buffer().is_empty() {
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
pub(crate) fn serve_one<R: Read>(
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
    let len = frame_len(header, max_frame_bytes)?;
    if frame.capacity() > RETAINED_FRAME && len <= RETAINED_FRAME {
        // One huge batch does not pin its buffer for the connection's life.
        *frame = Vec::new();
    }
    frame.resize(len, 0);
    reader.read_exact(frame)?;
    Ok(true)
}

/// A frame's length from its header, refused if empty or above `max_frame_bytes`.
fn frame_len(header: [u8; FRAME_HEADER], max_frame_bytes: usize) -> io::Result<usize> {
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 || len > max_frame_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes (max_frame_bytes is {max_frame_bytes})"),
        ));
    }
    Ok(len)
}
