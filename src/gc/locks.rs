//! The lock pass: before anything is collected, every lock below the safe point, in every
//! transactional table, is decided through the normal protocol (rolled forward if its primary
//! committed, back otherwise; docs/gc.md). Once a primary's write record is collected, a
//! secondary left locked could no longer learn that its transaction committed, and
//! transactions span tables, so the pass covers them all.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::{decode_lock_state, lock_column, LockState};
use crate::hbase::Scan;
use crate::key::CellKey;
use crate::txn::context::Context;
use crate::txn::resolver::LockResolver;
use crate::txn::session::Session;
use crate::txn::store::next_page_start;
use crate::txn::RetryPolicy;

/// Lock cells per scan round trip.
const LOCK_PAGE: i32 = 1000;

/// Decides every lock with start_ts below `safe_point` in `tables`; returns how many it found.
pub(crate) async fn resolve_below(
    ctx: &Arc<Context>,
    tables: &[String],
    safe_point: u64,
    cancelled: &(dyn Fn() -> bool + Send + Sync),
) -> Result<u64> {
    let session = Session::new(ctx.clone());
    let resolver = LockResolver::forcing_below(&session, safe_point);
    let lock_family = ctx.schema().lock_family.clone();
    let mut found = 0;
    for table in tables {
        let mut from = Vec::new();
        loop {
            if cancelled() {
                return Err(Error::Shutdown);
            }
            let scan = Scan::range(from.clone(), Vec::new()).family(lock_family.clone());
            let page = match ctx.store().scan_page(table, &scan, LOCK_PAGE).await {
                Ok(page) => page,
                // Dropped since it was listed: nothing of it can be read any more.
                Err(Error::TableNotFound { .. }) => break,
                Err(e) => return Err(e),
            };
            for row in &page {
                for cell in &row.cells {
                    let Ok(LockState::Locked(lock)) = decode_lock_state(Some(&cell.value)) else {
                        continue;
                    };
                    if lock.start_ts >= safe_point {
                        continue;
                    }
                    let Ok((family, qualifier)) = lock_column(&cell.qualifier, &lock) else {
                        continue;
                    };
                    let key = CellKey::new(table, row.row.clone(), family, qualifier)?;
                    found += 1;
                    decide(&resolver, &key, &lock, &cell.value, ctx.opts().retry()).await?;
                }
            }
            match next_page_start(&page, LOCK_PAGE) {
                Some(next) => from = next,
                None => break,
            }
        }
    }
    Ok(found)
}

async fn decide(
    resolver: &LockResolver<'_>,
    key: &CellKey,
    lock: &crate::format::Lock,
    bytes: &[u8],
    retry: &RetryPolicy,
) -> Result<()> {
    // As many tries as a transaction's retry policy allows (a primary that keeps moving under
    // the resolver), then the pass gives up on this lock.
    for attempt in 0..retry.max_attempts {
        if resolver.resolve(key, lock, bytes).await? {
            return Ok(());
        }
        tokio::time::sleep(retry.backoff(attempt)).await;
    }
    Err(Error::KeyLocked {
        table: key.table.clone(),
        row: key.row.clone(),
        column: key.column(),
        lock_ts: lock.start_ts,
        primary: Some(Box::new(lock.primary.clone())),
    })
}
