//! `migrate apply`: the resumable adoption. Each step is idempotent and the position is kept
//! in the table's meta row, so a run killed anywhere is finished by the next one:
//! 1. marker `applying` (with the original family settings); transaction clients now refuse
//!    the table, and `apply` waits until none can hold a meta row cached from before;
//! 2. the project's families added, user families given the settings transactions need;
//! 3. a full pass writing one write record per plain cell, checkpointed every N rows;
//! 4. catch-up passes for what plain writers changed meanwhile, until one finds nothing;
//! 5. marker `adopted`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, MigrationIssue, Result};
use crate::format::meta::LOCK_GRANULARITY;
use crate::format::meta::MIG_STATE;
use crate::format::{column_qualifier, encode_write, WriteKind, WriteRecord};
use crate::hbase::{HBaseClient, Put, Scan};
use crate::migrate::plan::{plan_once, Plan};
use crate::migrate::state::{
    self, adopt, write_marker, Adopt, CrashHook, FamilySettings, Marker, Step,
};
use crate::progress::{Progress, ProgressMode};
use crate::txn::granularity::LockGranularity;
use crate::txn::meta::META_REFRESH;
use crate::txn::store::row_after;
use crate::txn::{until_settled_blocking, Schema, TxnOptions};

/// How `apply` runs.
///
/// ```
/// let o = percolator::migrate::ApplyOptions::default();
/// assert_eq!(o.checkpoint_rows, 1000);
/// ```
#[derive(Clone)]
pub struct ApplyOptions {
    pub progress: ProgressMode,
    /// Rows between checkpoints.
    pub checkpoint_rows: usize,
    /// Catch-up passes after the first, at most; a plain writer still busy after them is
    /// reported by `verify`.
    pub max_catch_up_passes: u32,
    /// How long after writing the marker `apply` waits before adding the families: no client
    /// may still trust a meta row it cached before (the clients' `META_REFRESH`). Shorter is
    /// safe only when no transaction client has looked at the table.
    pub settle: Duration,
    /// Values up to this size are inlined in the write record, as the committer does.
    pub short_value_limit: usize,
    /// A fresh oracle timestamp, when an oracle was named: checked to be above wall-clock ms.
    pub oracle_ts: Option<u64>,
    /// What one lock of the table covers (docs/design.md invariant 14). Recorded with the
    /// marker, before the families are added, and fixed from then on.
    pub lock_granularity: LockGranularity,
    /// How long the run waits out a region in transition (moving, splitting, on a crashed
    /// server) that the gateway's HBase client gave up on, counted again from each
    /// checkpoint reached. Each try resumes the run from its last checkpoint, as a new run
    /// would; past this the run fails with the gateway's error, and a later run resumes.
    pub transition_timeout: Duration,
    /// Stops the run at a step (tests of resumption; feature `testing`).
    #[cfg(feature = "testing")]
    pub crash_at: Option<CrashHook>,
}

impl ApplyOptions {
    /// The test hook, when the `testing` feature lets one be set.
    fn crash_hook(&self) -> Option<&CrashHook> {
        #[cfg(feature = "testing")]
        return self.crash_at.as_ref();
        #[cfg(not(feature = "testing"))]
        None
    }
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            progress: ProgressMode::Lines,
            checkpoint_rows: 1000,
            max_catch_up_passes: 4,
            settle: META_REFRESH,
            short_value_limit: TxnOptions::default().short_value_limit(),
            oracle_ts: None,
            lock_granularity: LockGranularity::Cell,
            transition_timeout: state::TRANSITION_TIMEOUT,
            #[cfg(feature = "testing")]
            crash_at: None,
        }
    }
}

/// What a run of `apply` did.
///
/// ```
/// let r = percolator::migrate::ApplyReport::default();
/// assert_eq!(r.records_written, 0);
/// ```
#[derive(Clone, Debug, Default, Serialize)]
pub struct ApplyReport {
    pub table: String,
    /// The run continued an interrupted one.
    pub resumed: bool,
    /// Passes run by this invocation (the first full pass counts).
    pub passes: u32,
    pub rows_scanned: u64,
    /// Write records written (adopted values and deletes caught up).
    pub records_written: u64,
    /// Checkpoints saved (every `checkpoint_rows` rows, and at the end of each pass).
    pub checkpoints: u64,
    /// Cells left unadopted: versions that are not wall-clock ms (written during the run).
    pub implausible: u64,
    pub seconds: f64,
}

