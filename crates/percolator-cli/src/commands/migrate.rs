//! `percolator migrate ...`: plan, apply, verify, status, disable, and the hidden bench.

use std::time::{Duration, Instant};

use super::{connect_hbase, connect_oracle, print_json, transactional};
use crate::tools::progress::unless_json;
use percolator::hbase::{FamilyDescriptor, HBaseClient, HBaseConfig, Put, TableDescriptor};
use percolator::migrate::{self, ApplyOptions, ProgressMode};
use percolator::txn::{LivenessConfig, LockGranularity, Schema};
use percolator::{Error, MigrationIssue, Result};

/// The `--timeout` of the `migrate` commands (5, 5s, 500ms, 1m).
pub const MIGRATE_TIMEOUT_S: f64 = 60.0;

/// `percolator migrate ...`.
///
/// ```
/// use percolator_cli::commands::{MigrateArgs, MigrateCommand};
/// let c = MigrateCommand::Status(MigrateArgs {
///     hbase: "h:1".into(), json: true, timeout: 60.0, tables: vec!["t".into()],
/// });
/// assert!(matches!(c, MigrateCommand::Status(_)));
/// ```
#[derive(clap::Subcommand, Debug)]
pub enum MigrateCommand {
    /// Lists what `apply` would do to each table (families, settings, rows, blockers); changes nothing.
    Plan(MigrateArgs),
    /// Makes each table transactional and adopts its data; resumes an interrupted run. A table
    /// already adopted (or created transactional) has nothing to do: said, exit status 0.
    Apply(ApplyArgs),
    /// Checks migrated tables; exits 1 and lists the problems if any.
    Verify(MigrateArgs),
    /// Shows each table's migration state.
    Status(MigrateArgs),
    /// Returns each table to plain use (refuses while locks are present unless --force).
    Disable(DisableArgs),
    /// Times `apply` on the embedded emulator for a table of N cells (the README's figure).
    #[command(hide = true)]
    Bench(BenchArgs),
}

/// What every `migrate` command takes.
///
/// ```
/// let a = percolator_cli::commands::MigrateArgs {
///     hbase: "h:1".into(), json: false, timeout: 60.0, tables: vec!["t".into()],
/// };
/// assert_eq!(a.tables, ["t"]);
/// ```
#[derive(clap::Args, Debug)]
pub struct MigrateArgs {
    /// The HBase Thrift2 gateway: HOST:PORT, http://HOST:PORT, https://HOST:PORT, or a
    /// comma-separated list; `HBASE_THRIFT` when not given (as `HBaseConfig::with_env`).
    #[arg(long, env = "HBASE_THRIFT")]
    pub hbase: String,
    /// Print JSON (one value for all tables) instead of text; no progress bar.
    #[arg(long)]
    pub json: bool,
    /// The longest wait for any one answer of the gateway or the oracle (5, 5s, 500ms, 1m): against
    /// one that accepts connections and never answers, the command fails after this long,
    /// naming it. A migration that gets its answers may take longer in all.
    #[arg(long, value_name = "DURATION", default_value_t = MIGRATE_TIMEOUT_S, value_parser = crate::tools::duration::seconds)]
    pub timeout: f64,
    /// The tables, by name.
    #[arg(required = true)]
    pub tables: Vec<String>,
}

/// `migrate apply`.
///
/// ```
/// use percolator_cli::commands::{ApplyArgs, MigrateArgs};
/// let common = MigrateArgs { hbase: "h:1".into(), json: false, timeout: 60.0, tables: vec!["t".into()] };
/// let a = ApplyArgs {
///     common,
///     oracle: None,
///     checkpoint_rows: 1000,
///     lock_granularity: Default::default(),
///     transition_timeout: 60.0,
/// };
/// assert_eq!(a.checkpoint_rows, 1000);
/// ```
#[derive(clap::Args, Debug)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub common: MigrateArgs,
    /// A timestamp oracle, HOST:PORT, to check that its timestamps are above wall-clock ms.
    #[arg(long)]
    pub oracle: Option<String>,
    /// Rows between checkpoints.
    #[arg(long, default_value_t = 1000)]
    pub checkpoint_rows: usize,
    /// What one lock covers: `cell` (writers of different columns of a row never conflict)
    /// or `row` (a transaction's writes to a row cost one prewrite and one commit, and any
    /// two writers of a row conflict). Fixed once the table is transactional.
    #[arg(long, value_name = "cell|row", default_value = "cell")]
    pub lock_granularity: LockGranularity,
    /// How long a region in transition (moving, splitting, on a crashed region server) that
    /// the gateway gave up on is waited out, counted again from each checkpoint; each try
    /// resumes from the last checkpoint. Past it the command fails, and a rerun resumes.
    #[arg(long, value_name = "DURATION", default_value_t = 60.0, value_parser = crate::tools::duration::seconds)]
    pub transition_timeout: f64,
}

