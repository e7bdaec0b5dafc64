//! Choosing and storing the safe point (docs/gc.md). It is the oracle's time minus the life
//! time, never above the oldest start_ts a live client publishes in its liveness row, and it
//! only rises: it is advanced with a checkAndMutate against the value read, so concurrent GC
//! processes never move it back.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::format::liveness::{LIVENESS_FAMILY, OLDEST_QUALIFIER, PUBLICATION_FAMILY};
use crate::format::meta::{decode_safe_point as decode, encode_safe_point, SAFE_POINT_QUALIFIER};
use crate::format::meta::{GLOBAL_ROW, META_FAMILY};
use crate::hbase::{CheckAndMutate, CompareOp, Get, HBaseClient, Put, Scan};
use crate::oracle::LOGICAL_PER_MS;
use crate::txn::liveness::published_oldest;
use crate::txn::meta::read_row;
use crate::txn::store::next_page_start;
use crate::txn::HBaseAccess;

/// Liveness rows per scan round trip.
const LIVENESS_PAGE: i32 = 1000;

/// `now_ts` minus `life_time`, in timestamp units (`ms << 18`).
pub(crate) fn by_life_time(now_ts: u64, life_time: Duration) -> u64 {
    let life = u64::try_from(life_time.as_millis())
        .unwrap_or(u64::MAX)
        .saturating_mul(LOGICAL_PER_MS);
    now_ts.saturating_sub(life)
}

/// The oldest start_ts any client publishes under its publication lease, or, for a client of an
/// earlier version, under its liveness (cells that expired are gone by HBase's TTL). Values
/// that do not decode are skipped: a row being rewritten by an older client carries none.
pub(crate) async fn oldest_published(
    store: &dyn HBaseAccess,
    liveness_table: &str,
) -> Result<Option<u64>> {
    match scan_oldest(store, liveness_table, true).await {
        // A table made before the publication family existed: its clients publish in `l` only.
        Err(Error::FamilyNotFound { family, .. }) if family.as_bytes() == PUBLICATION_FAMILY => {
            scan_oldest(store, liveness_table, false).await
        }
        other => other,
    }
}

async fn scan_oldest(
    store: &dyn HBaseAccess,
    liveness_table: &str,
    with_publication: bool,
) -> Result<Option<u64>> {
    let mut oldest: Option<u64> = None;
    let mut from = Vec::new();
    loop {
        let mut scan =
            Scan::range(from.clone(), Vec::new()).column(LIVENESS_FAMILY, OLDEST_QUALIFIER);
        if with_publication {
            scan = scan.column(PUBLICATION_FAMILY, OLDEST_QUALIFIER);
        }
        let page = store
            .scan_page(liveness_table, &scan, LIVENESS_PAGE)
            .await?;
        for row in &page {
            if let Some(ts) = published_oldest(row) {
                oldest = Some(oldest.map_or(ts, |o| o.min(ts)));
            }
        }
        match next_page_start(&page, LIVENESS_PAGE) {
            Some(next) => from = next,
            None => return Ok(oldest),
        }
    }
}

