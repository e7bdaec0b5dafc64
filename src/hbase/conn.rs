//! One pipelined connection to the gateway.
//!
//! Several calls may be in flight. A caller appends its request to the connection's outbox
//! and waits; one task per connection writes everything the outbox holds in one system call,
//! then decodes the replies and completes the waiters front to back (the gateway answers one
//! connection's requests in order). Requests that callers queue while the task is busy leave
//! together: the gateway reads them in one wake-up and answers them in one write, which is
//! where concurrent callers (transactions woken by one oracle answer, say) save their cost.
//! Woken by a first request, the task yields once before writing, so that the callers made
//! ready by the same event queue theirs first.
//!
//! A connection that fails in any way (socket error, end of stream, garbage, a reply that is not
//! the expected one, a caller's read timeout, after which a late reply would be taken for the
//! next one) is broken for good: every waiter fails with the same cause, and the pool discards
//! it. Whether a failed call's request fully left matters to the retry rules, and only its
//! caller knows, so [`Failure::sent`] says it.
//!
//! A reply's first bytes are checked before it is decoded ([`wire::start`]): a server that is
//! not a Thrift gateway (an HTTP server, a gateway in HTTP mode) fails the call at once with
//! what it sent, instead of being taken for a reply still arriving.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};

use super::errors::{self, Cause};
use super::link::{probe, Link, Plan};
use super::wire::{self, Codec, Decoded, Request, Start, Success};
use crate::Binary;

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
    /// `host:port` to connect to.
    pub addr: String,
    pub codec: Codec,
    /// What a new connection sets up over its socket (HTTP, TLS, SASL), if anything.
    pub plan: Plan,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
}

/// When a whole call must be over, and the setting that said so, for its timeout message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    pub at: Instant,
    /// How long the call was given, from its start.
    pub limit: Duration,
    /// The setting the limit comes from, as a message names it ("read timeout").
    pub setting: &'static str,
}

/// `start + after`, or a time far enough away to mean "never" if that is past what an
/// `Instant` can hold.
pub(crate) fn later(start: Instant, after: Duration) -> Instant {
    const NEVER: Duration = Duration::from_secs(86_400 * 365 * 30);
    start
        .checked_add(after)
        .or_else(|| start.checked_add(NEVER))
        .unwrap_or(start)
}

/// A waiter for one reply, of whatever type its method returns.
trait Waiter: Send {
    /// Where its request ends in the connection's byte stream: it left once that many bytes
    /// were written.
    fn end(&self) -> u64;
    /// Takes this waiter's reply from the front of `buf` if it is all there.
    fn take(&mut self, codec: Codec, buf: &[u8]) -> Took;
    /// Fails the call; `sent` says whether its request had fully left.
    fn fail(self: Box<Self>, cause: Cause, sent: bool);
    /// Whether the `hbase::lost_reply` failpoint applies to this reply (asked once).
    fn armed(&mut self) -> bool;
}

enum Took {
    Incomplete,
    Done(usize),
    Broken(Cause),
}

/// What a caller hears: the answer, or why there is none and whether its request had left.
type Outcome<T> = Result<Answer<T>, (Cause, bool)>;

struct Slot<T> {
    method: &'static str,
    seq: i32,
    armed: bool,
    end: u64,
    tx: Option<oneshot::Sender<Outcome<T>>>,
}

impl<T: Success> Waiter for Slot<T> {
    fn end(&self) -> u64 {
        self.end
    }

    fn take(&mut self, codec: Codec, buf: &[u8]) -> Took {
        match wire::start(codec, buf) {
            Start::Reply => {}
            Start::More => return Took::Incomplete,
            Start::NotThrift => return Took::Broken(Cause::NotThrift(errors::head_of(buf))),
        }
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

    fn fail(mut self: Box<Self>, cause: Cause, sent: bool) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Err((cause, sent)));
        }
    }

    fn armed(&mut self) -> bool {
        std::mem::take(&mut self.armed)
    }
}

#[derive(Default)]
struct State {
    /// Requests queued and not yet handed to the socket, back to back, and their waiters.
    outbox: Vec<u8>,
    unsent: Vec<Box<dyn Waiter>>,
    /// Bytes ever queued: the next request's start in the connection's byte stream.
    queued: u64,
    /// Waiters whose requests are (being) written, in write order.
    pending: VecDeque<Box<dyn Waiter>>,
    broken: Option<Cause>,
}

