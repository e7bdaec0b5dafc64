//! Connections whose calls cost a service time (the cluster profile), all served by one
//! event-loop thread.
//!
//! A real gateway's CPU is on another machine; the emulator's is on the client's. A thread per
//! connection that blocked on every read would be woken for every call, and on a small machine
//! those wake-ups (and the caches they leave cold) are most of what the emulator costs, which
//! the client then pays for in queueing. Here one thread waits on every socket and on a single
//! timer: a call is served as soon as it has arrived and its connection is free, and its reply
//! is held until its service time is over. Calls and replies that fall due together are handled
//! in one wake-up.
//!
//! Per connection the semantics are those of a gateway that serves one call after another: a
//! call is read and served only once the previous call's reply has been released, so a
//! pipelined call starts when its predecessor's service time ends. A client that leaves its
//! replies unread is not served further until it reads them (the socket's buffers bound what
//! one connection can hold). A connection that ends, or sends something undecodable, still
//! gets the reply to the call in service before it is closed; shutting the emulator down drops
//! replies still due.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Read, Write};
use std::net::TcpStream as StdStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use parking_lot::Mutex;

use crate::conn::{serve_request, ConnLimits, Framing};
use crate::handler::Handler;
use crate::timer::Timer;

const WAKER: Token = Token(0);
const TIMER: Token = Token(1);
const FIRST_CONN: usize = 2;
const READ_CHUNK: usize = 64 * 1024;
/// How often connections are checked against the idle timeout.
const IDLE_SWEEP: Duration = Duration::from_millis(100);

/// The loop's handle: hands it accepted connections, and stops it.
pub(crate) struct PacedLoop {
    incoming: Sender<StdStream>,
    waker: Waker,
    stopping: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl PacedLoop {
    /// Starts the loop for calls that each cost `service_time`.
    pub fn start(
        handler: Arc<Handler>,
        limits: ConnLimits,
        service_time: Duration,
    ) -> io::Result<PacedLoop> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let timer = Timer::new(poll.registry(), TIMER)?;
        let (incoming, accepted) = channel();
        let stopping = Arc::new(AtomicBool::new(false));
        let mut state = Loop {
            poll,
            timer,
            accepted,
            handler,
            limits,
            service_time,
            conns: HashMap::new(),
            next_token: FIRST_CONN,
            due: BinaryHeap::new(),
            next_seq: 0,
            next_sweep: Instant::now() + IDLE_SWEEP,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
        };
        let thread = {
            let stopping = stopping.clone();
            thread::Builder::new()
                .name("hbase-emu-paced".into())
                .spawn(move || state.run(&stopping))?
        };
        Ok(PacedLoop {
            incoming,
            waker,
            stopping,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Serves `stream` from now on.
    pub fn add(&self, stream: StdStream) -> io::Result<()> {
        stream.set_nonblocking(true)?;
        if self.incoming.send(stream).is_err() {
            return Err(io::Error::other("the emulator is shutting down"));
        }
        self.waker.wake()
    }

    /// Stops the loop and joins it: every connection is closed, replies still due are dropped.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Err(e) = self.waker.wake() {
            tracing::error!(error = %e, "could not wake the paced loop");
        }
        if let Some(thread) = self.thread.lock().take()
            && thread.join().is_err()
        {
            tracing::error!("the paced loop panicked");
        }
    }
}

impl Drop for PacedLoop {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Conn {
    stream: TcpStream,
    /// Bytes received and not yet served.
    input: Vec<u8>,
    framing: Option<Framing>,
    /// The reply to the call in service, released when its service time is over.
    in_service: Option<Vec<u8>>,
    /// Released replies the socket has not taken yet.
    output: Vec<u8>,
    /// Whether the poll watches for room to write (only while `output` waits for it).
    watching_writes: bool,
    /// Whether the socket has been read empty since the poll last reported it.
    drained: bool,
    /// The poll reported the client's close: read on to the end of the stream, since no
    /// further report will come.
    peer_closed: bool,
    /// The client sent all it will: serve what is buffered, then close.
    eof: bool,
    /// The client sent what cannot be served: serve nothing more, close once replies are out.
    broken: bool,
    last_active: Instant,
}

/// A reply that falls due: when, in hand-over order, and whose.
type DueAt = Reverse<(Instant, u64, Token)>;

struct Loop {
    poll: Poll,
    timer: Timer,
    accepted: Receiver<StdStream>,
    handler: Arc<Handler>,
    limits: ConnLimits,
    service_time: Duration,
    conns: HashMap<Token, Conn>,
    next_token: usize,
    due: BinaryHeap<DueAt>,
    next_seq: u64,
    next_sweep: Instant,
    /// Where every socket is read into (zeroed once, not per read).
    scratch: Box<[u8]>,
}

impl Loop {
    fn run(&mut self, stopping: &AtomicBool) {
        let mut events = Events::with_capacity(256);
        loop {
            let wait = self.arm_timer();
            if let Err(e) = self.poll.poll(&mut events, wait)
                && e.kind() != io::ErrorKind::Interrupted
            {
                tracing::error!(error = %e, "the paced loop cannot poll; it stops");
                return;
            }
            if stopping.load(Ordering::SeqCst) {
                return;
            }
            for event in events.iter() {
                match event.token() {
                    WAKER => self.accept_new(),
                    TIMER => self.timer.clear(),
                    token => {
                        if let Some(conn) = self.conns.get_mut(&token) {
                            conn.drained = false;
                            conn.peer_closed |= event.is_read_closed();
                        }
                        self.pump(token);
                    }
                }
            }
            let now = Instant::now();
            while let Some(&Reverse((at, _, token))) = self.due.peek() {
                if at > now {
                    break;
                }
                self.due.pop();
                if let Some(conn) = self.conns.get_mut(&token)
                    && let Some(reply) = conn.in_service.take()
                {
                    conn.output.extend_from_slice(&reply);
                }
                self.pump(token);
            }
            if now >= self.next_sweep {
                self.close_idle(now);
                self.next_sweep = now + IDLE_SWEEP;
            }
        }
    }

