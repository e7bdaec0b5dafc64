//! The secondary-index workload of docs/observers.md, as a service would run it: users change,
//! swap and drop their emails while an observer keeps `by_email` (email -> user) with
//! `LastApplied`, and its workers are killed and replaced throughout. At the end, one snapshot
//! must show the index exact: every user's email names that user, and no entry is stale.

mod txn_support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use percolator::observer::{
    LastApplied, ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig,
};
use percolator::{AsyncTransaction, Client, Result};
use txn_support::{Env, FAMILY};

const USERS: u64 = 40;

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
        if change.is_unchanged() {
            return Ok(());
        }
        if let Some(old) = &change.old {
            if txn.get(&self.index, old, FAMILY, "user").await?.as_deref() == Some(row) {
                txn.delete(&self.index, old, FAMILY, "user")?;
            }
        }
        if let Some(new) = &change.new {
            txn.set(&self.index, new, FAMILY, "user", row)?;
        }
        Ok(())
    }
}

/// User rows whose first bytes spread over the partitions, so kills hit the work.
fn user(i: u64) -> Vec<u8> {
    let mut row = vec![(i * 97 % 256) as u8];
    row.extend_from_slice(format!("user{i:03}").as_bytes());
    row
}

fn start_worker(env: &Env, users: &str, index: &str) -> (Client, ObserverWorker) {
    let client = env.client();
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

/// One writer transaction: swap two users' emails, give one a fresh email, or drop one's.
fn write_once(client: &Client, users: &str, step: u64, fresh: &AtomicU64) -> Result<()> {
    let a = user(step * 7 % USERS);
    let b = user((step * 13 + 5) % USERS);
    client.run(|txn| {
        match step % 5 {
            0..=2 if a != b => {
                let ea = txn.get(users, &a, FAMILY, "email")?;
                let eb = txn.get(users, &b, FAMILY, "email")?;
                for (row, email) in [(&a, eb), (&b, ea)] {
                    match email {
                        Some(e) => txn.set(users, row, FAMILY, "email", e)?,
                        None => txn.delete(users, row, FAMILY, "email")?,
                    }
                }
            }
            3 => {
                let e = format!("e{}", fresh.fetch_add(1, Ordering::SeqCst));
                txn.set(users, &a, FAMILY, "email", e)?;
            }
            _ => txn.delete(users, &a, FAMILY, "email")?,
        }
        Ok(())
    })
}

#[test]
fn the_email_index_is_exact_after_changes_swaps_and_deletes_with_workers_killed() {
    let env = Env::start();
    let users = env.table("idx_users");
    let index = env.table("idx_by_email");
    let mut workers = vec![
        start_worker(&env, &users, &index),
        start_worker(&env, &users, &index),
    ];
    // Writers start after the column is registered, so each of their commits carries its
    // notification (the registration window, docs/observers.md).
    let writer = env.client();
    let fresh = AtomicU64::new(USERS);
    writer
        .run(|txn| {
            for i in 0..USERS {
                txn.set(&users, user(i), FAMILY, "email", format!("e{i}"))?;
            }
            Ok(())
        })
        .unwrap();

    let stop = AtomicBool::new(false);
    let committed = AtomicU64::new(0);
    let mut kills = 0;
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (stop, committed, fresh, writer, users) =
                (&stop, &committed, &fresh, &writer, &users);
            s.spawn(move || {
                let mut step = w;
                while !stop.load(Ordering::SeqCst) {
                    if write_once(writer, users, step, fresh).is_ok() {
                        committed.fetch_add(1, Ordering::SeqCst);
                    }
                    step += 2;
                }
            });
        }
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(800));
            // Killed as a crash: leases and the worker row stay until they expire.
            let (client, worker) = workers.remove(0);
            worker.kill();
            client.kill();
            kills += 1;
            workers.push(start_worker(&env, &users, &index));
        }
        stop.store(true, Ordering::SeqCst);
    });
    assert!(
        committed.load(Ordering::SeqCst) > 20,
        "the writers made progress"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(workers[0].1.wait_idle(Duration::from_secs(60)))
        .expect("every change processed");

    // One snapshot: the users' emails and the whole index.
    let txn = writer.begin().unwrap();
    let mut email_of = BTreeMap::new();
    for i in 0..USERS {
        if let Some(e) = txn.get(&users, user(i), FAMILY, "email").unwrap() {
            assert!(
                email_of.insert(e.clone(), user(i)).is_none(),
                "the writers keep emails unique: {}",
                String::from_utf8_lossy(&e)
            );
        }
    }
    let entries: BTreeMap<Vec<u8>, Vec<u8>> = txn
        .scan(&index, "", "", usize::MAX)
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
    for (client, worker) in workers {
        rt.block_on(worker.shutdown());
        client.shutdown();
    }
    writer.shutdown();
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
