//! One Thrift2 connection, and the r2d2 manager that opens, vets and discards them.
//!
//! The socket halves are wrapped in taps that record what a call did on the wire: whether the
//! reply phase began (so the request was fully sent and may have been applied) and the
//! original `io::Error` (Thrift keeps only its text). The client's retry rules depend on both.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol,
    TInputProtocol, TOutputProtocol,
};
use thrift::transport::{
    TBufferedReadTransport, TBufferedWriteTransport, TFramedReadTransport, TFramedWriteTransport,
};
use thrift::TThriftClient;

use super::config::{HBaseConfig, Protocol, Transport};
use super::deferred::{Encoded, Outbox, State};
use super::errors;
use super::hot::{self, Reply, Request};
use crate::thrift::hbase::THBaseServiceSyncClient;
use crate::{Error, Peer};

pub(crate) type ThriftClient =
    THBaseServiceSyncClient<Box<dyn TInputProtocol + Send>, Box<dyn TOutputProtocol + Send>>;

/// What the socket taps saw during the current call.
#[derive(Debug, Default)]
struct CallTrace {
    reply_started: bool,
    lost_reply_armed: bool,
    io_error: Option<io::Error>,
}

#[derive(Clone, Debug, Default)]
struct Tap(Arc<Mutex<CallTrace>>);

impl Tap {
    /// Keeps the original error and hands Thrift a copy of it.
    fn keep<T>(&self, result: io::Result<T>) -> io::Result<T> {
        result.map_err(|e| {
            let copy = io::Error::new(e.kind(), e.to_string());
            self.0.lock().io_error.get_or_insert(e);
            copy
        })
    }
}

struct TapReader {
    stream: TcpStream,
    tap: Tap,
}

impl TapReader {
    /// Fails the first read of an armed call's reply, after the gateway has started answering
    /// (so the request was applied), as if the connection died just then.
    #[cfg(feature = "failpoints")]
    fn lost_reply_failpoint(&mut self) -> Option<io::Result<usize>> {
        fail::fail_point!("hbase::lost_reply", |_| {
            let mut discarded = [0u8; 1];
            Some(self.stream.read(&mut discarded).and_then(|_| {
                Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "reply dropped by failpoint hbase::lost_reply",
                ))
            }))
        });
        None
    }

    #[cfg(not(feature = "failpoints"))]
    fn lost_reply_failpoint(&mut self) -> Option<io::Result<usize>> {
        None
    }
}

impl Read for TapReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let armed = {
            let mut trace = self.tap.0.lock();
            trace.reply_started = true;
            std::mem::take(&mut trace.lost_reply_armed)
        };
        let result = match armed.then(|| self.lost_reply_failpoint()).flatten() {
            Some(result) => result,
            None => self.stream.read(buf),
        };
        self.tap.keep(result)
    }
}

struct TapWriter {
    stream: TcpStream,
    tap: Tap,
}

impl Write for TapWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.stream.write(buf);
        self.tap.keep(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.stream.flush();
        self.tap.keep(result)
    }
}

/// Why a call failed, with what the taps saw.
pub(crate) struct CallFailure {
    pub error: thrift::Error,
    pub io_error: Option<io::Error>,
    /// The reply phase began: the whole request reached the socket and may have been applied.
    pub reply_started: bool,
}

/// Why a deferred call failed.
pub(crate) enum ReceiveFailure {
    /// The request was never built; the sender's reason.
    Abandoned(Error),
    /// The call failed; with the request when it was built (so it can be replayed).
    Call(CallFailure, Option<Encoded>),
}

pub(crate) struct Connection {
    client: ThriftClient,
    tap: Tap,
    /// The socket again, for hand-encoded requests written by this or another thread.
    writer: Arc<TcpStream>,
    protocol: Protocol,
    transport: Transport,
    /// Sequence ids of hand-encoded calls (the generated client keeps its own).
    next_seq: i32,
    last_used: Instant,
    broken: bool,
}

impl Connection {
    pub(crate) fn open(config: &HBaseConfig) -> io::Result<Connection> {
        let stream = connect_any(&config.addr, config.connect_timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(config.read_timeout))?;
        stream.set_write_timeout(Some(config.read_timeout))?;
        let tap = Tap::default();
        let raw_writer = Arc::new(stream.try_clone()?);
        let reader = TapReader {
            stream: stream.try_clone()?,
            tap: tap.clone(),
        };
        let writer = TapWriter {
            stream,
            tap: tap.clone(),
        };
        let (input, output) = protocols(config, reader, writer);
        Ok(Connection {
            client: THBaseServiceSyncClient::new(input, output),
            tap,
            writer: raw_writer,
            protocol: config.protocol,
            transport: config.transport,
            next_seq: 0,
            last_used: Instant::now(),
            broken: false,
        })
    }

    fn next_seq(&mut self) -> i32 {
        self.next_seq = self.next_seq.wrapping_add(1);
        self.next_seq
    }

