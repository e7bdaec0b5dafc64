//! `migrate disable`: returns a table to plain use. Each column's committed transactional value
//! becomes a plain version at wall-clock ms, and every transactional version is removed with
//! an exact single-version delete (a delete-all marker at an oracle timestamp would mask every
//! later plain put until a major compaction). Per row this is one atomic `mutateRow` that also
//! removes the column's transactional write records, so a rerun skips finished rows.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, MigrationIssue, Result};
use crate::format::meta::LOCK_GRANULARITY;
use crate::format::meta::MIG_STATE;
use crate::format::{decode_write, split_column_qualifier, WriteKind};
use crate::hbase::{
    Delete, DeleteType, HBaseClient, Put, RowMutations, RowResult, Scan, TimeRange,
};
use crate::key::Binary;
use crate::locks::{list_locks, resolve_locks};
use crate::migrate::state::{self, issue, write_marker, CrashHook, Marker, Step, LEGACY_TS_LIMIT};
use crate::progress::{Progress, ProgressMode};
use crate::txn::meta::META_REFRESH;
use crate::txn::{Client, Schema, ALL_VERSIONS};

/// What `disable` did, and what stays behind.
///
/// ```
/// assert!(percolator::migrate::DisableReport::default().remains.is_empty());
/// ```
#[derive(Clone, Debug, Default, Serialize)]
pub struct DisableReport {
    pub table: String,
    pub rows_scanned: u64,
    /// Transactional values written back as plain versions.
    pub values_rewritten: u64,
    /// Columns whose transactional delete became a plain delete marker.
    pub deletes_written: u64,
    /// Transactional versions removed (data and write records), one exact delete each.
    pub versions_deleted: u64,
    pub families_dropped: Vec<String>,
    pub settings_restored: Vec<String>,
    /// What remains in HBase, for the operator.
    pub remains: Vec<String>,
}

/// How `disable` runs.
///
/// ```
/// let o = percolator::migrate::DisableOptions::default();
/// assert!(!o.force);
/// ```
#[derive(Clone)]
pub struct DisableOptions {
    /// Resolve abandoned locks (needs a resolver client) instead of refusing them.
    pub force: bool,
    /// How long after writing the `disabling` marker to wait before the rewrite: no client
    /// may still trust a meta row cached before it.
    pub settle: Duration,
    pub progress: ProgressMode,
    /// How long a region in transition (moving, splitting, on a crashed server) may stop the
    /// run before it fails, counted again from each row made plain since: the run is resumed
    /// meanwhile, as a rerun would resume it.
    pub transition_timeout: Duration,
    /// Stops the run at a step (tests of resumption; feature `testing`).
    #[cfg(feature = "testing")]
    pub crash_at: Option<CrashHook>,
}

impl DisableOptions {
    /// The test hook, when the `testing` feature lets one be set.
    fn crash_hook(&self) -> Option<&CrashHook> {
        #[cfg(feature = "testing")]
        return self.crash_at.as_ref();
        #[cfg(not(feature = "testing"))]
        None
    }
}

impl Default for DisableOptions {
    fn default() -> Self {
        DisableOptions {
            force: false,
            settle: META_REFRESH,
            progress: ProgressMode::Lines,
            transition_timeout: state::TRANSITION_TIMEOUT,
            #[cfg(feature = "testing")]
            crash_at: None,
        }
    }
}

/// Returns `table` to plain use (see the module doc); resumes an interrupted run. Refuses while
/// locks are present unless `opts.force`, in which case `resolver` (a transaction client)
/// resolves them through the normal protocol first; locks of live transactions still refuse.
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
/// use percolator::migrate::{apply, disable, ApplyOptions, DisableOptions, ProgressMode};
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// hbase.admin().create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))?;
/// let schema = Default::default();
/// let opts = ApplyOptions { progress: ProgressMode::Off, settle: std::time::Duration::ZERO, ..Default::default() };
/// apply(&hbase, &schema, "legacy", &opts)?;
/// let opts = DisableOptions { progress: ProgressMode::Off, settle: std::time::Duration::ZERO, ..Default::default() };
/// let report = disable(&hbase, &schema, "legacy", None, &opts)?;
/// assert_eq!(report.families_dropped, ["_pl", "_pw", "_pn", "_pa"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn disable(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    resolver: Option<&Client>,
    opts: &DisableOptions,
) -> Result<DisableReport> {
    let mut report = DisableReport {
        table: table.to_string(),
        ..DisableReport::default()
    };
    // Whether the last try had reached its last step, clearing the marker.
    let mut was_clearing = false;
    state::through_transitions(
        opts.transition_timeout,
        &opts.progress,
        table,
        "where it stopped",
        |_| {
            let rows = report.rows_scanned;
            let mut clearing = false;
            let result = match disable_once(
                hbase,
                schema,
                table,
                resolver,
                opts,
                &mut report,
                &mut clearing,
            ) {
                // The try that met the transition had finished: its last step, clearing the
                // marker, was applied before the gateway gave up on its reply.
                Err(Error::Migration {
                    kind: MigrationIssue::NotMigrated,
                    ..
                }) if was_clearing => Ok(()),
                result => result,
            };
            was_clearing = clearing;
            (result, report.rows_scanned > rows)
        },
    )?;
    Ok(report)
}

