//! The command lines of the crate's binaries, as clap derives: [`Cli`] for `percolator`,
//! [`oracle::Cli`] for `percolator-oracle`. They live in the library, not in the binaries, so
//! that tests can walk them (every option and argument has help text).

pub mod oracle;

use clap::{Parser, Subcommand};

use crate::workload::{bench_command, demo, gc_bench, observe_demo, soak};

/// `percolator`'s command line.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from(["percolator", "bench", "--seconds", "1"]);
/// assert!(matches!(cli.command, percolator_cli::cli::Command::Bench(_)));
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
    Bench(bench_command::BenchArgs),
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
