//! The client's heartbeat: one task that refreshes its liveness row and the wall time of the
//! primary locks of commits under way. It holds only a weak reference to the client, so a
//! dropped client stops it; a dead one (killed, or crashed at a seam) stops it at once.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::format::encode_lock;
use crate::txn::actions;
use crate::txn::context::Context;
use crate::txn::stats::Stats;

/// The running heartbeat; [`Heartbeat::stop`] ends it and waits for it.
pub(crate) struct Heartbeat {
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Heartbeat {
    pub fn start(ctx: &Arc<Context>) -> Heartbeat {
        let lock_tick = ctx.opts().lock_ttl / 3;
        let tick = ctx
            .liveness()
            .config()
            .refresh_interval()
            .min(lock_tick)
            .max(Duration::from_millis(10));
        let (stop, stopped) = watch::channel(false);
        let task = ctx
            .background()
            .runtime()
            .spawn(run(Arc::downgrade(ctx), stopped, tick));
        Heartbeat {
            stop,
            task: Some(task),
        }
    }

    /// Tells the task to stop, without waiting for it.
    pub fn signal_stop(&self) {
        let _ = self.stop.send(true);
    }

    pub async fn stop(&mut self) {
        self.signal_stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

async fn run(weak: Weak<Context>, mut stopped: watch::Receiver<bool>, tick: Duration) {
    let mut last_liveness = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            _ = tokio::time::sleep(tick) => {}
        }
        let Some(ctx) = weak.upgrade() else {
            return;
        };
        if ctx.is_dead() || *stopped.borrow() {
            return;
        }
        let liveness = ctx.liveness();
        if last_liveness.elapsed() >= liveness.config().refresh_interval() {
            let oldest = ctx.open_txns().oldest();
            match liveness.refresh(ctx.store(), ctx.now_ms(), oldest).await {
                Ok(()) => last_liveness = tokio::time::Instant::now(),
                Err(e) => tracing::warn!(error = %e, "liveness refresh failed"),
            }
        }
        refresh_primaries(&ctx).await;
    }
}

/// Rewrites the wall time of primary locks older than a third of their TTL, each with a CAS on
/// the exact stored bytes (a resolver may have rolled the lock back meanwhile).
async fn refresh_primaries(ctx: &Context) {
    let now = ctx.now_ms();
    let third = ctx.opts().lock_ttl.as_millis() as u64 / 3;
    for due in ctx.primaries().due(now.saturating_sub(third)) {
        let mut lock = due.lock.clone();
        lock.wall_ms = now;
        let bytes = encode_lock(&lock);
        let cam = actions::refresh_lock(ctx.schema(), &due.key, &due.lock, &due.bytes, &bytes);
        Stats::bump(&ctx.stats().hbase_rpcs);
        match ctx.store().check_and_mutate(&due.key.table, &cam).await {
            Ok(true) => {
                Stats::bump(&ctx.stats().heartbeats);
                ctx.primaries().refreshed(&due, lock, bytes);
            }
            // Rolled back by someone who found us stale: the commit point will notice.
            Ok(false) => ctx.primaries().stop(due.start_ts),
            // A lost reply leaves the stored bytes unknown; the commit point settles it.
            Err(e) => {
                tracing::warn!(key = %due.key, error = %e, "primary lock heartbeat failed");
                ctx.primaries().stop(due.start_ts);
            }
        }
    }
}