/// One try of [`disable`], adding to `report`.
fn disable_once(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    resolver: Option<&Client>,
    opts: &DisableOptions,
    report: &mut DisableReport,
    clearing: &mut bool,
) -> Result<()> {
    let desc = hbase.admin().table_descriptor(table)?;
    let marker = Marker::read(hbase, schema, table)?;
    let has_families = schema
        .families()
        .iter()
        .any(|f| desc.families.iter().any(|d| d.name == f.name));
    if marker.state().is_none() && !has_families {
        return Err(issue(
            table,
            MigrationIssue::NotMigrated,
            "not transactional: nothing to disable",
        ));
    }
    if marker.state() == Some(state::APPLYING) {
        return Err(issue(
            table,
            MigrationIssue::Blocked,
            "apply is in progress: finish it (run apply again) before disabling",
        ));
    }
    if marker.state() != Some(state::DISABLING) && has_families {
        refuse_locks(hbase, schema, table, opts.force, resolver)?;
        let previous = marker.state().map(<[u8]>::to_vec);
        let now = SystemClock.now_ms().to_string().into_bytes();
        write_marker(
            hbase,
            schema,
            table,
            &[(MIG_STATE, state::DISABLING.to_vec()), (state::SINCE, now)],
        )?;
        // Transactions that saw the table usable before the marker finish within the refresh.
        state::settle(&Marker::read(hbase, schema, table)?, opts.settle);
        if let Some(lock) = list_locks(hbase, schema, table)?.first() {
            match previous {
                Some(p) => write_marker(hbase, schema, table, &[(MIG_STATE, p)])?,
                None => state::clear_marker(hbase, schema, table, &[MIG_STATE, state::SINCE])?,
            }
            return Err(issue(
                table,
                MigrationIssue::LocksPresent,
                format!("transactions are still writing (a lock at row {}); stop the writers and run disable again", Binary(&lock.key.row)),
            ));
        }
    } else {
        // A resumed run: the marker may have been written only just before the crash.
        state::settle(&marker, opts.settle);
    }
    state::crash(opts.crash_hook(), table, Step::Disabling)?;
    // The families go only once every row is plain: a try that finds the write family gone
    // (an earlier one dropped some families before a region in transition stopped it) has
    // no row left to rewrite, and its scan could not name the family.
    if desc.families.iter().any(|d| d.name == schema.write_family) {
        rewrite_rows(hbase, schema, table, opts, report)?;
    }
    let admin = hbase.admin();
    for f in schema.families() {
        if desc.families.iter().any(|d| d.name == f.name) {
            admin.delete_family(table, &f.name)?;
            let name = String::from_utf8_lossy(&f.name).into_owned();
            if !report.families_dropped.contains(&name) {
                report.families_dropped.push(name);
            }
        }
    }
    state::crash(opts.crash_hook(), table, Step::FamiliesDropped)?;
    let original = marker.original_by_name();
    let mut restored = Vec::new();
    for f in admin.table_descriptor(table)?.families {
        if let Some(o) = original.get(&f.name) {
            let back = o.restore(&f);
            if back != f {
                restored.push(back);
                if !report.settings_restored.contains(&o.name) {
                    report.settings_restored.push(o.name.clone());
                }
            }
        }
    }
    // One table modification for them all, as `apply` made its changes.
    admin.change_families(table, &restored)?;
    if marker.state().is_none() {
        report.remains.push(
            "the table had no migration marker: user family settings were left as they are".into(),
        );
    }
    *clearing = true;
    state::clear_marker(
        hbase,
        schema,
        table,
        &[
            MIG_STATE,
            state::ORIGINAL,
            state::SINCE,
            state::TTL_CUT,
            state::PASS,
            state::ADOPTED_AT,
            // A plain table again: the next `apply` chooses anew.
            LOCK_GRANULARITY,
        ],
    )?;
    if report.versions_deleted > 0 {
        report.remains.push(format!(
            "{} exact-version delete markers stay until a major compaction",
            report.versions_deleted
        ));
    }
    if report.deletes_written > 0 {
        report.remains.push(format!(
            "{} delete markers at wall-clock time stand for values transactions deleted",
            report.deletes_written
        ));
    }
    report.remains.push(
        "plain versions older than the restored VERSIONS allow go at the next compaction".into(),
    );
    Ok(())
}

fn refuse_locks(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    force: bool,
    resolver: Option<&Client>,
) -> Result<()> {
    let locks = list_locks(hbase, schema, table)?;
    if locks.is_empty() {
        return Ok(());
    }
    let Some(client) = resolver.filter(|_| force) else {
        return Err(issue(
            table,
            MigrationIssue::LocksPresent,
            format!("{} locks are present (see `percolator locks {table}`); resolve them or use --force with --oracle", locks.len()),
        ));
    };
    let outcome = resolve_locks(client, &locks);
    let left = list_locks(hbase, schema, table)?;
    if !left.is_empty() {
        return Err(issue(
            table,
            MigrationIssue::LocksPresent,
            format!(
                "{} locks belong to live transactions ({} resolved); try again when they finish",
                left.len(),
                outcome.iter().filter(|o| o.resolved).count()
            ),
        ));
    }
    Ok(())
}

