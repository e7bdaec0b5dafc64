//! Thrift's SASL transport with the GSSAPI mechanism, client side, and the security layer
//! that follows it.
//!
//! The wire format, as Thrift's `TSaslTransport` (Java 0.14) speaks it and HBase's
//! `ThriftServer` serves it (`TSaslServerTransport` with mechanism `GSSAPI`):
//! - Negotiation frames: a status byte (START 1, OK 2, BAD 3, ERROR 4, COMPLETE 5), a 4-byte
//!   big-endian payload length, the payload. The client sends START with the mechanism name,
//!   then OK with its first GSSAPI token; each side answers OK (or COMPLETE once it is done)
//!   until the server sends COMPLETE. BAD and ERROR carry the peer's message as UTF-8.
//! - The GSSAPI exchange is RFC 4752's: context tokens, then the server's 4-byte offer wrapped
//!   with integrity only (byte 0: a mask of the layers it offers, 1 none / 2 integrity /
//!   4 confidentiality; bytes 1-3: the largest message it accepts, big-endian; Java sends
//!   65536), and the client's wrapped choice (one bit, the largest message it accepts, which is
//!   0 with no layer, then an optional authorization id, left empty here so the server takes the
//!   authenticated principal, which HBase's callback requires).
//! - Data frames: a 4-byte big-endian length and the payload, always, even with `auth` (Java's
//!   transport only skips the wrap). One frame per flush; the Java side neither splits its
//!   frames to the size the client announced nor checks the size of those it reads.

#[cfg(any(test, feature = "testing"))]
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::error::clean_remote_text;
use super::gss::{self, Context};
use super::{KerberosError, Qop};

pub(super) const START: u8 = 1;
pub(super) const OK: u8 = 2;
pub(super) const BAD: u8 = 3;
pub(super) const ERROR: u8 = 4;
pub(super) const COMPLETE: u8 = 5;

/// The mechanism name sent with START.
pub(super) const MECHANISM: &[u8] = b"GSSAPI";

/// The largest negotiation payload accepted: GSSAPI tokens are a few kilobytes (a ticket with a
/// large PAC stays well under 64 KiB).
pub(super) const MAX_NEGOTIATION_PAYLOAD: usize = 1 << 20;

/// The largest data frame accepted. RFC 4752 caps what a peer may send at the size announced
/// in the choice (at most 2^24 - 1 bytes), but Java's transport wraps each reply whole, however
/// large; so the limit is the largest reply the client accepts anyway, plus the wrap overhead.
pub(super) const MAX_DATA_FRAME: usize = crate::hbase::input::MAX_REPLY + (1 << 16);

/// The receive size announced in the client's choice: the largest 3 bytes can say.
pub(super) const ANNOUNCED_MAX: u32 = 0x00ff_ffff;

/// The flags the SASL client asks for: mutual authentication, replay and sequence detection,
/// and both protection services (RFC 4752 requires integrity and confidentiality to be asked).
pub(super) const SASL_FLAGS: u32 =
    gss::FLAG_MUTUAL | gss::FLAG_REPLAY | gss::FLAG_SEQUENCE | gss::FLAG_CONF | gss::FLAG_INTEG;

fn status_name(status: u8) -> &'static str {
    match status {
        START => "START",
        OK => "OK",
        BAD => "BAD",
        ERROR => "ERROR",
        COMPLETE => "COMPLETE",
        _ => "invalid",
    }
}

/// Appends one negotiation frame.
pub(super) fn encode_frame(status: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(status);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
}

/// Checks a negotiation frame header: its status and payload length.
pub(super) fn parse_header(
    header: [u8; 5],
    during: &'static str,
) -> Result<(u8, usize), KerberosError> {
    let status = header[0];
    if !(START..=COMPLETE).contains(&status) {
        return Err(KerberosError::UnexpectedStatus { status, during });
    }
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if len as usize > MAX_NEGOTIATION_PAYLOAD {
        return Err(KerberosError::FrameTooLarge {
            size: len.into(),
            max: MAX_NEGOTIATION_PAYLOAD as u64,
        });
    }
    Ok((status, len as usize))
}

/// A parsed negotiation frame: its status, payload, and size on the wire.
#[cfg(test)]
pub(super) type Frame<'a> = (u8, &'a [u8], usize);

