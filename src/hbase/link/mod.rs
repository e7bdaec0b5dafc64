//! What stands between a connection's Thrift byte stream and its socket, for gateways that are
//! not a plain Thrift socket: HTTP (each request a POST, each reply a response body), TLS, and
//! SASL (each write a length-prefixed, possibly wrapped, frame).
//!
//! A [`Link`] is a stack of [`Layer`]s, the one nearest Thrift first. The connection's task
//! seals each request through it before writing, and opens what it reads through it before
//! decoding replies; the handshakes (TLS, SASL) are done when the connection opens, so a layer
//! here only ever carries data. A plain socket has no link at all, and pays nothing for one.

pub(crate) mod http;
pub(crate) mod probe;
#[cfg(feature = "kerberos")]
mod sasl;
pub(crate) mod tls;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;

use super::endpoint::Endpoint;
use super::errors::Cause;

/// How every new connection to one gateway is set up over its socket.
#[derive(Clone)]
pub(crate) struct Plan {
    pub endpoint: Endpoint,
    /// The TLS configuration, for an `https://` gateway.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The end user to act as (HTTP only).
    pub do_as: Option<String>,
    /// The `Authorization` header of each HTTP request (SPNEGO).
    pub authorize: Option<http::Authorize>,
    /// Kerberos credentials and the protection to ask for, for SASL on a raw socket.
    #[cfg(feature = "kerberos")]
    pub sasl: Option<(Arc<crate::hbase::kerberos::Gss>, crate::hbase::Qop)>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The configurations hold keys; only what they are is shown.
        f.debug_struct("Plan")
            .field("endpoint", &self.endpoint.to_string())
            .field("tls", &self.tls.is_some())
            .field("do_as", &self.do_as)
            .field("authorize", &self.authorize.is_some())
            .field("sasl", &self.has_sasl())
            .finish()
    }
}

impl Plan {
    /// A raw Thrift socket with nothing over it.
    pub(crate) fn plain(endpoint: Endpoint) -> Plan {
        Plan {
            endpoint,
            tls: None,
            do_as: None,
            authorize: None,
            #[cfg(feature = "kerberos")]
            sasl: None,
        }
    }

    /// Whether the gateway could be one that requires SASL without the client knowing: no
    /// TLS before it and no SASL of our own ([`probe`] tells).
    pub(crate) fn may_meet_sasl(&self) -> bool {
        self.tls.is_none() && !self.has_sasl()
    }

    /// Whether connections need no link at all.
    pub(crate) fn is_plain(&self) -> bool {
        !self.endpoint.is_http() && self.tls.is_none() && !self.has_sasl()
    }

    #[cfg(feature = "kerberos")]
    fn has_sasl(&self) -> bool {
        self.sasl.is_some()
    }

    #[cfg(not(feature = "kerberos"))]
    fn has_sasl(&self) -> bool {
        false
    }

    /// Runs the handshakes on a freshly connected `stream`, each within `timeout`, and
    /// returns its link.
    #[cfg_attr(not(feature = "kerberos"), allow(unused_variables))]
    pub(crate) async fn establish(
        &self,
        stream: &mut TcpStream,
        timeout: Duration,
    ) -> io::Result<Link> {
        let mut layers: Vec<Box<dyn Layer>> = Vec::new();
        if self.endpoint.is_http() {
            layers.push(Box::new(http::Http::new(
                &self.endpoint.authority(),
                &self.endpoint.path,
                self.do_as.as_deref(),
                self.authorize.clone(),
            )));
        }
        if let Some(config) = &self.tls {
            layers.push(Box::new(
                tls::connect(config, &self.endpoint.host, stream).await?,
            ));
        }
        #[cfg(feature = "kerberos")]
        if let Some((gss, qop)) = &self.sasl {
            let layer = gss
                .sasl_connect(stream, &self.endpoint.host, *qop, timeout)
                .await
                .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, Arc::new(e)))?;
            layers.push(Box::new(layer));
        }
        Ok(Link::new(layers))
    }
}

/// One transformation of the byte stream, both ways.
pub(crate) trait Layer: Send {
    /// Appends `request` (one whole Thrift request, or what the layer above made of it) to
    /// `out` as it goes towards the socket.
    fn seal(&mut self, request: &[u8], out: &mut Vec<u8>) -> Result<(), Cause>;

    /// Takes what it can from the front of `wire` (bytes from the socket side), appends the
    /// reply bytes they carry to `plain`, and returns how many bytes of `wire` it used.
    fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, Cause>;

