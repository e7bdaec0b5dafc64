//! Protocol scripts: each test drives the protocol steps against the emulator and states what
//! must hold after each step. One or more tests per invariant of docs/design.md.

mod txn_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use percolator::format::{encode_lock, Lock, LockState, MutationKind, WriteKind};
use percolator::hbase::{CheckAndMutate, Put};
use percolator::txn::actions;
use percolator::txn::{CellKey, CrashInjector, Seam};
use percolator::Error;
use txn_support::faulty::Gate;
use txn_support::Env;

/// A transaction driven step by step, as a (possibly dead) client would.
struct Script<'a> {
    env: &'a Env,
    start_ts: u64,
    primary: CellKey,
    owner: String,
    wall_ms: u64,
}

impl<'a> Script<'a> {
    /// A transaction whose owner has no liveness row: others may clean its locks at once.
    fn dead(env: &'a Env, primary: &CellKey) -> Self {
        Script {
            env,
            start_ts: env.ts(),
            primary: primary.clone(),
            owner: "dead-owner".into(),
            wall_ms: 0,
        }
    }

    fn owned_by(env: &'a Env, primary: &CellKey, owner: &str) -> Self {
        Script {
            owner: owner.into(),
            wall_ms: now_ms(),
            ..Script::dead(env, primary)
        }
    }

    /// This transaction's lock on `key`, as the fixture's tables store it (a row lock listing
    /// just that cell when they lock rows).
    fn lock(&self, key: &CellKey, value: Option<&[u8]>) -> Lock {
        self.env.as_stored(key, self.cell_lock(value))
    }

    fn cell_lock(&self, value: Option<&[u8]>) -> Lock {
        Lock {
            start_ts: self.start_ts,
            kind: MutationKind::of(value),
            primary: self.primary.clone(),
            owner: self.owner.clone(),
            wall_ms: self.wall_ms,
            ttl_ms: 60_000,
            short_value: value.map(<[u8]>::to_vec),
            row: None,
            primary_row: false,
        }
    }

    /// Prewrite as the client does it: one CAS, and the absent-cell variant when the lock cell
    /// does not exist yet.
    fn prewrite(&self, key: &CellKey, value: &[u8]) -> bool {
        let lock = self.lock(key, Some(value));
        for absent in [false, true] {
            let cam = self.env.prewrite_cas(key, &lock, Some(value), absent);
            if self.env.hbase.check_and_mutate(&key.table, &cam).unwrap() {
                return true;
            }
            if self.env.raw_lock(key).is_some() {
                return false;
            }
        }
        false
    }

    /// Rolls back this transaction's lock on `key` (written with `value`), as a resolver does.
    fn rollback(&self, key: &CellKey, value: &[u8]) -> bool {
        let lock = self.lock(key, Some(value));
        let cam = actions::rollback(&self.env.schema, key, &lock, &encode_lock(&lock));
        self.env.hbase.check_and_mutate(&key.table, &cam).unwrap()
    }

