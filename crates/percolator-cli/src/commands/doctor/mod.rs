//! `percolator doctor`: checks a deployment against what the protocol needs, with a verdict
//! for each (ok, warn, fail; skip when a failure before it leaves nothing to look at):
//!
//! - `gateway`: it answers, and how it is spoken to; `oracle`: it answers;
//! - `families`, per table: the percolator families and the user families' settings;
//! - `meta_table`, `liveness_table`: they exist as the library creates them;
//! - `clock_skew`: the oracle's and HBase's clocks against this host's;
//! - `stale_locks`, per table: locks past their TTL;
//! - `gc_safe_point`: how far the safe point trails the oracle;
//! - `observer_workers`, per table: live and expired worker rows.
//!
//! Exit status: 0 when no check fails (warnings are shown), 1 when one does, 2 when the
//! command could not run (bad arguments). An unreachable server is a failed check, not an
//! error: the report still says what else could be looked at.
//!
//! Everything is read-only but one scratch cell in the meta table, written and deleted again
//! to read the HBase servers' clock.

mod clock;
mod reach;
mod state;
mod tables;
mod verdict;

use percolator::hbase::Endpoint;
use percolator::oracle::physical_of;
use percolator::txn::{LivenessConfig, Schema};
use percolator::Result;

use super::{print_json, timeout, DEFAULT_TIMEOUT_S};
pub use verdict::{Check, Report, Verdict};

/// `percolator doctor`'s arguments.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from([
///     "percolator", "doctor", "--hbase", "gw:9090", "--oracle", "o:7070", "accounts",
/// ]);
/// let percolator_cli::cli::Command::Doctor(args) = cli.command else { panic!() };
/// assert_eq!((args.max_skew.as_str(), args.max_gc_lag.as_str()), ("1s", "30m"));
/// ```
#[derive(clap::Args, Clone, Debug)]
pub struct DoctorArgs {
    /// The HBase Thrift2 gateway: HOST:PORT, http://HOST:PORT, https://HOST:PORT, or a
    /// comma-separated list (each one is checked); `HBASE_THRIFT` when not given (as `HBaseConfig::with_env`).
    #[arg(long, env = "HBASE_THRIFT")]
    pub hbase: String,
    /// The timestamp oracle, HOST:PORT (comma-separated for fail-over).
    #[arg(long)]
    pub oracle: String,
    /// Print one JSON value (the overall verdict and every check) instead of text.
    #[arg(long)]
    pub json: bool,
    /// The longest wait for any one answer of the gateway or the oracle (5, 5s, 500ms, 1m); one that
    /// does not answer within it fails its check.
    #[arg(long, value_name = "DURATION", default_value_t = DEFAULT_TIMEOUT_S, value_parser = crate::tools::duration::seconds)]
    pub timeout: f64,
    /// The most two clocks (the oracle's, HBase's, this host's) may differ before
    /// `clock_skew` fails; past a quarter of it, it warns (e.g. 500ms, 1s). The default is
    /// an observer worker's row TTL, the shortest deadline compared across machines.
    #[arg(long, default_value = "1s")]
    pub max_skew: String,
    /// How far the GC safe point may trail the oracle before `gc_safe_point` fails (e.g. 30m,
    /// 2h): set it above GC's --life-time plus a few --interval.
    #[arg(long, default_value = "30m")]
    pub max_gc_lag: String,
    /// The meta table (the clients' `Schema::meta_table`).
    #[arg(long, default_value = "percolator_meta")]
    pub meta_table: String,
    /// The liveness table where clients keep their rows.
    #[arg(long, default_value = "percolator_liveness")]
    pub liveness_table: String,
    /// The transactional tables to check.
    #[arg(required = true)]
    pub tables: Vec<String>,
}

/// Runs `percolator doctor`: prints the report; `Ok(false)` when a check failed.
pub fn doctor(args: &DoctorArgs) -> Result<bool> {
    let report = examine(args)?;
    if args.json {
        print_json(&report.to_json());
    } else {
        println!("{}", report.to_text());
    }
    Ok(report.passed())
}

/// Runs every check. An error only for arguments that cannot be used; what the servers say,
/// or fail to, is in the report.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from([
///     "percolator", "doctor", "--hbase", "127.0.0.1:1", "--oracle", "127.0.0.1:1",
///     "--timeout", "2", "t",
/// ]);
/// let percolator_cli::cli::Command::Doctor(args) = cli.command else { panic!() };
/// let report = percolator_cli::commands::doctor::examine(&args)?;
/// assert_eq!(report.checks[0].verdict, percolator_cli::commands::doctor::Verdict::Fail);
/// assert!(!report.passed());
/// # Ok::<(), percolator::Error>(())
/// ```
pub fn examine(args: &DoctorArgs) -> Result<Report> {
    timeout(args.timeout)?;
    // An address that cannot be read is a usage error (exit 2), not an unreachable gateway.
    Endpoint::parse_list(&args.hbase)?;
    let max_skew = crate::tools::duration::parse(&args.max_skew)?;
    let max_gc_lag = crate::tools::duration::parse(&args.max_gc_lag)?;
    let oracles: Vec<String> = args
        .oracle
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let schema = Schema {
        meta_table: args.meta_table.clone(),
        ..Schema::default()
    };
    let liveness = LivenessConfig {
        table: args.liveness_table.clone(),
        ..LivenessConfig::default()
    };
    let mut checks = Vec::new();
    let (check, hbase) = reach::gateway(&args.hbase, args.timeout);
    checks.push(check);
    let (check, oracle) = reach::oracle(&oracles, args.timeout);
    checks.push(check);
    let skip = |name: &'static str, table: Option<&str>| {
        let check = Check::skip(name, "the gateway does not answer");
        table.map_or(check.clone(), |t| check.on(t))
    };
    match &hbase {
        Some(hb) => {
            for t in &args.tables {
                checks.push(tables::families(hb, &schema, t));
            }
            checks.push(tables::meta_table(hb, &schema));
            checks.push(tables::liveness_table(hb, &liveness));
        }
        None => {
            checks.extend(args.tables.iter().map(|t| skip("families", Some(t))));
            checks.extend([skip("meta_table", None), skip("liveness_table", None)]);
        }
    }
    checks.push(clock::skew(
        hbase.as_ref(),
        oracle.as_ref(),
        &schema.meta_table,
        max_skew,
    ));
    let Some(hb) = &hbase else {
        checks.extend(args.tables.iter().map(|t| skip("stale_locks", Some(t))));
        checks.push(skip("gc_safe_point", None));
        checks.extend(
            args.tables
                .iter()
                .map(|t| skip("observer_workers", Some(t))),
        );
        return Ok(Report { checks });
    };
    let servers = (args.hbase.as_str(), args.oracle.as_str());
    for t in &args.tables {
        checks.push(state::stale_locks(hb, &schema, &liveness, t, servers));
    }
    // The safe point is in the oracle's time; without an oracle, this host's stands in.
    let now = oracle
        .as_ref()
        .and_then(|o| o.get_timestamp().ok())
        .map_or_else(clock::host_ms, physical_of);
    checks.push(state::gc_safe_point(hb, &schema, now, max_gc_lag, servers));
    // Worker rows hold the workers' wall time.
    let now = clock::host_ms();
    for t in &args.tables {
        checks.push(state::observer_workers(hb, &schema, t, now));
    }
    Ok(Report { checks })
}
