//! The task behind each lane: waits for askers, sends their batch as one request, hands out the
//! answer, and meanwhile the next batch fills. Failed exchanges are retried on a fresh
//! connection, moving through the address list, until the request timeout.
//!
//! Retrying is always safe: timestamps a server handed out but whose reply was lost are simply
//! never used, and a server that took over starts above everything its predecessor served.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::batch::{BatchError, Outcome};
use super::conn::{ConnError, Connection};
use super::Shared;
use crate::oracle::protocol::{ErrorCode, MAX_COUNT};

const MIN_BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_millis(200);

pub(crate) async fn run_lane(
    shared: Arc<Shared>,
    index: usize,
    mut conn: Option<Connection>,
    mut stop: watch::Receiver<bool>,
) {
    let lane = &shared.lanes[index];
    // Askers are often woken together, by one reply that finished their previous transactions.
    // On a single worker they are all queued behind the lane, and one yield lets them join this
    // request instead of the next. With more workers a yield is a deferred wake-up, which cost
    // 130 us per timestamp against the cluster profile (measured on b25f77f; docs/benchmarks.md).
    let gather = tokio::runtime::Handle::current().metrics().num_workers() == 1;
    loop {
        let (batch, slots) = loop {
            if gather {
                tokio::task::yield_now().await;
            }
            if let Some(taken) = lane.take() {
                break taken;
            }
            tokio::select! {
                _ = lane.joined() => {}
                _ = stop.wait_for(|s| *s) => {
                    lane.close();
                    return;
                }
            }
        };
        let sent = std::time::Instant::now();
        let spares = shared.spares.to_request(slots, MAX_COUNT, sent);
        let outcome = tokio::select! {
            outcome = exchange(&shared, &mut conn, slots + spares) => outcome,
            _ = stop.wait_for(|s| *s) => {
                batch.complete(Err(BatchError::Shutdown));
                lane.close();
                return;
            }
        };
        if let Ok(ranges) = &outcome
            && let Some(top) = ranges.get(slots - 1)
        {
            let spare = (spares > 0).then(|| ranges.run_from(slots)).flatten();
            shared
                .spares
                .record(sent, top, spare.map(|(ts, n)| (ts, n.min(spares))));
        }
        batch.complete(outcome);
    }
}

async fn exchange(shared: &Shared, conn: &mut Option<Connection>, count: u32) -> Outcome {
    let config = &shared.config;
    let deadline = Instant::now() + config.request_timeout;
    let mut backoff = MIN_BACKOFF;
    let mut failures = 0usize;
    loop {
        let at = shared.preferred.load(Ordering::Relaxed) % shared.addrs.len();
        let addr = &shared.addrs[at];
        let attempt = async {
            if conn.is_none() {
                *conn =
                    Some(Connection::open(addr, config.connect_timeout, &shared.security).await?);
            }
            conn.as_mut()
                .expect("connected above")
                .timestamps(count)
                .await
        };
        let reason = match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok(ranges)) => return Ok(ranges),
            Ok(Err(ConnError::Server(ErrorCode::BadRequest, msg))) => {
                *conn = None;
                return Err(BatchError::Protocol(format!(
                    "{addr} rejected our request: {msg}"
                )));
            }
            Ok(Err(ConnError::Refused(failure))) => {
                *conn = None;
                return Err(BatchError::Auth {
                    addr: addr.clone(),
                    failure,
                });
            }
            Ok(Err(e)) => format!("{addr}: {e}"),
            Err(_) => format!("{addr}: no answer"),
        };
        *conn = None;
        // Move every lane to the next address, unless another lane already moved on.
        let _ = shared.preferred.compare_exchange(
            at,
            (at + 1) % shared.addrs.len(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        failures += 1;
        tracing::debug!(%reason, "oracle exchange failed; failing over");
        let now = Instant::now();
        if now >= deadline {
            return Err(BatchError::Unavailable {
                addrs: shared.addrs.clone(),
                reason,
            });
        }
        // After trying every address once, pause before going round again.
        if failures.is_multiple_of(shared.addrs.len()) {
            tokio::time::sleep(backoff.min(deadline - now)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}
