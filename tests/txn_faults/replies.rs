//! docs/design.md invariant 7 (a lost reply leaves the effect unknown: re-read before deciding) and
//! invariant 9 (the commit timestamp is taken only after every lock is stored). Replies are
//! lost inside the client's HBase access (`FaultyStore`), and on the wire by a proxy; the
//! gateway's own retries of an applied checkAndMutate (its region moved between the apply and
//! the reply) answer `false` for the client's own write, or an HBase error.

use std::sync::Arc;

use percolator::format::{decode_lock_state, LockState};
use percolator::hbase::{CheckAndMutate, Mutation};
use percolator::txn::actions;
use percolator::{Client, Error, HBaseClient, RetryClass};

use crate::txn_support::faulty::{CasKind, Fault, FaultyStore, Gate, ProbingTso, Rewrite};
use crate::txn_support::proxy::Proxy;
use crate::txn_support::{begin_now, Env};
use crate::{get, has_put_record, read_p_and_s, seeded, value, write_p_and_s, FAMILY};

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
    let Error::CommitUndetermined {
        commit_ts,
        start_ts,
        primary,
        ..
    } = err
    else {
        panic!("expected CommitUndetermined, got {err}");
    };
    assert_eq!(
        *primary,
        env.key(&t, "p"),
        "the error names the primary to ask about"
    );
    assert!(!has_put_record(&env, &t, "p", commit_ts));
    client.kill();
    // What the error carries is enough to learn the outcome from another client.
    let other = env.client();
    assert_eq!(other.transaction_status(&primary, start_ts).unwrap(), None);
    assert_eq!(read_p_and_s(&env, &t), (value("0"), value("0")));
    env.assert_no_locks(&t);
    other.shutdown();
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

/// A commit point whose outcome is unknown is settled by re-reading the primary. Found
/// committed at another commit_ts than the one sent (here the call that landed was not the
/// client's own), the transaction is committed but not as the client knows it: the outcome is
/// reported undetermined, never success at the client's commit_ts and never a rollback.
#[test]
fn a_primary_committed_at_another_timestamp_is_undetermined_not_rolled_back() {
    let env = Env::start();
    let t = seeded(&env);
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let (schema, primary) = (env.schema.clone(), env.key(&t, "p"));
    let elsewhere: Rewrite = Arc::new(move |cam: &CheckAndMutate| {
        let LockState::Locked(lock) = decode_lock_state(Some(&cam.value)).unwrap() else {
            panic!("a commit is conditional on a lock");
        };
        let commit_ts = cam
            .mutations
            .mutations
            .iter()
            .find_map(|m| match m {
                Mutation::Put(p) => p
                    .cells
                    .iter()
                    .find(|c| c.family == schema.write_family)
                    .and_then(|c| c.timestamp),
                Mutation::Delete(_) => None,
            })
            .expect("the write record's version") as u64;
        actions::commit(&schema, &primary, &lock, &cam.value, commit_ts + 1)
    });
    store.inject(CasKind::Commit, "p", Fault::Instead(elsewhere), 1);
    let client = env.client_on(store.clone(), env.tso.clone(), env.options());
    let err = write_p_and_s(&client, &t).expect_err("not a success at the client's commit_ts");
    assert!(
        matches!(err, Error::CommitUndetermined { .. }),
        "the primary is committed, at another timestamp: {err}"
    );
    assert_eq!(read_p_and_s(&env, &t), (value("1"), value("1")));
    client.shutdown();
}

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
        let start_ts = txn.start_ts().unwrap();
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