    /// Runs one hot call (see `hot`).
    pub(crate) fn exchange(
        &mut self,
        arm_lost_reply: bool,
        request: &Request,
    ) -> Result<Reply, CallFailure> {
        let encoded = self.encode(request);
        self.exchange_encoded(arm_lost_reply, &encoded)
    }

    /// Sends an already encoded request (a first try, or a replay) and reads its reply.
    pub(crate) fn exchange_encoded(
        &mut self,
        arm_lost_reply: bool,
        encoded: &Encoded,
    ) -> Result<Reply, CallFailure> {
        self.send_encoded(arm_lost_reply, encoded)?;
        self.recv_encoded(encoded)
    }

    /// Encodes `request` for this connection (its next sequence id).
    pub(crate) fn encode(&mut self, request: &Request) -> Encoded {
        self.encode_many(std::slice::from_ref(request))
    }

    /// Several requests of one method in one write, all under one sequence id: the server
    /// answers them in order (see `HBaseClient::check_and_mutate_all`).
    pub(crate) fn encode_many(&mut self, requests: &[Request]) -> Encoded {
        let seq = self.next_seq();
        Encoded::new(requests, self.protocol, self.transport, seq)
    }

    /// The first half of a pipelined call: the request only. [`recv_encoded`] must follow.
    pub(crate) fn send_encoded(
        &mut self,
        arm_lost_reply: bool,
        encoded: &Encoded,
    ) -> Result<(), CallFailure> {
        self.begin_call(arm_lost_reply);
        let sent = self.tap.keep(hot::send(&self.writer, &encoded.bytes));
        self.end_call(sent.map_err(thrift::Error::from))
    }

    /// The second half: the reply to `encoded`.
    pub(crate) fn recv_encoded(&mut self, encoded: &Encoded) -> Result<Reply, CallFailure> {
        let reply = hot::read_reply(self.client.i_prot_mut(), encoded.seq)
            .and_then(|reply| hot::check_method(reply, encoded.method));
        self.end_call(reply)
    }

    /// An outbox for one deferred call on this connection (see `deferred`).
    pub(crate) fn outbox(&mut self) -> Arc<Outbox> {
        let seq = self.next_seq();
        Arc::new(Outbox::new(
            Arc::clone(&self.writer),
            self.protocol,
            self.transport,
            seq,
        ))
    }

    /// Waits for the reply to the request written through `outbox`, whoever writes it.
    pub(crate) fn receive(
        &mut self,
        arm_lost_reply: bool,
        outbox: &Outbox,
    ) -> Result<Reply, ReceiveFailure> {
        // A request abandoned before we wait (an inline timestamp source failed) costs no read.
        if matches!(
            *outbox.state.lock(),
            State::Abandoned(_) | State::WriteFailed(..)
        ) {
            return Err(self.unanswered(outbox, None));
        }
        // A reply is checked against what was sent; a mismatch is a connection failure, so
        // `call` marks the socket broken and the retry rules treat it like any other.
        self.call(arm_lost_reply, |client| {
            let reply = hot::read_reply(client.i_prot_mut(), outbox.seq())?;
            match &*outbox.state.lock() {
                State::Sent(encoded) => hot::check_method(reply, encoded.method),
                _ => Err(hot::out_of_step(
                    "a reply arrived before its request was sent",
                )),
            }
        })
        .map_err(|failure| self.unanswered(outbox, Some(failure)))
    }

    /// The failure of a deferred call that got no reply, settled against what the sender did.
    fn unanswered(&mut self, outbox: &Outbox, failure: Option<CallFailure>) -> ReceiveFailure {
        let outcome = std::mem::replace(&mut *outbox.cancel(), State::Cancelled);
        // A sent request's failure was judged by `call`; anything else left the socket shut
        // down, cancelled or out of step.
        if !matches!(outcome, State::Sent(_)) {
            self.broken = true;
        }
        let (error, io_error) = match failure {
            Some(f) => (f.error, f.io_error),
            None => (
                thrift::Error::from(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "request not sent",
                )),
                None,
            ),
        };
        let failed = |error, io_error, reply_started| CallFailure {
            error,
            io_error,
            reply_started,
        };
        match outcome {
            State::Abandoned(error) => ReceiveFailure::Abandoned(error),
            State::WriteFailed(encoded, e) => {
                let copy = thrift::Error::from(io::Error::new(e.kind(), e.to_string()));
                ReceiveFailure::Call(failed(copy, Some(e), false), Some(encoded))
            }
            State::Sent(encoded) => {
                ReceiveFailure::Call(failed(error, io_error, true), Some(encoded))
            }
            State::Waiting | State::Cancelled => {
                ReceiveFailure::Call(failed(error, io_error, false), None)
            }
        }
    }

    /// Runs one Thrift call. `arm_lost_reply` marks a non-idempotent call for the
    /// `hbase::lost_reply` failpoint.
    pub(crate) fn call<T>(
        &mut self,
        arm_lost_reply: bool,
        f: impl FnOnce(&mut ThriftClient) -> thrift::Result<T>,
    ) -> Result<T, CallFailure> {
        self.begin_call(arm_lost_reply);
        let result = f(&mut self.client);
        self.end_call(result)
    }

    fn begin_call(&mut self, arm_lost_reply: bool) {
        *self.tap.0.lock() = CallTrace {
            lost_reply_armed: arm_lost_reply,
            ..CallTrace::default()
        };
    }

    fn end_call<T>(&mut self, result: thrift::Result<T>) -> Result<T, CallFailure> {
        self.last_used = Instant::now();
        result.map_err(|error| {
            let trace = std::mem::take(&mut *self.tap.0.lock());
            if errors::is_connection_failure(&error) {
                // A half-read reply or a late one would poison the next call on this socket.
                self.broken = true;
            }
            CallFailure {
                error,
                io_error: trace.io_error,
                reply_started: trace.reply_started,
            }
        })
    }

    fn idle_for(&self) -> Duration {
        self.last_used.elapsed()
    }
}

