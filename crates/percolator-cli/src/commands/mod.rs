//! The command-line faces of `percolator migrate ...` and of the data commands (`get`, `put`,
//! `delete`, `scan`, `locks`): argument structs for clap, and functions that run one command,
//! print its result (text, or JSON with `--json`) and say whether it succeeded. Errors are
//! returned for the binary to print; `Ok(false)` means "ran, found problems" (exit 1).

mod data;
mod gc;
mod migrate;

use std::time::Duration;

use percolator::hbase::{HBaseClient, HBaseConfig};
use percolator::txn::{Client, TxnOptions};
use percolator::Result;

pub use data::{data, DataArgs, DataCommand};
pub use gc::GcCommand;
pub use migrate::{migrate, ApplyArgs, BenchArgs, DisableArgs, MigrateArgs, MigrateCommand};

fn hbase(addr: &str) -> Result<HBaseClient> {
    let client =
        HBaseClient::connect(HBaseConfig::new(addr).read_timeout(Duration::from_secs(60)))?;
    // Fails here, once and clearly, when the gateway cannot be reached.
    client.admin().list_tables()?;
    Ok(client)
}

fn client(hbase: &str, oracle: &str) -> Result<Client> {
    let options = TxnOptions::builder()
        .max_lock_wait(Duration::from_secs(2))
        .build();
    Client::connect(HBaseConfig::new(hbase), &[oracle.to_string()], options)
}

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}
