//! The secondary-index workload of docs/observers.md, as a service would run it: users change,
//! swap and drop their emails while an observer keeps `by_email` (email -> user) with
//! `LastApplied`, and its workers are killed and replaced throughout. At the end, one snapshot
//! must show the index exact: every user's email names that user, and no entry is stale. The
//! ignored `index_lag` measures the lag of the same workload (docs/observers.md).

mod txn_support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use percolator::format::WriteKind;
use percolator::observer::{
    ack_key, LastApplied, ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig,
};
use percolator::txn::setup::create_liveness_table;
use percolator::txn::{LivenessConfig, TxnOptions};
use percolator::{AsyncTransaction, Client, Result};
use txn_support::{Env, FAMILY};

/// Keeps `index`: row = an email, `f:user` = the user row that has it.
struct EmailIndex {
    index: String,
    applied: LastApplied,
}

#[percolator::observer::async_trait]
impl Observer for EmailIndex {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        let change = self.applied.take(txn, row, col).await?;
        if let Some(old) = change.replaced()
            && txn.get(&self.index, old, FAMILY, "user").await?.as_deref() == Some(row)
        {
            txn.delete(&self.index, old, FAMILY, "user")?;
        }
        if let Some(new) = &change.new {
            // Even when unchanged: a swap undone before this row's run collapses into a run
            // that sees no change, while the other row's run may have removed the entry.
            if txn.get(&self.index, new, FAMILY, "user").await?.as_deref() != Some(row) {
                txn.set(&self.index, new, FAMILY, "user", row)?;
            }
        }
        Ok(())
    }
}

/// User rows: plain keys sharing a prefix, which the partitions' hash spreads.
fn user(i: u64) -> Vec<u8> {
    format!("user{i:03}").into_bytes()
}

/// One run of the workload: `users` users with emails `e0`.., `writers` writer threads for
/// `seconds`, two workers, one of them killed (as a crash) and replaced every `kill_every`.
struct Workload {
    users: u64,
    writers: u64,
    seconds: u64,
    kill_every: Option<Duration>,
    /// Clients with the default options (a lock ttl of 3 s, liveness rows of 5 s) instead of
    /// the test fixture's quicker ones.
    default_options: bool,
}

/// What a run did: the workers killed, the writers' commits, and the lag of every change.
struct Outcome {
    kills: usize,
    committed: u64,
    lags: Vec<Duration>,
}

/// A committed run of a row, as its acknowledgment's history keeps it: the run's commit_ts
/// and the commit_ts of the newest change it processed.
type Run = (Vec<u8>, u64, u64);

/// Every committed run of the index observer on the users' rows, read from each row's
/// acknowledgment cell (docs/observers.md, data model): each of its write records is a run's
/// commit, and the value it committed is the change's commit_ts. Read from HBase rather than
/// gathered by `Observer::committed`, which a worker killed just after a commit never calls.
fn committed_runs(env: &Env, users: &str, count: u64) -> Vec<Run> {
    let column = ObservedColumn::new(users, FAMILY, "email");
    let mut runs = Vec::new();
    for i in 0..count {
        let ack = ack_key(&env.schema, "email_index", &column, &user(i)).unwrap();
        let values: BTreeMap<i64, Vec<u8>> = env.data_versions(&ack).into_iter().collect();
        for (commit_ts, record) in env.writes(&ack) {
            if record.kind != WriteKind::Put {
                continue;
            }
            let value = record
                .short_value
                .or_else(|| values.get(&(record.start_ts as i64)).cloned())
                .expect("an acknowledgment's value");
            let change = u64::from_be_bytes(value[..8].try_into().expect("a commit_ts"));
            runs.push((user(i), commit_ts as u64, change));
        }
    }
    runs
}

/// The lag of each change (row, commit_ts): from its commit to the commit of the first run of
/// its row that processed it or a newer change (whose snapshot held it), by the oracle's
/// timestamps. `CommittedRun::lag` is the lag of the newest change a run processed; the older
/// changes that collapsed into the run waited longer, and this counts them.
fn change_lags(changes: &[(Vec<u8>, u64)], runs: &[Run]) -> Vec<Duration> {
    let ms = |ts: u64| ts >> 18;
    changes
        .iter()
        .map(|(row, change)| {
            let seen = runs
                .iter()
                .filter(|(r, _, processed)| r == row && processed >= change)
                .map(|(_, commit_ts, _)| *commit_ts)
                .min()
                .unwrap_or_else(|| panic!("no committed run saw the change at {change}"));
            Duration::from_millis(ms(seen).saturating_sub(ms(*change)))
        })
        .collect()
}