    fn commit(&self, key: &CellKey, value: &[u8], commit_ts: u64) -> bool {
        let lock = self.lock(key, Some(value));
        let cam = actions::commit(&self.env.schema, key, &lock, &encode_lock(&lock), commit_ts);
        self.env.hbase.check_and_mutate(&key.table, &cam).unwrap()
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn must_be_locked_by(env: &Env, key: &CellKey, start_ts: u64) {
    match env.lock_state(key) {
        LockState::Locked(l) => assert_eq!(l.start_ts, start_ts, "locked by the wrong transaction"),
        other => panic!("{key} must be locked by {start_ts}, is {other:?}"),
    }
}

fn must_be_released_at(env: &Env, key: &CellKey, max_ts: u64) {
    assert_eq!(env.lock_state(key), LockState::Released { max_ts }, "{key}");
}

fn must_be_written(env: &Env, key: &CellKey, commit_ts: u64, start_ts: u64) {
    let writes = env.writes(key);
    assert!(
        writes.iter().any(|(v, r)| *v == commit_ts as i64
            && r.start_ts == start_ts
            && r.kind == WriteKind::Put),
        "{key}: no write record {commit_ts} -> {start_ts} in {writes:?}"
    );
}

fn read(env: &Env, key: &CellKey) -> Option<Vec<u8>> {
    let client = env.client();
    let v = client
        .begin()
        .unwrap()
        .get_many(std::slice::from_ref(key))
        .unwrap()
        .pop()
        .unwrap();
    client.shutdown();
    v
}

#[test]
fn prewrite_commit_then_read() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let txn = Script::dead(&env, &p);
    assert!(txn.prewrite(&p, b"1"));
    assert!(txn.prewrite(&s, b"2"));
    must_be_locked_by(&env, &p, txn.start_ts);
    must_be_locked_by(&env, &s, txn.start_ts);
    let commit_ts = env.ts();
    assert!(txn.commit(&p, b"1", commit_ts));
    assert!(txn.commit(&s, b"2", commit_ts));
    must_be_written(&env, &p, commit_ts, txn.start_ts);
    must_be_released_at(&env, &s, commit_ts);
    assert_eq!(read(&env, &p).as_deref(), Some(&b"1"[..]));
    assert_eq!(read(&env, &s).as_deref(), Some(&b"2"[..]));
}

/// Invariant 1: the CAS refuses a cell that is locked.
#[test]
fn prewrite_refused_while_another_lock_is_held() {
    let env = Env::start();
    let t = env.table("acct");
    let x = env.key(&t, "x");
    let first = Script::dead(&env, &x);
    let second = Script::dead(&env, &x);
    assert!(first.prewrite(&x, b"a"));
    assert!(!second.prewrite(&x, b"b"), "a second lock must be refused");
    must_be_locked_by(&env, &x, first.start_ts);
}

/// Invariants 1 and 2: a commit at or after start_ts refuses the prewrite, decided by the CAS
/// itself: the older transaction's CAS was built before the newer one committed.
#[test]
fn prewrite_refused_after_a_newer_commit_without_any_read() {
    let env = Env::start();
    let t = env.table("acct");
    let x = env.key(&t, "x");
    let older = Script::dead(&env, &x);
    let lock = older.lock(&x, Some(b"old"));
    // Built now, applied after the newer transaction commits.
    let stale_cam: CheckAndMutate = env.prewrite_cas(&x, &lock, Some(b"old"), false);

    let newer = Script::dead(&env, &x);
    assert!(newer.prewrite(&x, b"new"));
    let commit_ts = env.ts();
    assert!(newer.commit(&x, b"new", commit_ts));

    assert!(
        !env.hbase.check_and_mutate(&t, &stale_cam).unwrap(),
        "write conflict must fail the CAS"
    );
    must_be_released_at(&env, &x, commit_ts);
}

/// Invariant 2: an absent lock cell never matches the GREATER probe; the EQUAL-empty variant
/// is refused once anything was recorded.
#[test]
fn absent_variant_only_matches_a_never_written_cell() {
    let env = Env::start();
    let t = env.table("acct");
    let x = env.key(&t, "x");
    let txn = Script::dead(&env, &x);
    let lock = txn.lock(&x, Some(b"v"));
    let probe = env.prewrite_cas(&x, &lock, Some(b"v"), false);
    assert!(!env.hbase.check_and_mutate(&t, &probe).unwrap());
    assert_eq!(env.lock_state(&x), LockState::Absent);

    let other = Script::dead(&env, &x);
    assert!(other.prewrite(&x, b"w"));
    let absent = env.prewrite_cas(&x, &lock, Some(b"v"), true);
    assert!(!env.hbase.check_and_mutate(&t, &absent).unwrap());
    must_be_locked_by(&env, &x, other.start_ts);
}

/// Invariant 3: the commit point needs the exact lock; a rolled-back transaction cannot commit.
#[test]
fn commit_refused_after_rollback() {
    let env = Env::start();
    let t = env.table("acct");
    let p = env.key(&t, "p");
    let txn = Script::dead(&env, &p);
    assert!(txn.prewrite(&p, b"v"));
    assert!(txn.rollback(&p, b"v"));
    must_be_released_at(&env, &p, txn.start_ts);
    assert!(
        !txn.commit(&p, b"v", env.ts()),
        "commit after rollback must fail"
    );
    assert!(env
        .writes(&p)
        .iter()
        .all(|(_, r)| r.kind == WriteKind::Rollback));
    assert!(
        env.data_versions(&p).is_empty(),
        "rolled-back data version is removed"
    );
}

/// A read starts with the newest write record only and fetches more while it sees rollback
/// records, so a committed value behind any number of them is still found.
#[test]
fn read_finds_the_commit_behind_a_run_of_rollback_records() {
    let env = Env::start();
    let t = env.table("acct");
    let p = env.key(&t, "p");
    let writer = Script::dead(&env, &p);
    assert!(writer.prewrite(&p, b"kept"));
    assert!(writer.commit(&p, b"kept", env.ts()));
    for _ in 0..12 {
        let aborted = Script::dead(&env, &p);
        assert!(aborted.prewrite(&p, b"never") && aborted.rollback(&p, b"never"));
    }
    let rollbacks = env
        .writes(&p)
        .iter()
        .filter(|(_, r)| r.kind == WriteKind::Rollback)
        .count();
    assert_eq!(rollbacks, 12, "the run of rollback records is in place");
    assert_eq!(read(&env, &p).as_deref(), Some(&b"kept"[..]));
}

/// Invariant 3: a secondary commit is conditional: it never erases a newer transaction's lock.
#[test]
fn late_secondary_commit_cannot_erase_a_newer_lock() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let old = Script::dead(&env, &p);
    assert!(old.prewrite(&p, b"1") && old.prewrite(&s, b"1"));
    let commit_ts = env.ts();
    assert!(old.commit(&p, b"1", commit_ts));
    // A reader rolls the secondary forward, then a newer transaction locks it.
    assert_eq!(read(&env, &s).as_deref(), Some(&b"1"[..]));
    let newer = Script::dead(&env, &s);
    assert!(newer.prewrite(&s, b"2"));
    assert!(
        !old.commit(&s, b"1", commit_ts),
        "duplicate secondary commit must fail"
    );
    must_be_locked_by(&env, &s, newer.start_ts);
}

