//! `migrate plan`: what `apply` would do to a table, and what stops it. Changes nothing.

use serde::Serialize;

use crate::clock::{Clock, SystemClock};
use crate::error::{MigrationIssue, Result};
use crate::hbase::{HBaseClient, Scan, TableDescriptor};
use crate::key::Binary;
use crate::migrate::state::{
    self, issue, plausible_ms, Marker, LEGACY_TS_LIMIT, TRANSITION_TIMEOUT,
};
use crate::progress::{Progress, ProgressMode};
use crate::txn::{until_settled_blocking, Schema};

/// One family setting `apply` changes, and why transactions need it.
///
/// ```
/// let c = percolator::migrate::SettingChange { family: "f".into(), setting: "TTL".into(), from: "60".into(), to: "FOREVER".into(), why: "..".into() };
/// assert_eq!(c.setting, "TTL");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SettingChange {
    pub family: String,
    pub setting: String,
    pub from: String,
    pub to: String,
    pub why: String,
}

/// What `apply` would do to one table.
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
/// hbase.admin().create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))?;
/// hbase.put("legacy", &Put::new("r1").add("f", "q", b"v".to_vec()))?;
/// let plan = percolator::migrate::plan(&hbase, &Default::default(), "legacy", None, Default::default())?;
/// assert_eq!((plan.rows, plan.cells), (1, 1));
/// assert_eq!(plan.families_to_add, ["_pl", "_pw", "_pn", "_pa"]);
/// assert!(plan.blockers.is_empty() && !plan.nothing_to_do);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub table: String,
    /// `plain`, or the marker's state (`applying`, `adopted`, `disabling`).
    pub state: String,
    pub families_to_add: Vec<String>,
    pub family_changes: Vec<SettingChange>,
    /// User families named like one of the project's families.
    pub clashes: Vec<String>,
    /// Rows and cells (columns with a value a plain read returns) to adopt.
    pub rows: u64,
    pub cells: u64,
    pub blockers: Vec<String>,
    /// Already migrated, or created transactional: `apply` has nothing to do.
    pub nothing_to_do: bool,
}

impl Plan {
    /// The error `apply` gives for this plan, if it must refuse.
    pub fn refusal(&self) -> Result<()> {
        let t = &self.table;
        if self.nothing_to_do {
            return Err(issue(
                t,
                MigrationIssue::NothingToDo,
                format!("already transactional ({}): nothing to do", self.state),
            ));
        }
        if !self.clashes.is_empty() {
            return Err(issue(
                t,
                MigrationIssue::FamilyClash,
                format!(
                    "family {} clashes with the project's families; rename it or choose another Schema",
                    self.clashes.join(", ")
                ),
            ));
        }
        if !self.blockers.is_empty() {
            return Err(issue(t, MigrationIssue::Blocked, self.blockers.join("; ")));
        }
        Ok(())
    }
}

/// Each setting of `desc`'s user families that transactions need otherwise, and why: what
/// `apply` changes, and what `verify` (and `percolator doctor`) report. Reads nothing.
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
/// let schema = percolator::txn::Schema::default();
/// let plain = TableDescriptor::new("t").family(FamilyDescriptor::new("f").ttl_secs(60));
/// let changes = percolator::migrate::user_family_changes(&schema, &plain);
/// let settings: Vec<_> = changes.iter().map(|c| c.setting.as_str()).collect();
/// assert_eq!(settings, ["VERSIONS", "TTL"]);
/// assert!(percolator::migrate::user_family_changes(&schema, &schema.table("t", &["f"])).is_empty());
/// ```
pub fn user_family_changes(schema: &Schema, desc: &TableDescriptor) -> Vec<SettingChange> {
    state::user_families(schema, desc)
        .flat_map(|f| {
            let family = String::from_utf8_lossy(&f.name).into_owned();
            state::required(f)
                .1
                .into_iter()
                .map(move |(setting, from, to, why)| SettingChange {
                    family: family.clone(),
                    setting,
                    from,
                    to,
                    why: why.into(),
                })
        })
        .collect()
}

