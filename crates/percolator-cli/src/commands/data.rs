//! The data commands: `get`, `put`, `delete`, `scan` (one transaction each) and `locks`.
//!
//! Each runs under one deadline, `--timeout` (default 30 s): against a gateway or an oracle
//! that accepts connections and never answers, the command fails after that long, naming the
//! server it was waiting for.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::{
    hbase, oracle, print_json, timeout, transactional, within, Waiting, DEFAULT_TIMEOUT_S,
};
use crate::tools::{render_value, scan_range, value_json};
use percolator::locks::{check_owners, list_locks, resolve_locks};
use percolator::txn::{LivenessConfig, Schema, TxnOptions};
use percolator::CellKey;
use percolator::HBaseClient;
use percolator::{Error, Result};

/// The connection options of the data commands.
///
/// ```
/// let a = percolator_cli::commands::DataArgs {
///     hbase: "h:1".into(), oracle: "o:2".into(), json: true, timeout: 30.0,
/// };
/// assert!(a.json);
/// ```
#[derive(clap::Args, Clone, Debug)]
pub struct DataArgs {
    /// The HBase Thrift2 gateway: HOST:PORT, http://HOST:PORT, https://HOST:PORT, or a
    /// comma-separated list; `HBASE_THRIFT` when not given (as `HBaseConfig::with_env`).
    #[arg(long, env = "HBASE_THRIFT")]
    pub hbase: String,
    /// The timestamp oracle, HOST:PORT.
    #[arg(long)]
    pub oracle: String,
    /// Print JSON instead of text (binary values as {"hex": "..."}).
    #[arg(long)]
    pub json: bool,
    /// The most time the command may take (5, 5s, 500ms, 1m), waits on the gateway and the oracle
    /// included; past it the command fails, naming the server it was waiting for.
    #[arg(long, value_name = "DURATION", default_value_t = DEFAULT_TIMEOUT_S, value_parser = crate::tools::duration::seconds)]
    pub timeout: f64,
}

