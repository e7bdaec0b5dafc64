//! The same API, blocking: a counter incremented in a transaction, then read at a snapshot.
use percolator::txn::{setup, Schema};
use percolator::{Client, HBaseClient, HBaseConfig, TxnOptions};

pub fn count(hbase: &str, oracle: &str) -> percolator::Result<Vec<u8>> {
    let config = HBaseConfig::new(hbase).with_env()?;
    let admin = HBaseClient::connect(config.clone())?;
    setup::create_table(&admin, &Schema::default(), "counters", &["f"])?;
    let client = Client::connect(config, &[oracle.into()], TxnOptions::default())?;
    client.run(|txn| {
        let hits = txn.get("counters", "page:/", "f", "hits")?;
        let text = String::from_utf8(hits.unwrap_or_default()).unwrap_or_default();
        let hits: u64 = text.parse().unwrap_or(0);
        txn.set("counters", "page:/", "f", "hits", (hits + 1).to_string())
    })?;
    let hits = client.begin()?.get("counters", "page:/", "f", "hits")?;
    client.shutdown();
    Ok(hits.unwrap_or_default())
}

fn main() -> percolator::Result<()> {
    let hbase = std::env::var("HBASE_THRIFT").unwrap_or_else(|_| "127.0.0.1:9090".into());
    let oracle = std::env::var("PERCOLATOR_ORACLE").unwrap_or_else(|_| "127.0.0.1:7077".into());
    let hits = count(&hbase, &oracle)?;
    println!("hits: {}", String::from_utf8_lossy(&hits));
    Ok(())
}
