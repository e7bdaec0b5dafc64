//! One pipelined connection to the gateway.
//!
//! Callers write their own requests, so a call costs no hand-off to another thread before its
//! bytes leave; several may be in flight. The gateway answers one connection's requests in
//! order, so replies are matched to requests by position: each caller queues a waiter for its
//! reply and writes its request under one lock, which keeps the queue in write order, and one
//! reader task per connection decodes the replies and completes the waiters front to back.
//!
//! A connection that fails in any way (socket error, end of stream, garbage, a reply that is not
//! the expected one, a caller's read timeout, after which a late reply would be taken for the
//! next one) is broken for good: every waiter fails with the same cause, and the pool discards
//! it. Whether a failed call's request fully left matters to the retry rules, and only its
//! caller knows, so [`Failure::sent`] says it.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};

use super::errors::{self, Cause};
use super::wire::{self, Codec, Decoded, Request, Success};

/// A call that got no answer, and whether its whole request had left.
#[derive(Debug)]
pub(crate) struct Failure {
    pub sent: bool,
    pub cause: Cause,
}

/// The server's answer: the method's value or the error it raised.
pub(crate) type Answer<T> = thrift::Result<T>;

/// How the connection is reached and how long a call may take.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub addr: String,
    pub codec: Codec,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
}

/// A waiter for one reply, of whatever type its method returns.
trait Waiter: Send {
    /// Takes this waiter's reply from the front of `buf` if it is all there.
    fn take(&mut self, codec: Codec, buf: &[u8]) -> Took;
    fn fail(self: Box<Self>, cause: Cause);
    /// Whether the `hbase::lost_reply` failpoint applies to this reply (asked once).
    fn armed(&mut self) -> bool;
}

enum Took {
    Incomplete,
    Done(usize),
    Broken(Cause),
}

struct Slot<T> {
    method: &'static str,
    seq: i32,
    armed: bool,
    tx: Option<oneshot::Sender<Result<Answer<T>, Cause>>>,
}

impl<T: Success> Waiter for Slot<T> {
    fn take(&mut self, codec: Codec, buf: &[u8]) -> Took {
        match wire::decode::<T>(codec, buf, self.method, self.seq) {
            Decoded::Incomplete => Took::Incomplete,
            Decoded::Reply { result: Err(e), .. } if errors::is_connection_failure(&e) => {
                Took::Broken(Cause::thrift(&e))
            }
            Decoded::Reply { len, result } => {
                if let Some(tx) = self.tx.take() {
                    // The caller may have stopped waiting; the reply is still consumed.
                    let _ = tx.send(Ok(result));
                }
                Took::Done(len)
            }
        }
    }

    fn fail(mut self: Box<Self>, cause: Cause) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err(cause));
        }
    }

    fn armed(&mut self) -> bool {
        std::mem::take(&mut self.armed)
    }
}

#[derive(Default)]
struct State {
    /// Waiters in the order their requests were written.
    pending: VecDeque<Box<dyn Waiter>>,
    broken: Option<Cause>,
}

struct Shared {
    stream: TcpStream,
    settings: Arc<Settings>,
    handle: Handle,
    /// Held while a request is queued and written: writes never interleave, and the queue is
    /// in write order.
    writing: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    /// Wakes the reader: a waiter was queued, or the connection broke or closed.
    wake: Notify,
    in_flight: AtomicUsize,
    last_used: Mutex<Instant>,
}

impl Shared {
    /// Breaks the connection (once): every queued waiter fails with `cause`.
    fn fail(&self, cause: Cause) {
        let waiters = {
            let mut state = self.state.lock();
            if state.broken.is_some() {
                return;
            }
            state.broken = Some(cause.clone());
            std::mem::take(&mut state.pending)
        };
        for waiter in waiters {
            waiter.fail(cause.clone());
        }
        self.wake.notify_one();
    }

    fn broken(&self) -> Option<Cause> {
        self.state.lock().broken.clone()
    }
}