/// The harm the rule prevents: a snapshot taken while one of a commit's prewrites is still on
/// its way reads the old value there (no lock yet), so that commit must land above it. Its
/// commit timestamp is taken once every lock is stored, hence after that snapshot; one taken
/// before the prewrites would land below it, and the same snapshot, read again after the
/// commit, would show the new value: two reads of one snapshot that disagree.
#[test]
fn a_snapshot_taken_before_the_last_lock_never_sees_that_commit() {
    let env = Env::start();
    let t = seeded(&env);
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(CasKind::Prewrite, "s", Fault::Hold(gate.clone()), 1);
    let writer = env.client_on(store.clone(), env.tso.clone(), env.options());
    let reader = env.client();
    let (snapshot_ts, outcome) = std::thread::scope(|scope| {
        let _release = gate.opens_on_drop();
        let committing = scope.spawn(|| write_p_and_s(&writer, &t));
        assert!(
            gate.wait_reached(std::time::Duration::from_secs(10)),
            "the prewrite of s never went out"
        );
        let first = begin_now(&reader);
        assert_eq!(get(&first, &t, "s"), value("0"), "s is not locked yet");
        let snapshot_ts = first.start_ts().unwrap();
        gate.open();
        (snapshot_ts, committing.join().unwrap())
    });
    let commit_ts = outcome.expect("the commit goes through");
    let again = reader.snapshot(snapshot_ts).unwrap();
    assert_eq!(
        (get(&again, &t, "p"), get(&again, &t, "s")),
        (value("0"), value("0")),
        "the snapshot at {snapshot_ts} read s = 0 before the commit (commit_ts {commit_ts}) \
         and must read it so after"
    );
    assert_eq!(read_p_and_s(&env, &t), (value("1"), value("1")));
    reader.shutdown();
    writer.shutdown();
}

/// Replies lost on the wire, on whatever gateway the suite runs against: a proxy in front of it
/// loses the k-th reply it relays (and that connection) while a client commits p = s = "1",
/// for k = 0, 1, ... until a commit no longer meets the loss. Whichever call it hits (the
/// table's descriptor, a prewrite, the commit point, a secondary commit), the commit reports
/// the truth: success means committed everywhere, a retryable or fatal error means nothing
/// committed, and an undetermined one is all or nothing.
#[test]
fn a_reply_lost_on_the_wire_anywhere_in_a_commit_leaves_it_all_or_nothing() {
    const ROUNDS: usize = 12;
    let env = Env::start();
    if env.addr.starts_with("https://") {
        // The proxy counts whatever one read brings as a reply, and TLS handshake records
        // are read like replies: the k-th loss would not land on the commit's k-th call.
        eprintln!("skipped over https: the wire proxy cannot count replies inside TLS");
        return;
    }
    let t = env.table("wire");
    let rows = |k: usize| (format!("p{k}"), format!("s{k}"));
    let seeder = env.client();
    seeder
        .run(|txn| {
            for k in 0..ROUNDS {
                let (p, s) = rows(k);
                txn.set(&t, &p, FAMILY, "q", "0")?;
                txn.set(&t, &s, FAMILY, "q", "0")?;
            }
            Ok(())
        })
        .unwrap();
    seeder.shutdown();

    let proxy = Proxy::start(&env.addr);
    let mut hit = Vec::new();
    for k in 0..ROUNDS {
        let (p, s) = rows(k);
        let config = crate::txn_support::gateway::external_config(&proxy.addr_like(&env.addr));
        let hbase = HBaseClient::connect(config).unwrap();
        let client = env.client_on(Arc::new(hbase), env.tso.clone(), env.options());
        let lost_before = proxy.lost();
        proxy.lose_reply_after(k);
        let outcome = client.begin().and_then(|mut txn| {
            txn.set(&t, &p, FAMILY, "q", "1")?;
            txn.set(&t, &s, FAMILY, "q", "1")?;
            txn.commit()
        });
        proxy.lose_no_reply();
        let lost = proxy.lost() > lost_before;
        client.shutdown();

        // A fresh reader, straight to the gateway, resolves whatever the commit left.
        let reader = env.client();
        let txn = reader.begin().unwrap();
        let read = (get(&txn, &t, &p), get(&txn, &t, &s));
        reader.shutdown();
        match &outcome {
            Ok(commit_ts) => {
                assert_eq!(
                    read,
                    (value("1"), value("1")),
                    "k = {k}: reported committed"
                );
                for row in [&p, &s] {
                    assert!(has_put_record(&env, &t, row, *commit_ts), "k = {k}: {row}");
                }
            }
            Err(e) if e.retry_class() == RetryClass::Undetermined => {
                assert!(read.0 == read.1, "k = {k}: {e}: half committed: {read:?}");
            }
            Err(e) => assert_eq!(read, (value("0"), value("0")), "k = {k}: failed with {e}"),
        }
        env.assert_no_locks(&t);
        if !lost {
            break;
        }
        hit.push((k, outcome.map_err(|e| e.to_string())));
    }
    assert!(
        hit.len() >= 3 && hit.len() < ROUNDS,
        "the loss hit the commit at several points, then no more: {hit:?}"
    );
    println!("replies lost, and the outcomes: {hit:?}");
}

