//! `percolator-workloads`' command line, as clap derives. It lives in the library, not in the
//! binary, so that tests can walk it (every option and argument has help text).

use clap::{Parser, Subcommand};

use crate::{bench_command, demo, gc_bench, gc_scale, large, observe_demo, soak};

/// `percolator-workloads`' command line.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_workloads::cli::Cli::parse_from(["percolator-workloads", "bench"]);
/// assert!(matches!(cli.command, percolator_workloads::cli::Command::Bench(_)));
/// ```
#[derive(Parser)]
#[command(
    name = "percolator-workloads",
    version,
    about = "Percolator transactions on HBase: the demos, the soak and the benchmarks (with the \
             library's test hooks; not for services)",
    long_about = None
)]
pub struct Cli {
    #[command(flatten)]
    pub common: percolator_cli::cli::Common,
    #[command(subcommand)]
    pub command: Command,
}

impl AsRef<percolator_cli::cli::Common> for Cli {
    fn as_ref(&self) -> &percolator_cli::cli::Common {
        &self.common
    }
}

/// `percolator-workloads`' subcommands.
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
    LargeClient(large::LargeClientConfig),
    /// Raw HBase operations vs transactions: ops/s, p50, p99, RPCs per op.
    Bench(bench_command::BenchArgs),
    /// An hour of updates compressed in time, with and without GC (the README's figure).
    #[command(hide = true)]
    GcBench(gc_bench::GcBenchConfig),
    /// How GC's collection speeds up with workers, over a table of many regions.
    #[command(hide = true)]
    GcScale(gc_scale::GcScaleConfig),
    /// The emulator for `bench --profile cluster`, in a process of its own: prints its address
    /// on the first line, serves until its standard input closes (its parent exited).
    #[command(hide = true)]
    ServeEmulator {
        /// Microseconds every call takes, served in order per connection.
        #[arg(long, default_value_t = 1000)]
        latency_us: u64,
    },
}
