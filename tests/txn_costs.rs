//! What a transaction's hot paths cost in memory, pinned: the size of the futures a service
//! awaits (`AsyncTransaction::get` and `commit`), and the heap allocations a blocking read and
//! a blocking commit make on the calling thread once the client has its tables cached.
//!
//! The client keeps two versions of each table, snapshot and notification check: a plain one
//! that answers from its caches, and an async one, boxed, that reads. The split exists for
//! these figures (a read inlined in the commit's future would size every commit's). A change
//! that grows one fails here; moving a pin is a decision taken in the change that needs it,
//! with the figure it prints.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use percolator::oracle::MemoryStore;
use percolator::txn::{setup, Schema};
use percolator::{Client, HBaseClient, HBaseConfig, OracleServer, TxnOptions};

// The figures of the test build (the README's test command), which are not a release build's.
/// Bytes of the future of `AsyncTransaction::get` on a transaction that has read before.
const GET_FUTURE_BYTES: usize = 1960;
/// Bytes of the future of `AsyncTransaction::commit` of a transaction with one write.
const COMMIT_FUTURE_BYTES: usize = 3112;
/// Heap allocations on the calling thread of a blocking read of a cached table.
const GET_ALLOCATIONS: u64 = 66;
/// Heap allocations on the calling thread of a blocking one-cell transaction, begin to commit.
const COMMIT_ALLOCATIONS: u64 = 9;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // A thread being torn down has no counter left; its allocations are not this test's.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call goes to the system allocator unchanged; the count is a side record.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations `op` makes on this thread.
fn allocations(op: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    op();
    ALLOCATIONS.with(Cell::get) - before
}

/// The fewest of `runs` counts `run` gives: a buffer that grows now and then is not what the
/// path costs.
fn fewest(runs: usize, run: impl FnMut() -> u64) -> u64 {
    std::iter::repeat_with(run).take(runs).min().unwrap_or(0)
}

/// Every figure against its pin, all printed before any is judged.
fn within(figures: &[(&str, u64, u64)]) {
    for (what, figure, pin) in figures {
        println!("{what}: {figure} (pinned at most {pin})");
    }
    let grown: Vec<String> = figures
        .iter()
        .filter(|(_, figure, pin)| figure > pin)
        .map(|(what, figure, pin)| format!("{what} grew to {figure}, past its pin {pin}"))
        .collect();
    assert!(
        grown.is_empty(),
        "the cached paths cost more now: {grown:?}"
    );
}

#[test]
fn the_cached_paths_keep_their_pinned_sizes_and_allocations() {
    let emulator = hbase_emulator::start_local().unwrap();
    let oracle = OracleServer::start_local(MemoryStore::new()).unwrap();
    let config = HBaseConfig::new(emulator.local_addr().to_string());
    let admin = HBaseClient::connect(config.clone()).unwrap();
    setup::create_table(&admin, &Schema::default(), "t", &["f"]).unwrap();
    let oracles = [oracle.local_addr().to_string()];
    let client = Client::connect(config, &oracles, TxnOptions::default()).unwrap();
    // Every table, family and meta row cached, as a service finds them after its first calls.
    client.run(|txn| txn.set("t", "r", "f", "q", "v")).unwrap();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let asynchronous = client.asynchronous();
    let (get_bytes, commit_bytes) = runtime.block_on(async {
        let mut txn = asynchronous.begin().await.unwrap();
        txn.get("t", "r", "f", "q").await.unwrap();
        let get = std::mem::size_of_val(&txn.get("t", "r", "f", "q"));
        txn.set("t", "r", "f", "q", "w").unwrap();
        let commit = txn.commit();
        let commit_bytes = std::mem::size_of_val(&commit);
        commit.await.unwrap();
        (get, commit_bytes)
    });
    let commit = fewest(20, || {
        allocations(|| {
            client.run(|txn| txn.set("t", "r", "f", "q", "x")).unwrap();
        })
    });
    // The read alone: its transaction begun and its snapshot fixed outside the count.
    let read = fewest(20, || {
        let txn = client.begin().unwrap();
        txn.start_ts().unwrap();
        allocations(|| {
            txn.get("t", "r", "f", "q").unwrap();
        })
    });
    client.shutdown();
    within(&[
        (
            "AsyncTransaction::get future, bytes",
            get_bytes as u64,
            GET_FUTURE_BYTES as u64,
        ),
        (
            "AsyncTransaction::commit future, bytes",
            commit_bytes as u64,
            COMMIT_FUTURE_BYTES as u64,
        ),
        ("blocking get, allocations", read, GET_ALLOCATIONS),
        (
            "blocking one-cell transaction, allocations",
            commit,
            COMMIT_ALLOCATIONS,
        ),
    ]);
}