    /// Sets the timer for the earliest reply due; returns how long a poll may wait at most.
    fn arm_timer(&mut self) -> Option<Duration> {
        let earliest = self.due.peek().map(|Reverse((at, _, _))| *at);
        let until_due = self.timer.arm(earliest);
        let until_sweep = (!self.limits.idle_timeout.is_zero())
            .then(|| self.next_sweep.saturating_duration_since(Instant::now()));
        match (until_due, until_sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn accept_new(&mut self) {
        while let Ok(stream) = self.accepted.try_recv() {
            let token = Token(self.next_token);
            self.next_token += 1;
            let mut stream = TcpStream::from_std(stream);
            let registered = self
                .poll
                .registry()
                .register(&mut stream, token, Interest::READABLE);
            if let Err(e) = registered {
                tracing::warn!(error = %e, "could not watch a connection; it is closed");
                continue;
            }
            self.conns.insert(
                token,
                Conn {
                    stream,
                    input: Vec::new(),
                    framing: None,
                    in_service: None,
                    output: Vec::new(),
                    watching_writes: false,
                    drained: false,
                    peer_closed: false,
                    eof: false,
                    broken: false,
                    last_active: Instant::now(),
                },
            );
            tracing::debug!(?token, "paced connection opened");
        }
    }

    /// Moves one connection on as far as it can go now: sends what is released, reads what
    /// has arrived, serves the next call if the connection is free, and closes it when done.
    fn pump(&mut self, token: Token) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        let open = conn.flush(self.poll.registry(), token)
            && conn.fill(&mut self.scratch, self.limits.max_frame_bytes);
        let mut free = conn.is_free();
        if open
            && free
            && !conn.broken
            && let Some(reply) = conn.serve_next(&self.handler, self.limits.max_frame_bytes)
        {
            conn.in_service = Some(reply);
            let at = Instant::now() + self.service_time;
            self.due.push(Reverse((at, self.next_seq, token)));
            self.next_seq += 1;
            free = false;
        }
        if !open || (free && (conn.eof || conn.broken)) {
            self.close(token);
        }
    }

    fn close(&mut self, token: Token) {
        if let Some(mut conn) = self.conns.remove(&token) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            let _ = conn.stream.shutdown(std::net::Shutdown::Both);
            tracing::debug!(?token, "paced connection closed");
        }
    }