impl Workload {
    fn start_worker(&self, env: &Env, users: &str, index: &str) -> (Client, ObserverWorker) {
        let client = self.client(env);
        let set = ObserverSet::new()
            .observe(
                ObservedColumn::new(users, FAMILY, "email"),
                "email_index",
                EmailIndex {
                    index: index.to_string(),
                    applied: LastApplied::new(FAMILY, "email_indexed"),
                },
            )
            .expect("observer set");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let worker = rt
            .block_on(ObserverWorker::start(
                client.asynchronous(),
                set,
                WorkerConfig::default(),
            ))
            .expect("start worker");
        (client, worker)
    }

    fn client(&self, env: &Env) -> Client {
        if !self.default_options {
            return env.client();
        }
        let liveness = LivenessConfig {
            table: "percolator_test_liveness_ttl5".into(),
            ttl_secs: 5,
            ..LivenessConfig::default()
        };
        create_liveness_table(&env.hbase, &liveness).expect("liveness table");
        env.client_with(TxnOptions::builder().liveness(liveness).build())
    }

    /// One writer transaction: swap two users' emails, give one a fresh email, or drop one's.
    /// Returns the rows it changed and its commit_ts.
    fn write_once(
        &self,
        client: &Client,
        users: &str,
        step: u64,
        fresh: &AtomicU64,
    ) -> Result<(Vec<Vec<u8>>, u64)> {
        let a = user(step * 7 % self.users);
        let b = user((step * 13 + 5) % self.users);
        let mut txn = client.begin()?;
        let changed = match step % 5 {
            0..=2 if a != b => {
                let ea = txn.get(users, &a, FAMILY, "email")?;
                let eb = txn.get(users, &b, FAMILY, "email")?;
                for (row, email) in [(&a, eb), (&b, ea)] {
                    match email {
                        Some(e) => txn.set(users, row, FAMILY, "email", e)?,
                        None => txn.delete(users, row, FAMILY, "email")?,
                    }
                }
                vec![a, b]
            }
            3 => {
                let e = format!("e{}", fresh.fetch_add(1, Ordering::SeqCst));
                txn.set(users, &a, FAMILY, "email", e)?;
                vec![a]
            }
            _ => {
                txn.delete(users, &a, FAMILY, "email")?;
                vec![a]
            }
        };
        Ok((changed, txn.commit()?))
    }

    /// Runs the workload, waits until every change is processed, and checks the index at one
    /// snapshot.
    fn run(&self) -> Outcome {
        let env = Env::start();
        let users = env.table("idx_users");
        let index = env.table("idx_by_email");
        let mut workers = vec![
            self.start_worker(&env, &users, &index),
            self.start_worker(&env, &users, &index),
        ];
        // Writers start after the column is registered, so each of their commits carries its
        // notification (the registration window, docs/observers.md).
        let writer = self.client(&env);
        let fresh = AtomicU64::new(self.users);
        writer
            .run(|txn| {
                for i in 0..self.users {
                    txn.set(&users, user(i), FAMILY, "email", format!("e{i}"))?;
                }
                Ok(())
            })
            .unwrap();

        let stop = AtomicBool::new(false);
        let changes = Mutex::new(Vec::new());
        let mut kills = 0;
        std::thread::scope(|s| {
            for w in 0..self.writers {
                let (stop, changes, fresh, writer, users) =
                    (&stop, &changes, &fresh, &writer, &users);
                s.spawn(move || {
                    let mut step = w;
                    while !stop.load(Ordering::SeqCst) {
                        // A failed transaction (a write conflict between writers) changed
                        // nothing; the next step goes on.
                        if let Ok((rows, commit_ts)) = self.write_once(writer, users, step, fresh) {
                            let mut changes = changes.lock().unwrap();
                            changes.extend(rows.into_iter().map(|row| (row, commit_ts)));
                        }
                        step += self.writers;
                    }
                });
            }
            let begun = Instant::now();
            let until = begun + Duration::from_secs(self.seconds);
            let mut next_kill = self.kill_every.map(|every| begun + every);
            while Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
                let Some(at) = next_kill.filter(|at| Instant::now() >= *at) else {
                    continue;
                };
                // Killed as a crash: leases and the worker row stay until they expire.
                let (client, worker) = workers.remove(0);
                worker.kill();
                client.kill();
                kills += 1;
                workers.push(self.start_worker(&env, &users, &index));
                next_kill = self.kill_every.map(|every| at + every);
            }
            stop.store(true, Ordering::SeqCst);
        });

        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(workers[0].1.wait_idle(Duration::from_secs(60)))
            .expect("every change processed");
        check_index(&writer, &users, &index, self.users, kills);
        for (client, worker) in workers {
            rt.block_on(worker.shutdown());
            client.shutdown();
        }
        writer.shutdown();
        let changes = changes.into_inner().unwrap();
        let lags = change_lags(&changes, &committed_runs(&env, &users, self.users));
        Outcome {
            kills,
            committed: changes.len() as u64,
            lags,
        }
    }
}

