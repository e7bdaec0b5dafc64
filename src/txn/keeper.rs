//! The client's one background thread: refreshes its liveness row and the wall time of the
//! primary locks of commits under way. Holds only a weak reference, so dropping the client
//! stops it; shutdown joins it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::txn::actions;
use crate::txn::codec::encode_lock;
use crate::txn::session::{Inner, KeeperHandle, Stats};

pub(crate) fn start(inner: &Arc<Inner>) -> std::io::Result<KeeperHandle> {
    let lock_tick = inner.opts.lock_ttl / 3;
    let tick = inner
        .liveness
        .config()
        .refresh_interval()
        .min(lock_tick)
        .max(Duration::from_millis(10));
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let weak = Arc::downgrade(inner);
    let thread_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name("percolator-keeper".into())
        .spawn(move || run(weak, thread_stop, tick))?;
    Ok(KeeperHandle { stop, thread })
}

fn run(weak: Weak<Inner>, stop: Arc<(Mutex<bool>, Condvar)>, tick: Duration) {
    let mut last_liveness = std::time::Instant::now();
    loop {
        {
            let (flag, cv) = &*stop;
            let mut stopped = flag.lock();
            if !*stopped {
                cv.wait_for(&mut stopped, tick);
            }
            if *stopped {
                return;
            }
        }
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if last_liveness.elapsed() >= inner.liveness.config().refresh_interval() {
            let now = inner.now_ms();
            match inner.liveness.refresh(inner.store.as_ref(), now) {
                Ok(()) => last_liveness = std::time::Instant::now(),
                Err(e) => tracing::warn!(error = %e, "liveness refresh failed"),
            }
        }
        refresh_primaries(&inner);
    }
}

/// Rewrites the wall time of primary locks older than a third of their TTL, each with a CAS on
/// the exact stored bytes (a resolver may have rolled the lock back meanwhile).
fn refresh_primaries(inner: &Inner) {
    let now = inner.now_ms();
    let third = inner.opts.lock_ttl.as_millis() as u64 / 3;
    let guards: Vec<_> = inner.primaries.lock().values().cloned().collect();
    for guard in guards {
        let mut g = guard.lock();
        if !g.live || now < g.lock().wall_ms + third {
            continue;
        }
        let mut lock = g.lock().clone();
        lock.wall_ms = now;
        let bytes = encode_lock(&lock);
        let cam = actions::refresh_lock(&inner.opts.schema, g.key(), g.bytes(), &bytes);
        Stats::bump(&inner.stats.hbase_rpcs);
        match inner.store.check_and_mutate(&g.key().table, &cam) {
            Ok(true) => {
                Stats::bump(&inner.stats.heartbeats);
                g.refreshed = Some((lock, bytes));
            }
            // Rolled back by someone who found us stale: the commit point will notice.
            Ok(false) => g.live = false,
            // A lost reply leaves the stored bytes unknown; the commit point settles it.
            Err(e) => {
                tracing::warn!(key = %g.key(), error = %e, "primary lock heartbeat failed");
                g.live = false;
            }
        }
    }
}
