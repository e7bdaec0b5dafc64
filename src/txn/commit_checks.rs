//! What a commit checks of its tables before it writes anything: that each table and family
//! written is transactional and not being migrated, which writes leave an observer
//! notification, and which tables lock rows. Nearly every commit finds all of it in the
//! client's caches, so that path is a plain function; only a commit that must read something
//! runs the asynchronous one (boxed by its caller, so that it does not size every commit's
//! future).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use crate::error::Result;
use crate::key::CellKey;
use crate::txn::context::{Context, Granularities};
use crate::txn::granularity::LockGranularity;
use crate::txn::notify;
use crate::txn::packed::{CommitCells, FamilyProbes};
use crate::txn::CellFlags;

/// What a commit learned from checking its tables: which writes leave an observer
/// notification, and the tables written that lock rows.
pub(crate) struct CommitChecks {
    pub notify: CellFlags,
    pub row_tables: Vec<String>,
}

impl CommitChecks {
    /// Checks every table and family `writes` (in commit order) writes, and which writes leave
    /// an observer notification (from the same meta rows), and learns each table's lock
    /// granularity: in a table that locks rows, a row's writes become one mutation
    /// (docs/design.md invariant 14). `weak`: the cells given a notification without an
    /// observed write; `started`: when the commit started, the clock reading the cached
    /// tables are judged by.
    pub async fn check(
        ctx: &Arc<Context>,
        writes: &CommitCells,
        weak: &BTreeSet<CellKey>,
        started: Instant,
    ) -> Result<CommitChecks> {
        let probes = writes.family_probes();
        let granularities = ctx.check_families(&probes, started).await?;
        let notify = notify::notify_flags(ctx, writes, weak, &granularities).await?;
        Ok(CommitChecks::of(&probes, &granularities, notify))
    }

    /// [`CommitChecks::check`] from what the client has cached, as nearly every commit finds it:
    /// no read, and no future. `None` when something must be read.
    pub fn from_cache(
        ctx: &Context,
        writes: &CommitCells,
        weak: &BTreeSet<CellKey>,
        started: Instant,
    ) -> Option<Result<CommitChecks>> {
        let probes = writes.family_probes();
        let granularities = match ctx.checked_from_cache(&probes, started)? {
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
