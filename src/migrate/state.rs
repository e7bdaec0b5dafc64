//! The migration marker (qualifiers `mig:*` of the table's meta row), the family settings
//! transactions need, and the classification of a column's stored state during adoption.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, MigrationIssue, Result};
use crate::format::meta::meta_row;
use crate::format::meta::{META_FAMILY, MIG_STATE};
use crate::format::{column_qualifier, decode_write, WriteKind, WriteRecord};
use crate::hbase::{Delete, FamilyDescriptor, HBaseClient, Put, RowResult, Scan, TableDescriptor};
use crate::progress::ProgressMode;
use crate::txn::meta::read_row;
use crate::txn::{resuming_blocking, Schema, ALL_VERSIONS};

/// Versions below this are epoch milliseconds written by plain clients (until the year 10889);
/// oracle timestamps (`ms << 18`) are far above it.
///
/// ```
/// assert!(percolator::migrate::LEGACY_TS_LIMIT < 1_700_000_000_000_i64 << 18);
/// ```
pub const LEGACY_TS_LIMIT: i64 = 1 << 48;

/// A day: cell timestamps further in the future than this are not plausibly wall-clock ms.
const FUTURE_SLACK_MS: i64 = 24 * 3600 * 1000;

use crate::hbase::TTL_FOREVER;

/// Whether a cell timestamp reads as a plain client's wall-clock milliseconds (applications
/// that set their own versions cannot be adopted: their versions do not order with time).
///
/// ```
/// use percolator::migrate::plausible_ms;
/// let now = 1_700_000_000_000;
/// assert!(plausible_ms(now - 5, now as u64));
/// assert!(!plausible_ms(now + 2 * 86_400_000, now as u64));
/// assert!(!plausible_ms(-1, now as u64));
/// ```
pub fn plausible_ms(ts: i64, now_ms: u64) -> bool {
    (0..LEGACY_TS_LIMIT).contains(&ts) && ts <= now_ms as i64 + FUTURE_SLACK_MS
}

pub(crate) use crate::format::meta::{
    MIG_ADOPTED as ADOPTED, MIG_ADOPTED_AT as ADOPTED_AT, MIG_APPLYING as APPLYING,
    MIG_DISABLING as DISABLING, MIG_ORIGINAL as ORIGINAL, MIG_PASS as PASS, MIG_SINCE as SINCE,
    MIG_TTL_CUT as TTL_CUT,
};
/// How long a step of a migration command waits out a region in transition by default.
pub(crate) use crate::txn::TRANSITION_TIMEOUT;

/// Runs a long step's tries until one ends, waiting out each region in transition that stops
/// a try (see [`resuming_blocking`]) and telling the operator so; `resumes` says where the
/// next try starts.
pub(crate) fn through_transitions<T>(
    budget: Duration,
    progress: &ProgressMode,
    table: &str,
    resumes: &str,
    attempt: impl FnMut(bool) -> (Result<T>, bool),
) -> Result<T> {
    resuming_blocking(budget, attempt, |e| {
        progress.note(&format!(
            "{table}: waiting out a region in transition ({e}); the run resumes {resumes}"
        ))
    })
}

/// `write` through a failpoint named `failpoint` (feature `failpoints`) standing for the
/// gateway's HBase client giving up on a region in transition: `return(applied)` applies the
/// write and then fails as the gateway reports it, `return` fails before applying it.
pub(crate) fn through_region_failpoint(
    failpoint: &str,
    table: &str,
    write: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let Some(applied) = region_away(failpoint) else {
        return write();
    };
    if applied {
        write()?;
    }
    Err(Error::ServerIo {
        message: format!(
            "org.apache.hadoop.hbase.NotServingRegionException: {table},,1.0f. is not online \
             (failpoint {failpoint})"
        ),
        can_retry: false,
        exception: Some("org.apache.hadoop.hbase.NotServingRegionException".into()),
    })
}

#[cfg(feature = "failpoints")]
fn region_away(failpoint: &str) -> Option<bool> {
    fail::eval(failpoint, |arg| arg.as_deref() == Some("applied"))
}

