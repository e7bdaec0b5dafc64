//! Up to `pool_size` pipelined connections, and which one a call goes on.
//!
//! A call takes the busiest connection that has fewer than `pipeline_per_connection` calls in
//! flight (calls made together then leave in one write), and opens another when every open one
//! is at that limit and the pool may grow; a full pool takes the least loaded. The
//! real gateway serves one connection's calls one after another, so the default of 1 spreads
//! concurrent calls over connections; the emulator serves pipelined calls faster than it wakes
//! up for new ones, so it gains from more. A call over more rows than the limit (a fused read
//! of a dozen rows) counts as the limit: it takes an idle connection and nothing joins it, since
//! calls queued behind it on one gateway thread would wait longer than a wake-up of another
//! thread costs. A full pool pipelines instead of making callers wait. Connections idle for
//! `max_idle` are replaced: the gateway drops sockets idle for 60 s without telling, and the
//! next call on one would fail after sending.

use std::io;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use super::conn::{Connection, Settings};

/// How the pool grows and ages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub size: usize,
    pub pipeline: usize,
    pub max_idle: Duration,
}

pub(crate) struct Pool {
    settings: Arc<Settings>,
    limits: Limits,
    /// The runtime the connections' sockets and readers live on.
    handle: Handle,
    state: Mutex<Slots>,
    /// A connect finished (or failed): waiters for a slot look again.
    opened: Notify,
}

#[derive(Default)]
struct Slots {
    open: Vec<Arc<Connection>>,
    opening: usize,
    /// When idle connections are next looked for. Between sweeps only the connection a call
    /// picks is checked: aging every connection on every call cost a microsecond a call.
    next_sweep: Option<Instant>,
}

/// A call's use of a connection; the connection's load counts it until it is dropped.
pub(crate) struct Lease {
    conn: Arc<Connection>,
    load: usize,
}

impl Lease {
    fn new(conn: Arc<Connection>, load: usize) -> Lease {
        conn.begin(load);
        Lease { conn, load }
    }
}

impl Deref for Lease {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.conn.end(self.load);
    }
}

enum Pick {
    Lease(Lease),
    Open,
    Wait,
}

/// Gives a slot back if a connect is abandoned or fails.
struct Opening<'a>(&'a Pool);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.0.state.lock().opening -= 1;
        self.0.opened.notify_waiters();
    }
}

