//! Moves money between two tables in one transaction, from spawned tasks.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use percolator::txn::{setup, Schema};
use percolator::{AsyncClient, HBaseClient, HBaseConfig, TxnOptions};

pub async fn transfers(hbase: &str, oracle: &str) -> percolator::Result<u64> {
    // The gateway's settings (a CA for https, Kerberos, ...) come from the environment.
    let config = HBaseConfig::new(hbase).with_env()?;
    let admin = HBaseClient::connect(config.clone())?;
    // Tables with a family `f` and the percolator families; a table that exists is checked.
    for table in ["checking", "savings"] {
        setup::create_table(&admin, &Schema::default(), table, &["f"])?;
    }
    let client = AsyncClient::connect(config, &[oracle.into()], TxnOptions::default()).await?;
    let done = Arc::new(AtomicU64::new(0));
    let mut handlers = Vec::new();
    for i in 0..4 {
        let (client, done) = (client.clone(), Arc::clone(&done));
        handlers.push(tokio::spawn(async move {
            let (account, amount) = (format!("alice{i}"), 10);
            let run = client.run(async |txn| {
                let checking = number(txn.get("checking", &account, "f", "b").await?, 100);
                let savings = number(txn.get("savings", &account, "f", "b").await?, 0);
                let (left, saved) = (checking - amount, savings + amount);
                txn.set("checking", &account, "f", "b", left.to_string())?;
                txn.set("savings", &account, "f", "b", saved.to_string())?;
                done.fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
            run.await
        }));
    }
    for handler in handlers {
        handler.await.expect("a handler panicked")?;
    }
    client.shutdown().await; // drains background commits, removes the liveness row
    Ok(done.load(Ordering::Relaxed))
}

/// A stored balance, or `default` for an account never written.
fn number(value: Option<Vec<u8>>, default: i64) -> i64 {
    let text = value.and_then(|v| String::from_utf8(v).ok());
    text.and_then(|t| t.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> percolator::Result<()> {
    let hbase = std::env::var("HBASE_THRIFT").unwrap_or_else(|_| "127.0.0.1:9090".into());
    let oracle = std::env::var("PERCOLATOR_ORACLE").unwrap_or_else(|_| "127.0.0.1:7077".into());
    println!("{} transfers committed", transfers(&hbase, &oracle).await?);
    Ok(())
}
