use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::MetaCache;
use crate::error::{Error, Result};
use crate::hbase::{CheckAndMutate, Delete, Get, Put, RowResult, Scan, TableDescriptor};
use crate::txn::store::HBaseAccess;

/// A meta table whose reads take a few scheduler turns and are counted; nothing else works.
#[derive(Default)]
struct CountingMeta {
    gets: AtomicUsize,
}

fn unexpected<T>() -> Result<T> {
    Err(Error::IllegalArgument {
        message: "the meta cache only reads".into(),
    })
}

#[async_trait]
impl HBaseAccess for CountingMeta {
    async fn get_many(&self, _table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        Ok(vec![RowResult::default(); gets.len()])
    }
    async fn check_and_mutate(&self, _: &str, _: &CheckAndMutate) -> Result<bool> {
        unexpected()
    }
    async fn scan_page(&self, _: &str, _: &Scan, _: i32) -> Result<Vec<RowResult>> {
        unexpected()
    }
    async fn put(&self, _: &str, _: &Put) -> Result<()> {
        unexpected()
    }
    async fn delete(&self, _: &str, _: &Delete) -> Result<()> {
        unexpected()
    }
    async fn table_descriptor(&self, _: &str) -> Result<TableDescriptor> {
        unexpected()
    }
}

#[tokio::test]
async fn transactions_that_find_a_row_uncached_read_it_once() {
    let (store, cache) = (CountingMeta::default(), MetaCache::default());
    let rows = futures::future::join_all(
        (0..16).map(|_| cache.row(&store, "percolator_meta", b"table/accounts")),
    )
    .await;
    assert!(rows.iter().all(|r| r.is_ok()));
    assert_eq!(store.gets.load(Ordering::SeqCst), 1, "one read for sixteen");

    cache
        .row(&store, "percolator_meta", b"table/other")
        .await
        .unwrap();
    assert_eq!(store.gets.load(Ordering::SeqCst), 2, "each row is its own");
    cache
        .refresh(&store, "percolator_meta", b"table/accounts")
        .await
        .unwrap();
    assert_eq!(
        store.gets.load(Ordering::SeqCst),
        3,
        "a refresh always reads"
    );
}
