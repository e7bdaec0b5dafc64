//! What running clients, GC and observer workers leave in HBase: locks past their TTL, the GC
//! safe point's lag, and the observer workers' rows.

use std::time::Duration;

use percolator::gc::stored_safe_point;
use percolator::locks::{check_owners, list_locks};
use percolator::observer::worker_rows;
use percolator::oracle::physical_of;
use percolator::txn::{LivenessConfig, Schema};
use percolator::{Error, HBaseClient};

use super::verdict::Check;

/// Whole seconds (or milliseconds below one) of `ms`, for reading.
fn human(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 120_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{:.1} min", ms as f64 / 60_000.0)
    }
}

/// The `stale_locks` check of `table`: locks whose age is past their own TTL. The protocol
/// lets any reader clean such a lock, so one still there was left by a writer that died (or
/// stalled) on a cell nobody has read since; `hbase`, `oracle` name the servers for the fix.
pub(super) fn stale_locks(
    hbase: &HBaseClient,
    schema: &Schema,
    liveness: &LivenessConfig,
    table: &str,
    servers: (&str, &str),
) -> Check {
    let read = list_locks(hbase, schema, table).and_then(|mut locks| {
        check_owners(hbase, liveness, &mut locks)?;
        Ok(locks)
    });
    let locks = match read {
        Ok(locks) => locks,
        Err(Error::TableNotFound { .. }) => {
            return Check::skip("stale_locks", "the table does not exist").on(table)
        }
        Err(e) => {
            return Check::fail(
                "stale_locks",
                format!("the locks could not be read: {e}"),
                "see the error",
            )
            .on(table)
        }
    };
    let stale: Vec<_> = locks.iter().filter(|l| l.is_stale()).collect();
    let Some(oldest) = stale.iter().max_by_key(|l| l.age_ms) else {
        return Check::ok(
            "stale_locks",
            format!("{} locks, none past its TTL", locks.len()),
        )
        .on(table);
    };
    let owners_alive = stale.iter().filter(|l| l.alive == Some(true)).count();
    Check::fail(
        "stale_locks",
        format!(
            "{} of {} locks are past their TTL (oldest {} old, TTL {}, at {}; {owners_alive} of their owners alive)",
            stale.len(),
            locks.len(),
            human(oldest.age_ms),
            human(oldest.ttl_ms),
            oldest.key
        ),
        format!(
            "`percolator locks --resolve --hbase {} --oracle {} {table}` rolls each forward or back; a GC round also resolves those below its safe point",
            servers.0, servers.1
        ),
    )
    .on(table)
}

/// The `gc_safe_point` check: how far the stored safe point trails `now_ms` (the oracle's
/// physical time, or this host's without an oracle). The lag is the GC's life time plus its
/// interval when all is well; past `max` GC has stopped, or a transaction left open holds it.
pub(super) fn gc_safe_point(
    hbase: &HBaseClient,
    schema: &Schema,
    now_ms: u64,
    max: Duration,
    servers: (&str, &str),
) -> Check {
    let stored = match stored_safe_point(hbase, &schema.meta_table) {
        Ok(stored) => stored,
        Err(e) => {
            return Check::fail(
                "gc_safe_point",
                format!("the safe point could not be read: {e}"),
                "see the error",
            )
        }
    };
    let gc = format!(
        "run `percolator gc --hbase {} --oracle {} TABLE...` (a process that keeps running, or --once from cron)",
        servers.0, servers.1
    );
    let Some(safe_point) = stored else {
        return Check::warn(
            "gc_safe_point",
            "no safe point stored: GC has never run, and old versions are never removed",
            gc,
        );
    };
    let lag = now_ms.saturating_sub(physical_of(safe_point));
    let max_ms = max.as_millis() as u64;
    let detail = format!(
        "safe point {safe_point} trails by {} (limit {})",
        human(lag),
        human(max_ms)
    );
    if lag > max_ms {
        Check::fail(
            "gc_safe_point",
            detail,
            format!("check that GC runs ({gc}); a client's transaction left open holds the safe point at its start (see the liveness table); raise --max-gc-lag if GC's --life-time is longer"),
        )
    } else {
        Check::ok("gc_safe_point", detail)
    }
}

/// The `observer_workers` check of `table`: the workers whose rows are live, and those whose
/// rows expired. Expired rows beside live workers are a worker that died and whose
/// partitions the others took over (they remove its row soon); expired rows alone are
/// observers that all stopped, their notifications piling up.
pub(super) fn observer_workers(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    now_ms: u64,
) -> Check {
    let rows = match worker_rows(hbase, schema, table) {
        Ok(rows) => rows,
        Err(e) => {
            return Check::fail(
                "observer_workers",
                format!("the worker rows could not be read: {e}"),
                "see the error",
            )
            .on(table)
        }
    };
    let live = rows.iter().filter(|w| w.is_live(now_ms)).count();
    let expired: Vec<_> = rows.iter().filter(|w| !w.is_live(now_ms)).collect();
    let last_seen = expired
        .iter()
        .map(|w| w.expires_ms)
        .max()
        .map(|at| human(now_ms.saturating_sub(at)));
    let check = match (live, last_seen) {
        (0, None) => Check::ok("observer_workers", "no observer workers"),
        (live, None) => Check::ok("observer_workers", format!("{live} live")),
        (0, Some(ago)) => Check::fail(
            "observer_workers",
            format!("none live, {} expired (the last {ago} ago): the observed columns' notifications are not processed", expired.len()),
            "restart the service that runs the observers (ObserverWorker::start); if they are retired, delete their rows (`obs-hash-worker/TABLE/...`) from the meta table",
        ),
        (live, Some(ago)) => Check::warn(
            "observer_workers",
            format!("{live} live, {} expired (the last {ago} ago): a worker died and the live ones took its partitions", expired.len()),
            "look at why it died; the live workers remove its row once its leases expire",
        ),
    };
    check.on(table)
}
