//! In-process oracle under load: many threads and tasks over several clients get unique,
//! per-requester increasing timestamps; restarts continue above the persisted top; an injected
//! clock that steps backwards or a burst that overflows the logical counter changes nothing.

mod oracle_common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use oracle_common::{assert_unique_and_increasing, Requesters};
use percolator::oracle::{compose, physical_of, Clock, LOGICAL_PER_MS};
use percolator::oracle::{ClientConfig, MemoryStore, OracleServer, ServerConfig};
use percolator::OracleClient;

fn client(addr: &str, connections: usize) -> OracleClient {
    let config = ClientConfig {
        connections,
        ..ClientConfig::default()
    };
    OracleClient::connect(&[addr.to_string()], config).unwrap()
}

#[test]
fn threads_and_tasks_over_several_clients_get_unique_increasing_timestamps() {
    let store = MemoryStore::new();
    let server = OracleServer::start_local(store.clone()).unwrap();
    let addr = server.local_addr().to_string();

    // Synchronous askers: 2 clients x 8 threads.
    let sync_clients = [Arc::new(client(&addr, 1)), Arc::new(client(&addr, 3))];
    let threads = Requesters::start(&sync_clients, 8);

    // Asynchronous askers: 512 tasks on a runtime of their own, through one client whose lanes
    // run on that runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let task_sequences: Vec<Vec<u64>> = runtime.block_on(async {
        let shared = Arc::new(
            OracleClient::connect_async(std::slice::from_ref(&addr), ClientConfig::default())
                .await
                .unwrap(),
        );
        let tasks: Vec<_> = (0..512)
            .map(|_| {
                let c = Arc::clone(&shared);
                tokio::spawn(async move {
                    let mut got = Vec::with_capacity(200);
                    for _ in 0..200 {
                        got.push(c.get_timestamp_async().await.unwrap());
                    }
                    got
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });

    threads.wait_for_more(20_000);
    let (mut sequences, errors) = threads.finish();
    assert!(errors.is_empty(), "{errors:?}");
    sequences.extend(task_sequences);
    let total = assert_unique_and_increasing(&sequences);
    assert!(total >= 512 * 200 + 20_000);

    // Nothing above the persisted top was ever served.
    let max = sequences.iter().flatten().max().copied().unwrap();
    assert!(
        max <= store.top(),
        "served {max} above persisted top {}",
        store.top()
    );
    let stats = sync_clients[0].server_stats().unwrap();
    assert!(
        stats.timestamps > stats.requests,
        "concurrent askers were batched: {stats:?}"
    );
}

#[test]
fn a_restarted_server_continues_above_everything_served_before() {
    let store = MemoryStore::new();
    let mut last = 0;
    for _ in 0..5 {
        let server = OracleServer::start_local(store.clone()).unwrap();
        let c = client(&server.local_addr().to_string(), 2);
        let got = c.get_timestamps(1000).unwrap();
        assert!(got[0] > last, "{} after {last}", got[0]);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        last = *got.last().unwrap();
        drop(c);
        server.shutdown().unwrap();
        assert!(store.top() >= last);
    }
}

/// A wall clock the test sets by hand.
struct ManualClock(AtomicU64);

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

const T0: u64 = 1_800_000_000_000;

fn server_with_clock(clock: Arc<ManualClock>) -> percolator::OracleHandle {
    let config = ServerConfig {
        clock,
        ..ServerConfig::default()
    };
    OracleServer::start("127.0.0.1:0", MemoryStore::new(), config).unwrap()
}

#[test]
fn a_clock_stepping_backwards_never_moves_timestamps_back() {
    let clock = Arc::new(ManualClock(AtomicU64::new(T0 + 10_000)));
    let server = server_with_clock(Arc::clone(&clock));
    let c = client(&server.local_addr().to_string(), 1);
    let before = c.get_timestamp().unwrap();
    assert_eq!(physical_of(before), T0 + 10_000);
    clock.0.store(T0, Ordering::SeqCst);
    let after = c.get_timestamps(100).unwrap();
    assert!(after[0] > before);
    assert!(after.iter().all(|&t| physical_of(t) == T0 + 10_000));
    clock.0.store(T0 + 10_001, Ordering::SeqCst);
    assert_eq!(c.get_timestamp().unwrap(), compose(T0 + 10_001, 0));
}

#[test]
fn overflowing_the_logical_counter_moves_to_the_next_millisecond() {
    let clock = Arc::new(ManualClock(AtomicU64::new(T0)));
    let server = server_with_clock(Arc::clone(&clock));
    let c = client(&server.local_addr().to_string(), 1);
    // The clock stands still while more than a millisecond's worth of timestamps is taken.
    let mut all = Vec::new();
    while (all.len() as u64) < LOGICAL_PER_MS + 10 {
        all.extend(c.get_timestamps(60_000).unwrap());
    }
    assert!(all.windows(2).all(|w| w[0] < w[1]), "never wraps");
    assert_eq!(physical_of(all[0]), T0);
    assert!(physical_of(*all.last().unwrap()) > T0);
}

/// On a one-worker runtime (the embedded stack's), askers that one event wakes together go out
/// as one request: the lane lets the tasks already runnable join before it takes the batch.
/// Without that, the first asker's wake-up ran the lane at once and it sent that asker alone.
#[test]
fn askers_woken_together_on_one_worker_share_one_request() {
    let server = OracleServer::start_local(MemoryStore::new()).unwrap();
    let addrs = [server.local_addr().to_string()];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = ClientConfig {
            connections: 1,
            ..ClientConfig::default()
        };
        let client = Arc::new(OracleClient::connect_async(&addrs, config).await.unwrap());
        client.get_timestamp_async().await.unwrap();
        let before = client.server_stats_async().await.unwrap().requests;
        let (go, ready) = tokio::sync::watch::channel(false);
        let askers: Vec<_> = (0..8)
            .map(|_| {
                let (client, mut ready) = (Arc::clone(&client), ready.clone());
                tokio::spawn(async move {
                    ready.wait_for(|go| *go).await.unwrap();
                    client.get_timestamp_async().await.unwrap()
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        tokio::spawn(async move { go.send(true).unwrap() })
            .await
            .unwrap();
        let mut got = Vec::new();
        for asker in askers {
            got.push(asker.await.unwrap());
        }
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 8, "every asker got a timestamp of its own");
        let after = client.server_stats_async().await.unwrap().requests;
        assert_eq!(after - before, 1, "the eight askers shared one request");
    });
    server.shutdown().unwrap();
}
