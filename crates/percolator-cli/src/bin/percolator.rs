//! `percolator`: the demo (main job), the benchmark, `migrate`, and the data commands.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use percolator_cli::workload::{bench, demo, observe_demo, stack::Stack};

#[derive(Parser)]
#[command(
    version,
    about = "Percolator transactions on HBase: the demo, the benchmarks and the operator tools",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Concurrent bank transfers with injected client crashes; checks the invariants at the end
    /// and exits non-zero if any is broken. Starts an emulator and an oracle in-process unless
    /// --hbase / --oracle are given.
    Demo(demo::DemoConfig),
    /// Chained observers (documents -> word counts -> global counts) with workers killed at
    /// random; recomputes the derived data at the end and exits non-zero on any mismatch.
    ObserveDemo(observe_demo::ObserveDemoConfig),
    /// Raw HBase operations vs transactions: ops/s, p50, p99, RPCs per op.
    Bench {
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Concurrent clients, each one operation at a time, raw and transactional alike.
        /// Default: 64 in the embedded profile, where the machine's cores are the limit and
        /// fewer leave them idle while transactions wait on their extra round trips (the
        /// `cpu busy` column); 32 in the cluster profile and against `--hbase`, half the pool's
        /// 64 connections, so that calls do not queue behind each other on a connection.
        #[arg(long)]
        threads: Option<usize>,
        #[arg(long, default_value_t = 10_000)]
        rows: usize,
        /// The workloads take turns this many times (each turn seconds/rounds long), so a
        /// machine whose speed drifts slows them all alike and the ratios stay fair.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Comma-separated subset of raw_get,raw_put,raw_cas,raw_rmw2,txn_get,txn_put1,
        /// txn_transfer2,floor_get,floor_put1,floor_transfer2,notify. Default: all but
        /// notify (and, with --api sync, the floor workloads, which run on tasks only).
        #[arg(long)]
        workloads: Option<String>,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        hbase: Option<String>,
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
    /// Makes existing tables transactional with their data (plan, apply, verify, status, disable).
    Migrate {
        #[command(subcommand)]
        command: percolator_cli::commands::MigrateCommand,
    },
    #[command(flatten)]
    Data(percolator_cli::commands::DataCommand),
    /// Garbage collection: removes versions no reader can need below a safe point that
    /// trails the oracle by --life-time and never passes a live transaction.
    Gc(percolator_cli::commands::GcCommand),
    /// An hour of updates compressed in time, with and without GC (the README's figure).
    #[command(hide = true)]
    GcBench(percolator_cli::workload::gc_bench::GcBenchConfig),
    /// The emulator for `bench --profile cluster`, in a process of its own: prints its address
    /// on the first line, serves until its standard input closes (its parent exited).
    #[command(hide = true)]
    ServeEmulator {
        #[arg(long, default_value_t = 1000)]
        latency_us: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Profile {
    Embedded,
    Cluster,
}

/// The cluster profile's service time per call.
const CLUSTER_LATENCY_US: u64 = 1000;

/// Every binary of the crate uses mimalloc: glibc's allocator took 12-19% of the benchmark's
/// CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Demo(config) => demo::run(&config).map(|report| report.violations.is_empty()),
        Command::ObserveDemo(config) => observe_demo::run(&config)
            .map(|r| r.mismatches.is_empty() && r.pending_notifications == 0),
        Command::Bench {
            seconds,
            threads,
            rows,
            rounds,
            workloads,
            json,
            hbase,
            oracle,
            local_timestamps,
            profile,
            pool,
            pipeline,
            api,
        } => {
            let workloads = match workloads {
                Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
                None => {
                    let floors = match api {
                        bench::Api::Async => &bench::FLOOR_WORKLOADS[..],
                        bench::Api::Sync => &[],
                    };
                    bench::WORKLOADS
                        .iter()
                        .chain(floors)
                        .map(|s| s.to_string())
                        .collect()
                }
            };
            let config = bench::BenchConfig {
                duration: Duration::from_secs_f64(seconds),
                threads: threads
                    .unwrap_or(if hbase.is_none() && matches!(profile, Profile::Embedded) {
                        64
                    } else {
                        32
                    })
                    .max(1),
                rows: rows.max(2),
                workloads,
                rounds: rounds.max(1),
                api,
            };
            let tune = move |c: percolator::HBaseConfig| {
                let c = c.pool_size(pool.max(1));
                match pipeline {
                    Some(n) => c.pipeline_per_connection(n.max(1)),
                    None => c,
                }
            };
            let cluster = match (profile, &hbase) {
                (Profile::Cluster, None) => match ClusterEmulator::spawn(CLUSTER_LATENCY_US) {
                    Ok(emulator) => Some(emulator),
                    Err(e) => {
                        eprintln!("error: starting the cluster-profile emulator: {e}");
                        return ExitCode::from(2);
                    }
                },
                _ => None,
            };
            let is_cluster = cluster.is_some();
            let hbase = hbase.or_else(|| cluster.as_ref().map(|c| c.addr.clone()));
            run_bench(
                &config,
                json,
                hbase,
                oracle,
                local_timestamps,
                tune,
                is_cluster,
            )
        }
        Command::ServeEmulator { latency_us } => serve_emulator(latency_us),
        Command::Migrate { command } => percolator_cli::commands::migrate(&command),
        Command::Data(command) => percolator_cli::commands::data(&command),
        Command::Gc(command) => command.run().map(|()| true),
        Command::GcBench(config) => {
            percolator_cli::workload::gc_bench::run(&config).map(|report| {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
                true
            })
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_bench(
    config: &bench::BenchConfig,
    json: bool,
    hbase: Option<String>,
    oracle: Option<String>,
    local_timestamps: bool,
    tune: impl FnOnce(percolator::HBaseConfig) -> percolator::HBaseConfig,
    cluster: bool,
) -> percolator::Result<bool> {
    let mut stack = Stack::start_with(hbase.as_deref(), oracle.as_deref(), tune)?;
    if local_timestamps {
        stack.use_local_timestamps();
    }
    if !json {
        println!(
            "{:<14} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10} {:>9}",
            "workload",
            "ops/s",
            "p50 us",
            "p99 us",
            "rpcs/op",
            "oracle/op",
            "cpu us/op",
            "gw us/op",
            "switch/op",
            "cpu busy"
        );
    }
    let report = bench::run(&stack, config, |name, r| {
        if !json {
            println!(
                "{name:<14} {:>10.0} {:>9.0} {:>9.0} {:>9.2} {:>10} {:>10.1} {:>9} {:>10.2} {:>8.0}%",
                r.ops_per_s,
                r.p50_us,
                r.p99_us,
                r.rpcs_per_op,
                r.oracle_requests_per_op
                    .map_or_else(|| "-".to_string(), |n| format!("{n:.2}")),
                r.cpu_us_per_op,
                r.gateway_cpu_us_per_op
                    .map_or_else(|| "-".to_string(), |n| format!("{n:.1}")),
                r.switches_per_op,
                r.cpu_busy_pct
            );
        }
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print_ratios(&report, cluster);
    }
    Ok(true)
}

/// The targets of each profile: throughput ratio at least, and (cluster) p50 ratio at most.
fn print_ratios(report: &bench::BenchReport, cluster: bool) {
    let targets = if cluster {
        [(0.85, Some(1.2)), (0.45, Some(2.2)), (0.55, Some(1.7))]
    } else {
        [(0.9, None), (0.45, None), (0.4, None)]
    };
    let pairs = [
        ("txn_get", "raw_get"),
        ("txn_put1", "raw_put"),
        ("txn_transfer2", "raw_rmw2"),
    ];
    for ((txn, raw), (ops_target, p50_target)) in pairs.into_iter().zip(targets) {
        if let Some((t, r)) = both(report, txn, raw) {
            let p50_target = p50_target.map_or(String::new(), |p| format!(" (target <= {p}x)"));
            println!(
                "{txn} / {raw} = {:.2} (target >= {ops_target}); p50 {:.2}x{p50_target}, p99 {:.2}x",
                t.ops_per_s / r.ops_per_s,
                t.p50_us / r.p50_us,
                t.p99_us / r.p99_us
            );
        }
    }
    // A write transaction makes at least two checkAndMutates, one after the other (the
    // prewrite, then the commit at its commit point), and Thrift2 has no batched form: where
    // the cost of a call sets the pace, txn_put1 cannot pass half of what raw_cas reaches,
    // whatever the transaction layer does.
    if let Some((cas, put)) = both(report, bench::RAW_CAS, "raw_put") {
        println!(
            "two checkAndMutates: raw_cas / raw_put / 2 = {:.2} (about the most txn_put1 / raw_put can reach here); cpu/op raw_cas / raw_put {:.2}x",
            cas.ops_per_s / put.ops_per_s / 2.0,
            cas.cpu_us_per_op / put.cpu_us_per_op
        );
    }
    // What the in-process gateway alone spends on each transaction, against the whole cost
    // of the raw operation: where the cores are the limit, not even a client that cost
    // nothing could pass this ratio.
    let gateway_bounds: Vec<String> = pairs
        .into_iter()
        .filter_map(|(txn, raw)| {
            let (t, r) = both(report, txn, raw)?;
            let gateway = t.gateway_cpu_us_per_op.filter(|g| *g > 0.0)?;
            Some(format!("{txn} / {raw} <= {:.2}", r.cpu_us_per_op / gateway))
        })
        .collect();
    if !gateway_bounds.is_empty() {
        println!(
            "the gateway's CPU alone (a client that cost nothing): {}",
            gateway_bounds.join(", ")
        );
    }
    // Where the floor workloads ran: what the protocol's own calls allow against the raw
    // baseline, and what the transaction layer adds on top of them.
    let floors = [
        ("txn_get", "floor_get", "raw_get"),
        ("txn_put1", "floor_put1", "raw_put"),
        ("txn_transfer2", "floor_transfer2", "raw_rmw2"),
    ];
    for (txn, floor, raw) in floors {
        print_pair(report, floor, raw);
        print_pair(report, txn, floor);
    }
}

/// The results of workloads `a` and `b`, if both ran.
fn both<'r>(
    report: &'r bench::BenchReport,
    a: &str,
    b: &str,
) -> Option<(&'r bench::WorkloadResult, &'r bench::WorkloadResult)> {
    Some((report.workloads.get(a)?, report.workloads.get(b)?))
}

/// `a / b` in throughput, p50 and CPU per operation, where both ran.
fn print_pair(report: &bench::BenchReport, a: &str, b: &str) {
    if let Some((x, y)) = both(report, a, b) {
        println!(
            "{a} / {b} = {:.2}; p50 {:.2}x; cpu/op {:.2}x",
            x.ops_per_s / y.ops_per_s,
            x.p50_us / y.p50_us,
            x.cpu_us_per_op / y.cpu_us_per_op
        );
    }
}

/// The emulator of the cluster profile: this binary again, as a child that dies with us.
struct ClusterEmulator {
    child: std::process::Child,
    addr: String,
}

impl ClusterEmulator {
    fn spawn(latency_us: u64) -> std::io::Result<ClusterEmulator> {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new(std::env::current_exe()?)
            .args(["serve-emulator", "--latency-us", &latency_us.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let addr = line.trim().to_string();
        if addr.is_empty() {
            let _ = child.kill();
            return Err(std::io::Error::other(
                "the emulator exited before it listened",
            ));
        }
        Ok(ClusterEmulator { child, addr })
    }
}

impl Drop for ClusterEmulator {
    fn drop(&mut self) {
        // Closing its standard input ends it; wait so that no process outlives the bench.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn serve_emulator(latency_us: u64) -> percolator::Result<bool> {
    use hbase_emulator::{self as emulator, EmulatorConfig};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| percolator::Error::io("binding the emulator", e))?;
    let config = EmulatorConfig {
        service_time: Duration::from_micros(latency_us),
        ..EmulatorConfig::default()
    };
    let handle = emulator::start(listener, config)
        .map_err(|e| percolator::Error::io("starting the emulator", e))?;
    println!("{}", handle.local_addr());
    // Until the parent closes our standard input (or dies).
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    handle.shutdown();
    Ok(true)
}
