//! `migrate verify` (is a migrated table whole?) and `migrate status` (where is each table?).

use serde::Serialize;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::format::WriteKind;
use crate::hbase::{Get, HBaseClient, Scan};
use crate::key::Binary;
use crate::migrate::plan::user_family_changes;
use crate::migrate::state::{self, adopt, Adopt, FamilySettings, Marker, TRANSITION_TIMEOUT};
use crate::progress::{Progress, ProgressMode};
use crate::txn::{until_settled_blocking, Schema};

/// Problems listed in full; beyond this many only their number grows.
const LISTED: usize = 50;

/// The outcome of `verify`: empty `problems` means the table is whole.
///
/// ```
/// let v = percolator::migrate::Verification::default();
/// assert!(v.ok());
/// ```
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verification {
    pub table: String,
    pub cells_checked: u64,
    /// The first problems found, one line each.
    pub problems: Vec<String>,
    /// How many problems in all (more than listed when there are many).
    pub problem_count: u64,
}

impl Verification {
    /// ```
    /// assert!(percolator::migrate::Verification::default().ok());
    /// ```
    pub fn ok(&self) -> bool {
        self.problem_count == 0
    }

    fn problem(&mut self, p: String) {
        self.problem_count += 1;
        if self.problems.len() < LISTED {
            self.problems.push(p);
        }
    }
}

/// Checks a migrated table: marker `adopted` with no work in progress left, the families and
/// their settings, and every cell: the value a plain read returns is the one transactions
/// read (a plain write or delete after adoption is not, and is listed). A region in transition
/// is waited out for up to 60 s, the check run again.
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
/// use percolator::migrate::{apply, verify, ApplyOptions, ProgressMode};
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// hbase.admin().create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))?;
/// hbase.put("legacy", &Put::new("r1").add("f", "q", b"v".to_vec()))?;
/// let schema = Default::default();
/// assert!(!verify(&hbase, &schema, "legacy", ProgressMode::Off)?.ok(), "not migrated yet");
/// let opts = ApplyOptions { progress: ProgressMode::Off, settle: std::time::Duration::ZERO, ..Default::default() };
/// apply(&hbase, &schema, "legacy", &opts)?;
/// assert!(verify(&hbase, &schema, "legacy", ProgressMode::Off)?.ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    progress: ProgressMode,
) -> Result<Verification> {
    until_settled_blocking(TRANSITION_TIMEOUT, || {
        verify_once(hbase, schema, table, progress.clone())
    })
}

/// One try of [`verify`]: it reads only, so a region in transition runs it again whole.
fn verify_once(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    progress: ProgressMode,
) -> Result<Verification> {
    let desc = hbase.admin().table_descriptor(table)?;
    let marker = Marker::read(hbase, schema, table)?;
    let mut v = Verification {
        table: table.to_string(),
        ..Verification::default()
    };
    if marker.state() != Some(state::ADOPTED) {
        v.problem(format!(
            "the marker says {}, not adopted",
            marker.state_name()
        ));
    }
    for q in state::IN_PROGRESS {
        if marker.get(q).is_some() {
            v.problem(format!(
                "migration state {} is left over",
                String::from_utf8_lossy(q)
            ));
        }
    }
    if let Err(e) = schema.check(&desc) {
        v.problem(e.to_string());
        return Ok(v);
    }
    for c in user_family_changes(schema, &desc) {
        v.problem(format!(
            "family {}: {} is {}, transactions need {}",
            c.family, c.setting, c.from, c.to
        ));
    }
    let original = marker.original_by_name();
    let ttl_cut = marker.number(state::TTL_CUT).unwrap_or(0) as i64;
    let scan = state::with_columns(Scan::new().max_versions(1).caching(1000), schema, &desc);
    let mut bar = Progress::new(&progress, format!("verify {table}"), None);
    for row in hbase.scan(table, &scan)? {
        let row = row?;
        let now = SystemClock.now_ms();
        for c in state::columns(schema, table, &row)? {
            v.cells_checked += 1;
            let expiry = original.get(&c.family).and_then(FamilySettings::expiry_ms);
            let at = format!(
                "row {} column {}:{}",
                Binary(&row.row),
                Binary(&c.family),
                Binary(&c.qualifier)
            );
            match adopt(&c, expiry, ttl_cut, now) {
                Adopt::Nothing => {}
                Adopt::Put { start: ts, .. } => v.problem(format!("{at}: plain write at {ts} is not seen by transactions (written after adoption?)")),
                Adopt::Delete { .. } => v.problem(format!("{at}: plain delete is not seen by transactions (done after adoption?)")),
                Adopt::Implausible { at: ts } => v.problem(format!("{at}: version {ts} is not wall-clock ms and was not adopted")),
            }
            if let Some((version, rec)) = &c.record
                && *version < state::LEGACY_TS_LIMIT
                && rec.kind == WriteKind::Put
                && rec.short_value.is_none()
                && !data_present(hbase, table, &row.row, &c, rec.start_ts)?
            {
                v.problem(format!(
                    "{at}: adopted version {} is gone (deleted or expired)",
                    rec.start_ts
                ));
            }
        }
        bar.inc(1);
    }
    bar.finish();
    Ok(v)
}

