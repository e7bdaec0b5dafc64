//! Faults the protocol must survive, always run (no feature needed): crashes injected at run
//! time at every seam, lost replies (DESIGN.md invariant 7), the commit timestamp's place
//! (invariant 9), damaged records, bad input, liveness and heartbeats, retries, the async
//! facade and the RPC counters.

mod txn_support;

use std::sync::Arc;
use std::time::Duration;

use percolator::hbase::{FamilyDescriptor, Get, Put, TableDescriptor};
use percolator::txn::codec::{LockState, WriteKind};
use percolator::txn::{Clock, Seam, SystemClock, Transaction};
use percolator::{Client, Error, RetryClass, TxnOptions};
use txn_support::crash::crash_scenario;
use txn_support::faulty::{CasKind, Fault, FaultyStore, Gate, ProbingTso};
use txn_support::{Env, FAMILY};

const GATE_LIMIT: Duration = Duration::from_secs(10);

fn value(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}

fn get(txn: &Transaction, table: &str, row: &str) -> Option<Vec<u8>> {
    txn.get(table, row, FAMILY, "q").unwrap()
}

/// A table with rows p and s committed at "0" (their lock cells exist, so every prewrite CAS
/// is applied at the first try).
fn seeded(env: &Env) -> String {
    let t = env.table("faults");
    let client = env.client();
    client
        .run(|txn| {
            txn.set(&t, "p", FAMILY, "q", "0")?;
            txn.set(&t, "s", FAMILY, "q", "0")
        })
        .unwrap();
    client.shutdown();
    t
}

/// Commits p = s = "1" through `client`; p is the primary.
fn write_p_and_s(client: &Client, t: &str) -> percolator::Result<u64> {
    let mut txn = client.begin()?;
    txn.set(t, "p", FAMILY, "q", "1")?;
    txn.set(t, "s", FAMILY, "q", "1")?;
    txn.commit()
}

/// Reads p and s in one snapshot with a fresh client (resolving what it meets).
fn read_p_and_s(env: &Env, t: &str) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let reader = env.client();
    let txn = reader.begin().unwrap();
    let both = (get(&txn, t, "p"), get(&txn, t, "s"));
    reader.shutdown();
    both
}

fn has_put_record(env: &Env, t: &str, row: &str, commit_ts: u64) -> bool {
    env.writes(&env.key(t, row))
        .iter()
        .any(|(v, r)| *v == commit_ts as i64 && r.kind == WriteKind::Put)
}

// ---- crashes injected at run time (the failpoint suite runs the same scenario) ----

fn injected_crash(seam: Seam) {
    let env = Env::start();
    crash_scenario(&env, seam, |options| {
        env.client_with(TxnOptions {
            crash_injector: Some(Arc::new(move |at| at == seam)),
            ..options
        })
    });
}

#[test]
fn injected_crash_after_primary_prewrite_rolls_back() {
    injected_crash(Seam::AfterPrimaryPrewrite);
}

#[test]
fn injected_crash_after_secondary_prewrite_rolls_back() {
    injected_crash(Seam::AfterSecondaryPrewrite);
}

#[test]
fn injected_crash_before_primary_commit_rolls_back() {
    injected_crash(Seam::BeforePrimaryCommit);
}

#[test]
fn injected_crash_after_primary_commit_rolls_forward() {
    injected_crash(Seam::AfterPrimaryCommit);
}

#[test]
fn injected_crash_between_secondary_commits_rolls_forward() {
    injected_crash(Seam::BetweenSecondaryCommits);
}

// ---- invariant 7: lost replies ----

/// Commits p = s = "1" through a store that applies `fault` to `kind` on `row` `times` times.
fn commit_with_fault(
    kind: CasKind,
    row: &str,
    fault: Fault,
    times: usize,
) -> (Env, String, Client, percolator::Result<u64>) {
    let env = Env::start();
    let t = seeded(&env);
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    store.inject(kind, row, fault, times);
    let client = env.client_on(store.clone(), env.tso.clone(), env.options());
    let outcome = write_p_and_s(&client, &t);
    assert!(
        store.fired().contains(&(kind, row.as_bytes().to_vec())),
        "the fault was never applied"
    );
    (env, t, client, outcome)
}

