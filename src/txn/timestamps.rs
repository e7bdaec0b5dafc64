//! Timestamps as a client's transactions take them from its source: counted, and timed with
//! the caller's own clock readings.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::FutureExt;

use crate::error::Result;
use crate::txn::context::Context;
use crate::txn::stats::Stats;

/// A timestamp from the source, timed.
pub(crate) struct Stamped {
    pub ts: u64,
    /// When it came.
    pub came: Instant,
    /// How long it took to come.
    pub waited: Duration,
}

pub(crate) fn timestamp(ctx: &Context) -> impl Future<Output = Result<u64>> + Send + '_ {
    timestamp_asked_at(ctx, Instant::now()).map(|stamped| Ok(stamped?.ts))
}

/// A timestamp asked for at `asked` (an instant the caller already read), with when it
/// came and the wait: a commit times its phases with the same clock reads. The source's
/// own future, mapped, not one around it: every write transaction waits on it.
pub(crate) fn timestamp_asked_at(
    ctx: &Context,
    asked: Instant,
) -> impl Future<Output = Result<Stamped>> + Send + '_ {
    Stats::bump(&ctx.stats().timestamps);
    ctx.tso().timestamp().map(move |ts| {
        let came = Instant::now();
        let waited = came - asked;
        crate::metrics::seconds(crate::metrics::key!(crate::metrics::ORACLE_WAIT), waited);
        Ok(Stamped {
            ts: ts?,
            came,
            waited,
        })
    })
}

/// A start timestamp at hand for a transaction that read nothing, if the source has a
/// young enough one (`TxnOptions::blind_write_start_age`).
pub(crate) fn recent_timestamp(ctx: &Context) -> Option<u64> {
    let age = ctx.opts().blind_write_start_age;
    if age.is_zero() {
        return None;
    }
    let ts = ctx.tso().recent_timestamp(age)?;
    Stats::bump(&ctx.stats().timestamps);
    Stats::bump(&ctx.stats().spare_timestamps);
    Some(ts)
}