/// One whole negotiation frame at the front of `buf`: its status, payload and size, or None
/// if the buffer holds only part of one. BAD and ERROR become `ServerRefused`. (The client
/// reads with `read_frame`; this is the same check over a buffer, for the parser tests.)
#[cfg(test)]
pub(super) fn parse_frame<'a>(
    buf: &'a [u8],
    during: &'static str,
) -> Result<Option<Frame<'a>>, KerberosError> {
    let Some(header) = buf.first_chunk::<5>() else {
        return Ok(None);
    };
    let (status, len) = parse_header(*header, during)?;
    let Some(payload) = buf.get(5..5 + len) else {
        return Ok(None);
    };
    refused(status, payload)?;
    Ok(Some((status, payload, 5 + len)))
}

fn refused(status: u8, payload: &[u8]) -> Result<(), KerberosError> {
    if status == BAD || status == ERROR {
        return Err(KerberosError::ServerRefused {
            status: status_name(status),
            message: clean_remote_text(payload),
        });
    }
    Ok(())
}

/// Reads one negotiation frame.
pub(super) async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
    during: &'static str,
) -> Result<(u8, Vec<u8>), KerberosError> {
    let mut header = [0u8; 5];
    stream.read_exact(&mut header).await?;
    let (status, len) = parse_header(header, during)?;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    refused(status, &payload)?;
    Ok((status, payload))
}

async fn write_frames<S: AsyncWrite + Unpin>(
    stream: &mut S,
    frames: &[(u8, &[u8])],
) -> Result<(), KerberosError> {
    let mut out = Vec::new();
    for (status, payload) in frames {
        encode_frame(*status, payload, &mut out);
    }
    stream.write_all(&out).await?;
    stream.flush().await?;
    Ok(())
}

/// The server's RFC 4752 offer: the layers it supports and the largest message it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Offer {
    pub mask: u8,
    pub max_buffer: u32,
}

impl Offer {
    pub(super) fn decode(bytes: &[u8]) -> Result<Offer, KerberosError> {
        match bytes {
            [mask, a, b, c] => Ok(Offer {
                mask: *mask,
                max_buffer: u32::from_be_bytes([0, *a, *b, *c]),
            }),
            _ => Err(KerberosError::Protocol(format!(
                "the server's security layer offer has {} bytes, not 4",
                bytes.len()
            ))),
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub(super) fn encode(self) -> [u8; 4] {
        let [_, a, b, c] = self.max_buffer.min(ANNOUNCED_MAX).to_be_bytes();
        [self.mask, a, b, c]
    }

    /// The requested qop if offered, else `QopNotOffered` with what is.
    pub(super) fn select(self, requested: Qop) -> Result<Qop, KerberosError> {
        if self.mask & requested.bit() != 0 {
            Ok(requested)
        } else {
            Err(KerberosError::QopNotOffered {
                requested,
                offered: Qop::from_mask(self.mask),
            })
        }
    }
}

/// The client's choice: the layer, the largest message it accepts (0 with no layer, as RFC
/// 4752 requires), and an authorization id.
pub(super) fn encode_choice(qop: Qop, max_recv: u32, authzid: &str) -> Vec<u8> {
    let max = if qop == Qop::Auth {
        0
    } else {
        max_recv.min(ANNOUNCED_MAX)
    };
    let [_, a, b, c] = max.to_be_bytes();
    let mut out = vec![qop.bit(), a, b, c];
    out.extend_from_slice(authzid.as_bytes());
    out
}

#[cfg(any(test, feature = "testing"))]
/// The client's choice decoded (by the test server): the layer bit, the size, the authzid.
pub(super) fn decode_choice(bytes: &[u8]) -> Result<(u8, u32, String), KerberosError> {
    let Some(([bit, a, b, c], rest)) = bytes.split_first_chunk::<4>() else {
        return Err(KerberosError::Protocol(format!(
            "a security layer choice of {} bytes",
            bytes.len()
        )));
    };
    Ok((
        *bit,
        u32::from_be_bytes([0, *a, *b, *c]),
        clean_remote_text(rest),
    ))
}

/// The security layer after negotiation; see [`super::Gss::sasl_connect`].
pub(crate) struct SaslLayer {
    ctx: Context,
    qop: Qop,
    /// The largest message the peer said it accepts (0: no limit).
    peer_max: u32,
    /// The largest plaintext one sealed frame carries (from the peer's max buffer).
    send_chunk: usize,
    /// The largest frame accepted.
    recv_max: usize,
}

impl std::fmt::Debug for SaslLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLayer")
            .field("qop", &self.qop)
            .field("peer_max", &self.peer_max)
            .field("send_chunk", &self.send_chunk)
            .field("recv_max", &self.recv_max)
            .finish_non_exhaustive()
    }
}