fn rewrite_rows(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    opts: &DisableOptions,
    report: &mut DisableReport,
) -> Result<()> {
    let desc = hbase.admin().table_descriptor(table)?;
    let scan = Scan::new()
        .max_versions(ALL_VERSIONS)
        .time_range(TimeRange::new(LEGACY_TS_LIMIT, i64::MAX))
        .caching(500);
    let scan = state::with_columns(scan, schema, &desc);
    let mut bar = Progress::new(&opts.progress, format!("disable {table}"), None);
    for row in hbase.scan(table, &scan)? {
        let row = row?;
        // A row a region in transition stopped is counted by the try that makes it plain, if
        // any: one made plain by a write whose reply was lost is not counted at all.
        let counted = report.clone();
        if let Some(m) = row_mutations(schema, table, &row, SystemClock.now_ms() as i64, report)? {
            let made_plain =
                state::through_region_failpoint("migrate::disable_row_region_away", table, || {
                    hbase.mutate_row(table, &m)
                });
            if let Err(e) = made_plain {
                *report = counted;
                return Err(e);
            }
            state::crash(opts.crash_hook(), table, Step::RowMadePlain)?;
        }
        report.rows_scanned += 1;
        bar.inc(1);
    }
    bar.finish();
    Ok(())
}

/// (timestamp, value) of one column, newest first.
type Versions<'a> = Vec<(i64, &'a [u8])>;

/// One row's transactional versions (the scan asked for those only) made plain.
fn row_mutations(
    schema: &Schema,
    table: &str,
    row: &RowResult,
    now: i64,
    report: &mut DisableReport,
) -> Result<Option<RowMutations>> {
    let mut data: BTreeMap<(&[u8], &[u8]), Versions> = BTreeMap::new();
    let mut writes: BTreeMap<&[u8], Versions> = BTreeMap::new();
    for c in &row.cells {
        if c.family == schema.write_family {
            writes
                .entry(&c.qualifier)
                .or_default()
                .push((c.timestamp, &c.value));
        } else {
            data.entry((&c.family, &c.qualifier))
                .or_default()
                .push((c.timestamp, &c.value));
        }
    }
    let corrupt = |column: &[u8], reason: String| {
        Error::corrupted_cell("write record", table, &row.row, column, reason)
    };
    let mut put = Put::new(row.row.clone());
    let mut plain_deletes = Delete::new(row.row.clone()).timestamp(now);
    let mut exact = Delete::new(row.row.clone()).delete_type(DeleteType::Column);
    for (q, recs) in &writes {
        let (family, qualifier) = split_column_qualifier(q).map_err(|e| corrupt(q, e.0))?;
        // The newest change, as `actions::read_column` finds it at the newest snapshot, except
        // that a delete must stay apart from "no change at all": it becomes a plain delete.
        let mut value = None;
        for (_, raw) in recs {
            let rec = decode_write(raw).map_err(|e| corrupt(q, e.0))?;
            match rec.kind {
                WriteKind::Rollback | WriteKind::Lock => continue,
                WriteKind::Delete => value = Some(None),
                WriteKind::Put => {
                    let v = match rec.short_value {
                        Some(v) => v,
                        None => data
                            .get(&(family.as_slice(), qualifier.as_slice()))
                            .and_then(|vs| vs.iter().find(|(t, _)| *t as u64 == rec.start_ts))
                            .map(|(_, v)| v.to_vec())
                            .ok_or_else(|| {
                                corrupt(q, format!("data version {} is missing", rec.start_ts))
                            })?,
                    };
                    value = Some(Some(v));
                }
            }
            break;
        }
        match value {
            Some(Some(v)) => {
                put = put.add_at(family.clone(), qualifier.clone(), now, v);
                report.values_rewritten += 1;
            }
            Some(None) => {
                plain_deletes = plain_deletes.column(family.clone(), qualifier.clone());
                report.deletes_written += 1;
            }
            None => {}
        }
        for (ts, _) in recs {
            exact = exact.column_at(schema.write_family.clone(), q.to_vec(), *ts);
            report.versions_deleted += 1;
        }
    }
    for ((family, qualifier), versions) in &data {
        for (ts, _) in versions {
            exact = exact.column_at(family.to_vec(), qualifier.to_vec(), *ts);
            report.versions_deleted += 1;
        }
    }
    let mut m = RowMutations::new(row.row.clone());
    if !put.cells.is_empty() {
        m = m.put(put);
    }
    if !plain_deletes.columns.is_empty() {
        m = m.delete(plain_deletes);
    }
    if !exact.columns.is_empty() {
        m = m.delete(exact);
    }
    Ok((!m.mutations.is_empty()).then_some(m))
}
