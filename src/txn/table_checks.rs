//! What a client checks of a table before it reads or writes it: that the table has the
//! percolator families and every family used (each table's descriptor read once per client,
//! again when a family is missing), that it is not being migrated, and its lock granularity
//! (both from the table's meta row, cached for `META_REFRESH`).

use std::sync::Arc;
use std::time::Instant;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::format::meta::{meta_row, META_FAMILY, MIG_BUSY_STATES, MIG_STATE};
use crate::hbase::RowResult;
use crate::key::CellKey;
use crate::txn::context::Context;
use crate::txn::families::{Families, KnownTable};
use crate::txn::granularity::LockGranularity;
use crate::txn::stats::Stats;

/// Fails with `NotTransactional` unless the table has the percolator families (checked once
/// per table per client) and is not being migrated (the meta row, cached 5 s).
pub(crate) async fn check_table(ctx: &Context, table: &str) -> Result<LockGranularity> {
    // The families first, as in `check_families`.
    table_families(ctx, table, false).await?;
    Ok(check_not_migrating(ctx, table).await?.0)
}

/// [`check_table`] for every key's table, and `FamilyNotFound` if a key names a
/// family its table does not have: a read would otherwise find no write record and answer
/// "absent". A family missing from a cached descriptor is looked up once more, since it
/// may have been added since (a descriptor just fetched is not fetched again). Returns
/// each table's lock granularity, read from the same meta row as its migration marker.
/// `now` is the caller's reading of the clock, taken just before: whether a cached meta
/// row is still young is judged by it.
pub(crate) async fn check_families<'k>(
    ctx: &Context,
    probes: &'k [impl FamilyProbe],
    now: Instant,
) -> Result<Granularities<'k>> {
    match checked_from_cache(ctx, probes, now) {
        Some(checked) => checked,
        // Boxed: a read is rare, and its future would otherwise size every commit's.
        None => Box::pin(check_families_read(ctx, probes)).await,
    }
}

/// [`check_families`] when every family is in a cached descriptor and every meta
/// row is cached and young, as the read would find them; `None` when one is not.
pub(crate) fn checked_from_cache<'k>(
    ctx: &Context,
    probes: &'k [impl FamilyProbe],
    now: Instant,
) -> Option<Result<Granularities<'k>>> {
    let mut tables = Granularities(SmallVec::new());
    for probe in probes {
        let (table, family) = probe.table_family();
        let known = ctx.tables().cached(table)?;
        if !known.contains(family) {
            return None;
        }
        if tables.0.last().map(|(t, _, _)| *t) != Some(table) {
            let meta = known.meta().young(now)?;
            match not_migrating(table, meta) {
                Ok((granularity, meta)) => tables.0.push((table, granularity, meta)),
                Err(e) => return Some(Err(e)),
            }
        }
    }
    Some(Ok(tables))
}

async fn check_families_read<'k>(
    ctx: &Context,
    probes: &'k [impl FamilyProbe],
) -> Result<Granularities<'k>> {
    let mut tables = Granularities(SmallVec::new());
    for probe in probes {
        let (table, family) = probe.table_family();
        // The families first: a client that finds them for the first time reads the meta
        // row again, and the granularity must come from that read (see `granularity`).
        check_family(ctx, table, family).await?;
        // Keys come grouped by table: the meta row is looked up once per run of a table.
        if tables.0.last().map(|(t, _, _)| *t) != Some(table) {
            let (granularity, meta) = check_not_migrating(ctx, table).await?;
            tables.0.push((table, granularity, meta));
        }
    }
    Ok(tables)
}

/// `FamilyNotFound` unless transactional table `table` has `family` (see
/// [`check_families`]).
pub(crate) async fn check_family(ctx: &Context, table: &str, family: &[u8]) -> Result<()> {
    let (families, cached) = table_families(ctx, table, false).await?;
    if families.contains(family)
        || (cached && table_families(ctx, table, true).await?.0.contains(family))
    {
        return Ok(());
    }
    Err(Error::FamilyNotFound {
        table: table.to_string(),
        family: String::from_utf8_lossy(family).into_owned(),
        message: format!("its families are {}", families.names().join(", ")),
    })
}