impl SaslLayer {
    /// A layer over an established context; `peer_max` is the largest message the peer said
    /// it accepts (0: no limit).
    pub(super) fn new(
        mut ctx: Context,
        qop: Qop,
        peer_max: u32,
        recv_max: usize,
    ) -> Result<SaslLayer, KerberosError> {
        let send_chunk = match qop {
            Qop::Auth => u32::MAX as usize,
            _ if peer_max == 0 => u32::MAX as usize >> 1,
            _ => {
                let limit = ctx.wrap_size_limit(qop == Qop::AuthConf, peer_max)?;
                if limit == 0 {
                    return Err(KerberosError::Protocol(format!(
                        "the peer's max buffer of {peer_max} bytes cannot hold a sealed byte"
                    )));
                }
                limit as usize
            }
        };
        tracing::debug!(%qop, peer_max, send_chunk, "SASL security layer negotiated");
        Ok(SaslLayer {
            ctx,
            qop,
            peer_max,
            send_chunk,
            recv_max,
        })
    }

    /// The largest message the peer said it accepts (0: no limit; with `auth`, what the
    /// server offered, unused).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn peer_max(&self) -> u32 {
        self.peer_max
    }

    /// Appends `plain` to `out` as one frame (sealed as the qop says). A message longer than
    /// the largest the peer accepts (64 KiB from HBase) is sent as several frames, which the
    /// peer's transport reads back as one stream; an empty one appends nothing.
    pub(crate) fn seal(&mut self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), KerberosError> {
        for chunk in plain.chunks(self.send_chunk) {
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            match self.qop {
                Qop::Auth => out.extend_from_slice(chunk),
                Qop::AuthInt => self.ctx.wrap(false, chunk, out)?,
                Qop::AuthConf => self.ctx.wrap(true, chunk, out)?,
            }
            let len = out.len() - at - 4;
            let len = u32::try_from(len).map_err(|_| KerberosError::FrameTooLarge {
                size: len as u64,
                max: u32::MAX.into(),
            })?;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        Ok(())
    }

    /// Takes every whole frame at the front of `wire`, appends its unwrapped payload to
    /// `plain`, and returns how many bytes of `wire` it consumed (0 if no whole frame yet).
    /// A frame over the receive limit, or one that fails to unwrap, is an error.
    pub(crate) fn open(
        &mut self,
        wire: &[u8],
        plain: &mut Vec<u8>,
    ) -> Result<usize, KerberosError> {
        let mut used = 0;
        while let Some(header) = wire[used..].first_chunk::<4>() {
            let len = u32::from_be_bytes(*header) as usize;
            if len > self.recv_max {
                return Err(KerberosError::FrameTooLarge {
                    size: len as u64,
                    max: self.recv_max as u64,
                });
            }
            let Some(payload) = wire.get(used + 4..used + 4 + len) else {
                break;
            };
            match self.qop {
                Qop::Auth => plain.extend_from_slice(payload),
                qop => {
                    let sealed = self.ctx.unwrap(payload, plain)?;
                    if qop == Qop::AuthConf && !sealed {
                        return Err(KerberosError::Protocol(
                            "an unencrypted frame on an auth-conf connection".into(),
                        ));
                    }
                }
            }
            used += 4 + len;
        }
        Ok(used)
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn qop(&self) -> Qop {
        self.qop
    }
}

/// The client's negotiation after its first token (made by the caller, off the async
/// threads): START and that token, then the exchange described in the module's docs.
pub(super) async fn negotiate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    mut ctx: Context,
    first: gss::Step,
    mut next_step: impl FnMut(&mut Context, &[u8]) -> Result<gss::Step, KerberosError>,
    qop: Qop,
) -> Result<SaslLayer, KerberosError> {
    write_frames(stream, &[(START, MECHANISM), (OK, &first.token)]).await?;
    let mut established = first.complete;
    loop {
        let (status, payload) = read_frame(stream, "during the SASL negotiation").await?;
        if status != OK {
            return Err(if status == COMPLETE {
                KerberosError::Protocol(
                    "the server completed before a security layer was chosen".into(),
                )
            } else {
                KerberosError::UnexpectedStatus {
                    status,
                    during: "during the SASL negotiation",
                }
            });
        }
        if !established {
            let step = next_step(&mut ctx, &payload)?;
            established = step.complete;
            write_frames(stream, &[(OK, &step.token)]).await?;
            continue;
        }
        // The context is up: this is the server's offer.
        let mut offer = Vec::new();
        ctx.unwrap(&payload, &mut offer)?;
        let offer = Offer::decode(&offer)?;
        let chosen = match offer.select(qop) {
            Ok(chosen) => chosen,
            Err(e) => {
                // Tell the server why, as Java's client does, then fail.
                let why = e.to_string();
                let _ = write_frames(stream, &[(BAD, why.as_bytes())]).await;
                return Err(e);
            }
        };
        let mut choice = Vec::new();
        ctx.wrap(
            false,
            &encode_choice(chosen, ANNOUNCED_MAX, ""),
            &mut choice,
        )?;
        write_frames(stream, &[(COMPLETE, &choice)]).await?;
        let (status, _) = read_frame(stream, "after the security layer was chosen").await?;
        if status != COMPLETE {
            return Err(KerberosError::UnexpectedStatus {
                status,
                during: "after the security layer was chosen",
            });
        }
        return SaslLayer::new(ctx, chosen, offer.max_buffer, MAX_DATA_FRAME);
    }
}