/// The current pass, kept in one meta cell so that its fields change together.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct PassState {
    pass: u32,
    /// Records written by this pass before `after`.
    changed: u64,
    /// The last row finished; `None` at the start of the pass.
    after: Option<Vec<u8>>,
}

/// Makes `table` transactional and adopts its data (see the module doc); resumes a run that was
/// interrupted. Refuses with [`crate::Error::Migration`] (changing nothing) a table that is
/// already migrated, has a family clash, or has blockers.
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
/// use percolator::migrate::{apply, ApplyOptions, ProgressMode};
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// hbase.admin().create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))?;
/// hbase.put("legacy", &Put::new("r1").add("f", "q", b"v".to_vec()))?;
/// let opts = ApplyOptions { progress: ProgressMode::Off, settle: std::time::Duration::ZERO, ..Default::default() };
/// let report = apply(&hbase, &Default::default(), "legacy", &opts)?;
/// assert_eq!(report.records_written, 1);
/// assert!(apply(&hbase, &Default::default(), "legacy", &opts).is_err(), "nothing to do");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    opts: &ApplyOptions,
) -> Result<ApplyReport> {
    apply_planned(hbase, schema, table, opts, None)
}

/// [`apply`], with the table's plan when the caller has just made it (a run over several
/// tables plans them all before it changes any).
pub fn apply_planned(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    opts: &ApplyOptions,
    planned: Option<Plan>,
) -> Result<ApplyReport> {
    let started = Instant::now();
    let mut report = ApplyReport {
        table: table.to_string(),
        ..ApplyReport::default()
    };
    let mut planned = planned;
    state::through_transitions(
        opts.transition_timeout,
        &opts.progress,
        table,
        "from its last checkpoint",
        |after_transition| {
            let checkpoints = report.checkpoints;
            let result = apply_once(
                hbase,
                schema,
                table,
                opts,
                planned.take(),
                after_transition,
                &mut report,
            );
            (result, report.checkpoints > checkpoints)
        },
    )?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// One try of [`apply_planned`], adding to `report`. After a region in transition stopped an
/// earlier try, the table may be adopted already (the try stopped after the marker said so).
fn apply_once(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    opts: &ApplyOptions,
    planned: Option<Plan>,
    after_transition: bool,
    report: &mut ApplyReport,
) -> Result<()> {
    crate::txn::setup::create_meta_table_once(hbase, schema)?;
    let marker = Marker::read(hbase, schema, table)?;
    if after_transition && marker.state() == Some(state::ADOPTED) {
        return state::clear_marker(hbase, schema, table, &state::IN_PROGRESS);
    }
    let mut total_rows = None;
    if marker.state().is_some() {
        // Begun or done with a granularity already: a run may not change it.
        crate::txn::setup::check_granularity(hbase, schema, table, opts.lock_granularity)?;
    }
    let marker = if marker.state() == Some(state::APPLYING) {
        // A resumed run has no plan to refuse it; it would change the families of a table
        // HBase has disabled and then fail at its scan.
        state::refuse_if_disabled(hbase, table)?;
        report.resumed = true;
        marker
    } else {
        // Every other state, `disabling` included, is the plan's to refuse. A plan made
        // before the marker moved (another operator's apply or disable finished or began
        // since) is made again: its refusal was decided on the state it saw.
        let (plan, earlier) = match planned {
            Some(plan) if plan.state == marker.state_name() => (plan, true),
            _ => (
                plan_once(hbase, schema, table, opts.oracle_ts, opts.progress.clone())?,
                false,
            ),
        };
        plan.refusal()?;
        if earlier {
            // HBase may have disabled the table since it was planned.
            state::refuse_if_disabled(hbase, table)?;
        }
        total_rows = Some(plan.rows);
        // Read again, not taken from the plan: the settings recorded must be those the table
        // has right before they change, and a run over several tables planned them earlier.
        let desc = hbase.admin().table_descriptor(table)?;
        let original: Vec<FamilySettings> = state::user_families(schema, &desc)
            .map(FamilySettings::of)
            .collect();
        let original = serde_json::to_vec(&original).unwrap_or_default();
        let now = SystemClock.now_ms().to_string().into_bytes();
        write_marker(
            hbase,
            schema,
            table,
            &[
                (MIG_STATE, state::APPLYING.to_vec()),
                (state::ORIGINAL, original),
                (state::SINCE, now),
                (
                    LOCK_GRANULARITY,
                    opts.lock_granularity.to_string().into_bytes(),
                ),
            ],
        )?;
        state::crash(opts.crash_hook(), table, Step::Marked)?;
        Marker::read(hbase, schema, table)?
    };
    state::settle(&marker, opts.settle);
    prepare_families(hbase, schema, table, &marker, &opts.progress)?;
    state::crash(opts.crash_hook(), table, Step::FamiliesReady)?;
    let marker = Marker::read(hbase, schema, table)?;
    let mut pass: PassState = marker
        .get(state::PASS)
        .and_then(|v| serde_json::from_slice(v).ok())
        .unwrap_or_default();
    loop {
        let rows = if pass.pass == 0 { total_rows } else { None };
        run_pass(hbase, schema, table, &marker, opts, &mut pass, rows, report)?;
        report.passes += 1;
        state::crash(opts.crash_hook(), table, Step::PassDone)?;
        if pass.changed == 0 || pass.pass >= opts.max_catch_up_passes {
            break;
        }
        pass = PassState {
            pass: pass.pass + 1,
            ..PassState::default()
        };
        save(hbase, schema, table, &pass)?;
    }
    let now = SystemClock.now_ms().to_string().into_bytes();
    write_marker(
        hbase,
        schema,
        table,
        &[
            (MIG_STATE, state::ADOPTED.to_vec()),
            (state::ADOPTED_AT, now),
        ],
    )?;
    state::clear_marker(hbase, schema, table, &state::IN_PROGRESS)?;
    state::crash(opts.crash_hook(), table, Step::Adopted)
}

/// Checks every table of a run over several before any is changed: each is planned (a table
/// being resumed, whose marker says `applying`, is only checked to be enabled in HBase) and
/// the first that `apply` would refuse (a clash, a blocker, `disabling`, disabled in HBase)
/// fails the whole run with its [`Error::Migration`](crate::Error::Migration), naming it.
/// Tables with nothing to do pass. Returns the plans, by table, for [`apply_planned`].
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
/// use percolator::migrate::{check_before_apply, ProgressMode};
/// use percolator::{Error, MigrationIssue};
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// for t in ["first", "last"] {
///     hbase.admin().create_table(&TableDescriptor::new(t).family(FamilyDescriptor::new("f")))?;
/// }
/// hbase.admin().disable_table("last")?;
/// let tables = ["first".to_string(), "last".to_string()];
/// let err = check_before_apply(&hbase, &Default::default(), &tables, None, ProgressMode::Off).unwrap_err();
/// assert!(matches!(err, Error::Migration { ref table, kind: MigrationIssue::Blocked, .. } if table == "last"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_before_apply(
    hbase: &HBaseClient,
    schema: &Schema,
    tables: &[String],
    oracle_ts: Option<u64>,
    progress: ProgressMode,
) -> Result<HashMap<String, Plan>> {
    let mut plans = HashMap::new();
    for table in tables {
        let checked = until_settled_blocking(state::TRANSITION_TIMEOUT, || {
            let marker = Marker::read(hbase, schema, table)?;
            if marker.state() == Some(state::APPLYING) {
                // Missing tables fail here too, as `TableNotFound` naming the table.
                state::refuse_if_disabled(hbase, table)?;
                return Ok(None);
            }
            plan_once(hbase, schema, table, oracle_ts, progress.clone()).map(Some)
        })?;
        let Some(plan) = checked else { continue };
        match plan.refusal() {
            Err(Error::Migration {
                kind: MigrationIssue::NothingToDo,
                ..
            }) => {}
            refusal => refusal?,
        }
        plans.insert(table.clone(), plan);
    }
    Ok(plans)
}