/// The commit reported success: both cells carry its write record and read "1", no lock left.
fn assert_committed(env: &Env, t: &str, outcome: percolator::Result<u64>) {
    let commit_ts = outcome.expect("the commit reports success");
    assert_eq!(read_p_and_s(env, t), (value("1"), value("1")));
    assert!(has_put_record(env, t, "p", commit_ts) && has_put_record(env, t, "s", commit_ts));
    env.assert_no_locks(t);
}

#[test]
fn lost_reply_of_primary_prewrite_is_settled_by_a_reread() {
    let (env, t, client, outcome) = commit_with_fault(CasKind::Prewrite, "p", Fault::LoseReply, 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

#[test]
fn lost_reply_of_secondary_prewrite_is_settled_by_a_reread() {
    let (env, t, client, outcome) = commit_with_fault(CasKind::Prewrite, "s", Fault::LoseReply, 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

#[test]
fn lost_reply_of_primary_commit_still_reports_success() {
    let (env, t, client, outcome) = commit_with_fault(CasKind::Commit, "p", Fault::LoseReply, 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

#[test]
fn lost_reply_of_secondary_commit_is_harmless() {
    let (env, t, client, outcome) = commit_with_fault(CasKind::Commit, "s", Fault::LoseReply, 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

#[test]
fn dropped_primary_prewrite_is_sent_again() {
    let (env, t, client, outcome) =
        commit_with_fault(CasKind::Prewrite, "p", Fault::DropRequest, 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

/// Success is reported only for a commit that is stored: the re-read finds the lock still
/// ours, so the commit is sent again and lands.
#[test]
fn dropped_primary_commit_is_sent_again_before_success_is_reported() {
    let (env, t, client, outcome) = commit_with_fault(CasKind::Commit, "p", Fault::DropRequest, 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

/// A commit point that never gets through is `CommitUndetermined`, never success; once its
/// client is gone the transaction is rolled back everywhere.
#[test]
fn unreachable_commit_point_is_undetermined_and_never_half_applied() {
    let (env, t, client, outcome) =
        commit_with_fault(CasKind::Commit, "p", Fault::DropRequest, usize::MAX);
    let err = outcome.expect_err("nothing was applied: it must not report success");
    assert_eq!(err.retry_class(), RetryClass::Undetermined);
    let Error::CommitUndetermined { commit_ts, .. } = err else {
        panic!("expected CommitUndetermined, got {err}");
    };
    assert!(!has_put_record(&env, &t, "p", commit_ts));
    client.kill();
    assert_eq!(read_p_and_s(&env, &t), (value("0"), value("0")));
    env.assert_no_locks(&t);
}

/// A secondary commit that never arrived leaves its lock; readers roll it forward.
#[test]
fn dropped_secondary_commit_is_rolled_forward_by_readers() {
    let (env, t, client, outcome) = commit_with_fault(CasKind::Commit, "s", Fault::DropRequest, 1);
    let commit_ts = outcome.expect("the commit point passed");
    assert!(matches!(
        env.lock_state(&env.key(&t, "s")),
        LockState::Locked(_)
    ));
    let reader = env.client();
    assert_eq!(get(&reader.begin().unwrap(), &t, "s"), value("1"));
    assert_eq!(reader.stats().rolled_forward, 1);
    assert!(has_put_record(&env, &t, "s", commit_ts));
    env.assert_no_locks(&t);
    reader.shutdown();
    client.shutdown();
}

// ---- invariant 9: commit_ts after every lock ----

#[test]
fn commit_timestamp_is_taken_after_every_lock_is_stored() {
    let env = Env::start();
    let (t1, t2) = (env.table("ts_a"), env.table("ts_b"));
    let one = vec![env.key(&t1, "solo")];
    let three = vec![env.key(&t1, "a"), env.key(&t1, "b"), env.key(&t2, "c")];
    for cells in [one, three] {
        // A transaction's first timestamp is its start_ts, the second its commit_ts.
        let probe = ProbingTso::new(&env, cells.clone(), 2);
        let client = env.client_on(Arc::new(env.hbase.clone()), probe.clone(), env.options());
        let mut txn = client.begin().unwrap();
        let start_ts = txn.start_ts();
        for k in &cells {
            txn.set(&k.table, &k.row, &k.family, &k.qualifier, "v")
                .unwrap();
        }
        txn.commit().unwrap();
        assert_eq!(probe.calls(), 2, "one start and one commit timestamp");
        let seen = probe.seen().expect("the commit timestamp was asked for");
        for (k, state) in cells.iter().zip(seen) {
            assert!(
                matches!(&state, LockState::Locked(l) if l.start_ts == start_ts),
                "{k} was {state:?} when the commit timestamp was taken"
            );
        }
        client.shutdown();
    }
}

// ---- damaged records ----

fn assert_corrupted(err: Error, what: &str, table: &str, row: &str) {
    match &err {
        Error::Corrupted {
            what: w,
            table: tb,
            row: r,
            column,
            ..
        } => {
            assert_eq!((*w, tb.as_str(), &r[..]), (what, table, row.as_bytes()));
            assert_eq!(column, b"f:q");
        }
        other => panic!("expected Corrupted, got {other}"),
    }
    assert_eq!(err.retry_class(), RetryClass::Fatal);
}

#[test]
fn garbage_lock_cell_is_reported_and_left_intact() {
    let env = Env::start();
    let t = env.table("damaged");
    let client = env.client();
    for (i, garbage) in [vec![0x01, 0xde, 0xad], vec![0xff]].into_iter().enumerate() {
        let (bad, good) = (format!("bad{i}"), format!("good{i}"));
        let key = env.key(&t, &bad);
        let put = Put::new(bad.clone()).add(
            env.schema.lock_family.clone(),
            env.schema.qualifier(&key),
            garbage.clone(),
        );
        env.hbase.put(&t, &put).unwrap();

        let err = client
            .begin()
            .unwrap()
            .get(&t, &bad, FAMILY, "q")
            .unwrap_err();
        assert_corrupted(err, "lock", &t, &bad);
        let err = client.begin().unwrap().scan(&t, &bad, "", 10).unwrap_err();
        assert_corrupted(err, "lock", &t, &bad);
        let mut txn = client.begin().unwrap();
        txn.set(&t, &good, FAMILY, "q", "v").unwrap();
        txn.set(&t, &bad, FAMILY, "q", "v").unwrap();
        assert_corrupted(txn.commit().unwrap_err(), "lock", &t, &bad);

        assert_eq!(env.raw_lock(&key), Some(garbage), "stored bytes unchanged");
        assert!(env.data_versions(&key).is_empty());
        let good = env.key(&t, &good);
        assert!(
            !matches!(env.lock_state(&good), LockState::Locked(_)),
            "own lock rolled back"
        );
        assert!(env.data_versions(&good).is_empty());
    }
    client.shutdown();
}

#[test]
fn garbage_write_record_is_reported_and_left_intact() {
    let env = Env::start();
    let t = env.table("damaged");
    let client = env.client();
    let key = env.key(&t, "x");
    let version = env.ts();
    let put = Put::new("x").add_at(
        env.schema.write_family.clone(),
        env.schema.qualifier(&key),
        version as i64,
        vec![0xff],
    );
    env.hbase.put(&t, &put).unwrap();

    let err = client
        .begin()
        .unwrap()
        .get(&t, "x", FAMILY, "q")
        .unwrap_err();
    assert_corrupted(err, "write record", &t, "x");
    let err = client.begin().unwrap().scan(&t, "a", "z", 10).unwrap_err();
    assert_corrupted(err, "write record", &t, "x");
    let mut attempts = 0;
    let err = client
        .run(|txn| {
            attempts += 1;
            let n = txn.get(&t, "x", FAMILY, "q")?.map_or(0, |v| v.len());
            txn.set(&t, "x", FAMILY, "q", vec![b'1'; n + 1])
        })
        .unwrap_err();
    assert_corrupted(err, "write record", &t, "x");
    assert_eq!(attempts, 1, "a fatal error is not retried");
    assert_eq!(env.raw_writes(&key), [(version as i64, vec![0xff])]);
    assert_eq!(env.raw_lock(&key), None);
    client.shutdown();
}

// ---- bad input ----

#[test]
fn oversized_value_is_refused_before_anything_is_written() {
    let env = Env::start();
    let t = env.table("big");
    let client = env.client();
    let limit = client.options().max_value_size;
    let mut txn = client.begin().unwrap();
    let rpcs = client.stats().hbase_rpcs;
    let err = txn
        .set(&t, "x", FAMILY, "q", vec![7u8; limit + 1])
        .unwrap_err();
    assert!(
        matches!(&err, Error::ValueTooLarge { size, limit: l, row, .. }
            if *size == limit + 1 && *l == limit && row == b"x"),
        "{err}"
    );
    assert_eq!(err.retry_class(), RetryClass::Fatal);
    assert_eq!((txn.rpc_count(), client.stats().hbase_rpcs), (0, rpcs));
    txn.set(&t, "x", FAMILY, "q", vec![7u8; limit]).unwrap();
    txn.commit().expect("a value at the limit is accepted");
    let x = env.key(&t, "x");
    assert_eq!(env.data_versions(&x).len(), 1);
    client.shutdown();
}

#[test]
fn missing_and_non_transactional_tables_are_refused() {
    let env = Env::start();
    let raw = txn_support::unique("plain");
    env.hbase
        .admin()
        .create_table(&TableDescriptor::new(raw.clone()).family(FamilyDescriptor::new("f")))
        .unwrap();
    let client = env.client();
    let missing = txn_support::unique("missing");

    let mut txn = client.begin().unwrap();
    txn.set(&missing, "r", FAMILY, "q", "v").unwrap();
    let err = txn.commit().unwrap_err();
    assert!(
        matches!(&err, Error::TableNotFound { table, .. } | Error::NotTransactional { table, .. } if *table == missing),
        "{err}"
    );
    let err = client
        .begin()
        .unwrap()
        .get(&missing, "r", FAMILY, "q")
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TableNotFound { .. } | Error::NotTransactional { .. }
        ),
        "{err}"
    );

    let mut txn = client.begin().unwrap();
    txn.set(&raw, "r", FAMILY, "q", "v").unwrap();
    let err = txn.commit().unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { table, .. } if *table == raw),
        "{err}"
    );
    let txn = client.begin().unwrap();
    let err = txn.get(&raw, "r", FAMILY, "q").unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { table, .. } if *table == raw),
        "{err}"
    );
    let err = txn.scan(&raw, "a", "z", 10).unwrap_err();
    assert!(
        matches!(&err, Error::NotTransactional { table, .. } if *table == raw),
        "{err}"
    );
    assert!(
        env.hbase.get(&raw, &Get::new("r")).unwrap().is_empty(),
        "nothing written to the plain table"
    );
    client.shutdown();
}

#[test]
fn empty_row_key_is_an_illegal_argument() {
    let env = Env::start();
    let t = env.table("empty");
    let client = env.client();
    let mut txn = client.begin().unwrap();
    let illegal = |r: percolator::Result<()>| {
        let err = r.unwrap_err();
        assert!(matches!(err, Error::IllegalArgument { .. }), "{err}");
        assert_eq!(err.retry_class(), RetryClass::Fatal);
    };
    illegal(txn.set(&t, "", FAMILY, "q", "v"));
    illegal(txn.delete(&t, "", FAMILY, "q"));
    illegal(txn.get(&t, "", FAMILY, "q").map(drop));
    assert_eq!(txn.rpc_count(), 0);
    let start_ts = txn.start_ts();
    assert_eq!(txn.commit().unwrap(), start_ts, "nothing was buffered");
    client.shutdown();
}

// ---- liveness ----

/// A client committing p = s = "1" whose secondary prewrite waits at the returned gate: its
/// primary is locked and guarded by its keeper meanwhile.
fn paused_committer(
    env: &Env,
    lock_ttl: Duration,
    kind: CasKind,
    row: &str,
) -> (Client, Arc<Gate>) {
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(kind, row, Fault::Hold(gate.clone()), 1);
    let options = TxnOptions {
        lock_ttl,
        ..env.options()
    };
    (env.client_on(store, env.tso.clone(), options), gate)
}

fn reader_with(env: &Env, max_lock_wait: Duration, clock: Arc<dyn Clock>) -> Client {
    env.client_with(TxnOptions {
        max_lock_wait,
        clock,
        ..env.options()
    })
}

/// The owner's liveness row alone keeps its lock: while it lives, readers wait; once it is
/// killed (its row expires after the 1 s TTL) a reader rolls the transaction back, although
/// the lock's wall time is still fresh.
#[test]
fn live_owner_is_waited_on_and_a_killed_one_is_resolved() {
    let env = Env::start();
    let t = seeded(&env);
    let (holder, gate) = paused_committer(&env, Duration::from_secs(60), CasKind::Prewrite, "s");
    std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| write_p_and_s(&holder, &t));
        assert!(gate.wait_reached(GATE_LIMIT));
        // The primary is prewritten in parallel with the held secondary: wait for its lock.
        env.wait_until_locked(&env.key(&t, "p"));

        let impatient = reader_with(&env, Duration::from_millis(300), Arc::new(SystemClock));
        let err = impatient
            .begin()
            .unwrap()
            .get(&t, "p", FAMILY, "q")
            .unwrap_err();
        assert!(
            matches!(&err, Error::KeyLocked { primary_row, .. } if primary_row == b"p"),
            "{err}"
        );
        assert!(impatient.stats().lock_waits > 0);
        impatient.shutdown();

        holder.kill();
        let patient = env.client();
        assert_eq!(get(&patient.begin().unwrap(), &t, "p"), value("0"));
        assert!(patient.stats().rolled_back >= 1);
        patient.shutdown();

        gate.open();
        let err = committing.join().unwrap().unwrap_err();
        assert!(matches!(err, Error::RolledBack { .. }), "{err}");
    });
    assert_eq!(read_p_and_s(&env, &t), (value("0"), value("0")));
    env.assert_no_locks(&t);
}

/// A clock running ahead of the lock's wall time + TTL.
struct Ahead(Duration);

impl Clock for Ahead {
    fn now_ms(&self) -> u64 {
        SystemClock.now_ms() + self.0.as_millis() as u64
    }
}

/// A stale wall time is enough: a reader whose clock is past the lock's TTL cleans the lock of
/// an owner that is still alive, without waiting.
#[test]
fn stale_wall_time_lets_a_reader_clean_a_live_owners_lock() {
    let env = Env::start();
    let t = seeded(&env);
    let (holder, gate) = paused_committer(&env, Duration::from_secs(2), CasKind::Prewrite, "s");
    std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| write_p_and_s(&holder, &t));
        assert!(gate.wait_reached(GATE_LIMIT));
        // The primary is prewritten in parallel with the held secondary: wait for its lock.
        env.wait_until_locked(&env.key(&t, "p"));
        let reader = reader_with(
            &env,
            Duration::from_millis(300),
            Arc::new(Ahead(Duration::from_secs(3600))),
        );
        assert_eq!(get(&reader.begin().unwrap(), &t, "p"), value("0"));
        assert!(reader.stats().rolled_back >= 1);
        reader.shutdown();
        gate.open();
        let err = committing.join().unwrap().unwrap_err();
        assert!(matches!(err, Error::RolledBack { .. }), "{err}");
    });
    assert!(!holder.is_dead(), "the owner lived throughout");
    assert_eq!(read_p_and_s(&env, &t), (value("0"), value("0")));
    env.assert_no_locks(&t);
    holder.shutdown();
}