/// `migrate disable`.
///
/// ```
/// use percolator_cli::commands::{DisableArgs, MigrateArgs};
/// let common = MigrateArgs { hbase: "h:1".into(), json: false, timeout: 60.0, tables: vec!["t".into()] };
/// assert!(!DisableArgs { common, force: false, oracle: None, transition_timeout: 60.0 }.force);
/// ```
#[derive(clap::Args, Debug)]
pub struct DisableArgs {
    #[command(flatten)]
    pub common: MigrateArgs,
    /// Resolve abandoned locks (through the normal protocol, needs --oracle) instead of refusing.
    #[arg(long)]
    pub force: bool,
    /// A timestamp oracle, HOST:PORT, for --force's lock resolution.
    #[arg(long)]
    pub oracle: Option<String>,
    /// How long a region in transition that the gateway gave up on is waited out, counted
    /// again from each row made plain; each try resumes where the last stopped. Past it the
    /// command fails, and a rerun resumes.
    #[arg(long, value_name = "DURATION", default_value_t = 60.0, value_parser = crate::tools::duration::seconds)]
    pub transition_timeout: f64,
}

/// `migrate bench`.
///
/// ```
/// let a = percolator_cli::commands::BenchArgs { cells: 10, columns: 2, runs: 1 };
/// assert_eq!(a.cells / a.columns, 5);
/// ```
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Cells in the table adopted.
    #[arg(long, default_value_t = 1_000_000)]
    pub cells: usize,
    /// Columns per row.
    #[arg(long, default_value_t = 10)]
    pub columns: usize,
    /// Runs, each on a fresh emulator.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// HBase refused a schema change because another one of the same table is under way (its
/// `ConcurrentTableModificationException`, which arrives with a Java stack trace).
fn concurrent_modification(e: &Error) -> bool {
    matches!(e, Error::ServerIo { exception: Some(class), .. }
        if class.ends_with(".ConcurrentTableModificationException"))
}

/// Runs `apply` of `table`; while HBase says another change of the table is under way, waits
/// `waits[i]` and runs it again (the run resumes where it stopped). When the waits are spent,
/// one line: another migration of the table is in progress.
fn retry_concurrent<T>(
    table: &str,
    waits: &[Duration],
    mut apply: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut waits = waits.iter();
    loop {
        match apply() {
            Err(e) if concurrent_modification(&e) => match waits.next() {
                Some(wait) => {
                    tracing::info!(table, ?wait, "another change of the table is under way; waiting");
                    std::thread::sleep(*wait);
                }
                None => {
                    return Err(Error::Migration {
                        table: table.to_string(),
                        kind: MigrationIssue::Blocked,
                        reason: format!(
                            "another migration of {table} is in progress (HBase: ConcurrentTableModificationException); run `migrate status` and `migrate apply` again once it is done"
                        ),
                    })
                }
            },
            result => return result,
        }
    }
}

/// How long `apply` waits, each time, for another change of the table to finish.
const CONCURRENT_WAITS: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
];

fn is_nothing_to_do(e: &Error) -> bool {
    matches!(
        e,
        Error::Migration {
            kind: MigrationIssue::NothingToDo,
            ..
        }
    )
}

