//! Moves money between two tables in one transaction, from spawned tasks.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use percolator::txn::{setup, Schema};
use percolator::{AsyncClient, HBaseClient, HBaseConfig, TxnOptions};

pub async fn transfers(hbase: &str, oracle: &str) -> percolator::Result<u64> {
    // Tables with a family `f` and the percolator families; a table that exists is checked.
    let admin = HBaseClient::connect(HBaseConfig::new(hbase))?;
    for table in ["checking", "savings"] {
        setup::create_table(&admin, &Schema::default(), table, &["f"])?;
    }
    let options = TxnOptions::builder().build();
    let client = AsyncClient::connect(HBaseConfig::new(hbase), &[oracle.into()], options).await?;

    let done = Arc::new(AtomicU64::new(0));
    let mut handlers = Vec::new();
    for i in 0..4 {
        let (client, done) = (client.clone(), Arc::clone(&done));
        handlers.push(tokio::spawn(async move {
            let (from, to, amount) = (format!("alice{i}"), format!("alice{i}"), 10);
            client
                .run(async |txn| {
                    let balance = txn.get("checking", &from, "f", "balance").await?;
                    let balance: i64 = balance.map_or(100, |v| parse(&v));
                    txn.set("checking", &from, "f", "balance", (balance - amount).to_string())?;
                    let saved = txn.get("savings", &to, "f", "balance").await?;
                    let saved: i64 = saved.map_or(0, |v| parse(&v));
                    txn.set("savings", &to, "f", "balance", (saved + amount).to_string())?;
                    done.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
                .await
        }));
    }
    for handler in handlers {
        handler.await.expect("a handler panicked")?;
    }
    client.shutdown().await; // drains background commits, removes the liveness row
    Ok(done.load(Ordering::Relaxed))
}

fn parse(value: &[u8]) -> i64 {
    std::str::from_utf8(value).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::main]
async fn main() -> percolator::Result<()> {
    let hbase = std::env::var("HBASE_THRIFT").unwrap_or_else(|_| "127.0.0.1:9090".into());
    let oracle = std::env::var("PERCOLATOR_ORACLE").unwrap_or_else(|_| "127.0.0.1:7077".into());
    println!("{} transfers committed", transfers(&hbase, &oracle).await?);
    Ok(())
}