/// A pipelined connection; dropping it closes the socket once its reader has stopped.
pub(crate) struct Connection {
    shared: Arc<Shared>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.fail(Cause::Io(
            io::ErrorKind::NotConnected,
            "connection closed by the client".into(),
        ));
    }
}

impl Connection {
    /// Connects to the first address of `settings.addr` that answers, and starts the reader.
    /// Must run on the runtime of `handle`, which the socket is registered with.
    pub(crate) async fn open(settings: Arc<Settings>, handle: Handle) -> io::Result<Connection> {
        let stream = connect_any(&settings.addr, settings.connect_timeout).await?;
        // Requests are written whole; Nagle would hold back every small one.
        stream.set_nodelay(true)?;
        let shared = Arc::new(Shared {
            stream,
            settings,
            handle: handle.clone(),
            writing: tokio::sync::Mutex::new(()),
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        });
        handle.spawn(read_replies(Arc::clone(&shared)));
        Ok(Connection { shared })
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Relaxed)
    }

    /// Counts a call that is about to use this connection (the pool's load measure).
    pub(crate) fn begin(&self) {
        self.shared.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn end(&self) {
        self.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        *self.shared.last_used.lock() = Instant::now();
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.shared.state.lock().broken.is_some()
    }

    /// No call on it for longer than `max_idle` before `now`: the gateway may have dropped
    /// it. (`now` is read once per pick, not once per connection.)
    pub(crate) fn is_stale(&self, now: Instant, max_idle: Duration) -> bool {
        self.in_flight() == 0
            && now.saturating_duration_since(*self.shared.last_used.lock()) > max_idle
    }

    /// Sends `request` and waits for its reply, at most `read_timeout` in all. `arm` marks a
    /// non-idempotent call for the `hbase::lost_reply` failpoint.
    pub(crate) async fn call<T: Success>(
        &self,
        request: &Request,
        arm: bool,
    ) -> Result<Answer<T>, Failure> {
        let deadline = {
            // Bound to the connection's runtime, so any executor may poll it.
            let _runtime = self.shared.handle.enter();
            tokio::time::sleep(self.shared.settings.read_timeout)
        };
        tokio::pin!(deadline);
        let (tx, rx) = oneshot::channel();
        let slot = Box::new(Slot::<T> {
            method: request.method,
            seq: request.seq,
            armed: arm,
            tx: Some(tx),
        });
        let sent = tokio::select! {
            biased;
            sent = self.send(&request.bytes, slot) => sent,
            () = &mut deadline => Err(self.timed_out()),
        };
        if let Err(cause) = sent {
            return Err(Failure { sent: false, cause });
        }
        let cause = tokio::select! {
            biased;
            reply = rx => match reply {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(cause)) => cause,
                // The reader stopped without settling the waiter (its runtime shut down).
                Err(_) => Cause::Io(io::ErrorKind::ConnectionAborted, "connection reader stopped".into()),
            },
            () = &mut deadline => self.timed_out(),
        };
        Err(Failure { sent: true, cause })
    }

    fn timed_out(&self) -> Cause {
        let cause = Cause::Io(
            io::ErrorKind::TimedOut,
            format!(
                "no reply within the read timeout of {:?}",
                self.shared.settings.read_timeout
            ),
        );
        self.shared.fail(cause.clone());
        cause
    }

    /// Queues `waiter` and writes `bytes`. An error means the request did not fully leave.
    async fn send(&self, bytes: &[u8], waiter: Box<dyn Waiter>) -> Result<(), Cause> {
        let shared = &*self.shared;
        let _turn = shared.writing.lock().await;
        {
            let mut state = shared.state.lock();
            if let Some(cause) = &state.broken {
                return Err(cause.clone());
            }
            state.pending.push_back(waiter);
        }
        shared.wake.notify_one();
        // Dropped part-way (the caller gave up), the stream would hold half a request.
        let mut torn = TornGuard(Some(shared));
        let mut written = 0;
        while written < bytes.len() {
            if let Some(cause) = shared.broken() {
                return Err(cause);
            }
            match shared.stream.try_write(&bytes[written..]) {
                Ok(0) => return Err(self.write_failed(io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = shared.stream.writable().await {
                        return Err(self.write_failed(e));
                    }
                }
                Err(e) => return Err(self.write_failed(e)),
            }
        }
        torn.0 = None;
        Ok(())
    }

    fn write_failed(&self, error: io::Error) -> Cause {
        let cause = Cause::io(&error);
        self.shared.fail(cause.clone());
        cause
    }
}