/// Runs one `migrate` command.
///
/// ```
/// use percolator_cli::commands::{migrate, MigrateArgs, MigrateCommand};
/// let emulator = hbase_emulator::start_local()?;
/// let args = MigrateArgs {
///     hbase: emulator.local_addr().to_string(), json: true, timeout: 60.0, tables: vec!["nope".into()],
/// };
/// // Status of a table that is not there: said, and a problem (exit status 1).
/// assert!(!migrate(&MigrateCommand::Status(args))?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn migrate(command: &MigrateCommand) -> Result<bool> {
    let schema = Schema::default();
    match command {
        MigrateCommand::Plan(a) => {
            let hb = connect_hbase(&a.hbase, a.timeout)?;
            let plans = a
                .tables
                .iter()
                .map(|t| migrate::plan(&hb, &schema, t, None, unless_json(a.json)))
                .collect::<Result<Vec<_>>>()?;
            if a.json {
                print_json(&plans);
            } else {
                plans.iter().for_each(print_plan);
            }
            Ok(true)
        }
        MigrateCommand::Apply(a) => {
            crate::tools::interrupt::explain_ctrl_c(
                "migrate apply interrupted; nothing is lost: the same command resumes from the \
                 last checkpoint (migrate status shows it)",
            );
            let hb = connect_hbase(&a.common.hbase, a.common.timeout)?;
            let ts = a
                .oracle
                .as_deref()
                .map(|o| connect_oracle(&[o.to_string()], a.common.timeout).map(|(_, ts)| ts))
                .transpose()?;
            let opts = ApplyOptions {
                progress: unless_json(a.common.json),
                checkpoint_rows: a.checkpoint_rows.max(1),
                oracle_ts: ts,
                lock_granularity: a.lock_granularity,
                transition_timeout: Duration::from_secs_f64(a.transition_timeout),
                ..ApplyOptions::default()
            };
            // Every table is checked before any is changed; each is planned once.
            let mut plans = std::collections::HashMap::new();
            if a.common.tables.len() > 1 {
                plans = migrate::check_before_apply(
                    &hb,
                    &schema,
                    &a.common.tables,
                    ts,
                    opts.progress.clone(),
                )?;
            }
            let mut reports = Vec::new();
            for t in &a.common.tables {
                let mut planned = plans.remove(t);
                let applied = retry_concurrent(t, &CONCURRENT_WAITS, || {
                    migrate::apply_planned(&hb, &schema, t, &opts, planned.take())
                });
                let r = match applied {
                    Err(e) if is_nothing_to_do(&e) => {
                        // Already adopted, or created transactional: done, and said so.
                        let state = migrate::status(&hb, &schema, t)?.state;
                        if !a.common.json {
                            println!("{t}: nothing to do (already {state})");
                        }
                        reports.push(serde_json::json!({
                            "table": t,
                            "nothing_to_do": true,
                            "state": state,
                        }));
                        continue;
                    }
                    applied => applied?,
                };
                if !a.common.json {
                    println!(
                        "{t}: adopted ({} rows scanned, {} write records, {} passes{}, {:.1}s){}",
                        r.rows_scanned,
                        r.records_written,
                        r.passes,
                        if r.resumed { ", resumed" } else { "" },
                        r.seconds,
                        if r.implausible > 0 {
                            format!("; {} cells not adopted (see verify)", r.implausible)
                        } else {
                            String::new()
                        }
                    );
                }
                let mut report = serde_json::to_value(&r).unwrap_or_default();
                report["nothing_to_do"] = serde_json::json!(false);
                reports.push(report);
            }
            if a.common.json {
                print_json(&reports);
            }
            Ok(true)
        }
        MigrateCommand::Verify(a) => {
            let hb = connect_hbase(&a.hbase, a.timeout)?;
            let results = a
                .tables
                .iter()
                .map(|t| migrate::verify(&hb, &schema, t, unless_json(a.json)))
                .collect::<Result<Vec<_>>>()?;
            if a.json {
                print_json(&results);
            } else {
                for v in &results {
                    if v.ok() {
                        println!("{}: ok ({} cells checked)", v.table, v.cells_checked);
                    } else {
                        println!("{}: {} problems", v.table, v.problem_count);
                        v.problems.iter().for_each(|p| println!("  - {p}"));
                    }
                }
            }
            Ok(results.iter().all(migrate::Verification::ok))
        }
        MigrateCommand::Status(a) => {
            let hb = connect_hbase(&a.hbase, a.timeout)?;
            let all = a
                .tables
                .iter()
                .map(|t| migrate::status(&hb, &schema, t))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .map(|mut s| {
                    s.pass = s.pass.map(readable_pass);
                    s
                })
                .collect::<Vec<_>>();
            if a.json {
                print_json(&all);
            } else {
                for s in &all {
                    let pass = s.pass.as_ref().map_or(String::new(), pass_line);
                    println!("{}: {}{pass}", s.table, s.state);
                }
            }
            // A table that is not there is a problem to report, not a state to accept.
            Ok(all.iter().all(|s| s.exists))
        }
        MigrateCommand::Disable(a) => {
            let hb = connect_hbase(&a.common.hbase, a.common.timeout)?;
            let resolver = match (&a.oracle, a.force) {
                (Some(o), true) => {
                    let (tso, _) = connect_oracle(std::slice::from_ref(o), a.common.timeout)?;
                    Some(transactional(&hb, tso, LivenessConfig::default())?)
                }
                _ => None,
            };
            let mut reports = Vec::new();
            for t in &a.common.tables {
                let opts = migrate::DisableOptions {
                    force: a.force,
                    progress: unless_json(a.common.json),
                    transition_timeout: Duration::from_secs_f64(a.transition_timeout),
                    ..Default::default()
                };
                let r = migrate::disable(&hb, &schema, t, resolver.as_ref(), &opts);
                reports.push(r?);
            }
            if let Some(c) = resolver {
                c.shutdown();
            }
            if a.common.json {
                print_json(&reports);
            } else {
                for r in &reports {
                    println!(
                        "{}: plain again ({} values rewritten, {} deletes, families {} dropped)",
                        r.table,
                        r.values_rewritten,
                        r.deletes_written,
                        r.families_dropped.join(", ")
                    );
                    r.remains.iter().for_each(|s| println!("  remains: {s}"));
                }
            }
            Ok(true)
        }
        MigrateCommand::Bench(a) => bench(a),
    }
}