/// A prewrite and a commit of the primary (p) and of the secondary (s).
const EVERY_WRITING_STEP: [(CasKind, &str); 4] = [
    (CasKind::Prewrite, "p"),
    (CasKind::Prewrite, "s"),
    (CasKind::Commit, "p"),
    (CasKind::Commit, "s"),
];

/// The gateway's client retried a checkAndMutate that had already been applied: the answer is
/// `false`, for the client's own write. Taken for a conflict without reading back, a prewrite
/// would abort a transaction that holds its locks, and a commit point would report a commit
/// that landed as rolled back.
#[test]
fn a_gateway_retry_of_an_applied_cas_is_read_back_not_taken_for_a_conflict() {
    for (kind, row) in EVERY_WRITING_STEP {
        let (env, t, client, outcome) = commit_with_fault(kind, row, Fault::AppliedTwice, 1);
        assert!(outcome.is_ok(), "{kind:?} on {row}: {outcome:?}");
        assert_committed(&env, &t, outcome);
        client.shutdown();
    }
}

/// The gateway's client applied the checkAndMutate, its region moved before the reply, and it
/// gave up: the client gets an HBase error that names a region in transition (`Retry`).
/// Whatever the step, the transaction's outcome is right: the commit point is read back and
/// reported committed (so `run` does not do the transfer twice), and an earlier step either
/// commits or leaves nothing behind.
#[test]
fn a_gateway_that_gave_up_after_applying_leaves_the_outcome_right() {
    for (kind, row) in EVERY_WRITING_STEP {
        let (env, t, client, outcome) = commit_with_fault(kind, row, Fault::AppliedThenGaveUp, 1);
        match (kind, row, outcome) {
            (_, _, Ok(commit_ts)) => assert_committed(&env, &t, Ok(commit_ts)),
            (CasKind::Commit, "p", Err(e)) => {
                panic!("the commit point applied, yet the commit failed with {e}")
            }
            (_, _, Err(e)) => {
                assert_eq!(e.retry_class(), RetryClass::Retry, "{kind:?} on {row}: {e}");
                client.kill();
                assert_eq!(read_p_and_s(&env, &t), (value("0"), value("0")));
                env.assert_no_locks(&t);
                continue;
            }
        }
        client.shutdown();
    }
}

/// The commit point applied, the gateway gave up on its reply, and the primary's region stays
/// away for several reads more (its server crashed; the master has yet to reassign it). The
/// commit waits for the region within `settle_timeout` and reports what the primary then says:
/// committed. Reported at once, the outcome would be unknown, and a caller would settle by hand
/// a transaction that the store already knew.
#[test]
fn a_commit_point_whose_region_stays_away_is_settled_once_it_is_back() {
    let (env, t, client, outcome) =
        commit_with_fault(CasKind::Commit, "p", Fault::AppliedThenAway(4), 1);
    assert_committed(&env, &t, outcome);
    client.shutdown();
}

/// A read whose region is in transition (the gateway's HBase client gave up on it) is sent
/// again until the region is back, within `settle_timeout`: the transaction reads the value
/// rather than failing on a region back moments later. Within a timeout too short, the read
/// fails with the gateway's retryable error.
#[test]
fn a_read_that_meets_a_region_in_transition_waits_it_out() {
    let env = Env::start();
    let t = seeded(&env);
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let client = env.client_on(store.clone(), env.tso.clone(), env.options());
    store.move_reads_of("p", 3);
    let txn = client.begin().unwrap();
    assert_eq!(get(&txn, &t, "p"), value("0"));
    assert_eq!(
        store.moving_reads_left(),
        0,
        "the read met the moving region"
    );
    client.shutdown();

    let impatient = env
        .options()
        .to_builder()
        .settle_timeout(std::time::Duration::ZERO)
        .build();
    let client = env.client_on(store.clone(), env.tso.clone(), impatient);
    store.move_reads_of("p", 1);
    let err = client
        .begin()
        .unwrap()
        .get(&t, "p", crate::FAMILY, "q")
        .unwrap_err();
    assert_eq!(err.retry_class(), RetryClass::Retry, "{err}");
    client.shutdown();
}
