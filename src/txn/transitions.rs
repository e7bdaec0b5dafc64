//! Regions in transition, waited out. A region moving, splitting, opening, or on a server that
//! crashed is unavailable for seconds (tens of seconds while the master has yet to notice a
//! dead server), and the gateway's HBase client reports it only once it gave up: a `Retry`
//! [`Error::ServerIo`]. Reads and starts wait it out here rather than fail a transaction, or a
//! service's start-up, on a region that is back moments later. Writes are never resent blind:
//! a checkAndMutate that met it may have been applied, and is settled by reading back
//! (docs/design.md, invariant 7).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::{Error, Result, RetryClass};
use crate::hbase::{CheckAndMutate, Delete, Get, Put, RowResult, Scan, TableDescriptor};
use crate::txn::store::HBaseAccess;

/// The first pause after a region in transition; each next one is twice as long, up to
/// [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// How long a whole step (a table's set-up, a migration's step) waits out a region in
/// transition by default: longer than a crashed region server's regions take to return when
/// its ZooKeeper session is short (docs/real-hbase.md).
pub(crate) const TRANSITION_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether `e` is the gateway reporting a state of HBase that clears by itself: a `Retry`
/// [`Error::ServerIo`]. A gateway that cannot be reached is not: that is a wrong address or a
/// gateway down, not a region on its way.
fn in_transition(e: &Error) -> bool {
    matches!(e, Error::ServerIo { .. }) && e.retry_class() == RetryClass::Retry
}

/// The waits of one call, or one step of a long run, through regions in transition: pauses
/// of 50 ms, then twice as long each time up to 2 s, for as long as the next try would start
/// within `budget` of the start (or of the last progress, see [`Transition::progressed`]).
pub(crate) struct Transition {
    budget: Duration,
    since: Instant,
    pause: Duration,
    /// When the first of the current waits began (what is measured).
    waiting_since: Option<Instant>,
}

impl Transition {
    pub(crate) fn new(budget: Duration) -> Transition {
        Transition {
            budget,
            since: Instant::now(),
            pause: FIRST_PAUSE,
            waiting_since: None,
        }
    }

    /// How long to pause before trying again after `e`; `None` when `e` is not a region in
    /// transition or the budget is spent, and the caller gives up with `e`.
    pub(crate) fn pause_after(&mut self, e: &Error) -> Option<Duration> {
        if !in_transition(e) || self.since.elapsed() + self.pause >= self.budget {
            self.ended();
            return None;
        }
        self.waiting_since.get_or_insert_with(Instant::now);
        let pause = self.pause;
        tracing::info!(error = %e, ?pause, "waiting out a region in transition");
        self.pause = (pause * 2).min(LONGEST_PAUSE);
        Some(pause)
    }

    /// A long run moved on since its last wait: the next wait has the whole budget again.
    pub(crate) fn progressed(&mut self) {
        self.ended();
        self.since = Instant::now();
        self.pause = FIRST_PAUSE;
    }

    /// The call or step is over (done, or given up): records how long it waited, if it did.
    pub(crate) fn ended(&mut self) {
        if let Some(waiting_since) = self.waiting_since.take() {
            crate::metrics::region_wait(waiting_since.elapsed());
        }
    }
}

/// Runs `op` again after the gateway reported a region in transition, as [`Transition`]
/// paces it, until it succeeds, fails otherwise, or the budget is spent.
pub(crate) async fn until_settled<T, F, Fut>(budget: Duration, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut transition = Transition::new(budget);
    loop {
        match op().await {
            Err(e) => match transition.pause_after(&e) {
                Some(pause) => tokio::time::sleep(pause).await,
                None => return Err(e),
            },
            Ok(v) => {
                transition.ended();
                return Ok(v);
            }
        }
    }
}

/// [`until_settled`] for blocking callers (the migration's steps, whole read-only passes).
pub(crate) fn until_settled_blocking<T>(
    budget: Duration,
    mut op: impl FnMut() -> Result<T>,
) -> Result<T> {
    resuming_blocking(budget, |_| (op(), false), |_| {})
}

