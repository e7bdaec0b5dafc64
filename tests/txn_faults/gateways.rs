//! A gateway dying mid-transaction, with two configured: transfers keep running on the other,
//! and what the protocol guarantees holds (docs/design.md invariants 1 and 7: no committed
//! write is lost and no money is made or destroyed, whatever calls lost their replies).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use percolator::{Client, HBaseClient, RetryClass};

use crate::txn_support::gateway::external_config;
use crate::txn_support::proxy::Proxy;
use crate::txn_support::{Env, FAMILY};

const ACCOUNTS: usize = 6;
const START: i64 = 100;

fn balance(txn: &percolator::Transaction, table: &str, i: usize) -> i64 {
    let raw = txn.get(table, format!("acct{i}"), FAMILY, "q").unwrap();
    let text = String::from_utf8(raw.expect("every account has a balance")).unwrap();
    text.parse().unwrap()
}

fn total(client: &Client, table: &str) -> i64 {
    client
        .run(|txn| Ok((0..ACCOUNTS).map(|i| balance(txn, table, i)).sum::<i64>()))
        .unwrap()
}

#[test]
fn a_gateway_killed_mid_run_loses_no_money_and_the_other_carries_on() {
    let env = Env::start();
    let table = env.table("gateways");
    env.client()
        .run(|txn| {
            for i in 0..ACCOUNTS {
                txn.set(&table, format!("acct{i}"), FAMILY, "q", START.to_string())?;
            }
            Ok(())
        })
        .unwrap();

    // Two gateways, as a service sees them: two addresses in front of one cluster.
    let one = Proxy::start(&env.addr);
    let two = Proxy::start(&env.addr);
    let list = format!("{},{}", one.addr_like(&env.addr), two.addr_like(&env.addr));
    let hbase = HBaseClient::connect(external_config(&list)).expect("connect to both");
    let client = env.client_on(Arc::new(hbase), env.tso.clone(), env.options());

    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let committed_after_kill = Arc::new(AtomicU64::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (client, table) = (client.clone(), table.clone());
            let (stop, committed, after, killed) = (
                stop.clone(),
                committed.clone(),
                committed_after_kill.clone(),
                killed.clone(),
            );
            thread::spawn(move || {
                let mut n = w;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let (from, to) = (n % ACCOUNTS, (n * 7 + 1) % ACCOUNTS);
                    if from == to {
                        continue;
                    }
                    let outcome = client.run(|txn| {
                        let a = balance(txn, &table, from);
                        let b = balance(txn, &table, to);
                        txn.set(
                            &table,
                            format!("acct{from}"),
                            FAMILY,
                            "q",
                            (a - 1).to_string(),
                        )?;
                        txn.set(
                            &table,
                            format!("acct{to}"),
                            FAMILY,
                            "q",
                            (b + 1).to_string(),
                        )
                    });
                    match outcome {
                        Ok(()) => {
                            committed.fetch_add(1, Ordering::Relaxed);
                            if killed.load(Ordering::Relaxed) {
                                after.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        // A transfer whose gateway died under it may fail or be undetermined;
                        // either way the totals below must hold.
                        Err(e) => assert_ne!(e.retry_class(), RetryClass::Fatal, "{e}"),
                    }
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(800));
    drop(two);
    killed.store(true, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(20);
    while committed_after_kill.load(Ordering::Relaxed) < 20 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    assert!(
        committed_after_kill.load(Ordering::Relaxed) >= 20,
        "transfers stopped when one of two gateways died ({} before it)",
        committed.load(Ordering::Relaxed)
    );
    client.shutdown();
    // A fresh client resolves whatever the dead gateway left locked.
    assert_eq!(total(&env.client(), &table), START * ACCOUNTS as i64);
}