/// A commit point whose RPC is slow (here: longer than the 1 s liveness TTL) must not stop the
/// owner's keeper from refreshing its liveness row, or readers take a live client for dead.
#[test]
fn slow_commit_point_keeps_its_owner_alive() {
    let env = Env::start();
    let t = seeded(&env);
    let (holder, gate) = paused_committer(&env, Duration::from_secs(60), CasKind::Commit, "p");
    let (alive, committed, read) = std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| write_p_and_s(&holder, &t));
        assert!(gate.wait_reached(GATE_LIMIT));
        let reading = s.spawn(|| read_p_and_s(&env, &t));
        std::thread::sleep(Duration::from_secs(2));
        let liveness = env
            .hbase
            .get(&env.liveness.table, &Get::new(holder.owner_id()));
        gate.open();
        (
            !liveness.unwrap().is_empty(),
            committing.join().unwrap(),
            reading.join().unwrap(),
        )
    });
    assert!(
        alive,
        "the liveness row of a live client expired during its commit"
    );
    committed.expect("the slow commit succeeds");
    assert_eq!(read, (value("1"), value("1")));
    holder.shutdown();
}

/// Heartbeats: a commit whose prewrite phase outlasts the lock TTL (600 ms) keeps its primary
/// fresh, so a concurrent reader waits instead of rolling it back.
#[test]
fn heartbeat_keeps_a_slow_commit_alive() {
    let env = Env::start();
    let t = seeded(&env);
    let (holder, gate) = paused_committer(&env, Duration::from_millis(600), CasKind::Prewrite, "s");
    std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| write_p_and_s(&holder, &t));
        assert!(gate.wait_reached(GATE_LIMIT));
        // The primary is prewritten in parallel with the held secondary: wait for its lock.
        env.wait_until_locked(&env.key(&t, "p"));
        // The reader's snapshot is below the commit timestamp: once the lock clears it reads
        // the old value, but it must not clear it by rolling the transaction back.
        let reading = s.spawn(|| read_p_and_s(&env, &t));
        std::thread::sleep(Duration::from_millis(1500));
        gate.open();
        let commit_ts = committing
            .join()
            .unwrap()
            .expect("not rolled back by the reader");
        assert!(has_put_record(&env, &t, "p", commit_ts));
        assert_eq!(reading.join().unwrap(), (value("0"), value("0")));
    });
    assert!(holder.stats().heartbeats > 0);
    assert_eq!(read_p_and_s(&env, &t), (value("1"), value("1")));
    holder.shutdown();
}