struct Shared {
    settings: Arc<Settings>,
    handle: Handle,
    state: Mutex<State>,
    /// Bytes of the stream written to the socket so far.
    written: AtomicU64,
    /// Wakes the connection's task: a request was queued, or the connection broke or closed.
    wake: Notify,
    /// The calls in flight on it, as the pool weighs them (its load measure).
    in_flight: AtomicUsize,
    /// When the connection opened, and nanoseconds after it that it was last used: the pool
    /// reads both for every call, so neither takes a lock.
    opened: Instant,
    last_used_ns: AtomicU64,
    /// Set once `state.broken` is.
    is_broken: AtomicBool,
    /// Whether a reply came, and whether a call has asked the SASL probe about the silence
    /// before one did: a connection is probed once at most.
    answered: AtomicBool,
    probed: AtomicBool,
}

impl Shared {
    /// Whether the request ending at `end` in the byte stream had fully left.
    fn sent(&self, end: u64) -> bool {
        end <= self.written.load(Ordering::Acquire)
    }

    /// Breaks the connection (once): every queued waiter fails with `cause`.
    fn fail(&self, cause: Cause) {
        let (pending, unsent) = {
            let mut state = self.state.lock();
            if state.broken.is_some() {
                return;
            }
            state.broken = Some(cause.clone());
            self.is_broken.store(true, Ordering::Release);
            state.outbox = Vec::new();
            (
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.unsent),
            )
        };
        for waiter in pending {
            let sent = self.sent(waiter.end());
            waiter.fail(cause.clone(), sent);
        }
        for waiter in unsent {
            waiter.fail(cause.clone(), false);
        }
        self.wake.notify_one();
    }
}