fn print_plan(p: &migrate::Plan) {
    println!("{} ({})", p.table, p.state);
    if p.nothing_to_do {
        println!("  nothing to do");
        return;
    }
    println!(
        "  add families: {}",
        if p.families_to_add.is_empty() {
            "none".into()
        } else {
            p.families_to_add.join(", ")
        }
    );
    for c in &p.family_changes {
        println!(
            "  family {}: {} {} -> {} ({})",
            c.family, c.setting, c.from, c.to, c.why
        );
    }
    println!("  rows to process: {}, cells: {}", p.rows, p.cells);
    for c in &p.clashes {
        println!("  CLASH: user family {c} has a project family's name");
    }
    for b in &p.blockers {
        println!("  BLOCKER: {b}");
    }
}

/// `migrate bench`: fills a table of `cells` cells into a fresh embedded emulator per run and
/// times `apply` (plan scan, full pass and catch-up pass).
fn bench(a: &BenchArgs) -> Result<bool> {
    let columns = a.columns.max(1);
    let rows = a.cells.div_ceil(columns);
    println!(
        "{:<4} {:>9} {:>9} {:>8} {:>10} {:>11}",
        "run", "rows", "cells", "seconds", "rows/s", "cells/s"
    );
    for run in 0..a.runs.max(1) {
        let emulator = hbase_emulator::start_local()
            .map_err(|e| percolator::Error::io("starting the emulator", e))?;
        let hb = HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string()))?;
        let table = "bench";
        hb.admin()
            .create_table(&TableDescriptor::new(table).family(FamilyDescriptor::new("f")))?;
        let mut batch = Vec::new();
        for r in 0..rows {
            let mut put = Put::new(format!("row{r:09}"));
            for c in 0..columns {
                put = put.add("f", format!("c{c}"), format!("value-{r}-{c}"));
            }
            batch.push(put);
            if batch.len() == 1000 || r + 1 == rows {
                hb.put_many(table, &batch)?;
                batch.clear();
            }
        }
        let opts = ApplyOptions {
            progress: ProgressMode::Off,
            settle: Duration::ZERO,
            ..ApplyOptions::default()
        };
        let started = Instant::now();
        let report = migrate::apply(&hb, &Schema::default(), table, &opts)?;
        let secs = started.elapsed().as_secs_f64();
        let cells = rows * columns;
        println!(
            "{:<4} {rows:>9} {cells:>9} {secs:>8.2} {:>10.0} {:>11.0}",
            run + 1,
            rows as f64 / secs,
            cells as f64 / secs
        );
        if report.records_written != cells as u64 {
            return Err(percolator::Error::IllegalArgument {
                message: format!("adopted {} of {cells} cells", report.records_written),
            });
        }
        emulator.shutdown();
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{concurrent_modification, retry_concurrent};
    use percolator::Error;
    use std::time::Duration;

    fn concurrent() -> Error {
        Error::ServerIo {
            message: "org.apache.hadoop.hbase.ConcurrentTableModificationException: table t\n\tat org.apache.hadoop.hbase.master.HMaster.modifyTable(HMaster.java:2601)\n\tat java.lang.Thread.run(Thread.java:750)".into(),
            can_retry: false,
            exception: Some("org.apache.hadoop.hbase.ConcurrentTableModificationException".into()),
        }
    }

    #[test]
    fn a_concurrent_table_change_is_waited_out_and_the_run_resumes() {
        assert!(concurrent_modification(&concurrent()));
        let mut calls = 0;
        let result = retry_concurrent("t", &[Duration::ZERO; 3], || {
            calls += 1;
            if calls < 3 {
                Err(concurrent())
            } else {
                Ok(calls)
            }
        });
        assert_eq!(result.unwrap(), 3);
    }

    #[test]
    fn a_concurrent_migration_that_lasts_is_one_line_without_java() {
        let mut calls = 0;
        let err = retry_concurrent("t", &[Duration::ZERO; 2], || -> percolator::Result<()> {
            calls += 1;
            Err(concurrent())
        })
        .unwrap_err()
        .to_string();
        assert_eq!(calls, 3);
        assert!(
            err.contains("another migration of t is in progress"),
            "{err}"
        );
        assert!(
            !err.contains('\n') && !err.contains("HMaster.java"),
            "{err}"
        );
    }

    #[test]
    fn other_errors_are_not_retried() {
        let mut calls = 0;
        let err = retry_concurrent("t", &[Duration::ZERO; 3], || -> percolator::Result<()> {
            calls += 1;
            Err(Error::Shutdown)
        });
        assert!(matches!(err, Err(Error::Shutdown)) && calls == 1);
    }
}