#[cfg(not(feature = "failpoints"))]
fn region_away(_failpoint: &str) -> Option<bool> {
    None
}
/// Work-in-progress qualifiers that a finished migration leaves behind none of.
pub(crate) const IN_PROGRESS: [&[u8]; 1] = [PASS];

/// One user family's settings, as stored in the marker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FamilySettings {
    pub name: String,
    pub max_versions: Option<i32>,
    pub min_versions: Option<i32>,
    pub ttl_secs: Option<i32>,
    pub keep_deleted_cells: Option<bool>,
}

impl FamilySettings {
    pub fn of(f: &FamilyDescriptor) -> FamilySettings {
        FamilySettings {
            name: String::from_utf8_lossy(&f.name).into_owned(),
            max_versions: f.max_versions,
            min_versions: f.min_versions,
            ttl_secs: f.ttl_secs,
            keep_deleted_cells: f.keep_deleted_cells,
        }
    }

    /// `base` (the family as it is now) with these settings put back.
    pub fn restore(&self, base: &FamilyDescriptor) -> FamilyDescriptor {
        let mut f = base.clone();
        f.max_versions = self.max_versions;
        f.min_versions = self.min_versions;
        f.ttl_secs = self.ttl_secs;
        f.keep_deleted_cells = self.keep_deleted_cells;
        f
    }

    /// The TTL in ms if cells of this family expire (MIN_VERSIONS 0 and a finite TTL): the
    /// newest version is then hidden from plain reads once older than that.
    pub fn expiry_ms(&self) -> Option<i64> {
        match (self.ttl_secs, self.min_versions.unwrap_or(0)) {
            (Some(t), 0) if t > 0 && t < TTL_FOREVER => Some(i64::from(t) * 1000),
            _ => None,
        }
    }
}

/// The user family as transactions need it, and each setting changed with why.
pub(crate) fn required(
    f: &FamilyDescriptor,
) -> (
    FamilyDescriptor,
    Vec<(String, String, String, &'static str)>,
) {
    let mut out = f.clone();
    let mut changes = Vec::new();
    let show = |v: Option<i64>| v.map_or("default".to_string(), |v| v.to_string());
    if f.max_versions != Some(ALL_VERSIONS) {
        out.max_versions = Some(ALL_VERSIONS);
        changes.push((
            "VERSIONS".into(),
            show(f.max_versions.map(i64::from)),
            ALL_VERSIONS.to_string(),
            "each version is a transaction's start_ts; snapshots read older ones",
        ));
    }
    if f.expiring_ttl().is_some() {
        out.ttl_secs = Some(TTL_FOREVER);
        changes.push((
            "TTL".into(),
            show(f.ttl_secs.map(i64::from)),
            "FOREVER".into(),
            "HBase reads versions as epoch ms: transactional versions (ms << 18) would never \
             expire, while adopted ones would vanish under write records that still point at them",
        ));
    }
    if f.min_versions.is_some_and(|m| m > 0) {
        out.min_versions = Some(0);
        changes.push((
            "MIN_VERSIONS".into(),
            show(f.min_versions.map(i64::from)),
            "0".into(),
            "only meaningful with a TTL, which is lifted",
        ));
    }
    if f.keep_deleted_cells == Some(true) {
        out.keep_deleted_cells = Some(false);
        changes.push((
            "KEEP_DELETED_CELLS".into(),
            "true".into(),
            "false".into(),
            "transactional deletes are write records; kept cells would let time-range reads \
             of adopted data see values plain readers no longer see",
        ));
    }
    (out, changes)
}

/// The user families of a table (those the schema does not own).
pub(crate) fn user_families<'d>(
    schema: &'d Schema,
    desc: &'d TableDescriptor,
) -> impl Iterator<Item = &'d FamilyDescriptor> + 'd {
    desc.families
        .iter()
        .filter(move |f| !schema.is_percolator_family(&f.name))
}

/// `scan` reading what adoption compares: the user families and the write family.
pub(crate) fn with_columns(scan: Scan, schema: &Schema, desc: &TableDescriptor) -> Scan {
    let mut scan = scan.family(schema.write_family.clone());
    for f in user_families(schema, desc) {
        scan = scan.family(f.name.clone());
    }
    scan
}

