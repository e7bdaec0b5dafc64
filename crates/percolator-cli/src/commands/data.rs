//! The data commands: `get`, `put`, `delete`, `scan` (one transaction each) and `locks`.

use super::{client, hbase, print_json};
use crate::tools::{render_value, scan_range, value_json};
use percolator::locks::{check_owners, list_locks, resolve_locks};
use percolator::txn::{Schema, TxnOptions};
use percolator::CellKey;
use percolator::Result;

/// The connection options of the data commands.
///
/// ```
/// let a = percolator_cli::commands::DataArgs { hbase: "h:1".into(), oracle: "o:2".into(), json: true };
/// assert!(a.json);
/// ```
#[derive(clap::Args, Debug)]
pub struct DataArgs {
    /// The HBase Thrift2 gateway, HOST:PORT.
    #[arg(long)]
    pub hbase: String,
    /// The timestamp oracle, HOST:PORT.
    #[arg(long)]
    pub oracle: String,
    #[arg(long)]
    pub json: bool,
}

/// The data commands: each runs one transaction.
///
/// ```
/// use percolator_cli::commands::{DataArgs, DataCommand};
/// let conn = DataArgs { hbase: "h:1".into(), oracle: "o:2".into(), json: true };
/// let c = DataCommand::Get { conn, table: "t".into(), row: "r".into(), column: "f:q".into() };
/// assert!(matches!(c, DataCommand::Get { .. }));
/// ```
#[derive(clap::Subcommand, Debug)]
pub enum DataCommand {
    /// Reads one cell.
    Get {
        #[command(flatten)]
        conn: DataArgs,
        table: String,
        row: String,
        /// FAMILY:QUALIFIER
        column: String,
    },
    /// Writes one cell.
    Put {
        #[command(flatten)]
        conn: DataArgs,
        table: String,
        row: String,
        column: String,
        value: String,
    },
    /// Deletes one cell.
    Delete {
        #[command(flatten)]
        conn: DataArgs,
        table: String,
        row: String,
        column: String,
    },
    /// Reads the rows of a range or with a prefix.
    Scan {
        #[command(flatten)]
        conn: DataArgs,
        table: String,
        #[arg(long, conflicts_with_all = ["start", "stop"])]
        prefix: Option<String>,
        #[arg(long)]
        start: Option<String>,
        /// Exclusive.
        #[arg(long)]
        stop: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Lists the locks in a table; with --resolve, resolves abandoned ones (needs --oracle).
    Locks {
        #[arg(long)]
        hbase: String,
        #[arg(long)]
        oracle: Option<String>,
        #[arg(long)]
        resolve: bool,
        #[arg(long)]
        json: bool,
        table: String,
    },
}

/// Runs one data command.
///
/// ```
/// use percolator_cli::commands::{data, DataCommand};
/// let emulator = hbase_emulator::start_local()?;
/// let schema = Default::default();
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// percolator::txn::setup::create_table(&hbase, &schema, "t", &["f"])?;
/// let c = DataCommand::Locks { hbase: emulator.local_addr().to_string(), oracle: None, resolve: false, json: true, table: "t".into() };
/// assert!(data(&c)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn data(command: &DataCommand) -> Result<bool> {
    match command {
        DataCommand::Get {
            conn,
            table,
            row,
            column,
        } => {
            let c = client(&conn.hbase, &conn.oracle)?;
            let key = key(table, row, column)?;
            let value = c
                .begin()?
                .get(&key.table, &key.row, &key.family, &key.qualifier);
            c.shutdown();
            let value = value?;
            if conn.json {
                println!(
                    "{}",
                    serde_json::json!({ "value": value.as_deref().map(value_json) })
                );
            } else {
                println!(
                    "{}",
                    value.as_deref().map_or("(absent)".into(), render_value)
                );
            }
            Ok(true)
        }
        DataCommand::Put {
            conn,
            table,
            row,
            column,
            value,
        } => write(
            conn,
            key(table, row, column)?,
            Some(value.as_bytes().to_vec()),
        ),
        DataCommand::Delete {
            conn,
            table,
            row,
            column,
        } => write(conn, key(table, row, column)?, None),
        DataCommand::Scan {
            conn,
            table,
            prefix,
            start,
            stop,
            limit,
        } => {
            let c = client(&conn.hbase, &conn.oracle)?;
            let (start, stop) = scan_range(prefix.as_deref(), start.as_deref(), stop.as_deref());
            let rows = c
                .begin()
                .and_then(|txn| txn.scan(table, &start, &stop, *limit));
            c.shutdown();
            let mut cells = Vec::new();
            for r in rows? {
                for (family, qualifier, value) in r.columns {
                    if conn.json {
                        cells.push(serde_json::json!({
                            "row": value_json(&r.row),
                            "family": value_json(&family),
                            "qualifier": value_json(&qualifier),
                            "value": value_json(&value),
                        }));
                    } else {
                        println!(
                            "{} {}:{} {}",
                            render_value(&r.row),
                            render_value(&family),
                            render_value(&qualifier),
                            render_value(&value)
                        );
                    }
                }
            }
            if conn.json {
                print_json(&cells);
            }
            Ok(true)
        }
        DataCommand::Locks {
            hbase: addr,
            oracle,
            resolve,
            json,
            table,
        } => {
            let hb = hbase(addr)?;
            let schema = Schema::default();
            let mut locks = list_locks(&hb, &schema, table)?;
            let options = TxnOptions::default();
            check_owners(&hb, options.liveness(), &mut locks)?;
            let resolutions = match (resolve, oracle) {
                (false, _) => Vec::new(),
                (true, None) => {
                    return Err(percolator::Error::IllegalArgument {
                        message: "--resolve needs --oracle".into(),
                    })
                }
                (true, Some(o)) => {
                    let c = client(addr, o)?;
                    let r = resolve_locks(&c, &locks);
                    c.shutdown();
                    r
                }
            };
            if *json {
                let list: Vec<_> = locks
                    .iter()
                    .enumerate()
                    .map(|(i, l)| {
                        let mut v = l.to_json();
                        if let Some(r) = resolutions.get(i) {
                            v["resolved"] = serde_json::json!(r.resolved);
                        }
                        v
                    })
                    .collect();
                print_json(&list);
            } else {
                println!("{} locks in {table}", locks.len());
                for (i, l) in locks.iter().enumerate() {
                    let outcome = resolutions.get(i).map_or(String::new(), |r| {
                        if r.resolved {
                            " -> resolved".into()
                        } else {
                            format!(" -> kept: {}", r.reason.clone().unwrap_or_default())
                        }
                    });
                    println!(
                        "{} start_ts={} primary={} owner={} age={}ms alive={}{outcome}",
                        l.key,
                        l.start_ts,
                        l.primary,
                        l.owner,
                        l.age_ms,
                        l.alive.map_or("?".into(), |a| a.to_string())
                    );
                }
            }
            Ok(resolutions.iter().all(|r| r.resolved))
        }
    }
}

fn key(table: &str, row: &str, column: &str) -> Result<CellKey> {
    let (family, qualifier) = crate::tools::parse_column(column)?;
    CellKey::new(table, row.as_bytes().to_vec(), family, qualifier).map_err(Into::into)
}

fn write(conn: &DataArgs, key: CellKey, value: Option<Vec<u8>>) -> Result<bool> {
    let c = client(&conn.hbase, &conn.oracle)?;
    let result = c.begin().and_then(|mut txn| {
        match value {
            Some(v) => txn.set(
                &key.table,
                key.row.clone(),
                key.family.clone(),
                key.qualifier.clone(),
                v,
            )?,
            None => txn.delete(
                &key.table,
                key.row.clone(),
                key.family.clone(),
                key.qualifier.clone(),
            )?,
        }
        txn.commit()
    });
    c.shutdown();
    let commit_ts = result?;
    if conn.json {
        println!("{}", serde_json::json!({ "commit_ts": commit_ts }));
    } else {
        println!("committed at {commit_ts}");
    }
    Ok(true)
}
