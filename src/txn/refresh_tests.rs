use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use parking_lot::Mutex;
use tokio::sync::Semaphore;

use super::Refreshed;
use crate::error::{Error, Result};

const LIFE: Duration = Duration::from_secs(5);

/// A clock the test moves, and a read that counts its calls, answers `value`, and waits at a
/// gate the test opens (so reads overlap the other callers).
struct Rig {
    now: Mutex<Instant>,
    reads: AtomicUsize,
    gate: Semaphore,
    value: Mutex<Result<u64>>,
}

impl Rig {
    fn new() -> Arc<Rig> {
        Arc::new(Rig {
            now: Mutex::new(Instant::now()),
            reads: AtomicUsize::new(0),
            gate: Semaphore::new(0),
            value: Mutex::new(Ok(1)),
        })
    }

    fn advance(&self, by: Duration) {
        *self.now.lock() += by;
    }

    async fn get(&self, cell: &Refreshed<u64>) -> Result<u64> {
        let now = || *self.now.lock();
        cell.get(now, || async {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.gate.acquire().await.expect("open").forget();
            match &*self.value.lock() {
                Ok(v) => Ok(*v),
                Err(_) => Err(Error::Shutdown),
            }
        })
        .await
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

/// Polls `f` once: its output if it is ready without waiting.
fn ready_now<F: Future>(f: F) -> Option<F::Output> {
    f.now_or_never()
}

/// `f`, polled once and found waiting (at the gate, or for another caller's read).
fn waiting<F: Future>(f: F, why: &str) -> Pin<Box<F>> {
    let mut f = Box::pin(f);
    assert!(ready_now(f.as_mut()).is_none(), "{why}");
    f
}

/// A cell holding 1 from one read, `age` ago; its next read answers 2.
async fn aged(rig: &Rig, age: Duration) -> Refreshed<u64> {
    let cell = Refreshed::new(LIFE);
    rig.gate.add_permits(1);
    rig.get(&cell).await.unwrap();
    *rig.value.lock() = Ok(2);
    rig.advance(age);
    cell
}

#[tokio::test]
async fn callers_that_find_no_value_share_one_read() {
    let (rig, cell) = (Rig::new(), Refreshed::new(LIFE));
    let askers = futures::future::join_all((0..8).map(|_| rig.get(&cell)));
    let opener = async {
        tokio::task::yield_now().await;
        // Enough for every caller, so a cell that let each read would finish, and fail below.
        rig.gate.add_permits(8);
    };
    let (got, ()) = tokio::join!(askers, opener);
    assert!(got.iter().all(|v| matches!(v, Ok(1))), "{got:?}");
    assert_eq!(rig.reads(), 1, "one read for eight callers");
}

#[tokio::test]
async fn within_half_its_life_a_value_costs_no_read() {
    let (rig, cell) = (Rig::new(), Refreshed::new(LIFE));
    rig.gate.add_permits(1);
    assert_eq!(rig.get(&cell).await.unwrap(), 1);
    rig.advance(LIFE / 2 - Duration::from_millis(1));
    assert_eq!(ready_now(rig.get(&cell)).expect("cached").unwrap(), 1);
    assert_eq!(rig.reads(), 1);
}

#[tokio::test]
async fn past_half_its_life_one_caller_reads_and_the_others_use_the_value() {
    let rig = Rig::new();
    let cell = aged(&rig, LIFE / 2 + Duration::from_millis(1)).await;

    let reader = waiting(rig.get(&cell), "the first caller reads");
    for _ in 0..4 {
        let other = ready_now(rig.get(&cell)).expect("no wait while the value is alive");
        assert_eq!(other.unwrap(), 1);
    }
    rig.gate.add_permits(1);
    assert_eq!(reader.await.unwrap(), 2);
    assert_eq!(rig.get(&cell).await.unwrap(), 2);
    assert_eq!(rig.reads(), 2);
}

#[tokio::test]
async fn a_value_past_its_life_is_never_served() {
    let rig = Rig::new();
    let cell = aged(&rig, LIFE).await;

    let reader = waiting(rig.get(&cell), "the first caller reads");
    let waiter = waiting(
        rig.get(&cell),
        "an expired value waits for the read in flight",
    );
    rig.gate.add_permits(2);
    let (a, b) = tokio::join!(reader, waiter);
    assert_eq!((a.unwrap(), b.unwrap()), (2, 2));
    assert_eq!(
        rig.reads(),
        2,
        "the first value's read, and one for both callers"
    );
}

#[tokio::test]
async fn a_failed_read_lets_the_next_caller_read() {
    let (rig, cell) = (Rig::new(), Refreshed::new(LIFE));
    *rig.value.lock() = Err(Error::Shutdown);
    let reader = waiting(rig.get(&cell), "the first caller reads");
    let waiter = waiting(rig.get(&cell), "the others wait for its read");
    rig.gate.add_permits(1);
    assert!(reader.await.is_err(), "the reader sees its own failure");
    *rig.value.lock() = Ok(3);
    rig.gate.add_permits(1);
    assert_eq!(waiter.await.unwrap(), 3, "a waiter reads in turn");
    assert_eq!(rig.reads(), 2);
}

#[tokio::test]
async fn a_dropped_reader_lets_the_next_caller_read() {
    let (rig, cell) = (Rig::new(), Refreshed::new(LIFE));
    let reader = waiting(rig.get(&cell), "the first caller reads");
    let waiter = waiting(rig.get(&cell), "the others wait for its read");
    drop(reader);
    rig.gate.add_permits(1);
    assert_eq!(waiter.await.unwrap(), 1);
    assert_eq!(rig.reads(), 2);
}

#[test]
fn a_value_read_earlier_does_not_replace_one_read_later() {
    let cell = Refreshed::new(LIFE);
    let t0 = Instant::now();
    cell.put(7, t0 + Duration::from_secs(1));
    cell.put(6, t0);
    let got = ready_now(cell.get(|| t0 + Duration::from_secs(1), || async { Ok(0) }));
    assert_eq!(got.expect("cached").unwrap(), 7);
}