/// The table's meta row, uncached, with typed accessors for the `mig:` qualifiers.
pub(crate) struct Marker {
    pub row: RowResult,
}

impl Marker {
    pub fn read(hbase: &HBaseClient, schema: &Schema, table: &str) -> Result<Marker> {
        let client = hbase.asynchronous();
        let row = crate::runtime::wait(
            client.handle(),
            read_row(&client, &schema.meta_table, &meta_row(table)),
        )?;
        Ok(Marker { row })
    }

    pub fn get(&self, q: &[u8]) -> Option<&[u8]> {
        self.row.value(META_FAMILY, q)
    }

    pub fn state(&self) -> Option<&[u8]> {
        self.get(MIG_STATE)
    }

    pub fn state_name(&self) -> String {
        self.state()
            .map_or("plain".into(), |s| String::from_utf8_lossy(s).into_owned())
    }

    pub fn number(&self, q: &[u8]) -> Option<u64> {
        std::str::from_utf8(self.get(q)?).ok()?.parse().ok()
    }

    pub fn original(&self) -> Vec<FamilySettings> {
        self.get(ORIGINAL)
            .and_then(|v| serde_json::from_slice(v).ok())
            .unwrap_or_default()
    }

    /// The original settings by family name.
    pub fn original_by_name(&self) -> BTreeMap<Vec<u8>, FamilySettings> {
        self.original()
            .into_iter()
            .map(|f| (f.name.clone().into_bytes(), f))
            .collect()
    }
}

/// Writes `mig:` qualifiers of the table's meta row.
pub(crate) fn write_marker(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    cells: &[(&[u8], Vec<u8>)],
) -> Result<()> {
    let mut put = Put::new(meta_row(table));
    for (q, v) in cells {
        put = put.add(META_FAMILY, q.to_vec(), v.clone());
    }
    hbase.put(&schema.meta_table, &put)
}

/// Removes `mig:` qualifiers of the table's meta row.
pub(crate) fn clear_marker(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    qualifiers: &[&[u8]],
) -> Result<()> {
    let mut delete = Delete::new(meta_row(table));
    for q in qualifiers {
        delete = delete.column(META_FAMILY, q.to_vec());
    }
    hbase.delete(&schema.meta_table, &delete)
}

/// The points between the steps of `apply` and `disable` where a test can stop them, as a
/// kill would.
///
/// ```
/// assert_ne!(percolator::migrate::Step::Marked, percolator::migrate::Step::Adopted);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The marker is written; nothing else changed.
    Marked,
    /// The families are added and the user families' settings changed.
    FamiliesReady,
    /// A checkpoint of a pass was written.
    Checkpoint,
    /// A pass finished (its last records written, the next pass not begun).
    PassDone,
    /// The marker says `adopted` (the end of `apply`).
    Adopted,
    /// `disable`: the marker says `disabling` and the clients' cache has run out.
    Disabling,
    /// `disable`: one row's transactional versions were made plain.
    RowMadePlain,
    /// `disable`: the project's families were dropped.
    FamiliesDropped,
}

/// A hook deciding whether `apply` stops at a step.
///
/// ```
/// let stop_after_marker: percolator::migrate::CrashHook = std::sync::Arc::new(|s| s == percolator::migrate::Step::Marked);
/// assert!(stop_after_marker(percolator::migrate::Step::Marked));
/// ```
pub type CrashHook = Arc<dyn Fn(Step) -> bool + Send + Sync>;

/// Stops a run at `step` when the hook says so, as a kill there would.
pub(crate) fn crash(hook: Option<&CrashHook>, table: &str, step: Step) -> Result<()> {
    match hook {
        Some(hook) if hook(step) => Err(issue(
            table,
            MigrationIssue::Interrupted,
            format!("stopped at {step:?} (test hook); run the command again to resume"),
        )),
        _ => Ok(()),
    }
}

/// Waits until `settle` has passed since the marker was written (`mig:since`): clients may
/// trust a meta row they cached before it for that long.
pub(crate) fn settle(marker: &Marker, settle: Duration) {
    let since = marker.number(SINCE).unwrap_or(0);
    let ready = since.saturating_add(settle.as_millis() as u64);
    let now = SystemClock.now_ms();
    if ready > now {
        std::thread::sleep(Duration::from_millis(ready - now));
    }
}

