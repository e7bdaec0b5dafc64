//! What a commit checks before it writes anything: that its snapshot is not older than GC's
//! safe point, that each table and family written is transactional and not being migrated,
//! which writes leave an observer notification, and which tables lock rows. Nearly every commit finds all of it in the
//! client's caches, so that path is a plain function; only a commit that must read something
//! runs the asynchronous one (boxed by its caller, so that it does not size every commit's
//! future).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use super::notify;
use super::packed::{CommitCells, FamilyProbes};
use crate::error::Result;
use crate::key::CellKey;
use crate::txn::context::Context;
use crate::txn::granularity::LockGranularity;
use crate::txn::safe_point;
use crate::txn::table_checks;
use crate::txn::table_checks::Granularities;
use crate::txn::CellFlags;

/// What a commit learned from checking its tables: which writes leave an observer
/// notification, and the tables written that lock rows.
pub(crate) struct CommitChecks {
    pub notify: CellFlags,
    pub row_tables: Vec<String>,
}

/// The commit's first step: every check, from the client's caches when they are young at
/// `started` (the commit's reading of the clock), as nearly every commit finds them.
pub(super) async fn check(
    ctx: &Arc<Context>,
    start_ts: u64,
    cells: &CommitCells,
    weak: &BTreeSet<CellKey>,
    started: Instant,
) -> Result<CommitChecks> {
    let cached = match safe_point::snapshot_checked(ctx, start_ts, started) {
        Some(snapshot) => {
            snapshot?;
            CommitChecks::from_cache(ctx, cells, weak, started)
        }
        None => {
            safe_point::check_snapshot(ctx, start_ts).await?;
            None
        }
    };
    match cached {
        Some(checks) => checks,
        // Boxed: a read is rare, and its future would otherwise size every commit's.
        None => Box::pin(CommitChecks::check(ctx, cells, weak, started)).await,
    }
}

impl CommitChecks {
    /// Checks every table and family `writes` (in commit order) writes, and which writes leave
    /// an observer notification (from the same meta rows), and learns each table's lock
    /// granularity: in a table that locks rows, a row's writes become one mutation
    /// (docs/design.md invariant 14). `weak`: the cells given a notification without an
    /// observed write; `started`: when the commit started, the clock reading the cached
    /// tables are judged by.
    async fn check(
        ctx: &Arc<Context>,
        writes: &CommitCells,
        weak: &BTreeSet<CellKey>,
        started: Instant,
    ) -> Result<CommitChecks> {
        let probes = writes.family_probes();
        let granularities = table_checks::check_families(ctx, &probes, started).await?;
        let notify = notify::notify_flags(ctx, writes, weak, &granularities).await?;
        Ok(CommitChecks::of(&probes, &granularities, notify))
    }

    /// [`CommitChecks::check`] from what the client has cached, as nearly every commit finds it:
    /// no read, and no future. `None` when something must be read.
    fn from_cache(
        ctx: &Context,
        writes: &CommitCells,
        weak: &BTreeSet<CellKey>,
        started: Instant,
    ) -> Option<Result<CommitChecks>> {
        let probes = writes.family_probes();
        let granularities = match table_checks::checked_from_cache(ctx, &probes, started)? {
            Ok(granularities) => granularities,
            Err(e) => return Some(Err(e)),
        };
        let notify = notify::notify_flags_cached(ctx, writes, weak, &granularities)?;
        Some(Ok(CommitChecks::of(&probes, &granularities, notify)))
    }

    fn of(
        probes: &FamilyProbes<'_>,
        granularities: &Granularities<'_>,
        notify: CellFlags,
    ) -> CommitChecks {
        let row_tables = probes
            .iter()
            .filter(|(table, _)| granularities.of(table) == LockGranularity::Row)
            .map(|(table, _)| table.to_string())
            .collect();
        CommitChecks { notify, row_tables }
    }
}