// ---- Client::run ----

#[test]
fn run_retries_conflicts_until_every_increment_lands() {
    let env = Env::start();
    let t = env.table("counter");
    let clients = [env.client(), env.client()];
    std::thread::scope(|s| {
        for client in &clients {
            let t = &t;
            s.spawn(move || {
                for _ in 0..50 {
                    client
                        .run(|txn| {
                            let n: u64 = txn
                                .get(t, "n", FAMILY, "q")?
                                .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                            txn.set(t, "n", FAMILY, "q", (n + 1).to_string())
                        })
                        .unwrap();
                }
            });
        }
    });
    let total: u64 = clients.iter().map(|c| c.stats().committed).sum();
    assert_eq!(total, 100);
    assert_eq!(get(&clients[0].begin().unwrap(), &t, "n"), value("100"));
    for c in clients {
        c.shutdown();
    }
}

#[test]
fn run_stops_at_once_on_fatal_and_undetermined_errors() {
    let env = Env::start();
    let t = env.table("stops");
    let client = env.client();
    let mut attempts = 0;
    let err = client
        .run(|txn| {
            attempts += 1;
            txn.set(&t, "", FAMILY, "q", "v")
        })
        .unwrap_err();
    assert!(matches!(err, Error::IllegalArgument { .. }), "{err}");
    assert_eq!(attempts, 1);

    let crashing = env.client_with(TxnOptions {
        crash_injector: Some(Arc::new(|at| at == Seam::BeforePrimaryCommit)),
        ..env.options()
    });
    let mut attempts = 0;
    let err = crashing
        .run(|txn| {
            attempts += 1;
            txn.set(&t, "x", FAMILY, "q", "v")
        })
        .unwrap_err();
    assert!(matches!(err, Error::ClientCrashed { .. }), "{err}");
    assert_eq!((attempts, err.retry_class()), (1, RetryClass::Undetermined));
    client.shutdown();
}