/// A pipelined connection; dropping it stops its task, which closes the socket.
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
        let mut stream = connect_any(&settings.addr, settings.connect_timeout).await?;
        // Requests are written whole; Nagle would hold back every small one.
        stream.set_nodelay(true)?;
        let link = if settings.plan.is_plain() {
            None
        } else {
            let timeout = settings.connect_timeout;
            let established =
                tokio::time::timeout(timeout, settings.plan.establish(&mut stream, timeout));
            Some(established.await.map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the handshake with {} took over {timeout:?}", settings.addr),
                )
            })??)
        };
        let shared = Arc::new(Shared {
            settings,
            handle: handle.clone(),
            state: Mutex::new(State::default()),
            written: AtomicU64::new(0),
            wake: Notify::new(),
            in_flight: AtomicUsize::new(0),
            opened: Instant::now(),
            last_used_ns: AtomicU64::new(0),
            is_broken: AtomicBool::new(false),
            answered: AtomicBool::new(false),
            probed: AtomicBool::new(false),
        });
        handle.spawn(drive(Arc::clone(&shared), stream, link.map(Layered::new)));
        Ok(Connection { shared })
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Relaxed)
    }

    /// Counts a call that is about to use this connection, as `load` (the pool's measure).
    pub(crate) fn begin(&self, load: usize) {
        self.shared.in_flight.fetch_add(load, Ordering::Relaxed);
    }

    pub(crate) fn end(&self, load: usize) {
        self.shared.in_flight.fetch_sub(load, Ordering::Relaxed);
        let since = self.shared.opened.elapsed().as_nanos();
        self.shared
            .last_used_ns
            .store(u64::try_from(since).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn last_used(&self) -> Instant {
        let ns = self.shared.last_used_ns.load(Ordering::Relaxed);
        self.shared.opened + Duration::from_nanos(ns)
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.shared.is_broken.load(Ordering::Acquire)
    }

    /// No call on it for longer than `max_idle` before `now`: the gateway may have dropped
    /// it. (`now` is read once per pick, not once per connection.)
    pub(crate) fn is_stale(&self, now: Instant, max_idle: Duration) -> bool {
        self.in_flight() == 0 && now.saturating_duration_since(self.last_used()) > max_idle
    }

    /// Sends `request` and waits for its reply, for `read_timeout` at most and not past the
    /// call's `deadline`. `arm` marks a non-idempotent call for the `hbase::lost_reply`
    /// failpoint.
    pub(crate) async fn call<T: Success>(
        &self,
        request: &Request,
        arm: bool,
        deadline: &Deadline,
    ) -> Result<Answer<T>, Failure> {
        let read_timeout = self.shared.settings.read_timeout;
        let read_by = later(Instant::now(), read_timeout);
        // Which limit ends the wait, for the message if it does.
        let (until, limit) = if deadline.at <= read_by {
            (deadline.at, (deadline.setting, deadline.limit))
        } else {
            (read_by, ("read timeout", read_timeout))
        };
        let deadline = {
            // Bound to the connection's runtime, so any executor may poll it.
            let _runtime = self.shared.handle.enter();
            tokio::time::sleep_until(until.into())
        };
        tokio::pin!(deadline);
        let (tx, rx) = oneshot::channel();
        let end = self.queue(&request.bytes, |end| {
            Box::new(Slot::<T> {
                method: request.method,
                seq: request.seq,
                armed: arm,
                end,
                tx: Some(tx),
            })
        });
        let end = match end {
            Ok(end) => end,
            Err(cause) => return Err(Failure { sent: false, cause }),
        };
        let (cause, sent) = tokio::select! {
            biased;
            reply = rx => match reply {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(failed)) => failed,
                // The task stopped without settling the waiter (its runtime shut down).
                Err(_) => (
                    Cause::Io(io::ErrorKind::ConnectionAborted, "connection task stopped".into()),
                    self.shared.sent(end),
                ),
            },
            () = &mut deadline => {
                let sent = self.shared.sent(end);
                (self.timed_out(limit), sent)
            }
            refusal = self.sasl_refusal() => {
                let cause = Cause::NotThrift(refusal);
                self.shared.fail(cause.clone());
                (cause, self.shared.sent(end))
            }
        };
        Err(Failure { sent, cause })
    }

    /// Resolves, with the gateway's refusal of a SASL start, only if this connection has had
    /// no reply for [`probe::PROBE_AFTER`] and a probe finds that the gateway requires SASL
    /// (see [`probe`]); pending forever otherwise.
    async fn sasl_refusal(&self) -> Vec<u8> {
        let shared = &self.shared;
        let eligible = shared.settings.plan.may_meet_sasl()
            && !shared.answered.load(Ordering::Acquire)
            && shared.settings.read_timeout > probe::PROBE_AFTER
            && !shared.probed.swap(true, Ordering::AcqRel);
        if eligible {
            let pause = {
                let _runtime = shared.handle.enter();
                tokio::time::sleep(probe::PROBE_AFTER)
            };
            pause.await;
            if !shared.answered.load(Ordering::Acquire) {
                // On the connection's runtime, whatever polls this call; stopped with the call.
                let addr = shared.settings.addr.clone();
                let probing = tokio_util::task::AbortOnDropHandle::new(
                    shared
                        .handle
                        .spawn(async move { probe::sasl_refusal_from(&addr).await }),
                );
                if let Ok(Some(refusal)) = probing.await {
                    return refusal;
                }
            }
        }
        std::future::pending().await
    }

    /// This call's cause when `limit` (the setting and its value) ran out before its reply
    /// came. A late reply would be taken for the next one, so the connection breaks; the other
    /// calls on it fail with a cause of their own, and follow the retry rules.
    fn timed_out(&self, (setting, limit): (&'static str, Duration)) -> Cause {
        let cause = Cause::Io(
            io::ErrorKind::TimedOut,
            format!("no reply within the {setting} of {limit:?}"),
        );
        self.shared.fail(Cause::Io(
            io::ErrorKind::ConnectionAborted,
            format!("connection dropped: another call on it got no reply within the {setting} of {limit:?}"),
        ));
        cause
    }

    /// Appends `bytes` to the outbox with the waiter `waiter_at` builds from the request's end
    /// in the stream, and wakes the connection's task. Returns that end.
    fn queue(
        &self,
        bytes: &[u8],
        waiter_at: impl FnOnce(u64) -> Box<dyn Waiter>,
    ) -> Result<u64, Cause> {
        let shared = &*self.shared;
        let end = {
            let mut state = shared.state.lock();
            if let Some(cause) = &state.broken {
                return Err(cause.clone());
            }
            state.queued += bytes.len() as u64;
            let end = state.queued;
            state.outbox.extend_from_slice(bytes);
            state.unsent.push(waiter_at(end));
            end
        };
        shared.wake.notify_one();
        Ok(end)
    }
}

/// Fails whatever is still queued when the task stops, including when its runtime drops it.
struct TaskGuard(Arc<Shared>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.fail(Cause::Io(
            io::ErrorKind::ConnectionAborted,
            "connection task stopped".into(),
        ));
    }
}