fn connect_any(addr: &str, timeout: Duration) -> io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    let mut last = io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        format!("{addr} resolved to no address"),
    );
    for candidate in addrs {
        match TcpStream::connect_timeout(&candidate, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn protocols(
    config: &HBaseConfig,
    reader: TapReader,
    writer: TapWriter,
) -> (
    Box<dyn TInputProtocol + Send>,
    Box<dyn TOutputProtocol + Send>,
) {
    match config.transport {
        Transport::Buffered => wrap(
            config.protocol,
            TBufferedReadTransport::new(reader),
            TBufferedWriteTransport::new(writer),
        ),
        Transport::Framed => wrap(
            config.protocol,
            TFramedReadTransport::new(reader),
            TFramedWriteTransport::new(writer),
        ),
    }
}

fn wrap<R, W>(
    protocol: Protocol,
    read: R,
    write: W,
) -> (
    Box<dyn TInputProtocol + Send>,
    Box<dyn TOutputProtocol + Send>,
)
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    match protocol {
        // Lenient on input (accepts old non-strict servers), strict on output like Java clients.
        Protocol::Binary => (
            Box::new(TBinaryInputProtocol::new(read, false)),
            Box::new(TBinaryOutputProtocol::new(write, true)),
        ),
        Protocol::Compact => (
            Box::new(TCompactInputProtocol::new(read)),
            Box::new(TCompactOutputProtocol::new(write)),
        ),
    }
}

/// The pool's record of failed connects, shared with the client: a checkout that times out
/// reports the real socket error instead of r2d2's text.
#[derive(Debug, Default)]
pub(crate) struct ConnectLog(Mutex<ConnectFailures>);

#[derive(Debug, Default)]
struct ConnectFailures {
    count: u64,
    last: Option<(io::ErrorKind, String)>,
}

impl ConnectLog {
    /// How many connects have failed so far (a waiter compares it before and after).
    pub(crate) fn failure_count(&self) -> u64 {
        self.0.lock().count
    }

    pub(crate) fn last_failure(&self) -> Option<io::Error> {
        let failures = self.0.lock();
        failures
            .last
            .as_ref()
            .map(|(kind, message)| io::Error::new(*kind, message.clone()))
    }

    fn record(&self, error: &io::Error) {
        let mut failures = self.0.lock();
        failures.count += 1;
        failures.last = Some((error.kind(), error.to_string()));
    }
}

/// Opens connections for the pool and decides which ones may be handed out again.
pub(crate) struct Manager {
    config: HBaseConfig,
    log: Arc<ConnectLog>,
}

impl Manager {
    pub(crate) fn new(config: HBaseConfig, log: Arc<ConnectLog>) -> Self {
        Manager { config, log }
    }

    fn transport_error(&self, source: io::Error) -> Error {
        Error::Transport {
            peer: Peer::HBase,
            addr: self.config.addr.clone(),
            source,
        }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = Error;

    fn connect(&self) -> Result<Connection, Error> {
        Connection::open(&self.config).map_err(|e| {
            self.log.record(&e);
            self.transport_error(e)
        })
    }

    /// No RPC: the gateway silently drops idle sockets, so age alone decides.
    fn is_valid(&self, conn: &mut Connection) -> Result<(), Error> {
        if conn.idle_for() >= self.config.max_idle {
            return Err(self.transport_error(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "pooled connection idle for {:?}, over max_idle {:?}: replaced",
                    conn.idle_for(),
                    self.config.max_idle
                ),
            )));
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut Connection) -> bool {
        conn.broken
    }
}

/// Sends r2d2's connection errors to tracing instead of the `log` crate.
#[derive(Debug)]
pub(crate) struct TraceErrors;

impl r2d2::HandleError<Error> for TraceErrors {
    fn handle_error(&self, error: Error) {
        tracing::debug!(%error, "HBase connection pool");
    }
}
