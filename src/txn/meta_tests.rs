use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::MetaCache;
use crate::error::Result;
use crate::hbase::{Get, RowResult};
use crate::txn::reads_only::{Reads, ReadsOnly};

/// A meta table whose reads take a few scheduler turns and are counted.
#[derive(Default)]
struct CountingMeta {
    gets: AtomicUsize,
}

#[async_trait]
impl Reads for CountingMeta {
    async fn get_many(&self, _table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        Ok(vec![RowResult::default(); gets.len()])
    }
}

#[tokio::test]
async fn transactions_that_find_a_row_uncached_read_it_once() {
    let (store, cache) = (ReadsOnly(CountingMeta::default()), MetaCache::default());
    let rows = futures::future::join_all(
        (0..16).map(|_| cache.row(&store, "percolator_meta", b"table/accounts")),
    )
    .await;
    assert!(rows.iter().all(|r| r.is_ok()));
    assert_eq!(
        store.0.gets.load(Ordering::SeqCst),
        1,
        "one read for sixteen"
    );

    cache
        .row(&store, "percolator_meta", b"table/other")
        .await
        .unwrap();
    assert_eq!(
        store.0.gets.load(Ordering::SeqCst),
        2,
        "each row is its own"
    );
    cache
        .refresh(&store, "percolator_meta", b"table/accounts")
        .await
        .unwrap();
    assert_eq!(
        store.0.gets.load(Ordering::SeqCst),
        3,
        "a refresh always reads"
    );
}