/// At one snapshot, the index holds exactly the users' emails, each naming its user.
fn check_index(client: &Client, users: &str, index: &str, count: u64, kills: usize) {
    let txn = client.begin().unwrap();
    let mut email_of = BTreeMap::new();
    for i in 0..count {
        if let Some(e) = txn.get(users, user(i), FAMILY, "email").unwrap() {
            assert!(
                email_of.insert(e.clone(), user(i)).is_none(),
                "the writers keep emails unique: {}",
                String::from_utf8_lossy(&e)
            );
        }
    }
    let entries: BTreeMap<Vec<u8>, Vec<u8>> = txn
        .scan(index, "", "", usize::MAX)
        .unwrap()
        .into_iter()
        .filter_map(|r| {
            let user = r.columns.iter().find(|(_, q, _)| q == b"user")?.2.clone();
            Some((r.row, user))
        })
        .collect();
    let show = |m: &BTreeMap<Vec<u8>, Vec<u8>>| -> Vec<(String, String)> {
        m.iter()
            .map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    };
    assert_eq!(
        show(&entries),
        show(&email_of),
        "index entries (left) against the users' emails (right), after {kills} kills"
    );
}

#[test]
fn the_email_index_is_exact_after_changes_swaps_and_deletes_with_workers_killed() {
    let outcome = Workload {
        users: 40,
        writers: 2,
        seconds: 5,
        kill_every: Some(Duration::from_millis(800)),
        default_options: false,
    }
    .run();
    assert!(outcome.committed > 20, "the writers made progress");
    assert_eq!(
        outcome.lags.len() as u64,
        outcome.committed,
        "every change was seen by a run"
    );
    assert!(outcome.kills >= 5, "{} kills", outcome.kills);
}

/// The lag of the index workload (each change's commit to the commit of the first run that
/// saw it, [`change_lags`]) with default settings (the workers' and the clients'): 200 users, 4 writers, 15 s, without kills and
/// with a worker killed and replaced every 5 s. Prints p50/p99/max; asserts nothing about
/// them (a measurement: `cargo test --release --test observer_index index_lag -- --ignored
/// --nocapture`). The index is still checked at the end of each run.
#[test]
#[ignore = "a measurement, run by hand"]
fn index_lag() {
    for kill_every in [None, Some(Duration::from_secs(5))] {
        let mut outcome = Workload {
            users: 200,
            writers: 4,
            seconds: 15,
            kill_every,
            default_options: true,
        }
        .run();
        let lags = &mut outcome.lags;
        lags.sort();
        let at = |q: f64| lags[((lags.len() - 1) as f64 * q) as usize];
        println!(
            "kills={}: {} changes, lag p50 {:?} p99 {:?} max {:?}",
            outcome.kills,
            outcome.committed,
            at(0.5),
            at(0.99),
            lags[lags.len() - 1]
        );
    }
}

/// The kept value cannot live in the observed column itself: the run would change what it
/// observes and run again forever. That is a typed error, and nothing is written.
#[test]
fn last_applied_refuses_to_keep_its_value_in_the_observed_column() {
    let env = Env::start();
    let users = env.table("idx_self");
    let client = env.client();
    let column = ObservedColumn::new(&users, FAMILY, "email");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt.block_on(async {
        let mut txn = client.asynchronous().begin().await?;
        LastApplied::new(FAMILY, "email")
            .take(&mut txn, b"u1", &column)
            .await
    });
    assert!(
        matches!(err, Err(percolator::Error::IllegalArgument { .. })),
        "{err:?}"
    );
    client.shutdown();
}