/// The stored pass with its checkpoint row as every command shows a key: UTF-8 text, else
/// `{"hex": ...}` (the stored form is a byte array).
fn readable_pass(mut pass: serde_json::Value) -> serde_json::Value {
    let bytes = pass
        .get("after")
        .and_then(|after| after.as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Vec<u8>>()
        });
    if let (Some(bytes), Some(fields)) = (bytes, pass.as_object_mut()) {
        fields.insert("after".into(), crate::tools::value_json(&bytes));
    }
    pass
}

/// ` (pass 2, 1200 changed, after k0037999)` for the text report.
fn pass_line(pass: &serde_json::Value) -> String {
    let number = |key: &str| pass.get(key).and_then(serde_json::Value::as_u64);
    let mut parts = vec![format!("pass {}", number("pass").unwrap_or(0))];
    if let Some(changed) = number("changed") {
        parts.push(format!("{changed} changed"));
    }
    match pass.get("after") {
        Some(serde_json::Value::String(text)) => parts.push(format!("after {text}")),
        Some(serde_json::Value::Object(hex)) => {
            if let Some(serde_json::Value::String(h)) = hex.get("hex") {
                parts.push(format!("after 0x{h}"));
            }
        }
        _ => parts.push("from the start".into()),
    }
    format!(" ({})", parts.join(", "))
}

#[cfg(test)]
mod status_tests {
    use super::{pass_line, readable_pass};

    #[test]
    fn the_checkpoint_row_reads_as_every_key_does() {
        let stored = serde_json::json!({"pass": 1, "changed": 37, "after": b"k0037999".to_vec()});
        let shown = readable_pass(stored);
        assert_eq!(
            shown,
            serde_json::json!({"pass": 1, "changed": 37, "after": "k0037999"})
        );
        assert_eq!(pass_line(&shown), " (pass 1, 37 changed, after k0037999)");
        let binary = readable_pass(serde_json::json!({"pass": 2, "changed": 0, "after": [0, 255]}));
        assert_eq!(binary["after"], serde_json::json!({"hex": "00ff"}));
        assert_eq!(pass_line(&binary), " (pass 2, 0 changed, after 0x00ff)");
        let start = readable_pass(serde_json::json!({"pass": 1, "changed": 0, "after": null}));
        assert_eq!(pass_line(&start), " (pass 1, 0 changed, from the start)");
    }
}