/// Inspects `table`: its families and settings, its marker, and (one scan) its rows and cells.
/// `oracle_ts` is a fresh oracle timestamp when an oracle was named, to check it. A region in
/// transition is waited out for up to 60 s, the inspection run again.
pub fn plan(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    oracle_ts: Option<u64>,
    progress: ProgressMode,
) -> Result<Plan> {
    until_settled_blocking(TRANSITION_TIMEOUT, || {
        plan_once(hbase, schema, table, oracle_ts, progress.clone())
    })
}

/// One try of [`plan`]: it reads only, so a region in transition runs it again whole.
pub(crate) fn plan_once(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    oracle_ts: Option<u64>,
    progress: ProgressMode,
) -> Result<Plan> {
    let desc = hbase.admin().table_descriptor(table)?;
    let marker = Marker::read(hbase, schema, table)?;
    let mut plan = Plan {
        table: table.to_string(),
        state: marker.state_name(),
        ..Plan::default()
    };
    let ours = schema.families();
    let present: Vec<_> = ours
        .iter()
        .filter(|f| desc.families.iter().any(|d| d.name == f.name))
        .collect();
    match marker.state() {
        Some(s) if s == state::ADOPTED => {
            plan.nothing_to_do = true;
            return Ok(plan);
        }
        // Refused here, not when `apply` reaches the table: a run over several tables checks
        // every plan before it changes any.
        Some(s) if s == state::DISABLING => plan.blockers.push(
            "the table is being returned to plain use: run `percolator migrate disable` to finish first"
                .into(),
        ),
        Some(_) => {}
        None if present.len() == ours.len() && schema.check(&desc).is_ok() => {
            plan.state = "transactional (created so)".into();
            plan.nothing_to_do = true;
            return Ok(plan);
        }
        None => {
            plan.clashes = present
                .iter()
                .map(|f| String::from_utf8_lossy(&f.name).into_owned())
                .collect();
        }
    }
    plan.families_to_add = ours
        .iter()
        .filter(|f| !desc.families.iter().any(|d| d.name == f.name))
        .map(|f| String::from_utf8_lossy(&f.name).into_owned())
        .collect();
    let users: Vec<_> = state::user_families(schema, &desc).cloned().collect();
    plan.family_changes = user_family_changes(schema, &desc);
    // Checked here, with the other blockers, so that a run over several tables refuses a
    // disabled one before it changes any; its rows could not be counted anyway.
    if !hbase.admin().is_table_enabled(table)? {
        plan.blockers.push(state::disabled_reason(table));
        return Ok(plan);
    }
    if let Some(ts) = oracle_ts
        && (ts as i64) < LEGACY_TS_LIMIT
    {
        plan.blockers.push(format!(
                "the oracle's timestamps ({ts}) are not above wall-clock milliseconds: adopted versions would hide transactional ones"
            ));
    }
    let now = SystemClock.now_ms();
    let mut scan = Scan::new().max_versions(1).caching(1000);
    for f in &users {
        scan = scan.family(f.name.clone());
    }
    let mut implausible = (0u64, None);
    let mut bar = Progress::new(&progress, format!("plan {table}"), None);
    for row in hbase.scan(table, &scan)? {
        let row = row?;
        plan.rows += 1;
        plan.cells += row.cells.len() as u64;
        for c in &row.cells {
            if !plausible_ms(c.timestamp, now) {
                implausible.0 += 1;
                implausible
                    .1
                    .get_or_insert_with(|| (row.row.clone(), c.timestamp));
            }
        }
        bar.inc(1);
    }
    bar.finish();
    if let (n, Some((row, ts))) = implausible {
        plan.blockers.push(format!(
            "{n} cells have versions that are not wall-clock milliseconds (e.g. row {} at {ts}): \
             an application sets its own timestamps, which cannot be ordered with transactions",
            Binary(&row)
        ));
    }
    Ok(plan)
}