/// The loop of [`until_settled_blocking`] for a long step made of tries: `attempt` is told
/// whether an earlier try was stopped by a transition and answers with its result and whether
/// it moved the step on, which gives the next wait the whole `budget` again; `on_pause` hears
/// of each error waited out.
pub(crate) fn resuming_blocking<T>(
    budget: Duration,
    mut attempt: impl FnMut(bool) -> (Result<T>, bool),
    mut on_pause: impl FnMut(&Error),
) -> Result<T> {
    let mut transition = Transition::new(budget);
    let mut after_transition = false;
    loop {
        let e = match attempt(after_transition) {
            (Ok(v), _) => {
                transition.ended();
                return Ok(v);
            }
            (Err(e), progressed) => {
                if progressed {
                    transition.progressed();
                }
                e
            }
        };
        let Some(pause) = transition.pause_after(&e) else {
            return Err(e);
        };
        on_pause(&e);
        std::thread::sleep(pause);
        after_transition = true;
    }
}

/// The store as a transaction client uses it: its reads wait out a region in transition
/// within `budget` (`TxnOptions::settle_timeout`); its writes go through as they are.
pub(crate) struct WaitsOutTransitions {
    inner: Arc<dyn HBaseAccess>,
    budget: Duration,
}

impl WaitsOutTransitions {
    pub(crate) fn new(inner: Arc<dyn HBaseAccess>, budget: Duration) -> WaitsOutTransitions {
        WaitsOutTransitions { inner, budget }
    }
}

#[async_trait]
impl HBaseAccess for WaitsOutTransitions {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        until_settled(self.budget, || self.inner.get_many(table, gets)).await
    }

    // The store's own future, not one around it: a commit makes most of its calls here.
    fn check_and_mutate<'c, 't, 'm, 'f>(
        &'c self,
        table: &'t str,
        cam: &'m CheckAndMutate,
    ) -> BoxFuture<'f, Result<bool>>
    where
        'c: 'f,
        't: 'f,
        'm: 'f,
        Self: 'f,
    {
        self.inner.check_and_mutate(table, cam)
    }

    async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        until_settled(self.budget, || self.inner.scan_page(table, scan, rows)).await
    }

    async fn put(&self, table: &str, put: &Put) -> Result<()> {
        self.inner.put(table, put).await
    }

    async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        self.inner.delete(table, delete).await
    }

    async fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        self.inner.delete_many(table, deletes).await
    }

    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        until_settled(self.budget, || self.inner.table_descriptor(table)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::until_settled;
    use crate::error::Error;

    /// What the gateway sends while the liveness table's region moves.
    fn moving() -> Error {
        Error::ServerIo {
            message: "No server address listed in hbase:meta for region percolator_liveness,,1.ab. containing row c1".into(),
            can_retry: false,
            exception: None,
        }
    }

    #[tokio::test]
    async fn a_start_meeting_a_region_in_transition_retries_until_it_clears() {
        let tries = AtomicU32::new(0);
        let got = until_settled(Duration::from_secs(10), || async {
            match tries.fetch_add(1, Ordering::Relaxed) {
                0 | 1 => Err(moving()),
                _ => Ok("started"),
            }
        })
        .await;
        assert_eq!(got.unwrap(), "started");
        assert_eq!(tries.load(Ordering::Relaxed), 3);
        let waited = crate::metrics::longest_waits().region_in_transition;
        assert!(
            waited >= Duration::from_millis(150),
            "the pauses of 50 and 100 ms are the longest wait so far: {waited:?}"
        );
    }

    #[tokio::test]
    async fn a_start_fails_at_once_on_what_does_not_clear_and_within_its_budget_on_what_does_not() {
        let tries = AtomicU32::new(0);
        let fatal = until_settled(Duration::from_secs(10), || async {
            tries.fetch_add(1, Ordering::Relaxed);
            Err::<(), _>(Error::TableNotFound {
                table: "t".into(),
                message: "t".into(),
            })
        })
        .await;
        assert!(matches!(fatal, Err(Error::TableNotFound { .. })));
        assert_eq!(tries.load(Ordering::Relaxed), 1);
        let unreachable = until_settled(Duration::from_secs(10), || async {
            tries.fetch_add(1, Ordering::Relaxed);
            Err::<(), _>(Error::Transport {
                peer: crate::Peer::HBase,
                addr: "127.0.0.1:1".into(),
                source: std::sync::Arc::new(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "refused",
                )),
            })
        })
        .await;
        assert!(matches!(unreachable, Err(Error::Transport { .. })));
        assert_eq!(
            tries.load(Ordering::Relaxed),
            2,
            "a gateway down is not waited for"
        );
        let started = Instant::now();
        let stuck = until_settled(Duration::from_millis(400), || async {
            Err::<(), _>(moving())
        })
        .await;
        assert!(matches!(stuck, Err(Error::ServerIo { .. })));
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
    }
}