    /// Closes the connections that have sent nothing for the idle timeout, as the gateway's
    /// socket read timeout does.
    fn close_idle(&mut self, now: Instant) {
        let timeout = self.limits.idle_timeout;
        if timeout.is_zero() {
            return;
        }
        let idle: Vec<Token> = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_free() && now.duration_since(c.last_active) >= timeout)
            .map(|(t, _)| *t)
            .collect();
        for token in idle {
            tracing::debug!(?token, "idle connection closed");
            self.close(token);
        }
    }
}

impl Conn {
    /// No call in service and no reply waiting to be written.
    fn is_free(&self) -> bool {
        self.in_service.is_none() && self.output.is_empty()
    }

    /// Writes released replies, watching for room to write while some are left; false if the
    /// connection is lost.
    fn flush(&mut self, registry: &Registry, token: Token) -> bool {
        while !self.output.is_empty() {
            match self.stream.write(&self.output) {
                Ok(0) => return false,
                Ok(n) => {
                    self.output.drain(..n);
                    self.last_active = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(error = %e, "reply not sent; closing the connection");
                    return false;
                }
            }
        }
        let watch = !self.output.is_empty();
        if watch != self.watching_writes {
            let interest = if watch {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if let Err(e) = registry.reregister(&mut self.stream, token, interest) {
                tracing::debug!(error = %e, "could not watch a connection; closing it");
                return false;
            }
            self.watching_writes = watch;
        }
        true
    }

    /// Reads what has arrived, up to one request's worth beyond what is buffered; false if
    /// the connection is lost.
    fn fill(&mut self, scratch: &mut [u8], max_frame_bytes: usize) -> bool {
        let limit = max_frame_bytes + scratch.len();
        while !self.eof && !self.broken && !self.drained && self.input.len() < limit {
            match self.stream.read(scratch) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.input.extend_from_slice(&scratch[..n]);
                    self.last_active = Instant::now();
                    // A read that left room emptied the socket, and the poll reports what
                    // arrives next: reading again would only find nothing (a system call per
                    // call served).
                    self.drained = n < scratch.len() && !self.peer_closed;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(error = %e, "connection lost");
                    return false;
                }
            }
        }
        true
    }

    /// Serves the first complete request buffered, if there is one, and returns its reply. A
    /// request that cannot be served leaves the connection broken, with the reply it earned
    /// (if any) still to go out.
    fn serve_next(&mut self, handler: &Handler, max_frame_bytes: usize) -> Option<Vec<u8>> {
        let first = *self.input.first()?;
        let framing = self.framing.get_or_insert_with(|| Framing::detect(first));
        let mut reply = Vec::new();
        let served = catch_unwind(AssertUnwindSafe(|| {
            serve_request(handler, framing, &self.input, max_frame_bytes, &mut reply)
        }));
        match served {
            Ok(Ok(Some(outcome))) => {
                self.input.drain(..outcome.consumed);
                self.broken = outcome.close;
                Some(reply)
            }
            // Not all of it has arrived yet.
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                tracing::info!(error = %e, "closing connection");
                self.broken = true;
                None
            }
            Err(_) => {
                tracing::error!("request handler panicked; connection closed");
                self.broken = true;
                None
            }
        }
    }
}