/// Step 2: the project's families, and the user families' settings (docs/migration.md says
/// why each). The TTL cut is recorded before any TTL is lifted.
fn prepare_families(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    marker: &Marker,
    progress: &ProgressMode,
) -> Result<()> {
    let admin = hbase.admin();
    let desc = admin.table_descriptor(table)?;
    if marker.get(state::TTL_CUT).is_none() {
        let now = SystemClock.now_ms().to_string().into_bytes();
        write_marker(hbase, schema, table, &[(state::TTL_CUT, now)])?;
    }
    // One table modification: HBase reopens every region of the table once for all of them.
    let mut families = crate::txn::setup::percolator_family_changes(schema, &desc);
    for f in state::user_families(schema, &desc) {
        let (needed, changes) = state::required(f);
        if !changes.is_empty() {
            families.push(needed);
        }
    }
    if !families.is_empty() {
        let started = std::time::Instant::now();
        progress.note(&format!(
            "schema {table}: changing {} families in one table modification (HBase reopens \
             each region of the table once)",
            families.len()
        ));
        admin.change_families(table, &families)?;
        progress.note(&format!(
            "schema {table}: changed in {:.1}s",
            started.elapsed().as_secs_f64()
        ));
    }
    schema.check(&admin.table_descriptor(table)?)
}