    /// Bytes the layer must send of its own accord after reading (a TLS alert or key update).
    fn pending(&mut self, _out: &mut Vec<u8>) -> Result<(), Cause> {
        Ok(())
    }

    /// Whether the server said it closes the connection after the reply just opened.
    fn closing(&self) -> bool {
        false
    }

    /// What the end of the stream means to the layer, if more than a closed connection: an
    /// HTTP error page whose body ran to the end of the stream.
    fn closed(&mut self) -> Option<Cause> {
        None
    }
}

/// The layers of one connection, the one nearest Thrift first.
pub(crate) struct Link {
    layers: Vec<Box<dyn Layer>>,
    /// Bytes opened by layer `i + 1` and not yet taken by layer `i`.
    between: Vec<Vec<u8>>,
    scratch: Vec<u8>,
}

impl Link {
    pub(crate) fn new(layers: Vec<Box<dyn Layer>>) -> Link {
        let between = (1..layers.len()).map(|_| Vec::new()).collect();
        Link {
            layers,
            between,
            scratch: Vec::new(),
        }
    }

    /// Appends one request, sealed by every layer in turn, to `out`.
    pub(crate) fn seal(&mut self, request: &[u8], out: &mut Vec<u8>) -> Result<(), Cause> {
        let Some((last, inner)) = self.layers.split_last_mut() else {
            out.extend_from_slice(request);
            return Ok(());
        };
        let mut current = request.to_vec();
        for layer in inner {
            self.scratch.clear();
            layer.seal(&current, &mut self.scratch)?;
            std::mem::swap(&mut current, &mut self.scratch);
        }
        last.seal(&current, out)
    }

    /// Opens bytes read from the socket through every layer; returns how many of `wire` the
    /// outermost layer used.
    pub(crate) fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, Cause> {
        let n = self.layers.len();
        if n == 1 {
            return self.layers[0].open(wire, plain);
        }
        let used = self.layers[n - 1].open(wire, &mut self.between[n - 2])?;
        for i in (0..n - 1).rev() {
            let input = std::mem::take(&mut self.between[i]);
            let taken = if i == 0 {
                self.layers[0].open(&input, plain)?
            } else {
                self.layers[i].open(&input, &mut self.between[i - 1])?
            };
            self.between[i] = input;
            self.between[i].drain(..taken);
        }
        Ok(used)
    }

    /// What the outermost layer must send of its own accord.
    pub(crate) fn pending(&mut self, out: &mut Vec<u8>) -> Result<(), Cause> {
        match self.layers.last_mut() {
            Some(layer) => layer.pending(out),
            None => Ok(()),
        }
    }

    /// What the end of the stream means, if a layer knows better than "closed".
    pub(crate) fn closed(&mut self) -> Option<Cause> {
        self.layers.iter_mut().find_map(|layer| layer.closed())
    }

    /// Whether the server closes the connection after the reply just opened.
    pub(crate) fn closing(&self) -> bool {
        self.layers.iter().any(|layer| layer.closing())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames each write with a one-byte length.
    struct Prefixed;

    impl Layer for Prefixed {
        fn seal(&mut self, request: &[u8], out: &mut Vec<u8>) -> Result<(), Cause> {
            out.push(u8::try_from(request.len()).unwrap());
            out.extend_from_slice(request);
            Ok(())
        }

        fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, Cause> {
            let mut at = 0;
            while let Some(&len) = wire.get(at) {
                let end = at + 1 + usize::from(len);
                if end > wire.len() {
                    break;
                }
                plain.extend_from_slice(&wire[at + 1..end]);
                at = end;
            }
            Ok(at)
        }
    }

    #[test]
    fn layers_seal_inside_out_and_open_outside_in_keeping_partial_input() {
        let mut link = Link::new(vec![Box::new(Prefixed), Box::new(Prefixed)]);
        let mut wire = Vec::new();
        link.seal(b"ab", &mut wire).unwrap();
        assert_eq!(wire, [3, 2, b'a', b'b']);
        let mut plain = Vec::new();
        assert_eq!(
            link.open(&[3, 2], &mut plain).unwrap(),
            0,
            "half an outer frame"
        );
        // An inner frame split over two outer frames waits between the layers.
        assert_eq!(link.open(&[2, 2, b'a', 1], &mut plain).unwrap(), 3);
        assert_eq!(plain, b"");
        assert_eq!(link.open(&[1, b'b'], &mut plain).unwrap(), 2);
        assert_eq!(plain, b"ab");
    }
}
