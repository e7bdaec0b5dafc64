//! Test drivers (feature `testing`, for `tests/kerberos.rs`): the crate-private API behind a
//! public face, and a GSSAPI acceptor on the same library that stands in for the gateway.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::gss::{self, Context, Cred, CredStore};
use super::sasl::{self, Offer};
use super::{spnego, Gss, Kerberos, KerberosError, Qop, SaslLayer};

/// The acceptor's credentials, from a service keytab.
#[derive(Clone)]
pub struct Acceptor {
    lib: &'static gss::Lib,
    cred: Arc<Cred>,
}

impl Acceptor {
    pub fn new(keytab: &Path) -> Result<Acceptor, KerberosError> {
        let lib = gss::load()?;
        let keytab = keytab.to_string_lossy();
        let store = CredStore {
            ccache: None,
            client_keytab: None,
            keytab: Some(&keytab),
        };
        let cred = Cred::acquire(lib, None, &store, true).map_err(|(major, minor, message)| {
            KerberosError::Gss {
                call: "gss_acquire_cred_from",
                major,
                minor,
                message,
            }
        })?;
        Ok(Acceptor {
            lib,
            cred: Arc::new(cred),
        })
    }
}

/// `Gss::new`: the client's principal and expiry, or the typed error.
pub fn credentials(
    config: &Kerberos,
) -> Result<(String, Option<std::time::SystemTime>), KerberosError> {
    let gss = Gss::new(config)?;
    Ok((gss.principal().to_owned(), gss.expires()))
}

/// `Gss::spnego_header`, checked by the acceptor: the header and the client name it saw.
pub fn spnego(
    config: &Kerberos,
    host: &str,
    acceptor: &Acceptor,
) -> Result<(String, String), KerberosError> {
    let gss = Gss::new(config)?;
    let header = gss.spnego_header(host)?;
    let token = header
        .strip_prefix("Negotiate ")
        .and_then(spnego::unbase64)
        .ok_or_else(|| KerberosError::Protocol(format!("a malformed header {header:?}")))?;
    let mut ctx = Context::new(acceptor.lib);
    let (step, client) = ctx.accept_step(&acceptor.cred, &token)?;
    if !step.complete {
        return Err(KerberosError::Protocol(
            "the acceptor wants another SPNEGO round".into(),
        ));
    }
    Ok((header, client.unwrap_or_default()))
}

/// `Gss::new` then `Gss::spnego_header`.
pub fn spnego_header(config: &Kerberos, host: &str) -> Result<String, KerberosError> {
    Gss::new(config)?.spnego_header(host)
}

/// The mean time of one `spnego_header` call after the first (the service ticket cached).
pub fn spnego_cost(config: &Kerberos, host: &str, calls: u32) -> Result<Duration, KerberosError> {
    let gss = Gss::new(config)?;
    gss.spnego_header(host)?;
    let start = Instant::now();
    for _ in 0..calls {
        gss.spnego_header(host)?;
    }
    Ok(start.elapsed() / calls.max(1))
}

/// A negotiated layer, for a test that talks to a real gateway.
pub struct Layer(SaslLayer);

impl Layer {
    pub fn seal(&mut self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), KerberosError> {
        self.0.seal(plain, out)
    }
    pub fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, KerberosError> {
        self.0.open(wire, plain)
    }
    pub fn qop(&self) -> Qop {
        self.0.qop()
    }
    /// The largest message the peer said it accepts.
    pub fn peer_max(&self) -> u32 {
        self.0.peer_max()
    }
}

/// `Gss::new` then `Gss::sasl_connect`.
pub async fn connect(
    config: &Kerberos,
    stream: &mut TcpStream,
    host: &str,
    qop: Qop,
    timeout: Duration,
) -> Result<Layer, KerberosError> {
    let gss = Gss::new(config)?;
    gss.sasl_connect(stream, host, qop, timeout)
        .await
        .map(Layer)
}

/// What [`sasl_echo`] saw.
#[derive(Debug)]
pub struct Echo {
    /// The qop both sides settled on.
    pub qop: Qop,
    /// The client principal the server authenticated.
    pub client: String,
    /// The bytes of the largest sealed frame the client sent.
    pub client_frames: usize,
}

/// A SASL handshake between `sasl_connect` and an in-process server offering `offer_mask`
/// (RFC 4752 bits) with a 64 KiB max buffer, as HBase's gateway does; then each message goes
/// to the server sealed, comes back sealed by the server, and must arrive unchanged.
pub async fn sasl_echo(
    config: &Kerberos,
    host: &str,
    acceptor: &Acceptor,
    offer_mask: u8,
    qop: Qop,
    messages: &[Vec<u8>],
) -> Result<Echo, KerberosError> {
    let gss = Gss::new(config)?;
    echo_with(&gss, host, acceptor, offer_mask, qop, messages).await
}

