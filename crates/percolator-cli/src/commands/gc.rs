//! `percolator gc`: one round (`--once`) or rounds every `--interval` until Ctrl-C, with
//! progress per table (a bar on a terminal, a line every few seconds otherwise, none with
//! `--json`) and a report per round (text, or JSON lines with `--json`).
//! A round that fails with a retryable error (a live lock, a region in transition) is logged
//! and the next one starts over: with `--interval` after the pause, with `--once` at once, up
//! to three rounds in all. Anything else ends the command, non-zero.

use std::io::Write;
use std::time::Duration;

use parking_lot::Mutex;

use super::{connect_hbase, connect_oracle, timeout};

/// Rounds a `--once` run tries before it reports a retryable failure.
const ONCE_ROUNDS: u32 = 3;
use crate::tools::progress::{unless_json, Progress};
use percolator::gc::{GcOptions, GcProgress, GcReport, GcWorker};
use percolator::txn::{LivenessConfig, Schema, TxnOptions};
use percolator::{Error, Result, RetryClass};

/// `percolator gc` options (also its command-line arguments).
///
/// ```
/// use clap::Parser;
/// #[derive(Parser)]
/// struct Cli { #[command(flatten)] gc: percolator_cli::commands::GcCommand }
/// let cli = Cli::parse_from(["gc", "--hbase", "h:9090", "--oracle", "o:7070", "--once", "t"]);
/// assert_eq!(cli.gc.life_time, "10m");
/// ```
#[derive(Clone, Debug, clap::Args)]
pub struct GcCommand {
    /// The HBase Thrift2 gateway: HOST:PORT, http://HOST:PORT, https://HOST:PORT, or a
    /// comma-separated list; `HBASE_THRIFT` when not given (as `HBaseConfig::with_env`).
    #[arg(long, env = "HBASE_THRIFT")]
    pub hbase: String,
    /// Timestamp oracle host:port (comma-separated for fail-over).
    #[arg(long)]
    pub oracle: String,
    /// How long versions stay readable: the safe point trails the oracle's time by this
    /// (e.g. 90s, 10m, 1h; at least 5s).
    #[arg(long, default_value = "10m")]
    pub life_time: String,
    /// How many of a table's regions a round collects at once (1 to 256): where the
    /// gateway's latency bounds one scan, N workers collect up to N times faster.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Run one round and exit.
    #[arg(long, conflicts_with = "interval")]
    pub once: bool,
    /// Pause between rounds (e.g. 30s, 1m) when not --once.
    #[arg(long, default_value = "1m")]
    pub interval: String,
    /// One JSON report per round on stdout.
    #[arg(long)]
    pub json: bool,
    /// The longest wait for any one answer of the gateway or the oracle (5, 5s, 500ms, 1m): against
    /// one that accepts connections and never answers, the command fails after this long,
    /// naming it. A round that gets its answers may take longer in all.
    #[arg(long, value_name = "DURATION", default_value_t = super::DEFAULT_TIMEOUT_S, value_parser = crate::tools::duration::seconds)]
    pub timeout: f64,
    /// The meta table holding the safe point (the clients' `Schema::meta_table`).
    #[arg(long, default_value = "percolator_meta")]
    pub meta_table: String,
    /// The liveness table where clients publish their open transactions.
    #[arg(long, default_value = "percolator_liveness")]
    pub liveness_table: String,
    /// The tables to collect.
    #[arg(required = true)]
    pub tables: Vec<String>,
}