struct TornGuard<'a>(Option<&'a Shared>);

impl Drop for TornGuard<'_> {
    fn drop(&mut self) {
        if let Some(shared) = self.0 {
            shared.fail(Cause::Io(
                io::ErrorKind::Interrupted,
                "a request was abandoned part-way".into(),
            ));
        }
    }
}

/// Fails whatever is still queued when the reader stops, including when its runtime drops it.
struct ReaderGuard(Arc<Shared>);

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.0.fail(Cause::Io(
            io::ErrorKind::ConnectionAborted,
            "connection reader stopped".into(),
        ));
    }
}

/// The connection's reader: decodes replies and hands them to the waiters in order. It reads
/// only while a reply is awaited, so a socket the gateway closed while idle is found by the
/// next call, as with a blocking client (the retry rules then replay or report it).
async fn read_replies(shared: Arc<Shared>) {
    let guard = ReaderGuard(shared);
    let shared = &*guard.0;
    let codec = shared.settings.codec;
    let mut buf: Vec<u8> = Vec::with_capacity(16 << 10);
    let mut current: Option<Box<dyn Waiter>> = None;
    loop {
        let next = {
            let mut state = shared.state.lock();
            match &state.broken {
                Some(cause) => Err(cause.clone()),
                None if current.is_none() => Ok(state.pending.pop_front()),
                None => Ok(None),
            }
        };
        match next {
            Err(cause) => {
                if let Some(waiter) = current.take() {
                    waiter.fail(cause);
                }
                return;
            }
            Ok(Some(waiter)) => current = Some(waiter),
            Ok(None) => {}
        }
        let Some(waiter) = current.as_mut() else {
            shared.wake.notified().await;
            continue;
        };
        if !buf.is_empty() {
            if waiter.armed() && lost_reply() {
                shared.fail(Cause::Io(
                    io::ErrorKind::ConnectionAborted,
                    "reply dropped by failpoint hbase::lost_reply".into(),
                ));
                continue;
            }
            match waiter.take(codec, &buf) {
                Took::Done(len) => {
                    buf.drain(..len);
                    current = None;
                    continue;
                }
                Took::Broken(cause) => {
                    shared.fail(cause);
                    continue;
                }
                Took::Incomplete => {}
            }
        }
        // A large reply arriving in pieces is decoded again each time; growing the buffer
        // with it keeps the number of tries logarithmic in its size.
        buf.reserve((16 << 10).max(buf.len()));
        tokio::select! {
            ready = shared.stream.readable() => {
                let read = ready.and_then(|()| shared.stream.try_read_buf(&mut buf));
                match read {
                    Ok(0) => shared.fail(Cause::Io(
                        io::ErrorKind::UnexpectedEof,
                        "the gateway closed the connection".into(),
                    )),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => shared.fail(Cause::io(&e)),
                }
            }
            () = shared.wake.notified() => {}
        }
    }
}

#[cfg(feature = "failpoints")]
fn lost_reply() -> bool {
    fail::fail_point!("hbase::lost_reply", |_| true);
    false
}

#[cfg(not(feature = "failpoints"))]
fn lost_reply() -> bool {
    false
}

/// Connects to each address `addr` resolves to in turn; the last failure if none answers.
async fn connect_any(addr: &str, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        format!("{addr} resolved to no address"),
    );
    for candidate in tokio::net::lookup_host(addr).await? {
        match tokio::time::timeout(timeout, TcpStream::connect(candidate)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = e,
            Err(_) => {
                last = io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connecting to {candidate} timed out after {timeout:?}"),
                )
            }
        }
    }
    Err(last)
}
