//! The command lines of the crate's binaries, as clap derives: [`Cli`] for `percolator`,
//! [`oracle::Cli`] for `percolator-oracle`. They live in the library, not in the binaries, so
//! that tests can walk them (every option and argument has help text).

pub mod oracle;

use clap::{Parser, Subcommand};

use crate::workload::{bench, demo, gc_bench, observe_demo, soak};

/// `percolator`'s command line.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from(["percolator", "bench", "--seconds", "1"]);
/// assert!(matches!(cli.command, percolator_cli::cli::Command::Bench { .. }));
/// ```
#[derive(Parser)]
#[command(
    name = "percolator",
    version,
    about = "Percolator transactions on HBase: the demo, the benchmarks and the operator tools",
    long_about = None
)]
pub struct Cli {
    /// On an error, also print the gateway's whole message (the Java exception's stack trace),
    /// which the one-line error leaves out.
    #[arg(long, global = true, help_heading = "Every command's options")]
    pub verbose: bool,
    /// Serve the library's metrics as Prometheus text at http://ADDR/metrics while the command
    /// runs (for the long-running ones: gc, the demos, the bench).
    #[arg(
        long,
        global = true,
        value_name = "ADDR",
        help_heading = "Every command's options"
    )]
    pub metrics_listen: Option<String>,
    #[command(flatten)]
    pub gateway: crate::gateway::GatewayOptions,
    #[command(flatten)]
    pub oracle_access: crate::oracle_access::OracleAccess,
    #[command(subcommand)]
    pub command: Command,
}