/// Invariant 3 through the real committer: its own secondary commit, delayed (the committer is
/// paused between its two rounds of secondary commits) until a reader has rolled that cell
/// forward and a newer transaction has locked it, must fail. Were it a plain put, it would
/// erase the newer lock, and the newer transaction's write there would be lost although that
/// transaction committed.
#[test]
fn committers_late_secondary_commit_cannot_erase_a_newer_lock() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s1, s2) = (env.key(&t, "p"), env.key(&t, "s1"), env.key(&t, "s2"));
    let other = env.key(&t, "other");
    let paused = Gate::new();
    let injector: CrashInjector = {
        let paused = Arc::clone(&paused);
        Arc::new(move |seam| {
            if seam == Seam::BetweenSecondaryCommits {
                paused.pass();
            }
            false
        })
    };
    let committer = env.client_with(env.options().to_builder().crash_injector(injector).build());
    std::thread::scope(|scope| {
        let _release = paused.opens_on_drop();
        let committing = scope.spawn(|| {
            let mut txn = committer.begin().unwrap();
            for k in [&p, &s1, &s2] {
                txn.set(&k.table, &k.row, &k.family, &k.qualifier, "1")
                    .unwrap();
            }
            txn.commit()
        });
        assert!(
            paused.wait_reached(Duration::from_secs(10)),
            "the committer never reached its second round of secondary commits"
        );
        // One secondary went in the first round; the other is still locked by the committer.
        let late = [&s1, &s2]
            .into_iter()
            .find(|k| matches!(env.lock_state(k), LockState::Locked(_)))
            .expect("a secondary left for the second round")
            .clone();
        assert_eq!(
            read(&env, &late).as_deref(),
            Some(&b"1"[..]),
            "a reader rolls it forward"
        );
        let newer = Script::dead(&env, &other);
        assert!(newer.prewrite(&other, b"2") && newer.prewrite(&late, b"2"));
        paused.open();
        let commit_ts = committing
            .join()
            .unwrap()
            .expect("the committer's transaction commits");
        assert!(
            newer.commit(&other, b"2", env.ts()),
            "the newer one commits"
        );
        assert_eq!(
            read(&env, &late).as_deref(),
            Some(&b"2"[..]),
            "{late}: the newer transaction's committed write (the committer's commit_ts was {commit_ts})"
        );
        assert_eq!(read(&env, &other).as_deref(), Some(&b"2"[..]));
    });
    committer.shutdown();
}

