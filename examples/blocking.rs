//! The same API, blocking: a counter incremented in a transaction, then read at a snapshot.
use percolator::txn::{setup, Schema};
use percolator::{Client, HBaseClient, HBaseConfig, TxnOptions};

pub fn count(hbase: &str, oracle: &str) -> percolator::Result<i64> {
    let admin = HBaseClient::connect(HBaseConfig::new(hbase))?;
    setup::create_table(&admin, &Schema::default(), "counters", &["f"])?;
    let client = Client::connect(HBaseConfig::new(hbase), &[oracle.into()], TxnOptions::default())?;

    client.run(|txn| {
        let hits = txn.get("counters", "page:/", "f", "hits")?;
        let hits: i64 = hits.and_then(|v| String::from_utf8(v).ok()?.parse().ok()).unwrap_or(0);
        txn.set("counters", "page:/", "f", "hits", (hits + 1).to_string())
    })?;
    let txn = client.begin()?;
    let hits = txn.get("counters", "page:/", "f", "hits")?.unwrap_or_default();
    client.shutdown();
    Ok(String::from_utf8_lossy(&hits).parse().unwrap_or(0))
}

fn main() -> percolator::Result<()> {
    let hbase = std::env::var("HBASE_THRIFT").unwrap_or_else(|_| "127.0.0.1:9090".into());
    let oracle = std::env::var("PERCOLATOR_ORACLE").unwrap_or_else(|_| "127.0.0.1:7077".into());
    println!("hits: {}", count(&hbase, &oracle)?);
    Ok(())
}