/// Lets a closed standard output end the process quietly, as it ends `ls` or `grep`:
/// `percolator locks t | head -n 1` must not panic when `head` stops reading. Rust ignores
/// SIGPIPE, so the next write would fail and `println!` panic on it.
pub fn quiet_on_closed_pipe() {
    // SAFETY: at the start of main, before any thread: restores the default disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// How a command's error is printed: one line, and with `verbose` the gateway's whole message
/// after it when it has more.
///
/// ```
/// use percolator::Error;
/// let e = Error::ServerIo {
///     message: "java.io.IOException: boom\n\tat org.apache.hadoop.hbase.Foo(Foo.java:1)".into(),
///     can_retry: false,
///     exception: Some("java.io.IOException".into()),
/// };
/// let short = percolator_cli::cli::error_report(&e, false);
/// assert_eq!(short, "error: HBase I/O error: java.io.IOException: boom");
/// let long = percolator_cli::cli::error_report(&e, true);
/// assert!(long.starts_with(&short) && long.contains("Foo.java:1"));
/// ```
pub fn error_report(error: &percolator::Error, verbose: bool) -> String {
    match error.detail().filter(|_| verbose) {
        Some(detail) => format!("error: {error}\n{detail}"),
        None => format!("error: {error}"),
    }
}

/// `percolator`'s subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Concurrent bank transfers with injected client crashes; checks the invariants at the end
    /// and exits non-zero if any is broken. Starts an emulator and an oracle in-process unless
    /// --hbase / --oracle are given.
    Demo(demo::DemoConfig),
    /// Chained observers (documents -> word counts -> global counts) with workers killed at
    /// random; recomputes the derived data at the end and exits non-zero on any mismatch.
    ObserveDemo(observe_demo::ObserveDemoConfig),
    /// Everything at once against one HBase (the bank through a standby group of oracles,
    /// observers with workers killed, GC every few seconds, the serving oracle and a client
    /// process killed with SIGKILL on timers), then every invariant; `scripts/soak` runs it
    /// against a local real HBase.
    Soak(soak::SoakConfig),
    /// The child process `soak` kills.
    #[command(hide = true)]
    SoakClient(soak::SoakClientConfig),
    /// The child the large-transaction crash tests kill.
    #[command(hide = true)]
    LargeClient(crate::workload::large::LargeClientConfig),
    /// Raw HBase operations vs transactions: ops/s, p50, p99, RPCs per op.
    Bench {
        /// How long each workload runs, in seconds (split over --rounds).
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Concurrent clients, each one operation at a time, raw and transactional alike.
        /// Default: 64 in the embedded profile, where the machine's cores are the limit and
        /// fewer leave them idle while transactions wait on their extra round trips (the
        /// `cpu busy` column); 32 in the cluster profile and against `--hbase`, half the pool's
        /// 64 connections, so that calls do not queue behind each other on a connection.
        #[arg(long)]
        threads: Option<usize>,
        /// Rows the workloads spread their operations over; each task (or thread) works on a
        /// slice of its own when there are two or more for each.
        #[arg(long, default_value_t = 10_000)]
        rows: usize,
        /// The workloads take turns this many times (each turn seconds/rounds long), so a
        /// machine whose speed drifts slows them all alike and the ratios stay fair.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Comma-separated subset of raw_get,raw_put,raw_cas,raw_rmw2,txn_get,txn_put1,
        /// txn_transfer2,floor_get,floor_put1,floor_transfer2,raw_row10,txn_row10,notify,
        /// notify_kill,txn_large. Default: all but the wide-row, notify and large ones (and,
        /// with --api sync, the floor workloads, which run on tasks only). raw_row10 puts 10
        /// columns of a row, txn_row10 writes them in a transaction; notify_kill runs two
        /// observer workers and kills and replaces one every 5 s. txn_large (one transaction
        /// of --large-cells cells, with raw_large, the same cells in putMultiple batches,
        /// beside it) runs without the others, each of --rounds rounds measuring both once,
        /// against a gateway in another process.
        #[arg(long)]
        workloads: Option<String>,
        /// The lock granularity of the table the txn_ workloads write: `cell` or `row`.
        #[arg(long, value_name = "cell|row", default_value = "cell")]
        lock_granularity: percolator::txn::LockGranularity,
        /// Regions each table is created with, split at even steps of --rows, so that the
        /// region servers of a cluster share the load from the start
        #[arg(long, default_value_t = 1)]
        regions: usize,
        /// Cells of the txn_large transaction (100-byte values, 10 columns a row).
        #[arg(long, default_value_t = 100_000)]
        large_cells: usize,
        /// Print one JSON report instead of the table and the ratios.
        #[arg(long)]
        json: bool,
        /// HBase Thrift2 gateway host:port (default: an emulator, per --profile).
        #[arg(long)]
        hbase: Option<String>,
        /// Timestamp oracle host:port (default: an embedded oracle).
        #[arg(long)]
        oracle: Option<String>,
        /// Take timestamps from an in-process counter instead of the oracle (diagnostic: shows
        /// what the oracle round trip costs).
        #[arg(long)]
        local_timestamps: bool,
        /// `embedded`: the emulator and oracle in this process (loopback, no service time).
        /// `cluster`: the emulator in a process of its own with 1 ms per call, served in order
        /// per connection, as a real gateway in front of a cluster (ignored with --hbase).
        #[arg(long, value_enum, default_value_t = Profile::Embedded)]
        profile: Profile,
        /// Gateway connections in the client's pool.
        #[arg(long, default_value_t = 64)]
        pool: u32,
        /// Calls that may share a connection, pipelined (the client's
        /// `HBaseConfig::pipeline_per_connection`; default: 16 against the embedded emulator, else
        /// the client's default, 1).
        #[arg(long)]
        pipeline: Option<usize>,
        /// The API the workloads run through: tokio tasks over the async API, or threads over
        /// the blocking one (`--threads` of either).
        #[arg(long, value_enum, default_value_t = bench::Api::Async)]
        api: bench::Api,
    },
    /// Creates a new transactional table: the user families given, plus the percolator
    /// families beside them (an existing table that already has them is left as it is).
    Create(crate::commands::CreateArgs),
    /// Makes existing tables transactional with their data (plan, apply, verify, status, disable).
    Migrate {
        #[command(subcommand)]
        command: crate::commands::MigrateCommand,
    },
    #[command(flatten)]
    Data(crate::commands::DataCommand),
    /// Garbage collection: removes versions no reader can need below a safe point that
    /// trails the oracle by --life-time and never passes a live transaction.
    Gc(crate::commands::GcCommand),
    /// Checks the gateway, the oracle, the tables' families, the meta and liveness tables,
    /// clock skew, locks past their TTL, the GC safe point's lag and the observer workers;
    /// a verdict for each. Exit status 1 when a check fails.
    Doctor(crate::commands::DoctorArgs),
    /// An hour of updates compressed in time, with and without GC (the README's figure).
    #[command(hide = true)]
    GcBench(gc_bench::GcBenchConfig),
    /// The emulator for `bench --profile cluster`, in a process of its own: prints its address
    /// on the first line, serves until its standard input closes (its parent exited).
    #[command(hide = true)]
    ServeEmulator {
        /// Microseconds every call takes, served in order per connection.
        #[arg(long, default_value_t = 1000)]
        latency_us: u64,
    },
}

/// Where `bench` runs its emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// The emulator and the oracle in this process (loopback, no service time).
    Embedded,
    /// The emulator in a process of its own, 1 ms per call, in order per connection.
    Cluster,
}