/// Invariant 2 with real timestamps: the lock cell's byte order must be numeric order in every
/// byte, not only below 256. A commit newer than a prewrite's start_ts, whose mark is above it
/// in a high byte and below it in the low byte, refuses the prewrite.
#[test]
fn prewrite_refused_by_a_newer_commit_whose_low_byte_is_smaller() {
    let env = Env::start();
    let t = env.table("acct");
    let s = env.key(&t, "s");
    // Oracle timestamps (`ms << 18 | logical`) just above the oracle's, placed so that the
    // commit's low byte is 0x00 and the late prewrite's 0xfe.
    let base = (env.ts() | 0xff) + 1;
    let writer = Script {
        start_ts: base + 1,
        ..Script::dead(&env, &s)
    };
    let late = Script {
        start_ts: base + 0xfe,
        ..Script::dead(&env, &s)
    };
    let commit_ts = base + 0x100;
    assert!(writer.prewrite(&s, b"w") && writer.commit(&s, b"w", commit_ts));
    must_be_released_at(&env, &s, commit_ts);
    assert!(
        !late.prewrite(&s, b"late"),
        "a prewrite at {:#x} below the commit at {commit_ts:#x} must be refused",
        late.start_ts
    );
    must_be_released_at(&env, &s, commit_ts);
    assert!(
        env.data_versions(&s)
            .iter()
            .all(|(v, _)| *v != late.start_ts as i64),
        "the refused prewrite stored no data"
    );
}

/// Invariant 4, as `transaction_status` reports it: only the primary tells. A committed
/// transaction answers its commit_ts; a dead owner's transaction left locked on its primary is
/// rolled back there and answers `None`.
#[test]
fn transaction_status_is_decided_by_the_primary() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let client = env.client();
    let mut txn = client.begin().unwrap();
    let start_ts = txn.start_ts().unwrap();
    for k in [&p, &s] {
        txn.set(&k.table, &k.row, &k.family, &k.qualifier, "1")
            .unwrap();
    }
    let commit_ts = txn.commit().unwrap();
    assert_eq!(
        client.transaction_status(&p, start_ts).unwrap(),
        Some(commit_ts)
    );
    let dead = Script::dead(&env, &p);
    assert!(dead.prewrite(&p, b"2") && dead.prewrite(&s, b"2"));
    assert_eq!(client.transaction_status(&p, dead.start_ts).unwrap(), None);
    must_be_released_at(&env, &p, dead.start_ts);
    client.shutdown();
}

/// Invariant 4: after a rollback, a late (duplicated) prewrite of the primary fails, so the
/// transaction cannot commit over secondaries already rolled back.
#[test]
fn late_primary_prewrite_fails_after_rollback() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let txn = Script::dead(&env, &p);
    assert!(txn.prewrite(&p, b"1") && txn.prewrite(&s, b"1"));
    // Another client meets the secondary lock of a dead owner and resolves it.
    assert_eq!(read(&env, &s), None);
    must_be_released_at(&env, &s, txn.start_ts);
    must_be_released_at(&env, &p, txn.start_ts);
    assert!(
        !txn.prewrite(&p, b"1"),
        "a duplicated primary prewrite must fail"
    );
    assert!(!txn.commit(&p, b"1", env.ts()));
}

/// Invariant 4, parallel prewrite: the resolver fences the primary before declaring a
/// transaction whose primary prewrite is still in flight rolled back.
#[test]
fn resolver_fences_an_in_flight_primary_prewrite() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let txn = Script::dead(&env, &p);
    assert!(txn.prewrite(&s, b"1"), "the secondary lands first");
    assert_eq!(read(&env, &s), None, "the secondary is rolled back");
    let writes = env.writes(&p);
    assert!(writes
        .iter()
        .any(|(v, r)| *v == txn.start_ts as i64 && r.kind == WriteKind::Rollback));
    assert!(
        !txn.prewrite(&p, b"1"),
        "the delayed primary prewrite must now fail"
    );
}

