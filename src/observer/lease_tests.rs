//! Partition leases against an embedded emulator: what a renewal costs, and what it does when
//! the lease moved under it.

use std::collections::HashSet;

use crate::format::meta::META_FAMILY;
use crate::hbase::Put;
use crate::observer::lease::{Leases, Partition, LEASE_Q};
use crate::observer::run_tests::stack_and_client;

#[test]
fn a_held_lease_is_renewed_with_one_call_and_a_moved_one_is_read_again() {
    let (stack, client) = stack_and_client();
    let runtime = client.asynchronous().runtime().clone();
    let async_client = client.asynchronous();
    let leases = |owner| Leases {
        ctx: async_client.ctx(),
        owner,
        ttl_ms: 60_000,
        worker_ttl_ms: 60_000,
    };
    let none = &HashSet::new();
    let p = &Partition::all("leased", 4)[1];

    let held = crate::runtime::wait(&runtime, leases("w1").acquire(p, none))
        .expect("acquire")
        .expect("w1 takes it");
    assert_eq!(
        crate::runtime::wait(&runtime, leases("w2").acquire(p, none)).expect("acquire"),
        None,
        "w1 holds it"
    );

    // Renewing what w1 stored is one CAS on that value: no read first.
    let before = stack.hbase.rpc_count();
    let renewed = crate::runtime::wait(&runtime, leases("w1").renew(p, &held, none))
        .expect("renew")
        .expect("still w1's");
    assert_eq!(stack.hbase.rpc_count() - before, 1);

    // Another worker took the lease (written here by hand): w1's renewal fails its CAS,
    // reads the lease, and gives it up.
    let meta = &async_client.ctx().schema().meta_table;
    let expired = Put::new(p.lease_row()).add(META_FAMILY, LEASE_Q, "w2\n1");
    stack.hbase.put(meta, &expired).expect("expire w1's lease");
    let taken = crate::runtime::wait(&runtime, leases("w2").acquire(p, none))
        .expect("acquire")
        .expect("w2 takes it");
    assert_eq!(
        crate::runtime::wait(&runtime, leases("w1").renew(p, &renewed, none)).expect("renew"),
        None
    );
    assert!(
        crate::runtime::wait(&runtime, leases("w2").renew(p, &taken, none))
            .expect("renew")
            .is_some()
    );
}

/// A dead worker (its row expired) does not count as live, and its lease is taken over before
/// the lease expires; a live worker's is not.
#[test]
fn a_dead_workers_lease_is_taken_before_it_expires() {
    let (stack, client) = stack_and_client();
    let runtime = client.asynchronous().runtime().clone();
    let async_client = client.asynchronous();
    let leases = |owner, worker_ttl_ms| Leases {
        ctx: async_client.ctx(),
        owner,
        ttl_ms: 60_000,
        worker_ttl_ms,
    };
    macro_rules! wait {
        ($f:expr) => {
            crate::runtime::wait(&runtime, $f)
        };
    }
    let p = &Partition::all("dead_owner", 4)[2];
    let t = "dead_owner";

    // w1's row expires at once (worker ttl 0); w2's lives for a minute.
    wait!(leases("w1", 0).heartbeat(t)).expect("heartbeat");
    wait!(leases("w2", 60_000).heartbeat(t)).expect("heartbeat");
    wait!(leases("w1", 0).acquire(p, &HashSet::new()))
        .expect("acquire")
        .expect("w1 takes it");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let workers = wait!(leases("w2", 60_000).workers(t)).expect("workers");
    assert_eq!(workers.live, 1, "w1's row has expired");
    assert_eq!(workers.dead, HashSet::from(["w1".to_string()]));
    assert_eq!(
        wait!(leases("w2", 60_000).acquire(p, &HashSet::new())).expect("acquire"),
        None,
        "the lease has not expired"
    );
    assert!(wait!(leases("w2", 60_000).acquire(p, &workers.dead))
        .expect("acquire")
        .is_some());
    // Not the other way round: w2 is alive.
    let seen = wait!(leases("w1", 0).workers(t)).expect("workers");
    assert!(!seen.dead.contains("w2"));
    assert_eq!(
        wait!(leases("w1", 0).acquire(p, &seen.dead)).expect("acquire"),
        None
    );
    let _ = &stack;
}

/// Killed workers' rows pile up between rounds, so a table can have more worker rows than one
/// read returns. Every live worker must still be counted (an undercount makes each worker claim
/// more than its share) and every long-dead row deleted; read here 4 rows per call.
#[test]
fn worker_rows_beyond_one_read_are_all_counted_and_long_dead_ones_removed() {
    let (stack, client) = stack_and_client();
    let runtime = client.asynchronous().runtime().clone();
    let async_client = client.asynchronous();
    let leases = Leases {
        ctx: async_client.ctx(),
        owner: "reader",
        ttl_ms: 1_000,
        worker_ttl_ms: 60_000,
    };
    let meta = async_client.ctx().schema().meta_table.clone();
    let t = "crowded";
    let alive_until = async_client.ctx().now_ms() + 60_000;
    // Written by hand: 7 live workers, and 6 killed long ago (expiry 1 ms after the epoch).
    for (who, expires) in (0..7)
        .map(|i| (format!("live{i}"), alive_until))
        .chain((0..6).map(|i| (format!("killed{i}"), 1)))
    {
        let row = format!("obs-hash-worker/{t}/{who}");
        let put = Put::new(row).add(META_FAMILY, "obs:alive", expires.to_string());
        stack.hbase.put(&meta, &put).expect("worker row");
    }

    let workers = crate::runtime::wait(&runtime, leases.workers_in_pages(t, 4)).expect("workers");
    assert_eq!(workers.live, 7, "every live worker, not one read's worth");
    assert_eq!(workers.dead.len(), 6, "{:?}", workers.dead);

    let scan = crate::hbase::Scan::prefix(format!("obs-hash-worker/{t}/"));
    let left: Vec<String> = stack
        .hbase
        .scan(&meta, &scan)
        .expect("scan")
        .map(|r| String::from_utf8_lossy(&r.expect("row").row).into_owned())
        .collect();
    assert_eq!(left.len(), 7, "the killed workers' rows are gone: {left:?}");
    assert!(left.iter().all(|r| r.contains("/live")), "{left:?}");
}

/// A released partition taken at once by another worker stays taken: the release must not
/// hide that worker's lease (a delete marker hides every put of its millisecond), or a third
/// worker takes the partition too and one of the second's stays unowned until it notices.
#[test]
fn a_lease_taken_right_after_its_release_is_not_taken_again() {
    let (stack, client) = stack_and_client();
    let runtime = client.asynchronous().runtime().clone();
    let async_client = client.asynchronous();
    let leases = |owner| Leases {
        ctx: async_client.ctx(),
        owner,
        ttl_ms: 60_000,
        worker_ttl_ms: 60_000,
    };
    let none = HashSet::new();
    macro_rules! wait {
        ($f:expr) => {
            crate::runtime::wait(&runtime, $f)
        };
    }
    // Many rounds, so that many a release and the next take share a millisecond.
    for (i, p) in Partition::all("handover", 200).iter().enumerate() {
        assert!(wait!(leases("w1").acquire(p, &none)).unwrap().is_some());
        wait!(leases("w1").release(p)).unwrap();
        assert!(wait!(leases("w2").acquire(p, &none)).unwrap().is_some());
        assert_eq!(
            wait!(leases("w3").acquire(p, &none)).unwrap(),
            None,
            "round {i}: w3 took the partition w2 had just taken"
        );
    }
    let _ = &stack;
}
