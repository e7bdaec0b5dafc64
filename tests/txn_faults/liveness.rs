//! Liveness rows, lock wall times and heartbeats: who may clean a lock, and when.

use std::sync::Arc;
use std::time::{Duration, Instant};

use percolator::format::LockState;
use percolator::hbase::{Get, Put};
use percolator::txn::{Clock, Seam, SystemClock};
use percolator::{Client, Error};

use crate::txn_support::faulty::{CasKind, Fault, FaultyStore, Gate};
use crate::txn_support::Env;
use crate::{get, has_put_record, read_p_and_s, seeded, value, write_p_and_s, FAMILY};

const GATE_LIMIT: Duration = Duration::from_secs(10);

/// A client (with `lock_ttl`) whose first `kind` CAS on `row` waits at the returned gate. Used
/// to hold a commit of p = s = "1" at the prewrite of s (p is then locked and refreshed by the
/// keeper) or at the commit point on p.
fn paused_committer(
    env: &Env,
    lock_ttl: Duration,
    kind: CasKind,
    row: &str,
) -> (Client, Arc<Gate>) {
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(kind, row, Fault::Hold(gate.clone()), 1);
    (client_on(env, store, lock_ttl), gate)
}

/// A committing client over `store`, with a short lock TTL so heartbeats come quickly.
fn client_on(env: &Env, store: Arc<FaultyStore>, lock_ttl: Duration) -> Client {
    let options = env.options().to_builder().lock_ttl(lock_ttl).build();
    env.client_on(store, env.tso.clone(), options)
}