// ---- async facade ----

/// One transaction's body blocks until the test has finished many other async transactions on
/// the same single-threaded runtime: that can only happen if none of them blocks the runtime.
#[tokio::test(flavor = "current_thread")]
async fn async_transactions_never_block_the_runtime() {
    let env = Env::start();
    let t = env.table("async");
    let client = env.client();
    let facade = client.asynchronous();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let waiter = {
        let (facade, t) = (facade.clone(), t.clone());
        let mut got = false;
        tokio::spawn(async move {
            facade
                .run(move |txn| {
                    if !got {
                        released
                            .recv_timeout(Duration::from_secs(20))
                            .map_err(|_| Error::IllegalArgument {
                                message: "never released: the runtime was blocked".into(),
                            })?;
                        got = true;
                    }
                    txn.set(&t, "waiter", FAMILY, "q", "done")
                })
                .await
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..48 {
        let (facade, t) = (facade.clone(), t.clone());
        tasks.spawn(async move {
            facade
                .run(move |txn| txn.set(&t, format!("row{i:02}"), FAMILY, "q", i.to_string()))
                .await
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }
    release.send(()).unwrap();
    waiter.await.unwrap().unwrap();
    for i in [0, 17, 47] {
        let key = env.key(&t, &format!("row{i:02}"));
        assert_eq!(facade.get(key).await.unwrap(), value(&i.to_string()));
    }
    assert_eq!(
        facade.get(env.key(&t, "waiter")).await.unwrap(),
        value("done")
    );
    client.shutdown();
}

// ---- RPC counters ----

#[test]
fn rpc_counters_follow_the_cost_model() {
    let env = Env::start();
    let (t1, t2) = (env.table("rpc_a"), env.table("rpc_b"));
    let client = env.client();
    let big = vec![b'b'; client.options().short_value_limit + 1];
    client
        .run(|txn| {
            txn.set(&t1, "x", FAMILY, "q", "short")?;
            txn.set(&t1, "x", FAMILY, "q2", "second")?;
            txn.set(&t1, "y", FAMILY, "q", big.clone())?;
            txn.set(&t2, "z", FAMILY, "q", "other")
        })
        .unwrap();

    let before = client.stats();
    let txn = client.begin().unwrap();
    assert_eq!(get(&txn, &t1, "x"), value("short"));
    assert_eq!(txn.rpc_count(), 1, "a committed short value: one Get");
    assert_eq!(get(&txn, &t1, "y"), Some(big.clone()));
    assert_eq!(
        txn.rpc_count(),
        3,
        "a large value: the Get and one data read"
    );
    let same_row = [
        env.key(&t1, "x"),
        percolator::CellKey::new(&*t1, "x", "f", "q2").unwrap(),
    ];
    txn.get_many(&same_row).unwrap();
    assert_eq!(txn.rpc_count(), 4, "two columns of one row: one Get");
    txn.get_many(&[env.key(&t1, "x"), env.key(&t2, "z")])
        .unwrap();
    assert_eq!(txn.rpc_count(), 6, "two tables: one Get each");
    let after = client.stats();
    assert_eq!(after.hbase_rpcs - before.hbase_rpcs, txn.rpc_count());
    assert_eq!(
        (
            after.begun - before.begun,
            after.timestamps - before.timestamps
        ),
        (1, 1)
    );

    // A write of two existing cells: 2 prewrite + 2 commit CAS, start and commit timestamps.
    let before = client.stats();
    client
        .run(|txn| {
            txn.set(&t1, "x", FAMILY, "q", "2")?;
            txn.set(&t2, "z", FAMILY, "q", "2")
        })
        .unwrap();
    let after = client.stats();
    assert_eq!(after.hbase_rpcs - before.hbase_rpcs, 4);
    assert_eq!(after.timestamps - before.timestamps, 2);
    assert_eq!(after.committed - before.committed, 1);

    // A lost write-write race counts as aborted.
    let mut loser = client.begin().unwrap();
    client
        .run(|txn| txn.set(&t1, "x", FAMILY, "q", "3"))
        .unwrap();
    loser.set(&t1, "x", FAMILY, "q", "4").unwrap();
    let aborted = client.stats().aborted;
    assert!(matches!(loser.commit(), Err(Error::WriteConflict { .. })));
    assert_eq!(client.stats().aborted, aborted + 1);
    client.shutdown();
}