/// Invariant 4, parallel prewrite, primary held by another transaction: the resolver must
/// resolve that one first and then fence the primary. Declaring the blocked transaction rolled
/// back while the other lock stands would let the other's rollback (which leaves the primary's
/// high-water mark at its own, older start_ts) re-open the primary to the delayed prewrite.
#[test]
fn resolver_resolves_the_primarys_other_lock_before_fencing() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let older = Script::dead(&env, &p);
    let txn = Script::dead(&env, &p);
    assert!(older.start_ts < txn.start_ts);
    assert!(
        older.prewrite(&p, b"old"),
        "another transaction holds the primary"
    );
    assert!(
        txn.prewrite(&s, b"1"),
        "the secondary lands, the primary prewrite is in flight"
    );

    assert_eq!(read(&env, &s), None, "the secondary is rolled back");
    must_be_released_at(&env, &s, txn.start_ts);
    // Whatever becomes of the older transaction now, the delayed primary prewrite must fail.
    older.rollback(&p, b"old");
    assert!(
        !txn.prewrite(&p, b"1"),
        "the delayed primary prewrite must fail once the transaction was declared rolled back"
    );
    match env.lock_state(&p) {
        LockState::Released { max_ts } => assert!(max_ts >= txn.start_ts, "{max_ts}"),
        other => panic!("the primary must be released and fenced, is {other:?}"),
    }
}

/// Invariant 4: roll-forward happens whenever the primary committed, regardless of TTLs or
/// the owner's liveness.
#[test]
fn secondary_rolled_forward_when_primary_committed() {
    let env = Env::start();
    let t = env.table("acct");
    let (p, s) = (env.key(&t, "p"), env.key(&t, "s"));
    let live = env.client();
    let txn = Script::owned_by(&env, &p, live.owner_id());
    assert!(txn.prewrite(&p, b"1") && txn.prewrite(&s, b"2"));
    let commit_ts = env.ts();
    assert!(txn.commit(&p, b"1", commit_ts));
    assert_eq!(read(&env, &s).as_deref(), Some(&b"2"[..]));
    must_be_written(&env, &s, commit_ts, txn.start_ts);
    must_be_released_at(&env, &s, commit_ts);
    live.shutdown();
}

/// Invariant 5: a reader waits on a live lock at or below its snapshot and ignores newer ones.
#[test]
fn reader_waits_on_live_locks_and_ignores_newer_ones() {
    let env = Env::start();
    let t = env.table("acct");
    let x = env.key(&t, "x");
    let writer = env.client();
    writer.run(|txn| txn.set(&t, "x", "f", "q", "old")).unwrap();

    let early_reader = txn_support::begin_now(&writer);
    let live = Script::owned_by(&env, &x, writer.owner_id());
    assert!(live.prewrite(&x, b"new"));

    let opts = env
        .options()
        .to_builder()
        .max_lock_wait(Duration::from_millis(300))
        .build();
    let reader = env.client_with(opts);
    let started = Instant::now();
    let err = reader.begin().unwrap().get(&t, "x", "f", "q").unwrap_err();
    assert!(matches!(err, Error::KeyLocked { .. }), "got {err}");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "it must have waited"
    );
    must_be_locked_by(&env, &x, live.start_ts);

    assert_eq!(
        early_reader.get(&t, "x", "f", "q").unwrap().as_deref(),
        Some(&b"old"[..])
    );
    reader.shutdown();
    writer.shutdown();
}