fn reader_with(env: &Env, max_lock_wait: Duration, clock: Arc<dyn Clock>) -> Client {
    env.client_with(
        env.options()
            .to_builder()
            .max_lock_wait(max_lock_wait)
            .clock(clock)
            .build(),
    )
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
            matches!(&err, Error::KeyLocked { primary: Some(p), .. } if p.row == b"p"),
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

/// A clock running behind.
struct Behind(Duration);

impl Clock for Behind {
    fn now_ms(&self) -> u64 {
        SystemClock.now_ms() - self.0.as_millis() as u64
    }
}

/// The server's clock now: the version HBase gives a cell written without one (`table`'s
/// scratch row `clock`, which no transaction reads).
fn server_now_ms(env: &Env, table: &str) -> i64 {
    env.hbase
        .put(table, &Put::new("clock").add(FAMILY, "clock", "tick"))
        .expect("put a server-timed cell");
    let row = env
        .hbase
        .get(table, &Get::new("clock").column(FAMILY, "clock"))
        .expect("read it back");
    let cell = row.versions(FAMILY.as_bytes(), b"clock").next();
    cell.expect("the cell just written").timestamp
}

/// `owner`'s liveness row as stored: its version and the wall time it holds.
fn liveness_cell(env: &Env, owner: &str) -> Option<(i64, u64)> {
    let row = env
        .hbase
        .get(
            &env.liveness.table,
            &Get::new(owner).column(
                env.liveness.liveness_family(),
                env.liveness.liveness_qualifier(),
            ),
        )
        .expect("read a liveness row");
    let cell = row.cells.first()?;
    let wall = <[u8; 8]>::try_from(cell.value.as_slice()).expect("a u64 wall time");
    Some((cell.timestamp, u64::from_be_bytes(wall)))
}

/// Liveness rows are versioned with the SERVER's time, so HBase's TTL (a cell is hidden once
/// its version is below the server's now minus the TTL) decides when a client counts as dead,
/// whatever the client's own clock says. A client an hour ahead dies holding locks whose wall
/// time can never look stale to a reader: only its row's expiry, measured on the server's
/// clock, lets a waiting reader roll it back. A client an hour behind stays alive meanwhile.
#[test]
fn liveness_rows_expire_by_the_servers_clock_and_free_a_dead_owners_locks() {
    let env = Env::start();
    let t = seeded(&env);
    let ttl_ms = i64::from(env.liveness.ttl_secs) * 1000;
    let hour = Duration::from_secs(3600);
    let before = server_now_ms(&env, &t);
    let ahead = env.client_with(
        env.options()
            .to_builder()
            .clock(Arc::new(Ahead(hour)))
            .lock_ttl(Duration::from_secs(60))
            .crash_injector(Arc::new(|at| at == Seam::BeforePrimaryCommit))
            .build(),
    );
    let behind = env.client_with(
        env.options()
            .to_builder()
            .clock(Arc::new(Behind(hour)))
            .build(),
    );
    let after = server_now_ms(&env, &t);
    for (client, skew_ms) in [(&ahead, 3_600_000), (&behind, -3_600_000)] {
        let (version, wall) = liveness_cell(&env, client.owner_id()).expect("row written");
        assert!(
            (before..=after).contains(&version),
            "the row's version {version} is the server's time, in [{before}, {after}]"
        );
        let drift = wall as i64 - (version + skew_ms);
        assert!(
            drift.abs() < 60_000,
            "the value is the client's clock: {drift} ms off"
        );
    }

    // Both stay alive over several TTLs, refreshed by their keepers.
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        for client in [&ahead, &behind] {
            assert!(
                liveness_cell(&env, client.owner_id()).is_some(),
                "the liveness row of a live client expired"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    let err = write_p_and_s(&ahead, &t).unwrap_err();
    assert!(matches!(err, Error::ClientCrashed { .. }), "{err}");
    std::thread::scope(|s| {
        // Meets p locked by a dead owner whose lock looks fresh for another hour: it waits
        // (up to 6 s) until the owner's row expires.
        let reading = s.spawn(|| {
            let reader = env.client();
            let txn = reader.begin().unwrap();
            let read = (get(&txn, &t, "p"), get(&txn, &t, "s"));
            let at = server_now_ms(&env, &t);
            let stats = reader.stats();
            reader.shutdown();
            (read, at, stats)
        });

        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last_version = None;
        let expired_by = loop {
            let asked = server_now_ms(&env, &t);
            match liveness_cell(&env, ahead.owner_id()) {
                Some((version, _)) => {
                    assert!(
                        asked <= version + ttl_ms,
                        "row still visible at server time {asked} > version {version} + TTL"
                    );
                    last_version = Some(version);
                }
                None => {
                    let answered = server_now_ms(&env, &t);
                    let version = last_version.expect("the row was seen after the crash");
                    assert!(
                        answered > version + ttl_ms,
                        "row gone by server time {answered}, before version {version} + TTL"
                    );
                    break version + ttl_ms;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the dead client's row never expired"
            );
            std::thread::sleep(Duration::from_millis(20));
        };

        let (read, at, stats) = reading.join().unwrap();
        assert_eq!(read, (value("0"), value("0")), "rolled back");
        assert!(stats.lock_waits > 0 && stats.rolled_back >= 1, "{stats:?}");
        assert!(
            at > expired_by,
            "the reader finished at server time {at}, before the row expired at {expired_by}"
        );
    });
    env.assert_no_locks(&t);

    assert!(
        liveness_cell(&env, behind.owner_id()).is_some(),
        "the client behind is still alive"
    );
    behind.shutdown();
    assert_eq!(
        liveness_cell(&env, behind.owner_id()),
        None,
        "a clean shutdown removes the row at once"
    );
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
        let liveness = env.hbase.get(
            &env.liveness.table,
            &Get::new(holder.owner_id()).column(
                env.liveness.liveness_family(),
                env.liveness.liveness_qualifier(),
            ),
        );
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

/// Commits p = s = "1" with a client whose first heartbeat of p loses its reply (it is applied:
/// the lock's stored bytes are no longer those the client knows) while the prewrite of s waits;
/// `meanwhile` runs once that heartbeat was sent, before the prewrite of s goes on. Returns the
/// commit's outcome and the committing client.
fn commit_past_a_lost_heartbeat(
    env: &Env,
    t: &str,
    meanwhile: impl FnOnce(),
) -> (percolator::Result<u64>, Client) {
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(CasKind::Heartbeat, "p", Fault::LoseReply, 1);
    store.inject(CasKind::Prewrite, "s", Fault::Hold(gate.clone()), 1);
    let holder = client_on(env, store.clone(), Duration::from_millis(600));
    let heartbeat_lost = (CasKind::Heartbeat, b"p".to_vec());
    let committed = std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| write_p_and_s(&holder, t));
        let deadline = Instant::now() + GATE_LIMIT;
        while !store.fired().contains(&heartbeat_lost) {
            assert!(Instant::now() < deadline, "no heartbeat was sent");
            std::thread::sleep(Duration::from_millis(10));
        }
        meanwhile();
        gate.open();
        committing.join().unwrap()
    });
    (committed, holder)
}

/// A heartbeat whose reply is lost leaves the primary's stored bytes unknown to the owner; the
/// commit point must settle that by re-reading the primary instead of failing the commit.
#[test]
fn lost_heartbeat_reply_does_not_fail_the_commit() {
    let env = Env::start();
    let t = seeded(&env);
    let (committed, holder) = commit_past_a_lost_heartbeat(&env, &t, || {});
    let commit_ts = committed.expect("the commit settles the lost heartbeat");
    assert!(has_put_record(&env, &t, "p", commit_ts));
    assert_eq!(read_p_and_s(&env, &t), (value("1"), value("1")));
    env.assert_no_locks(&t);
    holder.shutdown();
}

/// A commit that gives up rolls back its primary on the bytes stored, not on those it last
/// knew: a heartbeat whose reply was lost (or one still in flight when the commit gave up)
/// rewrote them. Before: the rollback's CAS missed, and the primary stayed locked by a
/// transaction that had already reported its failure, blocking every reader and writer of it
/// until its TTL ran out.
#[test]
fn a_failed_commit_rolls_back_a_primary_a_lost_heartbeat_rewrote() {
    let env = Env::start();
    let t = seeded(&env);
    // A newer write of s commits first: the held prewrite of s then conflicts.
    let (refused, holder) = commit_past_a_lost_heartbeat(&env, &t, || {
        let other = env.client();
        other
            .run(|txn| txn.set(&t, "s", crate::FAMILY, "q", "2"))
            .unwrap();
        other.shutdown();
    });
    let refused = refused.unwrap_err();
    assert!(
        matches!(refused, Error::WriteConflict { .. }),
        "{refused:?}"
    );
    env.assert_no_locks(&t);
    assert_eq!(read_p_and_s(&env, &t), (value("0"), value("2")));
    holder.shutdown();
}

/// The commit point is conditional on the primary's exact stored bytes: after heartbeats
/// rewrote them, it must commit against the rewritten lock in its first request, not fail
/// against the prewritten one and settle by re-reading the primary.
#[test]
fn commit_point_uses_the_lock_a_heartbeat_rewrote() {
    let env = Env::start();
    let t = seeded(&env);
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let gate = Gate::new();
    store.inject(CasKind::Prewrite, "s", Fault::Hold(gate.clone()), 1);
    // Passes commits of the primary through untouched, only to count them.
    store.inject(CasKind::Commit, "p", Fault::Delay(Duration::ZERO), 2);
    let holder = client_on(&env, store.clone(), Duration::from_millis(600));
    let committed = std::thread::scope(|s| {
        let _release = gate.opens_on_drop();
        let committing = s.spawn(|| write_p_and_s(&holder, &t));
        assert!(gate.wait_reached(GATE_LIMIT));
        let deadline = std::time::Instant::now() + GATE_LIMIT;
        while holder.stats().heartbeats == 0 {
            assert!(std::time::Instant::now() < deadline, "no heartbeat landed");
            std::thread::sleep(Duration::from_millis(10));
        }
        gate.open();
        committing.join().unwrap()
    });
    let commit_ts = committed.expect("the commit succeeds");
    assert!(has_put_record(&env, &t, "p", commit_ts));
    let primary_commits = store
        .fired()
        .iter()
        .filter(|call| **call == (CasKind::Commit, b"p".to_vec()))
        .count();
    assert_eq!(primary_commits, 1, "one commit request for the primary");
    holder.shutdown();
}

/// A clock stopped at a chosen reading.
struct At(u64);

impl Clock for At {
    fn now_ms(&self) -> u64 {
        self.0
    }
}

/// A live owner's lock becomes stale only once the clock is past `wall_ms + ttl_ms`: at that
/// very millisecond a reader still waits for it; one millisecond later it cleans it.
#[test]
fn a_lock_is_stale_only_once_its_ttl_has_passed() {
    use percolator::format::{Lock, MutationKind};

    let env = Env::start();
    let t = seeded(&env);
    let owner = env.client();
    let p = env.key(&t, "p");
    let (wall_ms, ttl_ms) = (1_000_000, 2_000);
    let lock = Lock {
        start_ts: env.ts(),
        kind: MutationKind::Put,
        primary: p.clone(),
        owner: owner.owner_id().to_string(),
        wall_ms,
        ttl_ms,
        short_value: Some(b"x".to_vec()),
        row: None,
        primary_row: false,
    };
    let lock = env.as_stored(&p, lock);
    let cam = env.prewrite_cas(&p, &lock, Some(b"x"), false);
    assert!(env.hbase.check_and_mutate(&t, &cam).unwrap());
    let at_expiry = reader_with(
        &env,
        Duration::from_millis(300),
        Arc::new(At(wall_ms + ttl_ms)),
    );
    let err = at_expiry
        .begin()
        .unwrap()
        .get(&t, "p", FAMILY, "q")
        .unwrap_err();
    assert!(matches!(err, Error::KeyLocked { .. }), "{err}");
    let past = reader_with(
        &env,
        Duration::from_millis(300),
        Arc::new(At(wall_ms + ttl_ms + 1)),
    );
    assert_eq!(get(&past.begin().unwrap(), &t, "p"), value("0"));
    at_expiry.shutdown();
    past.shutdown();
    owner.shutdown();
}

/// Invariant 4, as `transaction_status` settles it: an owner that commits while another client
/// asks about its transaction is reported committed. The asker reads the primary locked, and
/// its owner commits before the asker's resolver reads it again; that read finds the commit,
/// and the answer must come from it, never from the lock seen first.
#[test]
fn a_transaction_committed_while_its_status_is_settled_is_reported_committed() {
    let env = Env::start();
    let t = seeded(&env);
    let (holder, commit_point) =
        paused_committer(&env, Duration::from_secs(60), CasKind::Commit, "p");
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    let first_read = Gate::new();
    store.hold_reads_of("p", first_read.clone(), 1);
    let asker = env.client_on(store, env.tso.clone(), env.options());
    let mut txn = holder.begin().unwrap();
    let start_ts = txn.start_ts().unwrap();
    txn.set(&t, "p", FAMILY, "q", "1").unwrap();
    txn.set(&t, "s", FAMILY, "q", "1").unwrap();
    let primary = env.key(&t, "p");
    std::thread::scope(|s| {
        let _release_commit = commit_point.opens_on_drop();
        let _release_read = first_read.opens_on_drop();
        let committing = s.spawn(move || txn.commit());
        assert!(commit_point.wait_reached(GATE_LIMIT), "the commit point");
        let asking = s.spawn(|| asker.transaction_status(&primary, start_ts));
        assert!(
            first_read.wait_reached(GATE_LIMIT),
            "the asker's first read"
        );
        assert!(matches!(env.lock_state(&primary), LockState::Locked(_)));
        commit_point.open();
        let commit_ts = committing.join().unwrap().expect("the owner commits");
        first_read.open();
        assert_eq!(asking.join().unwrap().unwrap(), Some(commit_ts));
    });
    assert_eq!(read_p_and_s(&env, &t), (value("1"), value("1")));
    asker.shutdown();
    holder.shutdown();
}

/// A client replaced after a crash writes its first liveness row while that table's region
/// may be moving (the gateway's HBase client gave up, `Retry`). The start waits it out; within
/// a start timeout too short for the region, it fails with that retryable error and writes
/// nothing a later start could trip on.
#[test]
fn a_client_started_while_the_liveness_region_moves_starts_once_it_is_back() {
    let env = Env::start();
    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    store.move_puts_to(&env.options().liveness().table, usize::MAX);
    let short = env
        .options()
        .to_builder()
        .start_timeout(Duration::from_millis(300))
        .build();
    let Err(err) = Client::new(store.clone(), env.tso.clone(), short) else {
        panic!("the region never came back, yet the client started");
    };
    assert_eq!(err.retry_class(), percolator::RetryClass::Retry, "{err}");

    let store = FaultyStore::new(env.hbase.clone(), env.schema.clone());
    store.move_puts_to(&env.options().liveness().table, 3);
    let client = env.client_on(store.clone(), env.tso.clone(), env.options());
    assert_eq!(
        store.moving_puts_left(),
        0,
        "the start met the moving region"
    );
    let t = seeded(&env);
    write_p_and_s(&client, &t).expect("the started client commits");
    assert_eq!(read_p_and_s(&env, &t), (value("1"), value("1")));
    client.shutdown();
}