/// The table's families, and whether they came from the cache (else they were just
/// fetched and checked, by this caller or by the one whose read it waited for).
async fn table_families(ctx: &Context, table: &str, refresh: bool) -> Result<(Families, bool)> {
    if !refresh && let Some(families) = ctx.tables().cached(table) {
        return Ok((families, true));
    }
    let families = ctx
        .tables()
        .read(table, || async {
            Stats::bump(&ctx.stats().hbase_rpcs);
            let desc = ctx.store().table_descriptor(table).await?;
            ctx.schema().check(&desc)?;
            // The meta row (lock granularity, migration marker) is written before the
            // families are added: read now, after they were seen, it is the final one,
            // whatever an earlier read of it cached.
            let row = meta_row(table);
            refresh_meta_row(ctx, &row).await?;
            let names = desc.families.into_iter().map(|f| f.name);
            Ok(Arc::new(KnownTable::new(names, ctx.meta().cell(&row))))
        })
        .await?;
    Ok((families, false))
}

/// Fails with `NotTransactional` while `percolator migrate` adopts the table's data or
/// returns it to plain use (docs/design.md invariant 11): a read then would miss values
/// not yet adopted. The migration writes its marker before it adds the families and
/// waits out `META_REFRESH`, so a client that sees the families sees the marker.
/// The table's granularity, and the meta row it came from.
async fn check_not_migrating(
    ctx: &Context,
    table: &str,
) -> Result<(LockGranularity, Arc<RowResult>)> {
    not_migrating(table, table_meta(ctx, table).await?)
}

/// [`check_not_migrating`] on `table`'s meta row `meta`.
fn not_migrating(table: &str, meta: Arc<RowResult>) -> Result<(LockGranularity, Arc<RowResult>)> {
    match meta.value(META_FAMILY, MIG_STATE) {
        Some(state) if MIG_BUSY_STATES.contains(&state) => Err(Error::NotTransactional {
            table: table.to_string(),
            reason: format!(
                "migration in progress ({}; see `percolator migrate status`)",
                String::from_utf8_lossy(state)
            ),
        }),
        _ => Ok((LockGranularity::of_meta_row(table, &meta)?, meta)),
    }
}

/// `table`'s row of the meta table, cached for at most `META_REFRESH`.
pub(crate) async fn table_meta(ctx: &Context, table: &str) -> Result<Arc<RowResult>> {
    ctx.meta()
        .row(ctx.store(), &ctx.schema().meta_table, &meta_row(table))
        .await
}

/// `table`'s lock granularity, from its meta row (cached like every meta row: the choice
/// never changes once the table is transactional, see `granularity`).
pub(crate) async fn lock_granularity(ctx: &Context, table: &str) -> Result<LockGranularity> {
    LockGranularity::of_meta_row(table, &*table_meta(ctx, table).await?)
}

/// A row of the meta table read now (whoever changed it sees the change at once).
pub(crate) async fn refresh_meta_row(ctx: &Context, row: &[u8]) -> Result<Arc<RowResult>> {
    ctx.meta()
        .refresh(ctx.store(), &ctx.schema().meta_table, row)
        .await
}

/// What names a table and a family: a key read, or a family a commit writes.
pub(crate) trait FamilyProbe: Sync {
    fn table_family(&self) -> (&str, &[u8]);
}

impl FamilyProbe for CellKey {
    fn table_family(&self) -> (&str, &[u8]) {
        (&self.table, &self.family)
    }
}

impl FamilyProbe for (&str, &[u8]) {
    fn table_family(&self) -> (&str, &[u8]) {
        *self
    }
}

/// The lock granularity of each table [`check_families`] checked, with the meta
/// row it was read from (in place for the one table most commits write).
pub(crate) struct Granularities<'k>(SmallVec<[(&'k str, LockGranularity, Arc<RowResult>); 1]>);

impl Granularities<'_> {
    /// `table`'s, when it was checked (cell otherwise: only checked tables are written).
    pub fn of(&self, table: &str) -> LockGranularity {
        self.entry(table)
            .map_or(LockGranularity::Cell, |(_, g, _)| *g)
    }

    /// `table`'s meta row as the check read it, when it was checked.
    pub fn meta_row(&self, table: &str) -> Option<&Arc<RowResult>> {
        self.entry(table).map(|(_, _, m)| m)
    }

    fn entry(&self, table: &str) -> Option<&(&str, LockGranularity, Arc<RowResult>)> {
        self.0.iter().find(|(t, _, _)| *t == table)
    }
}
