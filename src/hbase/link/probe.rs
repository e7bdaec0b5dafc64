//! Telling a gateway that requires SASL from a slow one, for a client that speaks no SASL.
//!
//! HBase's Thrift server with `hbase.thrift.security.qop` set reads a client's plain request as
//! a SASL negotiation frame, finds an invalid status byte, and from then on neither answers nor
//! closes the connection: the client would wait out its read timeout and replay into the same
//! silence. Started on a side connection once a first request has waited a while, a SASL START
//! with an empty GSSAPI token is refused at once by such a gateway (status BAD, "GSS initiate
//! failed"), while a Thrift gateway reads it as the start of a large message and waits; the
//! probe then gives up after its timeout and closes, and nothing was applied.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::hbase::errors::{sasl_refusal, NOT_THRIFT_HEAD};

/// How long a first request waits for its reply before the probe starts.
pub(crate) const PROBE_AFTER: Duration = Duration::from_secs(1);

/// How long the probe waits for a refusal.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The gateway's SASL refusal of a negotiation start (its frame, as the first bytes a
/// connection got), if the server at `addr` is one that requires SASL; `None` otherwise.
pub(crate) async fn sasl_refusal_from(addr: &str) -> Option<Vec<u8>> {
    let probe = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let mut start = vec![1, 0, 0, 0, 6];
        start.extend_from_slice(b"GSSAPI");
        start.extend_from_slice(&[2, 0, 0, 0, 0]);
        stream.write_all(&start).await.ok()?;
        let mut head = Vec::with_capacity(NOT_THRIFT_HEAD);
        let mut buf = [0u8; NOT_THRIFT_HEAD];
        while head.len() < NOT_THRIFT_HEAD {
            let n = stream
                .read(&mut buf[..NOT_THRIFT_HEAD - head.len()])
                .await
                .ok()?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
            if whole_frame(&head) {
                break;
            }
        }
        sasl_refusal(&head).map(|_| head)
    };
    tokio::time::timeout(PROBE_TIMEOUT, probe)
        .await
        .ok()
        .flatten()
}

/// Whether `head` holds a whole negotiation frame (or as much of one as is kept).
fn whole_frame(head: &[u8]) -> bool {
    match head {
        [_, a, b, c, d, rest @ ..] => {
            let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
            rest.len() >= len.min(NOT_THRIFT_HEAD - 5)
        }
        _ => false,
    }
}
