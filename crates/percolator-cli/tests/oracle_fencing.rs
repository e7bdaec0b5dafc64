//! Two oracles on one shared store (the in-memory store, and the HBase cell on the emulator):
//! the newer one fences the older, which stops serving before the newer one starts; no
//! timestamp repeats, and a client with both addresses fails over.

mod oracle_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hbase_emulator as emulator;
use oracle_common::{assert_unique_and_increasing, wait_until};
use percolator::oracle::{
    ClientConfig, HBaseStore, MemoryStore, OracleHandle, OracleServer, ServerConfig, WindowStore,
};
use percolator::{Error, OracleClient};

const LEASE: Duration = Duration::from_secs(1);

fn impatient(addrs: &[String]) -> OracleClient {
    let config = ClientConfig {
        request_timeout: Duration::from_millis(200),
        ..ClientConfig::default()
    };
    OracleClient::connect(addrs, config).unwrap()
}

/// Each call of `store` is a new would-be owner of the same stored window; `start_old` starts
/// the older oracle on it.
fn newer_fences_older_and_they_never_serve_at_the_same_time<S: WindowStore>(
    store: impl Fn() -> S,
    start_old: impl FnOnce(S) -> OracleHandle,
) {
    let old = start_old(store());
    let old_client = Arc::new(impatient(&[old.local_addr().to_string()]));

    // Hammer the old oracle, noting when each ask started and how it ended.
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let (c, stop) = (Arc::clone(&old_client), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut log = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                log.push((started, c.get_timestamp()));
            }
            log
        })
    };
    std::thread::sleep(Duration::from_millis(200));

    let new = OracleServer::start("127.0.0.1:0", store(), ServerConfig::default()).unwrap();
    let new_client = impatient(&[new.local_addr().to_string()]);
    let mut first_new = None;
    wait_until("the new oracle to serve", || {
        first_new = new_client
            .get_timestamp()
            .ok()
            .map(|ts| (Instant::now(), ts));
        first_new.is_some()
    });
    let first_new = first_new.unwrap();
    let mut new_seq = vec![first_new.1];
    new_seq.extend(new_client.get_timestamps(100).unwrap());
    wait_until("the old oracle to notice it was fenced", || {
        old.is_finished()
    });
    stop.store(true, Ordering::Relaxed);
    let old_log = hammer.join().unwrap();

    // Every ask the old oracle answered started before the new one answered anything.
    let old_seq: Vec<u64> = old_log
        .iter()
        .filter_map(|(started, r)| r.as_ref().ok().map(|ts| (started, *ts)))
        .inspect(|(started, ts)| {
            assert!(
                **started < first_new.0,
                "old oracle served {ts} after the new one served {}",
                first_new.1
            )
        })
        .map(|(_, ts)| ts)
        .collect();
    assert!(
        !old_seq.is_empty(),
        "the old oracle served before being fenced"
    );
    assert!(old_log.iter().any(|(_, r)| r.is_err()), "and then stopped");
    assert!(old_seq.last().unwrap() < &first_new.1);
    assert_unique_and_increasing(&[old_seq, new_seq]);
    assert!(matches!(old.shutdown(), Err(Error::OracleFenced { .. })));
    new.shutdown().unwrap();
}

#[test]
fn on_the_memory_store_a_newer_oracle_fences_the_older() {
    let shared = MemoryStore::with_lease(LEASE);
    newer_fences_older_and_they_never_serve_at_the_same_time(|| shared.clone(), on_its_thread);
}

#[test]
fn an_oracle_served_on_a_shared_runtime_is_fenced_and_stops_like_one_on_its_own_thread() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let shared = MemoryStore::with_lease(LEASE);
    newer_fences_older_and_they_never_serve_at_the_same_time(
        || shared.clone(),
        |store| {
            OracleServer::start_on(
                runtime.handle(),
                "127.0.0.1:0",
                store,
                ServerConfig::default(),
            )
            .unwrap()
        },
    );
    // The runtime outlives the oracle's tasks and is still usable.
    assert_eq!(runtime.block_on(async { 7 }), 7);
}

fn on_its_thread<S: WindowStore>(store: S) -> OracleHandle {
    OracleServer::start("127.0.0.1:0", store, ServerConfig::default()).unwrap()
}

#[test]
fn on_the_hbase_store_a_newer_oracle_fences_the_older() {
    let emu = emulator::start_local().unwrap();
    let addr = emu.local_addr().to_string();
    newer_fences_older_and_they_never_serve_at_the_same_time(
        || HBaseStore::connect(&addr, "oracle_fencing", LEASE).unwrap(),
        on_its_thread,
    );
}

#[test]
fn a_client_with_both_addresses_fails_over_to_the_newer_oracle() {
    let store = MemoryStore::with_lease(LEASE);
    let old = OracleServer::start("127.0.0.1:0", store.clone(), ServerConfig::default()).unwrap();
    let old_addr = old.local_addr().to_string();
    let client = OracleClient::connect(&[old_addr], ClientConfig::default()).unwrap();
    let mut seq = client.get_timestamps(10).unwrap();
    // Same address list, new server on a second address: the old one is fenced and exits.
    let new = OracleServer::start("127.0.0.1:0", store.clone(), ServerConfig::default()).unwrap();
    let both = [old.local_addr().to_string(), new.local_addr().to_string()];
    let failing_over = OracleClient::connect(&both, ClientConfig::default()).unwrap();
    wait_until("the old oracle to be fenced", || {
        seq.push(failing_over.get_timestamp().unwrap());
        old.is_finished()
    });
    for _ in 0..100 {
        seq.push(failing_over.get_timestamp().unwrap());
    }
    assert_unique_and_increasing(&[seq]);
    assert!(matches!(old.shutdown(), Err(Error::OracleFenced { .. })));
}