/// Invariant 6: deletes are Delete write records; older snapshots still read the old value and
/// no HBase delete marker hides any version.
#[test]
fn transactional_delete_is_a_write_record() {
    let env = Env::start();
    let t = env.table("acct");
    let x = env.key(&t, "x");
    let client = env.client();
    client.run(|txn| txn.set(&t, "x", "f", "q", "v1")).unwrap();
    let before = txn_support::begin_now(&client);
    client.run(|txn| txn.delete(&t, "x", "f", "q")).unwrap();
    assert_eq!(
        before.get(&t, "x", "f", "q").unwrap().as_deref(),
        Some(&b"v1"[..])
    );
    assert_eq!(
        client.begin().unwrap().get(&t, "x", "f", "q").unwrap(),
        None
    );
    assert_eq!(env.writes(&x)[0].1.kind, WriteKind::Delete);
    assert_eq!(
        env.data_versions(&x).len(),
        1,
        "the data version is still stored"
    );
    // A raw put below the delete's version stays visible to raw readers: no marker exists.
    env.hbase
        .put(&t, &Put::new("x").add_at("f", "q", 5, "raw"))
        .unwrap();
    assert_eq!(env.data_versions(&x).len(), 2);
    client.shutdown();
}

/// Invariant 9 and the cost model: commit_ts is taken after all locks are visible, and a write
/// costs two CAS rounds with no prior read once the lock cells exist.
#[test]
fn commit_costs_one_cas_per_cell_per_phase() {
    let env = Env::start();
    let t = env.table("acct");
    let client = env.client();
    client
        .run(|txn| {
            txn.set(&t, "a", "f", "q", "0")?;
            txn.set(&t, "b", "f", "q", "0")
        })
        .unwrap();
    let mut txn = client.begin().unwrap();
    txn.set(&t, "a", "f", "q", "1").unwrap();
    txn.set(&t, "b", "f", "q", "1").unwrap();
    let before = client.stats().hbase_rpcs;
    txn.commit().unwrap();
    assert_eq!(
        client.stats().hbase_rpcs - before,
        4,
        "2 prewrite CAS + 2 commit CAS"
    );

    let reader = client.begin().unwrap();
    let before = client.stats().hbase_rpcs;
    assert_eq!(
        reader.get(&t, "a", "f", "q").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(
        client.stats().hbase_rpcs - before,
        1,
        "a committed short value is one Get"
    );
    client.shutdown();
}

/// A prewrite has two CAS variants (lock cell released below start_ts, or absent) and HBase
/// checks one: the client tries first what its earlier prewrites in the table found, and the
/// other straight after a failure, never reading the lock cell for a wrong guess alone.
#[test]
fn prewrite_tries_first_the_variant_the_table_predicts() {
    let env = Env::start();
    let t = env.table("guess");
    let client = env.client();
    let cost = |row: usize, value: &str| {
        let before = client.stats().hbase_rpcs;
        client
            .run(|txn| txn.set(&t, format!("r{row}"), "f", "q", value))
            .unwrap();
        client.stats().hbase_rpcs - before
    };
    // A first read fills the client's caches of the table's families and meta row.
    let first = client.begin().unwrap();
    assert_eq!(first.get(&t, "r0", "f", "q").unwrap(), None);
    let inserts: Vec<u64> = (0..5).map(|row| cost(row, "new")).collect();
    assert_eq!(
        inserts,
        [3, 3, 3, 3, 2],
        "a wrong guess costs one more CAS; four inserts turn the guess"
    );
    let updates: Vec<u64> = (0..3).map(|row| cost(row, "changed")).collect();
    assert_eq!(updates, [3, 3, 2], "updates turn it back");
    for row in 0..5 {
        let key = env.key(&t, &format!("r{row}"));
        let expected: &[u8] = if row < 3 { b"changed" } else { b"new" };
        assert_eq!(read(&env, &key).as_deref(), Some(expected));
    }
    client.shutdown();
}

/// Background secondary commits are tracked: dropping the client right after `commit` neither
/// loses them nor deadlocks (the last reference may be released by the background job itself).
#[test]
fn dropping_a_client_finishes_its_background_commits() {
    let env = Env::start();
    let t = env.table("acct");
    for i in 0..20 {
        let opts = env.options().to_builder().sync_secondaries(false).build();
        let client = env.client_with(opts);
        let mut txn = client.begin().unwrap();
        for row in ["a", "b", "c"] {
            txn.set(&t, row, "f", "q", format!("v{i}")).unwrap();
        }
        txn.commit().unwrap();
        drop(client);
        for row in ["b", "c"] {
            let key = env.key(&t, row);
            assert!(
                !matches!(env.lock_state(&key), LockState::Locked(_)),
                "round {i}: secondary {row} still locked after the client was dropped"
            );
        }
    }
}

/// The snapshot is taken by a transaction's first operation, never before `begin`: what
/// committed before that operation is visible, and the timestamp rides with it (one oracle
/// call, one RPC). `start_ts()` pins the snapshot explicitly.
#[test]
fn snapshot_is_taken_by_the_first_read_or_pinned_by_start_ts() {
    let env = Env::start();
    let t = env.table("lazy");
    let client = env.client();
    let write = |v: &str| {
        let mut txn = client.begin().unwrap();
        txn.set(&t, "x", txn_support::FAMILY, "q", v).unwrap();
        txn.commit().unwrap()
    };
    write("1");
    let lazy = client.begin().unwrap();
    let pinned = txn_support::begin_now(&client);
    let commit_ts = write("2");
    let before = client.stats();
    let seen = lazy.get(&t, "x", txn_support::FAMILY, "q").unwrap();
    assert_eq!(
        seen.as_deref(),
        Some(&b"2"[..]),
        "a commit before the first read is seen"
    );
    assert!(lazy.start_ts().unwrap() > commit_ts);
    let after = client.stats();
    assert_eq!(
        (after.timestamps - before.timestamps, lazy.rpc_count()),
        (1, 1),
        "the first read fetched one timestamp and made one RPC"
    );
    let old = pinned.get(&t, "x", txn_support::FAMILY, "q").unwrap();
    assert_eq!(
        old.as_deref(),
        Some(&b"1"[..]),
        "a pinned snapshot predates the commit"
    );
    client.shutdown();
}

/// A snapshot at a chosen timestamp reads exactly what was committed at or below it, whatever
/// committed since, and refuses to write.
#[test]
fn a_snapshot_at_a_chosen_timestamp_reads_the_past_and_is_read_only() {
    let env = Env::start();
    let t = env.table("snapat");
    let client = env.client();
    let write = |v: &str| {
        let mut txn = client.begin().unwrap();
        txn.set(&t, "x", txn_support::FAMILY, "q", v).unwrap();
        txn.commit().unwrap()
    };
    let first = write("1");
    let second = write("2");
    for (ts, seen) in [(first, "1"), (second - 1, "1"), (second, "2")] {
        let snap = client.snapshot(ts).unwrap();
        let got = snap.get(&t, "x", txn_support::FAMILY, "q").unwrap();
        assert_eq!(got.as_deref(), Some(seen.as_bytes()), "at {ts}");
        assert_eq!(snap.start_ts().unwrap(), ts);
    }
    let before = client.snapshot(first - 1).unwrap();
    assert_eq!(before.get(&t, "x", txn_support::FAMILY, "q").unwrap(), None);
    let mut ro = client.snapshot(second).unwrap();
    let err = ro.set(&t, "x", txn_support::FAMILY, "q", "3").unwrap_err();
    assert!(
        matches!(err, percolator::Error::IllegalArgument { .. }),
        "{err}"
    );
    assert_eq!(ro.commit().unwrap(), second, "nothing to commit");
    client.shutdown();
}

/// A timestamp source whose timestamp at hand is one the test chose: a spare issued before
/// what the test does next.
struct AtHand {
    inner: std::sync::Arc<dyn percolator::oracle::TimestampSource>,
    spare: std::sync::Mutex<Option<u64>>,
}

#[async_trait::async_trait]
impl percolator::oracle::TimestampSource for AtHand {
    async fn timestamp(&self) -> percolator::Result<u64> {
        self.inner.timestamp().await
    }

    fn recent_timestamp(&self, _max_age: Duration) -> Option<u64> {
        self.spare.lock().unwrap().take()
    }
}

/// A transaction that read nothing (a blind write) takes its start_ts at hand, from the spares
/// of a recent oracle batch: one round trip instead of two, and its start_ts is above every
/// timestamp its client was handed before. A transaction that read takes none: it owes its
/// snapshot a fresh one.
#[test]
fn a_blind_write_takes_its_start_ts_at_hand_above_everything_before() {
    let env = Env::start();
    let t = env.table("blind");
    // Wide enough that a slow machine still finds the spares young.
    let options = env
        .options()
        .to_builder()
        .blind_write_start_age(Duration::from_secs(60))
        .build();
    let client = env.client_with(options);
    let write = |row: &str, v: &str| {
        let mut txn = client.begin().unwrap();
        txn.set(&t, row, txn_support::FAMILY, "q", v).unwrap();
        txn.commit().unwrap()
    };
    let s0 = client.stats();
    let first = write("x", "1");
    let s1 = client.stats();
    assert_eq!(
        (
            s1.timestamps - s0.timestamps,
            s1.spare_timestamps - s0.spare_timestamps
        ),
        (2, 0),
        "none at hand yet: the first fetches both, and has the next batch carry spares"
    );
    let second = write("x", "2");
    let s2 = client.stats();
    assert_eq!(
        (
            s2.timestamps - s1.timestamps,
            s2.spare_timestamps - s1.spare_timestamps
        ),
        (2, 1),
        "the second's start_ts was at hand"
    );
    let records = env.writes(&env.key(&t, "x"));
    assert_eq!(records[0].0 as u64, second);
    let start = records[0].1.start_ts;
    assert!(
        first < start && start < second,
        "start_ts {start} above the previous commit {first} and below its own commit {second}"
    );

    let mut reader = client.begin().unwrap();
    reader.get(&t, "x", txn_support::FAMILY, "q").unwrap();
    reader.set(&t, "y", txn_support::FAMILY, "q", "3").unwrap();
    reader.commit().unwrap();
    assert_eq!(
        client.stats().spare_timestamps,
        s2.spare_timestamps,
        "a transaction that read fetched its start_ts"
    );

    let off = env.client_with(
        env.options()
            .to_builder()
            .blind_write_start_age(Duration::ZERO)
            .build(),
    );
    let mut txn = off.begin().unwrap();
    txn.set(&t, "z", txn_support::FAMILY, "q", "4").unwrap();
    txn.commit().unwrap();
    assert_eq!(
        off.stats().spare_timestamps,
        0,
        "an age of zero turns it off"
    );
}

/// A blind write's start_ts at hand may predate a commit another client made meanwhile. It
/// can only conflict more: the prewrite refuses a cell committed at or above its start_ts
/// (invariant 1), so the other commit is never overwritten, and a retry, which fetches, wins.
#[test]
fn a_blind_write_whose_spare_predates_another_commit_conflicts_and_overwrites_nothing() {
    let env = Env::start();
    let t = env.table("blind_conflict");
    let key = env.key(&t, "x");
    let spare = env.ts();
    let other = env.client();
    let mut txn = other.begin().unwrap();
    txn.set(&t, "x", txn_support::FAMILY, "q", "theirs")
        .unwrap();
    let theirs = txn.commit().unwrap();
    assert!(theirs > spare);

    let source = std::sync::Arc::new(AtHand {
        inner: env.tso.clone(),
        spare: std::sync::Mutex::new(Some(spare)),
    });
    let blind = env.client_on(
        std::sync::Arc::new(env.hbase.clone()),
        source.clone(),
        env.options(),
    );
    let mut txn = blind.begin().unwrap();
    txn.set(&t, "x", txn_support::FAMILY, "q", "mine").unwrap();
    let err = txn.commit().unwrap_err();
    assert!(
        matches!(err, Error::WriteConflict { start_ts, .. } if start_ts == spare),
        "{err}"
    );
    assert_eq!(
        env.writes(&key)[0].0 as u64,
        theirs,
        "theirs stays the newest"
    );
    assert!(!matches!(env.lock_state(&key), LockState::Locked(_)));

    // Again: nothing is at hand now, so it fetches and commits above theirs.
    let mut txn = blind.begin().unwrap();
    txn.set(&t, "x", txn_support::FAMILY, "q", "mine").unwrap();
    let mine = txn.commit().unwrap();
    assert!(mine > theirs);
    assert_eq!(blind.stats().spare_timestamps, 1);
    let reader = env.client().begin().unwrap();
    assert_eq!(
        reader
            .get(&t, "x", txn_support::FAMILY, "q")
            .unwrap()
            .as_deref(),
        Some(&b"mine"[..])
    );
}