/// The data commands: each runs one transaction.
///
/// ```
/// use percolator_cli::commands::{DataArgs, DataCommand};
/// let conn = DataArgs { hbase: "h:1".into(), oracle: "o:2".into(), json: true, timeout: 30.0 };
/// let c = DataCommand::Get {
///     conn, table: "t".into(), row: "r".into(), column: "f:q".into(), output: None,
/// };
/// assert!(matches!(c, DataCommand::Get { .. }));
/// ```
#[derive(clap::Subcommand, Clone, Debug)]
pub enum DataCommand {
    /// Reads one cell.
    Get {
        #[command(flatten)]
        conn: DataArgs,
        /// The table.
        table: String,
        /// The row key.
        row: String,
        /// The column, FAMILY:QUALIFIER (the qualifier may contain colons).
        column: String,
        /// Write the value's raw bytes to FILE instead of showing it (exit status 1, and FILE
        /// left as it was, when the cell has no value).
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Writes one cell.
    Put {
        #[command(flatten)]
        conn: DataArgs,
        /// The table.
        table: String,
        /// The row key.
        row: String,
        /// The column, FAMILY:QUALIFIER (the qualifier may contain colons).
        column: String,
        /// The value, as given; `-` reads it from standard input; with --hex, hexadecimal
        /// digits. Omitted with --value-file. At most the client's value limit (1 MiB).
        #[arg(required_unless_present = "value_file")]
        value: Option<String>,
        /// Read the value, as raw bytes, from this file instead of the command line.
        #[arg(long, value_name = "PATH", conflicts_with_all = ["value", "hex"])]
        value_file: Option<PathBuf>,
        /// The value (the argument, or standard input with `-`) is hexadecimal: `00ff10`, an
        /// optional `0x` prefix, whitespace ignored.
        #[arg(long)]
        hex: bool,
    },
    /// Deletes one cell.
    Delete {
        #[command(flatten)]
        conn: DataArgs,
        /// The table.
        table: String,
        /// The row key.
        row: String,
        /// The column, FAMILY:QUALIFIER (the qualifier may contain colons).
        column: String,
    },
    /// Reads the rows of a range or with a prefix.
    Scan {
        #[command(flatten)]
        conn: DataArgs,
        /// The table.
        table: String,
        /// Only the rows whose key starts with this.
        #[arg(long, conflicts_with_all = ["start", "stop"])]
        prefix: Option<String>,
        /// The first row key of the range (inclusive; default: the table's first row).
        #[arg(long)]
        start: Option<String>,
        /// The row key that ends the range (exclusive; default: the table's end).
        #[arg(long)]
        stop: Option<String>,
        /// Show only the columns of this family (a user family: the percolator families are
        /// refused).
        #[arg(long)]
        family: Option<String>,
        /// The most rows to read (rows, not cells).
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Lists the locks in a table; with --resolve, resolves abandoned ones (needs --oracle).
    Locks {
        /// The HBase Thrift2 gateway: HOST:PORT, http://HOST:PORT, https://HOST:PORT, or a
        /// comma-separated list; `HBASE_THRIFT` when not given.
        #[arg(long, env = "HBASE_THRIFT")]
        hbase: String,
        /// The timestamp oracle, HOST:PORT (needed by --resolve).
        #[arg(long)]
        oracle: Option<String>,
        /// Resolve the abandoned locks through the protocol (roll each forward or back); locks
        /// of live transactions are kept. Exit status 1 if any lock is kept.
        #[arg(long, requires = "oracle")]
        resolve: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The liveness table of the clients that wrote the locks (`LivenessConfig::table`):
        /// where their owners are looked up, alive or not.
        #[arg(long, default_value = "percolator_liveness")]
        liveness_table: String,
        /// The most time the command may take (5, 5s, 500ms, 1m), waits on the gateway and the
        /// oracle included.
        #[arg(long, value_name = "DURATION", default_value_t = DEFAULT_TIMEOUT_S, value_parser = crate::tools::duration::seconds)]
        timeout: f64,
        /// The table.
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
/// let c = DataCommand::Locks {
///     hbase: emulator.local_addr().to_string(), oracle: None, resolve: false, json: true,
///     liveness_table: "percolator_liveness".into(), timeout: 30.0, table: "t".into(),
/// };
/// assert!(data(&c)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn data(command: &DataCommand) -> Result<bool> {
    let waiting = Waiting::default();
    match command.clone() {
        DataCommand::Get {
            conn,
            table,
            row,
            column,
            output,
        } => {
            let key = key(&table, &row, &column)?;
            let limit = timeout(conn.timeout)?;
            let w = waiting.clone();
            let c = conn.clone();
            let value = within(limit, &waiting, move || {
                let client = connect(&c, &w)?;
                let value = client
                    .begin()
                    .and_then(|txn| txn.get(&key.table, &key.row, &key.family, &key.qualifier));
                client.shutdown();
                value
            })?;
            match (output, value) {
                (Some(path), Some(value)) => {
                    std::fs::write(&path, &value)
                        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
                    if conn.json {
                        println!(
                            "{}",
                            serde_json::json!({ "bytes": value.len(), "output": path })
                        );
                    } else {
                        println!("wrote {} bytes to {}", value.len(), path.display());
                    }
                    Ok(true)
                }
                (output, value) => {
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
                    // Absent with --output: the file is not written, and scripts must not
                    // read what it held before.
                    Ok(output.is_none())
                }
            }
        }
        DataCommand::Put {
            conn,
            table,
            row,
            column,
            value,
            value_file,
            hex,
        } => {
            let key = key(&table, &row, &column)?;
            let value = read_value(&key, value.as_deref(), value_file.as_deref(), hex)?;
            write(conn, key, Some(value), waiting)
        }
        DataCommand::Delete {
            conn,
            table,
            row,
            column,
        } => write(conn, key(&table, &row, &column)?, None, waiting),
        DataCommand::Scan {
            conn,
            table,
            prefix,
            start,
            stop,
            family: only_family,
            limit,
        } => {
            if let Some(f) = &only_family {
                Schema::default()
                    .refuse_percolator_family(f.as_bytes(), format!("scan of {table}"))?;
            }
            let deadline = timeout(conn.timeout)?;
            let (start, stop) = scan_range(prefix.as_deref(), start.as_deref(), stop.as_deref());
            let (w, c) = (waiting.clone(), conn.clone());
            let rows = within(deadline, &waiting, move || {
                let client = connect(&c, &w)?;
                let rows = client
                    .begin()
                    .and_then(|txn| txn.scan(&table, &start, &stop, limit));
                client.shutdown();
                rows
            })?;
            let mut cells = Vec::new();
            for r in rows {
                for (family, qualifier, value) in r.columns {
                    if only_family
                        .as_deref()
                        .is_some_and(|f| f.as_bytes() != family.as_slice())
                    {
                        continue;
                    }
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
            liveness_table,
            timeout: seconds,
            table,
        } => {
            let deadline = timeout(seconds)?;
            let (w, name) = (waiting.clone(), table.clone());
            let (locks, resolutions) = within(deadline, &waiting, move || {
                w.on(format!("the HBase gateway at {addr}"));
                let hb = hbase(&addr, deadline)?;
                let schema = Schema::default();
                let mut locks = list_locks(&hb, &schema, &table)?;
                let liveness = LivenessConfig {
                    table: liveness_table,
                    ..LivenessConfig::default()
                };
                check_owners(&hb, &liveness, &mut locks)?;
                let resolutions = match (resolve, oracle) {
                    (false, _) => Vec::new(),
                    (true, None) => {
                        return Err(Error::IllegalArgument {
                            message: "--resolve needs --oracle".into(),
                        })
                    }
                    (true, Some(o)) => {
                        let c = with_oracle(&hb, &addr, &o, deadline, &w, liveness)?;
                        let r = resolve_locks(&c, &locks);
                        c.shutdown();
                        r
                    }
                };
                Ok((locks, resolutions))
            })?;
            if json {
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
                println!("{} locks in {name}", locks.len());
                for (i, l) in locks.iter().enumerate() {
                    let outcome = resolutions.get(i).map_or(String::new(), |r| {
                        if r.resolved {
                            " -> resolved".into()
                        } else {
                            format!(" -> kept: {}", r.reason.clone().unwrap_or_default())
                        }
                    });
                    println!(
                        "{} start_ts={} primary={} owner={} age={}ms ttl={}ms alive={}{outcome}",
                        l.key,
                        l.start_ts,
                        l.primary,
                        l.owner,
                        l.age_ms,
                        l.ttl_ms,
                        l.alive.map_or("?".into(), |a| a.to_string())
                    );
                }
            }
            Ok(resolutions.iter().all(|r| r.resolved))
        }
    }
}

/// The cell a command names; a percolator family is refused here, for every data command.
fn key(table: &str, row: &str, column: &str) -> Result<CellKey> {
    let (family, qualifier) = crate::tools::parse_column(column)?;
    let key = CellKey::new(table, row.as_bytes().to_vec(), family, qualifier)?;
    Schema::default().refuse_percolator_family(&key.family, &key)?;
    Ok(key)
}

/// A transactional client, each server reached first on its own so that the deadline's error
/// names the one that did not answer.
fn connect(conn: &DataArgs, waiting: &Waiting) -> Result<percolator::Client> {
    let deadline = timeout(conn.timeout)?;
    waiting.on(format!("the HBase gateway at {}", conn.hbase));
    let hb = hbase(&conn.hbase, deadline)?;
    with_oracle(
        &hb,
        &conn.hbase,
        &conn.oracle,
        deadline,
        waiting,
        LivenessConfig::default(),
    )
}

/// A transactional client over `hb` (the gateway at `addr`, already reached) and the oracle
/// at `oracle`, reached here.
fn with_oracle(
    hb: &HBaseClient,
    addr: &str,
    oracle_addr: &str,
    deadline: std::time::Duration,
    waiting: &Waiting,
    liveness: LivenessConfig,
) -> Result<percolator::Client> {
    waiting.on(format!("the timestamp oracle at {oracle_addr}"));
    let (tso, _) = oracle(&[oracle_addr.to_string()], deadline)?;
    waiting.on(format!(
        "the HBase gateway at {addr} or the timestamp oracle at {oracle_addr}"
    ));
    transactional(hb, tso, liveness)
}

/// The value of `put`: the argument (`-`: standard input), or the file, decoded from hex with
/// `hex`; refused above the client's value limit, naming the cell, before anything is written.
fn read_value(key: &CellKey, arg: Option<&str>, file: Option<&Path>, hex: bool) -> Result<Vec<u8>> {
    let limit = TxnOptions::default().max_value_size();
    let raw = match (file, arg) {
        (Some(path), _) => {
            let f = std::fs::File::open(path)
                .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
            read_bounded(f, limit, &path.display().to_string())?
                .map_err(|size| too_large(key, size, limit))?
        }
        (None, Some("-")) => {
            let bound = if hex { 2 * limit + 1024 } else { limit };
            read_bounded(std::io::stdin().lock(), bound, "standard input")?
                .map_err(|size| too_large(key, size, limit))?
        }
        (None, Some(text)) => text.as_bytes().to_vec(),
        (None, None) => {
            return Err(Error::IllegalArgument {
                message: "put needs a value, `-` (standard input) or --value-file".into(),
            })
        }
    };
    let value = if hex { decode_hex(&raw)? } else { raw };
    if value.len() > limit {
        return Err(too_large(key, value.len(), limit));
    }
    Ok(value)
}

/// Reads `source` whole, but keeps no more than `limit` + 1 bytes: past the limit it only
/// counts the rest, and gives the whole size for the error.
fn read_bounded(
    source: impl Read,
    limit: usize,
    name: &str,
) -> Result<std::result::Result<Vec<u8>, usize>> {
    let mut value = Vec::new();
    let mut source = source;
    (&mut source)
        .take(limit as u64 + 1)
        .read_to_end(&mut value)
        .map_err(|e| Error::io(format!("reading {name}"), e))?;
    if value.len() > limit {
        let rest = std::io::copy(&mut source, &mut std::io::sink())
            .map_err(|e| Error::io(format!("reading {name}"), e))?;
        return Ok(Err(value.len() + rest as usize));
    }
    Ok(Ok(value))
}

/// The library's own error for a value over `TxnOptions::max_value_size`: the cell named, in
/// the error's fields and its one line.
fn too_large(key: &CellKey, size: usize, limit: usize) -> Error {
    Error::ValueTooLarge {
        table: key.table.clone(),
        row: key.row.clone(),
        column: key.column(),
        size,
        limit,
    }
}

/// Hexadecimal digits to bytes: an optional `0x`, whitespace ignored, upper or lower case.
fn decode_hex(text: &[u8]) -> Result<Vec<u8>> {
    let digits: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let digits = digits
        .strip_prefix(b"0x")
        .or_else(|| digits.strip_prefix(b"0X"))
        .unwrap_or(&digits);
    let bad = || Error::IllegalArgument {
        message: "--hex: the value must be an even number of hexadecimal digits".into(),
    };
    if !digits.len().is_multiple_of(2) {
        return Err(bad());
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
                .ok_or_else(bad)
        })
        .collect()
}

fn write(conn: DataArgs, key: CellKey, value: Option<Vec<u8>>, waiting: Waiting) -> Result<bool> {
    let deadline = timeout(conn.timeout)?;
    let (w, c) = (waiting.clone(), conn.clone());
    let commit_ts = within(deadline, &waiting, move || {
        let client = connect(&c, &w)?;
        let result = client.begin().and_then(|mut txn| {
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
        client.shutdown();
        result
    })?;
    if conn.json {
        println!("{}", serde_json::json!({ "commit_ts": commit_ts }));
    } else {
        println!("committed at {commit_ts}");
    }
    let _ = std::io::stdout().flush();
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{decode_hex, read_bounded, too_large};
    use percolator::CellKey;

    #[test]
    fn hex_values_decode_with_or_without_prefix_and_refuse_odd_or_bad_digits() {
        assert_eq!(decode_hex(b"00ff10").unwrap(), [0x00, 0xff, 0x10]);
        assert_eq!(decode_hex(b"0xAB cd\n").unwrap(), [0xab, 0xcd]);
        assert_eq!(decode_hex(b"").unwrap(), Vec::<u8>::new());
        assert!(decode_hex(b"abc").is_err());
        assert!(decode_hex(b"zz").is_err());
    }

    #[test]
    fn a_source_over_the_limit_is_refused_with_its_whole_size() {
        assert_eq!(
            read_bounded(&[1u8, 2, 3][..], 3, "x").unwrap(),
            Ok(vec![1, 2, 3])
        );
        assert_eq!(read_bounded(&[0u8; 10][..], 4, "x").unwrap(), Err(10));
        let key = CellKey::new("users", b"big", b"f", b"photo").unwrap();
        assert_eq!(
            too_large(&key, 10, 4).to_string(),
            "value for users row big column f:photo is 10 bytes, over the limit of 4"
        );
    }
}
