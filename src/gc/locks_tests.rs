//! The lock pass's forcing bound (docs/gc.md): only locks that started below the safe point are
//! decided without waiting for their owner. A lock exactly at the safe point may belong to the
//! oldest open transaction, the one the safe point was held down for; the pass can meet it
//! only through a primary, so that is how the script reaches it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::format::{decode_lock_state, LockState};
use crate::gc::locks::resolve_below;
use crate::key::CellKey;
use crate::test_stack::Stack;
use crate::txn::actions;
use crate::txn::{LivenessConfig, RetryPolicy, Schema};
use crate::Error;

const TABLE: &str = "gc_locks_bound";

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.expect("clock after 1970").as_millis() as u64
}

#[test]
fn a_live_lock_at_the_safe_point_met_through_a_primary_is_waited_on_not_rolled_back() {
    let _failpoints_off = crate::txn::failpoints_off();
    let stack = Stack::start().expect("embedded stack");
    let liveness = LivenessConfig {
        table: "gc_locks_liveness".into(),
        ttl_secs: 10,
        ..LivenessConfig::default()
    };
    let options = stack.txn_options(liveness).expect("liveness table");
    let retry = RetryPolicy::new(2, Duration::from_millis(1), Duration::from_millis(1));
    let client = stack
        .client(options.to_builder().retry(retry).build())
        .expect("client");
    let schema = Schema::default();
    crate::txn::setup::create_table(&stack.hbase, &schema, TABLE, &["f"]).expect("table");
    let key = |row: &str| CellKey::new(TABLE, row, "f", "q").expect("key");
    let (p, s) = (key("p"), key("s"));
    let prewrite = |put: actions::HandPut, key: &CellKey| {
        let cam = put.prewrite(&schema, key, true);
        assert!(stack.hbase.check_and_mutate(TABLE, &cam).expect("prewrite"));
        put
    };

    // T1 died long ago after locking its secondary s; its primary p was never locked by it.
    let t1 = stack.tso.get_timestamp().expect("ts");
    prewrite(actions::HandPut::new(t1, &p, "gone", (0, 1_000), b"v"), &s);
    // T2, this live client's transaction, has since locked p as its own primary, and the safe
    // point is exactly its start_ts.
    let t2 = stack.tso.get_timestamp().expect("ts");
    let live = actions::HandPut::new(t2, &p, client.owner_id(), (now_ms(), 60_000), b"v");
    let t2_primary = prewrite(live, &p);

    let async_client = client.asynchronous();
    let tables = [TABLE.to_string()];
    let pass = resolve_below(async_client.ctx(), &tables, t2, &|| false);
    let outcome = crate::runtime::wait(async_client.runtime(), pass);
    assert!(
        matches!(outcome, Err(Error::KeyLocked { lock_ts, .. }) if lock_ts == t1),
        "s stays locked while T2 holds p: {outcome:?}"
    );
    let stored = stack
        .hbase
        .get(
            TABLE,
            &crate::hbase::Get::new(b"p".to_vec())
                .column(schema.lock_family.clone(), schema.qualifier(&p)),
        )
        .expect("read p's lock");
    let state = decode_lock_state(stored.value(&schema.lock_family, &schema.qualifier(&p)));
    assert!(
        matches!(state, Ok(LockState::Locked(ref l)) if l.start_ts == t2),
        "T2's lock on p was taken from it: {state:?}"
    );
    let commit_ts = stack.tso.get_timestamp().expect("ts");
    let commit = t2_primary.commit(&schema, &p, commit_ts);
    assert!(
        stack
            .hbase
            .check_and_mutate(TABLE, &commit)
            .expect("commit"),
        "T2 can no longer commit"
    );
    client.shutdown();
}
