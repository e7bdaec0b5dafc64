//! Up to `pool_size` pipelined connections, and which one a call goes on.
//!
//! A call takes the busiest connection that has fewer than `pipeline_per_connection` calls in
//! flight (calls made together then leave in one write), and opens another when every open one
//! is at that limit and the pool may grow; a full pool takes the least loaded. The
//! real gateway serves one connection's calls one after another, so the default of 1 spreads
//! concurrent calls over connections; the emulator serves pipelined calls faster than it wakes
//! up for new ones, so it gains from more. A full pool pipelines instead of making callers
//! wait. Connections idle for `max_idle` are replaced: the gateway drops sockets idle for 60 s
//! without telling, and the next call on one would fail after sending.

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
pub(crate) struct Lease(Arc<Connection>);

impl Lease {
    fn new(conn: Arc<Connection>) -> Lease {
        conn.begin();
        Lease(conn)
    }
}

impl Deref for Lease {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.end();
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

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// A connection for one call: see the module doc. A failed connect is its socket error.
    pub(crate) async fn lease(&self) -> io::Result<Lease> {
        loop {
            let opened = self.opened.notified();
            tokio::pin!(opened);
            match self.pick(opened.as_mut()) {
                Pick::Lease(lease) => return Ok(lease),
                Pick::Wait => opened.await,
                Pick::Open => {
                    let _slot = Opening(self);
                    let conn = Arc::new(self.connect().await?);
                    let lease = Lease::new(Arc::clone(&conn));
                    self.state.lock().open.push(conn);
                    return Ok(lease);
                }
            }
        }
    }

    /// A newly opened connection, for a replay: joins the pool if there is room, else serves
    /// this call only.
    pub(crate) async fn fresh(&self) -> io::Result<Lease> {
        let conn = Arc::new(self.connect().await?);
        let lease = Lease::new(Arc::clone(&conn));
        let mut slots = self.state.lock();
        slots.open.retain(|c| !c.is_broken());
        if slots.open.len() + slots.opening < self.limits.size {
            slots.open.push(conn);
        }
        Ok(lease)
    }

    fn pick(&self, opened: Pin<&mut Notified<'_>>) -> Pick {
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
            // The busiest connection still under the limit: calls made together then share a
            // connection, and their requests leave in one write (see `conn`). Past the limit,
            // the least loaded once the pool is full.
            let packed = slots
                .open
                .iter()
                .filter(|c| c.in_flight() < limits.pipeline)
                .max_by_key(|c| c.in_flight());
            let least = || slots.open.iter().min_by_key(|c| c.in_flight());
            let chosen = packed.or_else(|| least().filter(|_| !room));
            match chosen {
                Some(conn) if !sweep && conn.is_stale(now, limits.max_idle) => sweep = true,
                _ => break chosen.map(Arc::clone).ok_or(room),
            }
        };
        match chosen {
            Ok(conn) => Pick::Lease(Lease::new(conn)),
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