impl GcCommand {
    /// Runs the command; returns when `--once` is done or after Ctrl-C.
    ///
    /// ```no_run
    /// use clap::Parser;
    /// #[derive(Parser)]
    /// struct Cli { #[command(flatten)] gc: percolator_cli::commands::GcCommand }
    /// let cli = Cli::parse_from(["gc", "--hbase", "h:9090", "--oracle", "o:7070", "--once", "t"]);
    /// cli.gc.run()?;
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn run(&self) -> Result<()> {
        let opts = GcOptions::default()
            .with_life_time(crate::tools::duration::parse(&self.life_time)?)?
            .with_workers(usize::from(self.workers))?;
        let interval = crate::tools::duration::parse(&self.interval)?;
        let oracles: Vec<String> = self
            .oracle
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        // Each server on its own first, so that a silent one is named; then every call of
        // the rounds waits at most --timeout.
        let deadline = timeout(self.timeout)?;
        connect_hbase(&self.hbase, self.timeout)?;
        connect_oracle(&oracles, self.timeout)?;
        let runtime = tokio::runtime::Runtime::new().map_err(|e| Error::io("starting tokio", e))?;
        runtime.block_on(async {
            let schema = Schema {
                meta_table: self.meta_table.clone(),
                ..Schema::default()
            };
            let liveness = LivenessConfig {
                table: self.liveness_table.clone(),
                ..LivenessConfig::default()
            };
            let txn = TxnOptions::builder()
                .schema(schema)
                .liveness(liveness)
                .oracle(crate::oracle_access::client_config(
                    percolator::oracle::ClientConfig {
                        connect_timeout: deadline,
                        request_timeout: deadline,
                        ..Default::default()
                    },
                )?)
                .build();
            let hbase = super::hbase_config(&self.hbase, deadline)?;
            let gc = tokio::time::timeout(deadline, GcWorker::connect(hbase, &oracles, txn, opts))
                .await
                .map_err(|_| Error::Timeout {
                    what: format!(
                        "the HBase gateway at {} or the timestamp oracle at {}",
                        self.hbase, self.oracle
                    ),
                    after: deadline,
                })??;
            let result = self.rounds(&gc, interval).await;
            gc.shutdown().await;
            result
        })
    }

    async fn rounds(&self, gc: &GcWorker, interval: Duration) -> Result<()> {
        let mode = unless_json(self.json);
        let mut attempts = 0;
        loop {
            attempts += 1;
            // One bar per table, as the round reaches it; the report follows the round.
            let shown: Mutex<Option<(String, Progress)>> = Mutex::new(None);
            let show = |p: &GcProgress| {
                let mut shown = shown.lock();
                if shown.as_ref().is_none_or(|(table, _)| *table != p.table) {
                    if let Some((_, done)) = shown.take() {
                        done.finish();
                    }
                    let label = format!("gc {}", p.table);
                    *shown = Some((p.table.clone(), Progress::new(&mode, label, None)));
                }
                if let Some((_, progress)) = shown.as_mut() {
                    progress.set(p.report.rows);
                }
            };
            let round = gc.run_once(&self.tables, &show).await;
            if let Some((_, done)) = shown.into_inner() {
                done.finish();
            }
            match round {
                Ok(report) => self.print(&report)?,
                // Between rounds nothing is half done: a transient failure waits for the next.
                Err(e) if !self.once && e.retry_class() == RetryClass::Retry => {
                    tracing::warn!(error = %e, "GC round failed; the next round starts over");
                }
                // A one-off run (a cron job) must not fail on a region that moved meanwhile.
                Err(e) if attempts < ONCE_ROUNDS && e.retry_class() == RetryClass::Retry => {
                    tracing::warn!(error = %e, attempts, "GC round failed; starting over");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => return Err(e),
            }
            if self.once {
                return Ok(());
            }
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = tokio::time::sleep(interval) => {}
            }
        }
    }

    fn print(&self, report: &GcReport) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let line = if self.json {
            serde_json::to_string(report).map_err(|e| Error::io("encoding the report", e.into()))?
        } else {
            let rate = report.cells() as f64 / report.collect_secs.max(1e-9);
            let mut text = format!(
                "safe point {}: {} locks resolved, {} cells scanned, {} versions removed, {:.0} cells/s",
                report.safe_point,
                report.locks_resolved,
                report.cells(),
                report.removed(),
                rate
            );
            for t in &report.tables {
                text.push_str(&format!(
                    "\n  {}: {} rows in {} ranges, {} cells, {} write records ({} rollbacks) and {} data versions removed, {} versions kept",
                    t.table,
                    t.rows,
                    t.ranges,
                    t.cells,
                    t.write_records_removed,
                    t.rollback_records_removed,
                    t.data_versions_removed,
                    t.versions_kept
                ));
            }
            text
        };
        writeln!(out, "{line}").map_err(|e| Error::io("writing the report", e))
    }
}
