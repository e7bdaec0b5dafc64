use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use parking_lot::Mutex;

use super::{ReadFusion, MAX_GETS};
use crate::error::{Error, Result};
use crate::hbase::{Get, RowResult};
use crate::txn::reads_only::{Reads, ReadsOnly};

/// Answers each get with an empty row of the get's own key, after a few scheduler turns, and
/// records how many gets each call carried. With `refuse_fused`, a call of more than one get
/// fails.
#[derive(Default)]
struct EchoStore {
    calls: Mutex<Vec<usize>>,
    refuse_fused: AtomicBool,
}

#[async_trait]
impl Reads for EchoStore {
    async fn get_many(&self, _table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.calls.lock().push(gets.len());
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        if gets.len() > 1 && self.refuse_fused.load(Ordering::SeqCst) {
            return Err(Error::IllegalArgument {
                message: "this store refuses fused reads".into(),
            });
        }
        Ok(gets
            .iter()
            .map(|g| RowResult {
                row: g.row.clone(),
                ..RowResult::default()
            })
            .collect())
    }
}

type Store = ReadsOnly<EchoStore>;

/// `readers` readers of one row each (`row-<i>`), all issued at the same moment; each must get
/// exactly its own row back.
async fn read_together(fusion: &ReadFusion, store: &Store, readers: usize) {
    let gets: Vec<Vec<Get>> = (0..readers)
        .map(|i| vec![Get::new(format!("row-{i}"))])
        .collect();
    let results =
        futures::future::join_all(gets.iter().map(|g| fusion.get_many(store, "accounts", g))).await;
    for (i, rows) in results.into_iter().enumerate() {
        let rows = rows.unwrap_or_else(|e| panic!("reader {i} failed: {e}"));
        assert_eq!(rows.len(), 1, "reader {i} got {} rows", rows.len());
        assert_eq!(rows[0].row, format!("row-{i}").into_bytes(), "reader {i}");
    }
}

#[tokio::test]
async fn reads_issued_together_travel_as_one_call_and_each_gets_its_own_rows() {
    let (fusion, store) = (ReadFusion::default(), ReadsOnly(EchoStore::default()));
    read_together(&fusion, &store, 10).await;
    assert_eq!(*store.0.calls.lock(), vec![10]);

    read_together(&fusion, &store, 1).await;
    assert_eq!(
        *store.0.calls.lock(),
        vec![10, 1],
        "a lone reader reads alone"
    );
}

#[tokio::test]
async fn a_full_gathering_is_sent_and_the_reader_that_found_it_full_leads_the_next() {
    let (fusion, store) = (ReadFusion::default(), ReadsOnly(EchoStore::default()));
    let readers = 2 * (MAX_GETS + 1) - 4;
    read_together(&fusion, &store, readers).await;
    let mut calls = store.0.calls.lock().clone();
    calls.sort_unstable();
    assert_eq!(
        calls,
        vec![MAX_GETS + 1 - 4, MAX_GETS + 1],
        "two fused calls, none read alone"
    );
}

#[tokio::test]
async fn members_of_a_failed_fused_read_read_alone_and_get_their_own_rows() {
    let (fusion, store) = (ReadFusion::default(), ReadsOnly(EchoStore::default()));
    store.0.refuse_fused.store(true, Ordering::SeqCst);
    read_together(&fusion, &store, 5).await;
    assert_eq!(*store.0.calls.lock(), vec![5, 1, 1, 1, 1, 1]);
}