/// The connection's task: writes what callers queued (all of it at once), decodes replies and
/// hands them to the waiters in order. It reads only while a reply is awaited, so a socket the
/// gateway closed while idle is found by the next call, as with a blocking client (the retry
/// rules then replay or report it).
async fn drive(shared: Arc<Shared>, mut stream: TcpStream, mut layered: Option<Layered>) {
    let guard = TaskGuard(shared);
    let shared = &*guard.0;
    let codec = shared.settings.codec;
    let mut buf: Vec<u8> = Vec::with_capacity(16 << 10);
    // Bytes taken from the outbox and not yet accepted by the socket.
    let mut out: Vec<u8> = Vec::new();
    let mut out_at = 0;
    let mut current: Option<Box<dyn Waiter>> = None;
    // Replies taken so far: bytes that are not Thrift before the first mean the server is no
    // Thrift gateway; after it, that the stream is corrupt.
    let mut replies = 0u64;
    // Whether the task has let other ready tasks run since requests were last queued.
    let mut gathered = false;
    loop {
        let mut gather = false;
        let mut sealing = None;
        if let Some(layered) = layered.as_mut() {
            layered.take_extra(&mut out, &mut out_at);
        }
        let next = {
            let mut state = shared.state.lock();
            if let Some(cause) = &state.broken {
                Err(cause.clone())
            } else {
                if out_at == out.len() && !state.outbox.is_empty() {
                    if gathered {
                        // Waiters join `pending` before their bytes reach the socket: a reply
                        // cannot come before its request, and a failure mid-write finds them.
                        out.clear();
                        out_at = 0;
                        std::mem::swap(&mut out, &mut state.outbox);
                        gathered = false;
                        let unsent = std::mem::take(&mut state.unsent);
                        if let Some(layered) = layered.as_mut() {
                            sealing = layered.seal(&mut out, &unsent).err();
                        }
                        state.pending.extend(unsent);
                    } else {
                        gather = true;
                    }
                }
                Ok(if current.is_none() {
                    state.pending.pop_front()
                } else {
                    None
                })
            }
        };
        match next {
            Err(cause) => {
                if let Some(waiter) = current.take() {
                    // Next in line for a reply, but its request may still have been going out.
                    let sent = shared.sent(waiter.end());
                    waiter.fail(cause, sent);
                }
                return;
            }
            Ok(Some(waiter)) => current = Some(waiter),
            Ok(None) => {}
        }
        if let Some(cause) = sealing {
            // The requests of the batch never left: their callers replay them elsewhere.
            shared.fail(cause);
            continue;
        }
        if gather {
            // The first request of a moment wakes this task at once; the callers woken with
            // it (by one oracle answer, or one batch of replies) queue theirs during this
            // yield, and all leave in one write (on the embedded bench, a third less CPU per
            // raw put and a quarter less per transactional one).
            gathered = true;
            tokio::task::yield_now().await;
            continue;
        }
        if out_at < out.len() {
            match stream.try_write(&out[out_at..]) {
                Ok(0) => shared.fail(Cause::io(&io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    out_at += n;
                    match &layered {
                        None => shared.written.fetch_add(n as u64, Ordering::AcqRel),
                        // Sealed bytes do not map back to requests one to one: once any of a
                        // batch left, all of it counts as sent (a lost reply is then unknown,
                        // never taken for unsent).
                        Some(layered) => shared
                            .written
                            .fetch_max(layered.batch_end, Ordering::AcqRel),
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => shared.fail(Cause::io(&e)),
            }
            if out_at < out.len() || shared.is_broken.load(Ordering::Acquire) {
                // The socket is full: read replies while waiting for room, so a gateway
                // blocked on writing them does not block us in turn.
                wait_for_room(shared, &stream, current.is_some(), &mut buf, &mut layered).await;
                continue;
            }
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
                    if replies == 0 {
                        shared.answered.store(true, Ordering::Release);
                    }
                    replies += 1;
                    if layered.as_ref().is_some_and(Layered::closing) {
                        shared.fail(Cause::Io(
                            io::ErrorKind::ConnectionAborted,
                            "the gateway closes the connection after this reply (Connection: close)"
                                .into(),
                        ));
                    }
                    continue;
                }
                Took::Broken(Cause::NotThrift(head)) if replies > 0 => {
                    shared.fail(Cause::Protocol(format!(
                        "after {replies} replies, bytes that cannot begin a Thrift reply: {}",
                        Binary(&head)
                    )));
                    continue;
                }
                Took::Broken(cause) => {
                    shared.fail(cause);
                    continue;
                }
                Took::Incomplete => {}
            }
        }
        wait_for_reply(shared, &mut stream, &mut buf, &mut layered).await;
    }
}

/// A connection's link and the bytes on their way through it.
struct Layered {
    link: Link,
    /// Bytes read from the socket that the link has not taken yet.
    raw: Vec<u8>,
    /// Bytes the link must send of its own accord, waiting for the socket.
    extra: Vec<u8>,
    /// Where the batch being written ends in the (plain) request stream.
    batch_end: u64,
}

impl Layered {
    fn new(link: Link) -> Layered {
        Layered {
            link,
            raw: Vec::new(),
            extra: Vec::new(),
            batch_end: 0,
        }
    }

    /// Replaces the plain batch in `out` (the requests of `waiters`, back to back) by what
    /// goes on the wire, each request sealed on its own.
    fn seal(&mut self, out: &mut Vec<u8>, waiters: &[Box<dyn Waiter>]) -> Result<(), Cause> {
        let plain = std::mem::take(out);
        let base = self.batch_end;
        let mut start = 0;
        for waiter in waiters {
            let end = usize::try_from(waiter.end() - base).unwrap_or(plain.len());
            self.link.seal(&plain[start..end], out)?;
            start = end;
        }
        self.batch_end = base + plain.len() as u64;
        Ok(())
    }

    /// Opens what a read brought; at the end of the stream, a layer may say what it meant (an
    /// HTTP error page that ran to it) before the connection breaks.
    fn took(&mut self, shared: &Shared, got: io::Result<usize>, buf: &mut Vec<u8>) {
        self.open(shared, buf);
        if matches!(got, Ok(0))
            && let Some(cause) = self.link.closed()
        {
            shared.fail(cause);
            return;
        }
        took(shared, got);
    }

    /// Opens what was read; a failure breaks the connection.
    fn open(&mut self, shared: &Shared, buf: &mut Vec<u8>) {
        let opened = self.link.open(&self.raw, buf).and_then(|used| {
            self.raw.drain(..used);
            self.link.pending(&mut self.extra)
        });
        if let Err(cause) = opened {
            shared.fail(cause);
        }
    }

    /// Moves what the link must send into `out` once `out` is written.
    fn take_extra(&mut self, out: &mut Vec<u8>, out_at: &mut usize) {
        if *out_at == out.len() && !self.extra.is_empty() {
            out.clear();
            *out_at = 0;
            std::mem::swap(out, &mut self.extra);
        }
    }

    fn closing(&self) -> bool {
        self.link.closing()
    }
}

/// Waits until the socket has bytes to read (into `buf`), or the task is woken; a failed read
/// breaks the connection.
async fn wait_for_reply(
    shared: &Shared,
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    layered: &mut Option<Layered>,
) {
    if let Some(layered) = layered {
        reserve_for_read(&mut layered.raw);
        tokio::select! {
            got = stream.read_buf(&mut layered.raw) => layered.took(shared, got, buf),
            () = shared.wake.notified() => {}
        }
        return;
    }
    reserve_for_read(buf);
    // A read through `AsyncRead` that fills less than the room it was given marks the socket
    // drained, so the next wait sleeps at once instead of first reading nothing: one system
    // call less per reply.
    tokio::select! {
        got = stream.read_buf(buf) => took(shared, got),
        () = shared.wake.notified() => {}
    }
}

/// Waits until the socket has room to write, bytes to read (into `buf`, when `read`), or the
/// task is woken; a failed read breaks the connection.
async fn wait_for_room(
    shared: &Shared,
    stream: &TcpStream,
    read: bool,
    buf: &mut Vec<u8>,
    layered: &mut Option<Layered>,
) {
    reserve_for_read(buf);
    tokio::select! {
        ready = stream.readable(), if read => match layered {
            None => took(shared, ready.and_then(|()| stream.try_read_buf(buf))),
            Some(layered) => {
                reserve_for_read(&mut layered.raw);
                let got = ready.and_then(|()| stream.try_read_buf(&mut layered.raw));
                layered.took(shared, got, buf);
            }
        },
        ready = stream.writable() => {
            if let Err(e) = ready {
                shared.fail(Cause::io(&e));
            }
        }
        () = shared.wake.notified() => {}
    }
}

/// A large reply arriving in pieces is decoded again each time; growing the buffer with it
/// keeps the number of tries logarithmic in its size.
fn reserve_for_read(buf: &mut Vec<u8>) {
    buf.reserve((16 << 10).max(buf.len()));
}

/// Breaks the connection if a read failed or found the end of the stream.
fn took(shared: &Shared, got: io::Result<usize>) {
    match got {
        Ok(0) => shared.fail(Cause::Io(
            io::ErrorKind::UnexpectedEof,
            "the gateway closed the connection".into(),
        )),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => shared.fail(Cause::io(&e)),
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
            Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                last = io::Error::new(
                    e.kind(),
                    "connection refused: nothing listens there; check the host and port, and \
                     that the gateway is running",
                )
            }
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