fn save(hbase: &HBaseClient, schema: &Schema, table: &str, pass: &PassState) -> Result<()> {
    let value = serde_json::to_vec(pass).unwrap_or_default();
    write_marker(hbase, schema, table, &[(state::PASS, value)])
}

/// One pass over the table from `pass.after`: the write records adoption needs, flushed and
/// checkpointed every `checkpoint_rows` rows.
#[allow(clippy::too_many_arguments)]
fn run_pass(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    marker: &Marker,
    opts: &ApplyOptions,
    pass: &mut PassState,
    total_rows: Option<u64>,
    report: &mut ApplyReport,
) -> Result<()> {
    let desc = hbase.admin().table_descriptor(table)?;
    let original = marker.original_by_name();
    let ttl_cut = marker.number(state::TTL_CUT).unwrap_or(0) as i64;
    let start = pass.after.as_ref().map_or(Vec::new(), |r| row_after(r));
    let scan = Scan::range(start, Vec::new())
        .max_versions(1)
        .caching(opts.checkpoint_rows.clamp(1, 10_000) as i32);
    let scan = state::with_columns(scan, schema, &desc);
    let label = if pass.pass == 0 {
        format!("adopt {table}")
    } else {
        format!("catch-up {} {table}", pass.pass)
    };
    let mut progress = Progress::new(&opts.progress, label, total_rows);
    let mut puts = Vec::new();
    let mut rows = 0usize;
    for row in hbase.scan(table, &scan)? {
        let row = row?;
        let now = SystemClock.now_ms();
        let mut put = Put::new(row.row.clone());
        for c in state::columns(schema, table, &row)? {
            let family = String::from_utf8_lossy(&c.family).into_owned();
            let expiry = original
                .get(family.as_bytes())
                .and_then(FamilySettings::expiry_ms);
            let (at, rec) = match adopt(&c, expiry, ttl_cut, now) {
                Adopt::Nothing => continue,
                Adopt::Implausible { .. } => {
                    report.implausible += 1;
                    continue;
                }
                Adopt::Put { at, start } => {
                    let value = c
                        .plain
                        .as_ref()
                        .map(|(_, v)| v)
                        .filter(|v| v.len() <= opts.short_value_limit);
                    (
                        at,
                        WriteRecord {
                            kind: WriteKind::Put,
                            start_ts: start as u64,
                            short_value: value.cloned(),
                        },
                    )
                }
                Adopt::Delete { at } => (
                    at,
                    WriteRecord {
                        kind: WriteKind::Delete,
                        start_ts: at as u64,
                        short_value: None,
                    },
                ),
            };
            put = put.add_at(
                schema.write_family.clone(),
                column_qualifier(&c.family, &c.qualifier),
                at,
                encode_write(&rec),
            );
        }
        if !put.cells.is_empty() {
            pass.changed += put.cells.len() as u64;
            report.records_written += put.cells.len() as u64;
            puts.push(put);
        }
        rows += 1;
        report.rows_scanned += 1;
        if rows >= opts.checkpoint_rows {
            flush(hbase, table, &puts)?;
            puts.clear();
            pass.after = Some(row.row.clone());
            save(hbase, schema, table, pass)?;
            report.checkpoints += 1;
            progress.inc(rows as u64);
            rows = 0;
            state::crash(opts.crash_hook(), table, Step::Checkpoint)?;
        }
    }
    flush(hbase, table, &puts)?;
    progress.inc(rows as u64);
    progress.finish();
    pass.after = None;
    save(hbase, schema, table, pass)?;
    report.checkpoints += 1;
    Ok(())
}

/// Failpoint `migrate::flush_region_away` (see `state::through_region_failpoint`).
fn flush(hbase: &HBaseClient, table: &str, puts: &[Put]) -> Result<()> {
    if puts.is_empty() {
        return Ok(());
    }
    state::through_region_failpoint("migrate::flush_region_away", table, || {
        hbase.put_many(table, puts)
    })
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
