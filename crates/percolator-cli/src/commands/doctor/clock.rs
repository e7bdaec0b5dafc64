//! The `clock_skew` check: the oracle's clock and the HBase servers' clock against this host's.
//!
//! Every deadline of the protocol that crosses machines compares wall clocks: a lock's TTL
//! (its owner's clock against a reader's), an observer worker's row (1 s by default, its
//! clock against the other workers'), the liveness rows' TTL (HBase's clock). The oracle's
//! physical time sets the GC safe point against `--life-time`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use percolator::hbase::{Delete, Get, HBaseClient, Put};
use percolator::oracle::{physical_of, OracleClient};
use percolator::{Error, Result};

use super::verdict::Check;

/// This host's wall clock, epoch ms.
pub(super) fn host_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A clock's offset from this host's: its reading minus the host's at the middle of the call
/// that brought it, give or take half that call.
#[derive(Clone, Copy, Debug)]
struct Offset {
    ms: i64,
    within_ms: i64,
}

/// A remote clock's reading `remote`, taken between the host's readings `before` and `after`.
fn around(before: u64, remote: u64, after: u64) -> Offset {
    let middle = before / 2 + after / 2;
    Offset {
        ms: remote as i64 - middle as i64,
        within_ms: (after.saturating_sub(before) / 2 + 1) as i64,
    }
}

/// The oracle's physical time: the millisecond of a fresh timestamp.
fn oracle_offset(oracle: &OracleClient) -> Result<Offset> {
    let before = host_ms();
    let ts = oracle.get_timestamp()?;
    Ok(around(before, physical_of(ts), host_ms()))
}

/// The HBase servers' time: the version a region server gives a cell written without one, in
/// a scratch row of the meta table, deleted again (Thrift has no call that tells a server's
/// time). The put's round trip bounds the reading.
fn hbase_offset(hbase: &HBaseClient, meta_table: &str) -> Result<Offset> {
    let row = format!("doctor/{}-{}", std::process::id(), host_ms()).into_bytes();
    let family = percolator::txn::meta_table_descriptor(meta_table)
        .families
        .first()
        .map(|f| f.name.clone())
        .ok_or_else(|| Error::IllegalArgument {
            message: "the meta table's definition has no family".into(),
        })?;
    let before = host_ms();
    hbase.put(meta_table, &Put::new(row.clone()).add(family, "now", ""))?;
    let after = host_ms();
    let read = hbase.get(meta_table, &Get::new(row.clone()));
    // Removed whatever the read did: the row must not stay behind.
    hbase.delete(meta_table, &Delete::new(row))?;
    let stamped =
        read?
            .cells
            .first()
            .map(|c| c.timestamp)
            .ok_or_else(|| Error::IllegalArgument {
                message: format!("the scratch cell written to {meta_table} was not read back"),
            })?;
    Ok(around(before, u64::try_from(stamped).unwrap_or(0), after))
}

fn show(o: &Offset) -> String {
    format!("{:+} ms (±{} ms)", o.ms, o.within_ms)
}

/// The `clock_skew` check. Fails when two clocks differ by more than `max` beyond what the
/// round trips leave uncertain, warns past a quarter of it.
pub(super) fn skew(
    hbase: Option<&HBaseClient>,
    oracle: Option<&OracleClient>,
    meta_table: &str,
    max: Duration,
) -> Check {
    let mut clocks: Vec<(&str, Offset)> = vec![(
        "this host",
        Offset {
            ms: 0,
            within_ms: 0,
        },
    )];
    let mut unread = Vec::new();
    if let Some(oracle) = oracle {
        match oracle_offset(oracle) {
            Ok(o) => clocks.push(("the oracle", o)),
            Err(e) => unread.push(format!("the oracle's: {e}")),
        }
    }
    if let Some(hbase) = hbase {
        match hbase_offset(hbase, meta_table) {
            Ok(o) => clocks.push(("HBase", o)),
            Err(e) => unread.push(format!("HBase's: {e}")),
        }
    }
    if clocks.len() == 1 {
        return Check::skip("clock_skew", "no clock but this host's could be read");
    }
    let detail: Vec<String> = clocks[1..]
        .iter()
        .map(|(who, o)| format!("{who} {}", show(o)))
        .chain(unread.iter().map(|u| format!("not read: {u}")))
        .collect();
    let detail = format!("against this host: {}", detail.join(", "));
    // The widest gap between any two clocks, less what the readings leave uncertain.
    let mut worst = (0i64, "", "");
    for (i, (a, x)) in clocks.iter().enumerate() {
        for (b, y) in &clocks[i + 1..] {
            let gap = ((x.ms - y.ms).abs() - x.within_ms - y.within_ms).max(0);
            if gap > worst.0 {
                worst = (gap, a, b);
            }
        }
    }
    let max_ms = max.as_millis() as i64;
    let fix =
        "run NTP (chrony, ntpd) on every host: the oracle's, the HBase servers' and the clients'";
    let (gap, a, b) = worst;
    if gap > max_ms {
        Check::fail(
            "clock_skew",
            format!("{a} and {b} differ by at least {gap} ms, over {max_ms} ms; {detail}"),
            fix,
        )
    } else if gap > max_ms / 4 || !unread.is_empty() {
        let why = if unread.is_empty() {
            format!("{a} and {b} differ by at least {gap} ms; {detail}")
        } else {
            detail
        };
        Check::warn("clock_skew", why, fix)
    } else {
        Check::ok("clock_skew", detail)
    }
}