fn data_present(
    hbase: &HBaseClient,
    table: &str,
    row: &[u8],
    c: &state::Column,
    ts: u64,
) -> Result<bool> {
    // The scan brought the newest version, which is the adopted one unless written since.
    if c.plain.as_ref().is_some_and(|(at, _)| *at as u64 == ts) {
        return Ok(true);
    }
    let get = Get::new(row.to_vec())
        .column(c.family.clone(), c.qualifier.clone())
        .timestamp(ts as i64);
    Ok(!hbase.get(table, &get)?.is_empty())
}

/// Where one table stands.
///
/// ```
/// let s = percolator::migrate::TableStatus::default();
/// assert!(!s.exists);
/// ```
#[derive(Clone, Debug, Default, Serialize)]
pub struct TableStatus {
    pub table: String,
    pub exists: bool,
    /// The project's families are all present.
    pub has_families: bool,
    /// `plain`, `applying`, `adopted` or `disabling`.
    pub state: String,
    /// The pass under way and the last row it finished, while `applying`.
    pub pass: Option<serde_json::Value>,
    /// Wall ms of adoption.
    pub adopted_at_ms: Option<u64>,
}

/// The state of `table`: whether it exists, has the families, and its marker (a region in
/// transition waited out for up to 60 s).
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let s = percolator::migrate::status(&hbase, &Default::default(), "nope")?;
/// assert!(!s.exists);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn status(hbase: &HBaseClient, schema: &Schema, table: &str) -> Result<TableStatus> {
    until_settled_blocking(TRANSITION_TIMEOUT, || status_once(hbase, schema, table))
}

/// One try of [`status`]: it reads only, so a region in transition runs it again whole.
fn status_once(hbase: &HBaseClient, schema: &Schema, table: &str) -> Result<TableStatus> {
    let mut s = TableStatus {
        table: table.to_string(),
        ..TableStatus::default()
    };
    let desc = match hbase.admin().table_descriptor(table) {
        Ok(d) => d,
        Err(Error::TableNotFound { .. }) => {
            s.state = "missing".into();
            return Ok(s);
        }
        Err(e) => return Err(e),
    };
    s.exists = true;
    s.has_families = schema
        .families()
        .iter()
        .all(|f| desc.families.iter().any(|d| d.name == f.name));
    let marker = Marker::read(hbase, schema, table)?;
    s.state = match marker.state() {
        None if s.has_families => "transactional".into(),
        _ => marker.state_name(),
    };
    s.pass = marker
        .get(state::PASS)
        .and_then(|v| serde_json::from_slice(v).ok());
    s.adopted_at_ms = marker.number(state::ADOPTED_AT);
    Ok(s)
}
