//! Partition leases against an embedded emulator: what a renewal costs, and what it does when
//! the lease moved under it.

use crate::hbase::Put;
use crate::observer::lease::{Leases, Partition, LEASE_Q};
use crate::observer::run_tests::stack_and_client;
use crate::txn::meta::META_FAMILY;

#[test]
fn a_held_lease_is_renewed_with_one_call_and_a_moved_one_is_read_again() {
    let (stack, client) = stack_and_client();
    let runtime = client.asynchronous().runtime().clone();
    let async_client = client.asynchronous();
    let leases = |owner| Leases {
        ctx: async_client.ctx(),
        owner,
        ttl_ms: 60_000,
    };
    let p = &Partition::all("leased", 4)[1];

    let held = crate::runtime::wait(&runtime, leases("w1").acquire(p))
        .expect("acquire")
        .expect("w1 takes it");
    assert_eq!(
        crate::runtime::wait(&runtime, leases("w2").acquire(p)).expect("acquire"),
        None,
        "w1 holds it"
    );

    // Renewing what w1 stored is one CAS on that value: no read first.
    let before = stack.hbase.rpc_count();
    let renewed = crate::runtime::wait(&runtime, leases("w1").renew(p, &held))
        .expect("renew")
        .expect("still w1's");
    assert_eq!(stack.hbase.rpc_count() - before, 1);

    // Another worker took the lease (written here by hand): w1's renewal fails its CAS,
    // reads the lease, and gives it up.
    let meta = &async_client.ctx().schema().meta_table;
    let expired = Put::new(p.lease_row()).add(META_FAMILY, LEASE_Q, "w2\n1");
    stack.hbase.put(meta, &expired).expect("expire w1's lease");
    let taken = crate::runtime::wait(&runtime, leases("w2").acquire(p))
        .expect("acquire")
        .expect("w2 takes it");
    assert_eq!(
        crate::runtime::wait(&runtime, leases("w1").renew(p, &renewed)).expect("renew"),
        None
    );
    assert!(
        crate::runtime::wait(&runtime, leases("w2").renew(p, &taken))
            .expect("renew")
            .is_some()
    );
}