/// Why `apply` refuses a table that HBase has disabled.
pub(crate) fn disabled_reason(table: &str) -> String {
    format!(
        "the table is disabled in HBase: its data cannot be read to adopt it; enable it (`enable '{table}'`) and run apply again"
    )
}

/// `Blocked` if HBase has `table` disabled: its rows cannot be scanned, while its families
/// could still be changed, so `apply` would leave it half prepared.
pub(crate) fn refuse_if_disabled(hbase: &HBaseClient, table: &str) -> Result<()> {
    if hbase.admin().is_table_enabled(table)? {
        return Ok(());
    }
    Err(issue(
        table,
        MigrationIssue::Blocked,
        disabled_reason(table),
    ))
}

pub(crate) fn issue(table: &str, kind: MigrationIssue, reason: impl Into<String>) -> Error {
    Error::Migration {
        table: table.to_string(),
        kind,
        reason: reason.into(),
    }
}

/// What one column of a scanned row holds: its newest plain version and newest write record.
pub(crate) struct Column {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    /// (timestamp, value) of the newest version a plain read returns.
    pub plain: Option<(i64, Vec<u8>)>,
    /// (version, record) of the newest write record.
    pub record: Option<(i64, WriteRecord)>,
}

/// The columns of a row scanned with the user families and the write family at one version.
pub(crate) fn columns(schema: &Schema, table: &str, row: &RowResult) -> Result<Vec<Column>> {
    let mut out: BTreeMap<Vec<u8>, Column> = BTreeMap::new();
    for cell in &row.cells {
        if cell.family == schema.write_family {
            let (family, qualifier) = crate::format::split_column_qualifier(&cell.qualifier)
                .map_err(|e| {
                    Error::corrupted_cell("write record", table, &row.row, &cell.qualifier, e.0)
                })?;
            let rec = decode_write(&cell.value).map_err(|e| {
                Error::corrupted_cell("write record", table, &row.row, &cell.qualifier, e.0)
            })?;
            let c = out.entry(cell.qualifier.clone()).or_insert_with(|| Column {
                family,
                qualifier,
                plain: None,
                record: None,
            });
            if c.record.is_none() {
                c.record = Some((cell.timestamp, rec));
            }
        } else if !schema.is_percolator_family(&cell.family) {
            let key = column_qualifier(&cell.family, &cell.qualifier);
            let c = out.entry(key).or_insert_with(|| Column {
                family: cell.family.clone(),
                qualifier: cell.qualifier.clone(),
                plain: None,
                record: None,
            });
            if c.plain.is_none() {
                c.plain = Some((cell.timestamp, cell.value.clone()));
            }
        }
    }
    Ok(out.into_values().collect())
}

/// What adoption must write for one column, if anything.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Adopt {
    /// Up to date (or owned by transactions).
    Nothing,
    /// A `Put` record at version `at` for the plain version at `start` (`at == start` unless
    /// a newer record must be superseded).
    Put { at: i64, start: i64 },
    /// The plain value is gone: a `Delete` record above the adopted `Put`.
    Delete { at: i64 },
    /// A version that is not plausibly wall-clock ms: not adoptable.
    Implausible { at: i64 },
}

