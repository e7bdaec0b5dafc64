//! Replies held back by a service time (the cluster profile): one thread sends every
//! connection's replies when they fall due.
//!
//! A connection thread that slept through each call's service time itself would be woken twice
//! per call (by the request, then by its timer), and on a small machine that shares its cores
//! with the client those wake-ups are most of what the emulator costs; a real gateway's CPU is
//! on another machine. Here the connection thread serves a call as soon as it has arrived (and
//! its predecessor's service time is over) and hands the reply over; one thread, sleeping until
//! the earliest reply falls due, sends all that are due by then in one wake-up.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A client that leaves its replies unread this long is disconnected, so that it cannot hold up
/// every other connection's replies.
const SEND_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a closing connection looks whether its last replies have gone.
const DRAIN_POLL: Duration = Duration::from_micros(200);

/// The sending end of one connection: its replies wait here until they are due.
pub(crate) struct Outbox {
    stream: TcpStream,
    /// Replies handed over and not yet sent (or dropped on a failed send).
    pending: AtomicUsize,
}

impl Outbox {
    pub fn new(stream: &TcpStream) -> io::Result<Arc<Outbox>> {
        let stream = stream.try_clone()?;
        stream.set_write_timeout(Some(SEND_TIMEOUT))?;
        Ok(Arc::new(Outbox {
            stream,
            pending: AtomicUsize::new(0),
        }))
    }

    /// Waits until every reply handed over has been sent, or the sender has stopped: a
    /// connection that ends must not close its socket under replies still due.
    pub fn drain(&self, sender: &DelayedReplies) {
        while self.pending.load(Ordering::Acquire) > 0 && !sender.is_stopped() {
            thread::sleep(DRAIN_POLL);
        }
    }
}

struct Due {
    at: Instant,
    /// Hand-over order: replies due at the same instant leave in it, so one connection's replies
    /// never overtake each other.
    seq: u64,
    outbox: Arc<Outbox>,
    reply: Vec<u8>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct State {
    due: BinaryHeap<Reverse<Due>>,
    next_seq: u64,
    /// The sender sleeps until the earliest reply is due (or, with none, until a hand-over).
    waiting: bool,
    stopping: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// The thread that sends held-back replies. Stopping it drops the replies still waiting (the
/// emulator is shutting down and closes their sockets).
pub(crate) struct DelayedReplies {
    service_time: Duration,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl DelayedReplies {
    /// Starts the sender of replies to calls that each cost `service_time`.
    pub fn start(service_time: Duration) -> io::Result<DelayedReplies> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            thread::Builder::new()
                .name("hbase-emu-replies".into())
                .spawn(move || send_loop(&shared))?
        };
        Ok(DelayedReplies {
            service_time,
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn service_time(&self) -> Duration {
        self.service_time
    }

    /// Sends `reply` on `outbox` at `at` (at once if that has passed).
    pub fn send_at(&self, outbox: &Arc<Outbox>, at: Instant, reply: Vec<u8>) {
        outbox.pending.fetch_add(1, Ordering::AcqRel);
        let mut state = self.shared.state.lock();
        if state.stopping {
            outbox.pending.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        // Replies mostly fall due in the order they are handed over, so the sender, asleep
        // until an earlier one, needs waking only for one due before everything waiting.
        let sooner = state.waiting && state.due.peek().is_none_or(|Reverse(d)| at < d.at);
        let seq = state.next_seq;
        state.next_seq += 1;
        state.due.push(Reverse(Due {
            at,
            seq,
            outbox: outbox.clone(),
            reply,
        }));
        drop(state);
        if sooner {
            self.shared.wake.notify_one();
        }
    }

    fn is_stopped(&self) -> bool {
        self.shared.state.lock().stopping
    }

    /// Stops the sender and joins it; replies not yet sent are dropped.
    pub fn stop(&self) {
        self.shared.state.lock().stopping = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            if thread.join().is_err() {
                tracing::error!("the reply sender panicked");
            }
        }
    }
}

impl Drop for DelayedReplies {
    fn drop(&mut self) {
        self.stop();
    }
}

fn send_loop(shared: &Shared) {
    let mut batch = Vec::new();
    let mut state = shared.state.lock();
    loop {
        if state.stopping {
            for Reverse(due) in state.due.drain() {
                due.outbox.pending.fetch_sub(1, Ordering::AcqRel);
            }
            return;
        }
        let now = Instant::now();
        while state.due.peek().is_some_and(|Reverse(d)| d.at <= now) {
            if let Some(Reverse(due)) = state.due.pop() {
                batch.push(due);
            }
        }
        if batch.is_empty() {
            state.waiting = true;
            match state.due.peek().map(|Reverse(d)| d.at) {
                Some(at) => {
                    shared.wake.wait_until(&mut state, at);
                }
                None => shared.wake.wait(&mut state),
            }
            state.waiting = false;
            continue;
        }
        drop(state);
        for due in batch.drain(..) {
            send(&due);
            due.outbox.pending.fetch_sub(1, Ordering::AcqRel);
        }
        state = shared.state.lock();
    }
}

fn send(due: &Due) {
    let mut stream = &due.outbox.stream;
    if let Err(e) = stream.write_all(&due.reply) {
        // The client is gone or does not read: its connection thread sees the socket closed.
        tracing::debug!(error = %e, "reply not sent; closing the connection");
        let _ = stream.shutdown(Shutdown::Both);
    }
}
