use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use parking_lot::Mutex;
use tokio::sync::Semaphore;

use super::{Families, KnownTable, TableFamilies};
use crate::error::{Error, Result};
use crate::hbase::{
    CheckAndMutate, Delete, FamilyDescriptor, Get, Put, RowResult, Scan, TableDescriptor,
};
use crate::oracle::LocalTimestamps;
use crate::txn::context::Context;
use crate::txn::liveness::{Liveness, LivenessConfig};
use crate::txn::meta::META_REFRESH;
use crate::txn::refresh::Refreshed;
use crate::txn::table_checks;
use crate::txn::{Schema, TxnOptions};

/// A descriptor read that counts its calls, waits at a gate the test opens (so that the
/// callers overlap it), and answers `answer`.
struct Rig {
    reads: AtomicUsize,
    gate: Semaphore,
    answer: Mutex<Result<Families>>,
}

impl Rig {
    fn new() -> Arc<Rig> {
        Arc::new(Rig {
            reads: AtomicUsize::new(0),
            gate: Semaphore::new(0),
            answer: Mutex::new(Ok(families(&["f", "_pl", "_pw"]))),
        })
    }

    async fn families(&self, cache: &TableFamilies, table: &str) -> Result<Families> {
        cache
            .read(table, || async {
                self.reads.fetch_add(1, Ordering::SeqCst);
                self.gate.acquire().await.expect("open").forget();
                self.answer.lock().clone()
            })
            .await
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

fn families(names: &[&str]) -> Families {
    let meta = Arc::new(Refreshed::new(META_REFRESH));
    Arc::new(KnownTable::new(
        names.iter().map(|n| n.as_bytes().to_vec()),
        meta,
    ))
}

fn unreachable() -> Error {
    Error::ServerIo {
        message: "org.apache.hadoop.hbase.RegionTooBusyException: accounts".into(),
        can_retry: true,
        exception: Some("org.apache.hadoop.hbase.RegionTooBusyException".into()),
    }
}

/// Sixteen transactions of a fresh client meet a table at once: one descriptor read serves
/// them all, and the next caller finds it cached.
#[tokio::test]
async fn callers_that_miss_a_table_at_once_share_one_read() {
    let (rig, cache) = (Rig::new(), TableFamilies::default());
    let askers = futures::future::join_all((0..16).map(|_| rig.families(&cache, "accounts")));
    let opener = async {
        tokio::task::yield_now().await;
        // Enough for every caller: a cache that let each of them read would pass the gate.
        rig.gate.add_permits(16);
    };
    let (got, ()) = tokio::join!(askers, opener);
    assert!(got
        .iter()
        .all(|f| f.as_ref().is_ok_and(|f| f.contains(&b"_pw"[..]))));
    assert_eq!(rig.reads(), 1, "one descriptor read for sixteen callers");
    assert!(cache.cached("accounts").is_some());

    rig.gate.add_permits(1);
    rig.families(&cache, "other").await.unwrap();
    assert_eq!(rig.reads(), 2, "each table is read on its own");
}

/// The shared read fails: every caller that waited for it gets that error, of the same
/// variant and fields, without reading again; the error is not kept, so the next caller
/// reads, and succeeds once the gateway answers.
#[tokio::test]
async fn a_failed_shared_read_fails_every_waiter_and_the_next_caller_reads_again() {
    let (rig, cache) = (Rig::new(), TableFamilies::default());
    *rig.answer.lock() = Err(unreachable());
    let askers = futures::future::join_all((0..8).map(|_| rig.families(&cache, "accounts")));
    let opener = async {
        tokio::task::yield_now().await;
        rig.gate.add_permits(8);
    };
    let (got, ()) = tokio::join!(askers, opener);
    for outcome in &got {
        assert!(
            matches!(outcome, Err(Error::ServerIo { can_retry: true, exception: Some(e), .. })
                if e.ends_with("RegionTooBusyException")),
            "{outcome:?}"
        );
    }
    assert_eq!(rig.reads(), 1, "the waiters did not read again one by one");
    assert!(cache.cached("accounts").is_none(), "no error is kept");

    *rig.answer.lock() = Ok(families(&["f", "_pl", "_pw"]));
    rig.gate.add_permits(1);
    let families = rig.families(&cache, "accounts").await.unwrap();
    assert!(families.contains(&b"f"[..]));
    assert_eq!(rig.reads(), 2);
}

/// A reader whose transaction is dropped mid-read does not strand the callers waiting for it:
/// one of them reads.
#[tokio::test]
async fn a_dropped_reader_hands_the_read_to_a_waiter() {
    let (rig, cache) = (Rig::new(), TableFamilies::default());
    let mut reader = Box::pin(rig.families(&cache, "accounts"));
    assert!(
        (&mut reader).now_or_never().is_none(),
        "the reader waits at the gate"
    );
    let mut waiter = Box::pin(rig.families(&cache, "accounts"));
    assert!(
        (&mut waiter).now_or_never().is_none(),
        "the waiter waits for the reader"
    );
    drop(reader);
    rig.gate.add_permits(1);
    assert!(waiter.await.is_ok());
    assert_eq!(rig.reads(), 2);
}

/// A gateway whose descriptor reads are counted and take a few scheduler turns, answering a
/// transactional table (or, when `failing`, a busy region); meta rows read as absent.
#[derive(Default)]
struct Gateway {
    descriptor_reads: AtomicUsize,
    failing: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl crate::txn::store::HBaseAccess for Gateway {
    async fn get_many(&self, _: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        Ok(vec![RowResult::default(); gets.len()])
    }
    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        self.descriptor_reads.fetch_add(1, Ordering::SeqCst);
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        if self.failing.load(Ordering::SeqCst) {
            return Err(unreachable());
        }
        let user = TableDescriptor::new(table).family(FamilyDescriptor::new("f"));
        Ok(Schema::default()
            .families()
            .into_iter()
            .fold(user, TableDescriptor::family))
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
}

fn unexpected<T>() -> Result<T> {
    Err(Error::IllegalArgument {
        message: "this test gateway only reads".into(),
    })
}

/// A context whose reads are not retried (`settle_timeout` zero): what these tests count is
/// the descriptor reads the context itself makes.
fn context(gateway: Arc<Gateway>) -> Context {
    Context::new(
        gateway,
        Arc::new(LocalTimestamps::new()),
        TxnOptions::builder()
            .settle_timeout(std::time::Duration::ZERO)
            .build(),
        Liveness::new(LivenessConfig::default(), "families-test".into()),
        tokio::runtime::Handle::current(),
    )
}

/// Through the client's context, as transactions check their tables: sixteen at once on a
/// table it has not seen cost one descriptor read; when that read fails, all sixteen see
/// the gateway's error, and the next transaction reads again.
#[tokio::test]
async fn transactions_checking_a_new_table_at_once_read_its_descriptor_once() {
    let gateway = Arc::new(Gateway::default());
    let ctx = context(gateway.clone());
    let checks =
        futures::future::join_all((0..16).map(|_| table_checks::check_table(&ctx, "accounts")))
            .await;
    assert!(checks.iter().all(Result::is_ok), "{checks:?}");
    assert_eq!(gateway.descriptor_reads.load(Ordering::SeqCst), 1);

    gateway.failing.store(true, Ordering::SeqCst);
    let checks =
        futures::future::join_all((0..16).map(|_| table_checks::check_table(&ctx, "savings")))
            .await;
    assert!(
        checks
            .iter()
            .all(|c| matches!(c, Err(Error::ServerIo { .. }))),
        "{checks:?}"
    );
    assert_eq!(gateway.descriptor_reads.load(Ordering::SeqCst), 2);

    gateway.failing.store(false, Ordering::SeqCst);
    table_checks::check_table(&ctx, "savings")
        .await
        .expect("read again, and found");
    assert_eq!(gateway.descriptor_reads.load(Ordering::SeqCst), 3);
}