/// The adoption rule (docs/design.md invariant 11) for one column. `expiry_ms` is the family's
/// original TTL when its cells expired, `ttl_cut` the wall ms when it was lifted.
pub(crate) fn adopt(c: &Column, expiry_ms: Option<i64>, ttl_cut: i64, now_ms: u64) -> Adopt {
    if let Some((version, _)) = &c.record
        && *version >= LEGACY_TS_LIMIT
    {
        return Adopt::Nothing;
    }
    // A version that had expired when the TTL was lifted stays absent, as plain reads had it.
    let plain = c
        .plain
        .as_ref()
        .filter(|(t, _)| expiry_ms.is_none_or(|ttl| t.saturating_add(ttl) > ttl_cut));
    match (plain, &c.record) {
        (Some((t, v)), rec) => {
            if !plausible_ms(*t, now_ms) {
                return Adopt::Implausible { at: *t };
            }
            // The newest record must be a Put of this very version (a large value's record
            // reads the data version at `t`, which holds `v`).
            match rec {
                None => Adopt::Put { at: *t, start: *t },
                Some((_, r))
                    if r.kind == WriteKind::Put
                        && r.start_ts == *t as u64
                        && r.short_value.as_ref().is_none_or(|s| s == v) =>
                {
                    Adopt::Nothing
                }
                // Above the record it replaces: an older version shows again once a plain
                // client deleted the newer one.
                Some((version, _)) => Adopt::Put {
                    at: (*t).max(version + 1),
                    start: *t,
                },
            }
        }
        (None, Some((version, r))) if r.kind == WriteKind::Put => Adopt::Delete {
            at: (*version + 1).max(now_ms as i64),
        },
        (None, _) => Adopt::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(plain: Option<i64>, record: Option<(i64, WriteKind)>) -> Column {
        Column {
            family: b"f".to_vec(),
            qualifier: b"q".to_vec(),
            plain: plain.map(|t| (t, b"v".to_vec())),
            record: record.map(|(at, kind)| {
                (
                    at,
                    WriteRecord {
                        kind,
                        start_ts: at as u64,
                        short_value: (kind == WriteKind::Put).then(|| b"v".to_vec()),
                    },
                )
            }),
        }
    }

    const NOW: u64 = 1_700_000_000_000;

    #[test]
    fn the_newest_plain_version_is_adopted_at_its_own_timestamp() {
        let t = NOW as i64 - 10;
        assert_eq!(
            adopt(&col(Some(t), None), None, 0, NOW),
            Adopt::Put { at: t, start: t }
        );
        assert_eq!(
            adopt(&col(Some(t), Some((t, WriteKind::Put))), None, 0, NOW),
            Adopt::Nothing,
            "idempotent"
        );
        assert_eq!(
            adopt(&col(Some(t), Some((t - 5, WriteKind::Put))), None, 0, NOW),
            Adopt::Put { at: t, start: t },
            "a newer plain write is caught up"
        );
    }

    #[test]
    fn a_plain_delete_after_adoption_becomes_a_delete_record_and_transactions_win() {
        let t = NOW as i64 - 10;
        assert_eq!(
            adopt(&col(None, Some((t, WriteKind::Put))), None, 0, NOW),
            Adopt::Delete { at: NOW as i64 }
        );
        assert_eq!(
            adopt(&col(None, Some((t, WriteKind::Delete))), None, 0, NOW),
            Adopt::Nothing
        );
        let txn = (NOW as i64) << 18;
        assert_eq!(
            adopt(&col(Some(t), Some((txn, WriteKind::Put))), None, 0, NOW),
            Adopt::Nothing
        );
    }

    #[test]
    fn an_older_version_showing_again_is_adopted_above_the_record_it_replaces() {
        let (old, new) = (NOW as i64 - 100, NOW as i64 - 10);
        assert_eq!(
            adopt(&col(Some(old), Some((new, WriteKind::Put))), None, 0, NOW),
            Adopt::Put {
                at: new + 1,
                start: old
            }
        );
        let mut adopted = col(Some(old), Some((new + 1, WriteKind::Put)));
        adopted.record.as_mut().unwrap().1.start_ts = old as u64;
        assert_eq!(adopt(&adopted, None, 0, NOW), Adopt::Nothing, "idempotent");
    }

    #[test]
    fn expired_and_implausible_versions_are_not_adopted() {
        let t = NOW as i64 - 10_000;
        assert_eq!(
            adopt(&col(Some(t), None), Some(5_000), NOW as i64, NOW),
            Adopt::Nothing
        );
        assert_eq!(
            adopt(&col(Some(t), None), Some(50_000), NOW as i64, NOW),
            Adopt::Put { at: t, start: t }
        );
        assert_eq!(
            adopt(&col(Some(1 << 50), None), None, 0, NOW),
            Adopt::Implausible { at: 1 << 50 }
        );
    }
}