/// The server side, as HBase's gateway runs it (tests only): reads START and the client's
/// tokens, accepts them with `acceptor`, offers `offer`, and checks the client's choice.
/// Returns the layer and the client's principal.
#[cfg(any(test, feature = "testing"))]
pub(super) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    lib: &'static gss::Lib,
    acceptor: &gss::Cred,
    offer: Offer,
    timeout: Duration,
) -> Result<(SaslLayer, String), KerberosError> {
    let serve = async {
        let (status, mechanism) = read_frame(stream, "instead of START").await?;
        if status != START || mechanism != MECHANISM {
            write_frames(stream, &[(BAD, b"Unsupported mechanism type")]).await?;
            return Err(KerberosError::UnexpectedStatus {
                status,
                during: "instead of START",
            });
        }
        let mut ctx = Context::new(lib);
        let peer;
        loop {
            let (status, token) = read_frame(stream, "during the SASL negotiation").await?;
            if status != OK {
                return Err(KerberosError::UnexpectedStatus {
                    status,
                    during: "from the client",
                });
            }
            let (step, name) = match ctx.accept_step(acceptor, &token) {
                Ok(accepted) => accepted,
                Err(e) => {
                    // As Java's server does: BAD with the SaslException's message.
                    write_frames(stream, &[(BAD, b"GSS initiate failed")]).await?;
                    return Err(e);
                }
            };
            if step.complete {
                peer = name.unwrap_or_default();
                if !step.token.is_empty() {
                    // Mutual authentication: the client answers the reply with an empty OK.
                    write_frames(stream, &[(OK, &step.token)]).await?;
                    let (_, empty) = read_frame(stream, "after the mutual reply").await?;
                    if !empty.is_empty() {
                        return Err(KerberosError::Protocol(
                            "data after the context was established".into(),
                        ));
                    }
                }
                break;
            }
            write_frames(stream, &[(OK, &step.token)]).await?;
        }
        let mut wrapped = Vec::new();
        ctx.wrap(false, &offer.encode(), &mut wrapped)?;
        write_frames(stream, &[(OK, &wrapped)]).await?;
        let (status, choice) = read_frame(stream, "instead of the client's choice").await?;
        if status != COMPLETE {
            return Err(KerberosError::UnexpectedStatus {
                status,
                during: "instead of the client's choice",
            });
        }
        let mut plain = Vec::new();
        ctx.unwrap(&choice, &mut plain)?;
        let (bit, client_max, authzid) = decode_choice(&plain)?;
        let qop = Qop::from_mask(bit & offer.mask);
        let [qop] = qop[..] else {
            let why = format!("Client selected unsupported protection: {bit}");
            write_frames(stream, &[(BAD, why.as_bytes())]).await?;
            return Err(KerberosError::Protocol(why));
        };
        if !authzid.is_empty() && authzid != peer {
            return Err(KerberosError::Protocol(format!(
                "authzid {authzid} is not {peer}"
            )));
        }
        write_frames(stream, &[(COMPLETE, b"")]).await?;
        Ok((SaslLayer::new(ctx, qop, client_max, MAX_DATA_FRAME)?, peer))
    };
    tokio::time::timeout(timeout, serve)
        .await
        .map_err(|_| KerberosError::Timeout(timeout))?
}