/// One client's credentials used from many tasks and threads at once: `connections` SASL
/// handshakes with echoes on tokio tasks, while as many threads make SPNEGO headers that the
/// acceptor checks.
pub async fn concurrently(
    config: &Kerberos,
    host: &str,
    acceptor: &Acceptor,
    connections: usize,
) -> Result<(), KerberosError> {
    let gss = Gss::new(config)?;
    let headers: Vec<_> = (0..connections)
        .map(|_| {
            let (gss, host) = (Arc::clone(&gss), host.to_owned());
            std::thread::spawn(move || {
                (0..20)
                    .map(|_| gss.spnego_header(&host))
                    .collect::<Result<Vec<_>, _>>()
            })
        })
        .collect();
    let tasks: Vec<_> = (0..connections)
        .map(|i| {
            let (gss, host, acceptor) = (Arc::clone(&gss), host.to_owned(), acceptor.clone());
            let qop = [Qop::Auth, Qop::AuthInt, Qop::AuthConf][i % 3];
            tokio::spawn(async move {
                let messages = vec![vec![i as u8; 1000 + i * 10_000]];
                echo_with(&gss, &host, &acceptor, 7, qop, &messages).await
            })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|e| KerberosError::Protocol(format!("task: {e}")))??;
    }
    for thread in headers {
        let headers = thread
            .join()
            .map_err(|_| KerberosError::Protocol("a thread panicked".into()))??;
        for header in headers {
            let token = header
                .strip_prefix("Negotiate ")
                .and_then(spnego::unbase64)
                .unwrap_or_default();
            let mut ctx = Context::new(acceptor.lib);
            ctx.accept_step(&acceptor.cred, &token)?;
        }
    }
    Ok(())
}

async fn echo_with(
    gss: &Gss,
    host: &str,
    acceptor: &Acceptor,
    offer_mask: u8,
    qop: Qop,
    messages: &[Vec<u8>],
) -> Result<Echo, KerberosError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let acceptor = acceptor.clone();
    let offer = Offer {
        mask: offer_mask,
        max_buffer: 65_536,
    };
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await?;
        let (mut layer, client) = sasl::serve(
            &mut stream,
            acceptor.lib,
            &acceptor.cred,
            offer,
            Duration::from_secs(10),
        )
        .await?;
        let qop = layer.qop();
        // Echo: every opened byte goes back sealed, until the client closes.
        let (mut wire, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok::<_, KerberosError>((qop, client));
            }
            wire.extend_from_slice(&buf[..n]);
            let mut plain = Vec::new();
            let used = layer.open(&wire, &mut plain)?;
            wire.drain(..used);
            let mut out = Vec::new();
            layer.seal(&plain, &mut out)?;
            stream.write_all(&out).await?;
        }
    });
    let mut stream = TcpStream::connect(addr).await?;
    let result = async {
        let mut layer = gss
            .sasl_connect(&mut stream, host, qop, Duration::from_secs(10))
            .await?;
        let mut largest = 0;
        for message in messages {
            let mut out = Vec::new();
            layer.seal(message, &mut out)?;
            largest = largest.max(largest_frame(&out));
            stream.write_all(&out).await?;
            let (mut wire, mut plain, mut buf) = (Vec::new(), Vec::new(), vec![0u8; 1 << 16]);
            while plain.len() < message.len() {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    return Err(KerberosError::Protocol("the echo server closed".into()));
                }
                wire.extend_from_slice(&buf[..n]);
                let used = layer.open(&wire, &mut plain)?;
                wire.drain(..used);
            }
            if &plain != message {
                return Err(KerberosError::Protocol("the echo differs".into()));
            }
        }
        Ok((layer.qop(), largest))
    }
    .await;
    drop(stream);
    let served = server
        .await
        .map_err(|e| KerberosError::Protocol(format!("server task: {e}")))?;
    let (qop, largest) = result?;
    let (server_qop, client) = served?;
    if server_qop != qop {
        return Err(KerberosError::Protocol(format!(
            "client chose {qop}, server saw {server_qop}"
        )));
    }
    Ok(Echo {
        qop,
        client,
        client_frames: largest,
    })
}

fn largest_frame(mut wire: &[u8]) -> usize {
    let mut largest = 0;
    while let Some(header) = wire.first_chunk::<4>() {
        let len = u32::from_be_bytes(*header) as usize;
        largest = largest.max(len);
        wire = wire.get(4 + len..).unwrap_or_default();
    }
    largest
}

/// Both ends of a negotiated layer: `sasl_connect` against the in-process server, over a
/// loopback connection that is closed again (the layers need no stream).
pub async fn layer_pair(
    config: &Kerberos,
    host: &str,
    acceptor: &Acceptor,
    offer_mask: u8,
    qop: Qop,
) -> Result<(Layer, Layer), KerberosError> {
    let gss = Gss::new(config)?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let acceptor = acceptor.clone();
    let offer = Offer {
        mask: offer_mask,
        max_buffer: 65_536,
    };
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await?;
        sasl::serve(
            &mut stream,
            acceptor.lib,
            &acceptor.cred,
            offer,
            Duration::from_secs(10),
        )
        .await
    });
    let mut stream = TcpStream::connect(addr).await?;
    let client = gss
        .sasl_connect(&mut stream, host, qop, Duration::from_secs(10))
        .await;
    drop(stream);
    let served = server
        .await
        .map_err(|e| KerberosError::Protocol(format!("server task: {e}")))?;
    let client = client?;
    let (server, _) = served?;
    Ok((Layer(client), Layer(server)))
}