/// The safe point GC last stored in `meta_table`; `None` when no round has stored one yet (or
/// the meta table does not exist). One read, nothing changed: for monitoring how far the safe
/// point trails the oracle.
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// assert_eq!(percolator::gc::stored_safe_point(&hbase, "percolator_meta")?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn stored_safe_point(hbase: &HBaseClient, meta_table: &str) -> Result<Option<u64>> {
    let get = Get::new(GLOBAL_ROW.to_vec()).column(META_FAMILY, SAFE_POINT_QUALIFIER);
    let row = match hbase.get(meta_table, &get) {
        Ok(row) => row,
        Err(Error::TableNotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if row.value(META_FAMILY, SAFE_POINT_QUALIFIER).is_none() {
        return Ok(None);
    }
    decode(&row, meta_table).map(Some)
}

/// Raises the stored safe point to `to` unless it is higher already; returns the value now
/// stored. One checkAndMutate against the exact value read, repeated if another GC process
/// moved it meanwhile.
pub(crate) async fn advance(store: &dyn HBaseAccess, meta_table: &str, to: u64) -> Result<u64> {
    loop {
        let row = read_row(store, meta_table, GLOBAL_ROW).await?;
        let current = decode(&row, meta_table)?;
        if current >= to {
            return Ok(current);
        }
        let expected = row
            .value(META_FAMILY, SAFE_POINT_QUALIFIER)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        let cam = CheckAndMutate::new(
            GLOBAL_ROW,
            META_FAMILY,
            SAFE_POINT_QUALIFIER,
            CompareOp::Equal,
            expected,
        )
        .put(Put::new(GLOBAL_ROW).add(
            META_FAMILY,
            SAFE_POINT_QUALIFIER,
            encode_safe_point(to),
        ));
        match store.check_and_mutate(meta_table, &cam).await {
            Ok(true) => return Ok(to),
            // Lost: someone moved it, or our own write landed; the next read tells.
            Ok(false) | Err(crate::Error::OutcomeUnknown { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::{FamilyDescriptor, TableDescriptor};
    use crate::test_stack::Stack;
    use crate::txn::liveness::{Liveness, LivenessConfig};

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    /// A client whose refreshes stop (its liveness region away, or the client dead) is no
    /// longer alive after the liveness TTL, but GC still sees its oldest open transaction until
    /// the publication lease runs out.
    #[test]
    fn a_publication_outlives_its_rows_liveness() {
        let stack = Stack::start().expect("embedded stack");
        let config = LivenessConfig {
            table: "sp_publication".into(),
            ttl_secs: 1,
            publication_ttl_secs: 3,
        };
        crate::txn::setup::create_liveness_table(&stack.hbase, &config).expect("table");
        let liveness = Liveness::new(config.clone(), "long-runner".into());
        let observer = Liveness::new(config.clone(), "gc".into());
        block(liveness.refresh(&stack.hbase, 0, Some(42))).expect("refresh");
        assert_eq!(
            block(oldest_published(&stack.hbase, &config.table)).unwrap(),
            Some(42)
        );

        std::thread::sleep(Duration::from_millis(1_500));
        assert!(!block(observer.is_alive(&stack.hbase, "long-runner", || {})).unwrap());
        assert_eq!(
            block(oldest_published(&stack.hbase, &config.table)).unwrap(),
            Some(42),
            "the publication lapsed with the liveness"
        );

        std::thread::sleep(Duration::from_millis(2_000));
        assert_eq!(
            block(oldest_published(&stack.hbase, &config.table)).unwrap(),
            None
        );
    }

    /// A table made before the publication family existed: the client falls back to `l:o`,
    /// GC reads it there, and `create_liveness_table` adds the family after which both columns
    /// are written.
    #[test]
    fn a_table_made_before_the_publication_family_is_read_and_upgraded() {
        let stack = Stack::start().expect("embedded stack");
        let config = LivenessConfig {
            table: "sp_old_liveness".into(),
            ..LivenessConfig::default()
        };
        let old = TableDescriptor::new(config.table.clone()).family(
            FamilyDescriptor::new(LIVENESS_FAMILY)
                .max_versions(1)
                .ttl_secs(config.ttl_secs),
        );
        stack.hbase.admin().create_table(&old).expect("old table");
        let liveness = Liveness::new(config.clone(), "old-table-client".into());
        block(liveness.refresh(&stack.hbase, 0, Some(7))).expect("falls back to l:o");
        assert_eq!(
            block(oldest_published(&stack.hbase, &config.table)).unwrap(),
            Some(7)
        );

        crate::txn::setup::create_liveness_table(&stack.hbase, &config).expect("upgrade");
        let families = stack
            .hbase
            .admin()
            .table_descriptor(&config.table)
            .unwrap()
            .families;
        assert!(
            families.iter().any(|f| f.name == PUBLICATION_FAMILY),
            "{families:?}"
        );
        let fresh = Liveness::new(config.clone(), "new-client".into());
        block(fresh.refresh(&stack.hbase, 0, Some(5))).expect("refresh");
        let row = stack
            .hbase
            .get(&config.table, &Get::new(b"new-client".to_vec()))
            .unwrap();
        assert_eq!(
            row.value(PUBLICATION_FAMILY, OLDEST_QUALIFIER),
            Some(&5u64.to_be_bytes()[..])
        );
        assert_eq!(
            block(oldest_published(&stack.hbase, &config.table)).unwrap(),
            Some(5)
        );
    }

    #[test]
    fn life_time_is_subtracted_in_timestamp_units() {
        let now = 1_000_000 * LOGICAL_PER_MS + 7;
        assert_eq!(
            by_life_time(now, Duration::from_secs(10)),
            990_000 * LOGICAL_PER_MS + 7
        );
        assert_eq!(by_life_time(5, Duration::from_secs(1)), 0);
    }
}