impl Pool {
    pub(crate) fn new(settings: Settings, limits: Limits, handle: Handle) -> Pool {
        Pool {
            settings: Arc::new(settings),
            limits,
            handle,
            state: Mutex::new(Slots::default()),
            opened: Notify::new(),
        }
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// A connection for one call over `rows` rows: see the module doc. A failed connect is its
    /// socket error.
    pub(crate) async fn lease(&self, rows: usize) -> io::Result<Lease> {
        let load = self.load(rows);
        loop {
            let opened = self.opened.notified();
            tokio::pin!(opened);
            match self.pick(load, opened.as_mut()) {
                Pick::Lease(lease) => return Ok(lease),
                Pick::Wait => opened.await,
                Pick::Open => {
                    let _slot = Opening(self);
                    let conn = Arc::new(self.connect().await?);
                    let lease = Lease::new(Arc::clone(&conn), load);
                    self.state.lock().open.push(conn);
                    return Ok(lease);
                }
            }
        }
    }

    /// A newly opened connection, for a replay: joins the pool if there is room, else serves
    /// this call only.
    pub(crate) async fn fresh(&self, rows: usize) -> io::Result<Lease> {
        let conn = Arc::new(self.connect().await?);
        let lease = Lease::new(Arc::clone(&conn), self.load(rows));
        let mut slots = self.state.lock();
        slots.open.retain(|c| !c.is_broken());
        if slots.open.len() + slots.opening < self.limits.size {
            slots.open.push(conn);
        }
        Ok(lease)
    }

    fn load(&self, rows: usize) -> usize {
        load_of(rows, self.limits.pipeline)
    }

    /// Where a call adding `load` goes (see `choose`).
    fn pick(&self, load: usize, opened: Pin<&mut Notified<'_>>) -> Pick {
        let limits = self.limits;
        let now = Instant::now();
        let mut slots = self.state.lock();
        let mut sweep = slots.next_sweep.is_none_or(|at| now >= at);
        let chosen = loop {
            if sweep {
                slots
                    .open
                    .retain(|c| !(c.is_broken() || c.is_stale(now, limits.max_idle)));
                slots.next_sweep = Some(now + limits.max_idle / 8);
            } else {
                slots.open.retain(|c| !c.is_broken());
            }
            let room = slots.open.len() + slots.opening < limits.size;
            let loads = slots.open.iter().map(|c| c.in_flight());
            let chosen = choose(loads, load, limits.pipeline, room).map(|i| &slots.open[i]);
            match chosen {
                Some(conn) if !sweep && conn.is_stale(now, limits.max_idle) => sweep = true,
                _ => break chosen.map(Arc::clone).ok_or(room),
            }
        };
        match chosen {
            Ok(conn) => Pick::Lease(Lease::new(conn, load)),
            Err(room) if !room => {
                // Every slot is a connect in progress: wait for one to finish.
                opened.enable();
                Pick::Wait
            }
            _ => {
                slots.opening += 1;
                Pick::Open
            }
        }
    }

    /// Opens a connection on the pool's runtime, whatever runtime the caller is on: the
    /// socket belongs to the runtime that registers it.
    async fn connect(&self) -> io::Result<Connection> {
        let settings = Arc::clone(&self.settings);
        let handle = self.handle.clone();
        match self.handle.spawn(Connection::open(settings, handle)).await {
            Ok(opened) => opened,
            Err(join) => Err(io::Error::other(format!("connect task failed: {join}"))),
        }
    }
}

/// What a call over `rows` rows adds to its connection's load: one, or the whole `limit` if
/// it is over more rows than that.
fn load_of(rows: usize, limit: usize) -> usize {
    if rows > limit {
        limit
    } else {
        1
    }
}

/// The connection a call adding `load` goes on, as an index into `loads` (the open connections'
/// loads): the busiest that the call keeps within `limit`, so that calls made together share a
/// connection and their requests leave in one write (see `conn`); else, when the pool has no
/// `room` to open another, the least loaded. `None`: open another.
fn choose(
    loads: impl Iterator<Item = usize> + Clone,
    load: usize,
    limit: usize,
    room: bool,
) -> Option<usize> {
    let packed = loads
        .clone()
        .enumerate()
        .filter(|&(_, l)| l + load <= limit)
        .max_by_key(|&(_, l)| l);
    let least = || loads.enumerate().min_by_key(|&(_, l)| l);
    packed.or_else(|| least().filter(|_| !room)).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(loads: &[usize], rows: usize, limit: usize, room: bool) -> Option<usize> {
        choose(loads.iter().copied(), load_of(rows, limit), limit, room)
    }

    #[test]
    fn small_calls_pack_onto_the_busiest_connection_they_fit() {
        assert_eq!(pick(&[1, 3, 0], 1, 4, true), Some(1));
        // Two rows are still a small call under a limit of four.
        assert_eq!(pick(&[1, 3, 0], 2, 4, true), Some(1));
        assert_eq!(
            pick(&[4, 4], 1, 4, true),
            None,
            "every one full: open another"
        );
        assert_eq!(pick(&[4, 2, 4], 1, 4, false), Some(1));
    }

    #[test]
    fn a_call_over_more_rows_than_the_limit_goes_alone() {
        assert_eq!(load_of(17, 4), 4);
        assert_eq!(
            pick(&[1, 3, 0], 17, 4, true),
            Some(2),
            "the idle connection"
        );
        assert_eq!(pick(&[1, 3], 17, 4, true), None, "none idle: open another");
        assert_eq!(
            pick(&[1, 3], 17, 4, false),
            Some(0),
            "a full pool: the least loaded"
        );
        // Once it is in flight, its connection counts as full: nothing joins it.
        assert_eq!(pick(&[load_of(17, 4), 1], 1, 4, true), Some(1));
    }

    #[test]
    fn without_pipelining_every_call_takes_an_idle_connection() {
        assert_eq!(load_of(17, 1), 1);
        assert_eq!(pick(&[1, 0, 1], 17, 1, true), Some(1));
        assert_eq!(pick(&[1, 0, 1], 1, 1, true), Some(1));
        assert_eq!(pick(&[1, 2], 1, 1, false), Some(0));
    }
}
