//! `percolator-workloads bench`: its options, the choice of emulator (in this process, or a child
//! with a service time per call), the runs, and the table and ratios it prints.

use std::time::Duration;

use percolator::Error;

use crate::stack::Stack;
use crate::usage::{ServerProcess, EMULATOR_THREADS, HBASE_GATEWAY_THREADS};
use crate::{bench, large};

/// The cluster profile's service time per call.
const CLUSTER_LATENCY_US: u64 = 1000;

/// `percolator-workloads bench`'s options.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// How long each workload runs, in seconds (split over --rounds).
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Concurrent clients, each one operation at a time, raw and transactional alike.
    /// Default: 64 in the embedded profile, where the machine's cores are the limit and
    /// fewer leave them idle while transactions wait on their extra round trips (the
    /// `cpu busy` column); 32 in the cluster profile and against `--hbase`, half the pool's
    /// 64 connections, so that calls do not queue behind each other on a connection.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Rows the workloads spread their operations over; each task (or thread) works on a
    /// slice of its own when there are two or more for each.
    #[arg(long, default_value_t = 10_000)]
    pub rows: usize,
    /// The workloads take turns this many times (each turn seconds/rounds long), so a
    /// machine whose speed drifts slows them all alike and the ratios stay fair.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
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
    pub workloads: Option<String>,
    /// The lock granularity of the table the txn_ workloads write: `cell` or `row`.
    #[arg(long, value_name = "cell|row", default_value = "cell")]
    pub lock_granularity: percolator::txn::LockGranularity,
    /// Regions each table is created with, split at even steps of --rows, so that the
    /// region servers of a cluster share the load from the start
    #[arg(long, default_value_t = 1)]
    pub regions: usize,
    /// Cells of the txn_large transaction (100-byte values, 10 columns a row).
    #[arg(long, default_value_t = 100_000)]
    pub large_cells: usize,
    /// Print one JSON report instead of the table and the ratios.
    #[arg(long)]
    pub json: bool,
    /// HBase Thrift2 gateway host:port (default: an emulator, per --profile).
    #[arg(long)]
    pub hbase: Option<String>,
    /// The pid of the HBase JVM behind --hbase, when it runs on this machine: the bench then
    /// reports its CPU per operation, and its Thrift gateway threads' part (default: the
    /// JVM of `scripts/real-hbase start` when --hbase is its gateway).
    #[arg(long, requires = "hbase")]
    pub hbase_pid: Option<u32>,
    /// Timestamp oracle host:port (default: an embedded oracle).
    #[arg(long)]
    pub oracle: Option<String>,
    /// Take timestamps from an in-process counter instead of the oracle (diagnostic: shows
    /// what the oracle round trip costs).
    #[arg(long)]
    pub local_timestamps: bool,
    /// `embedded`: the emulator and oracle in this process (loopback, no service time).
    /// `cluster`: the emulator in a process of its own with 1 ms per call, served in order
    /// per connection, as a real gateway in front of a cluster (ignored with --hbase).
    #[arg(long, value_enum, default_value_t = Profile::Embedded)]
    pub profile: Profile,
    /// Gateway connections in the client's pool.
    #[arg(long, default_value_t = 64)]
    pub pool: u32,
    /// Calls that may share a connection, pipelined (the client's
    /// `HBaseConfig::pipeline_per_connection`; default: 16 against the embedded emulator, else
    /// the client's default, 1).
    #[arg(long)]
    pub pipeline: Option<usize>,
    /// The API the workloads run through: tokio tasks over the async API, or threads over
    /// the blocking one (`--threads` of either).
    #[arg(long, value_enum, default_value_t = bench::Api::Async)]
    pub api: bench::Api,
}

/// Where `bench` runs its emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// The emulator and the oracle in this process (loopback, no service time).
    Embedded,
    /// The emulator in a process of its own, 1 ms per call, in order per connection.
    Cluster,
}

/// Runs the workloads `args` names and prints what they measured: `Ok(true)` when they ran.
pub fn run(args: BenchArgs) -> percolator::Result<bool> {
    let BenchArgs {
        seconds,
        threads,
        rows,
        rounds,
        workloads,
        large_cells,
        json,
        hbase,
        hbase_pid,
        oracle,
        local_timestamps,
        profile,
        pool,
        pipeline,
        api,
        lock_granularity,
        regions,
    } = args;
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
    let mut config = bench::BenchConfig {
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
        lock_granularity,
        regions,
        server: None,
    };
    let tune = move |c: percolator::HBaseConfig| {
        let c = c.pool_size(pool.max(1)).tally_writes(true);
        match pipeline {
            Some(n) => c.pipeline_per_connection(n.max(1)),
            None => c,
        }
    };
    let large = config.workloads.iter().any(|w| large::is_large(w));
    // The large workloads measure the client's memory, so their gateway is never in
    // this process: the embedded profile's emulator runs as a child too, with no
    // service time.
    let latency_us = match profile {
        Profile::Cluster => Some(CLUSTER_LATENCY_US),
        Profile::Embedded if large => Some(0),
        Profile::Embedded => None,
    };
    let cluster = match (latency_us, &hbase) {
        (Some(latency_us), None) => match ClusterEmulator::spawn(latency_us) {
            Ok(emulator) => Some(emulator),
            Err(e) => return Err(Error::io("starting the cluster-profile emulator", e)),
        },
        _ => None,
    };
    if large {
        let gateway = match (&cluster, &hbase) {
            (Some(c), _) => format!(
                "an emulator in a child process (serve-emulator --latency-us {}) at {}",
                latency_us.unwrap_or(0),
                c.addr
            ),
            (None, Some(addr)) => format!("the gateway at {addr}"),
            (None, None) => unreachable!("a child emulator when no --hbase is given"),
        };
        let large_config = large::LargeConfig {
            cells: large_cells.max(1),
            rounds: config.rounds,
            workloads: config.workloads.clone(),
            gateway,
        };
        let hbase = hbase.or_else(|| cluster.as_ref().map(|c| c.addr.clone()));
        run_large(&large_config, json, hbase, oracle, tune)
    } else {
        config.server = match (&cluster, &hbase) {
            (Some(c), _) => Some(ServerProcess {
                pid: c.child.id(),
                gateway_threads: EMULATOR_THREADS,
            }),
            (None, Some(addr)) => {
                hbase_pid
                    .or_else(|| real_hbase_pid(addr))
                    .map(|pid| ServerProcess {
                        pid,
                        gateway_threads: HBASE_GATEWAY_THREADS,
                    })
            }
            (None, None) => None,
        };
        let hbase = hbase.or_else(|| cluster.as_ref().map(|c| c.addr.clone()));
        run_bench(&config, json, hbase, oracle, local_timestamps, tune)
    }
}

/// The pid of the JVM `scripts/real-hbase start` runs, when `addr` is its gateway.
fn real_hbase_pid(addr: &str) -> Option<u32> {
    let work = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/real-hbase");
    let env = std::fs::read_to_string(work.join("env")).ok()?;
    let serves = env
        .lines()
        .any(|line| line.strip_prefix("HBASE_THRIFT=") == Some(addr));
    let pid = std::fs::read_to_string(work.join("pid")).ok()?;
    serves.then(|| pid.trim().parse().ok()).flatten()
}

fn run_bench(
    config: &bench::BenchConfig,
    json: bool,
    hbase: Option<String>,
    oracle: Option<String>,
    local_timestamps: bool,
    tune: impl FnOnce(percolator::HBaseConfig) -> percolator::HBaseConfig,
) -> percolator::Result<bool> {
    let mut stack = Stack::start_with(hbase.as_deref(), oracle.as_deref(), tune)?;
    if local_timestamps {
        stack.use_local_timestamps();
    }
    if !json {
        println!(
            "{:<14} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10} {:>9}",
            "workload",
            "ops/s",
            "p50 us",
            "p99 us",
            "max ms",
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
                "{name:<14} {:>10.0} {:>9.0} {:>9.0} {:>9.1} {:>9.2} {:>10} {:>10.1} {:>9} {:>10.2} {:>8.0}%",
                r.ops_per_s,
                r.p50_us,
                r.p99_us,
                r.max_us / 1000.0,
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
        print_cluster_side(&report);
        print_ratios(&report);
    }
    Ok(true)
}

/// What each workload cost the gateway's side: its process's CPU (the in-process emulator's
/// threads in the embedded profile), the gateway threads' part of it, the calls, and the cells
/// and bytes written by family.
fn print_cluster_side(report: &bench::BenchReport) {
    println!(
        "{:<14} {:>12} {:>9} {:>9}  written per op: cells (bytes) by family",
        "cluster side", "server us/op", "gateway", "calls/op"
    );
    for (name, r) in &report.workloads {
        let (server, gateway) = match (r.server_cpu_us_per_op, r.gateway_cpu_us_per_op) {
            (Some(server), _) => (Some(server), r.server_gateway_cpu_us_per_op),
            (None, Some(in_process)) => (Some(in_process), Some(in_process)),
            (None, None) => (None, None),
        };
        let share = server.zip(gateway).filter(|(s, _)| *s > 0.0).map_or_else(
            || "-".to_string(),
            |(s, g)| format!("{:.0}%", 100.0 * g / s),
        );
        // A family written less than once per 200 ops (the liveness rows' refreshes) is left
        // out of the line; the JSON report has it.
        let written: Vec<String> = r
            .written_per_op
            .iter()
            .filter(|f| f.cells >= 0.005)
            .map(|f| format!("{} {:.2} ({:.0})", f.family, f.cells, f.bytes))
            .collect();
        println!(
            "{name:<14} {:>12} {:>9} {:>9.2}  {}",
            server.map_or_else(|| "-".to_string(), |s| format!("{s:.1}")),
            share,
            r.rpcs_per_op,
            if written.is_empty() {
                "-".to_string()
            } else {
                written.join(", ")
            }
        );
    }
}

fn run_large(
    config: &large::LargeConfig,
    json: bool,
    hbase: Option<String>,
    oracle: Option<String>,
    tune: impl FnOnce(percolator::HBaseConfig) -> percolator::HBaseConfig,
) -> percolator::Result<bool> {
    let stack = Stack::start_with(hbase.as_deref(), oracle.as_deref(), tune)?;
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    if !json {
        println!(
            "{} cells of {} bytes, {} columns a row; gateway: {}; RSS of this process (the client and its oracle)",
            config.cells,
            large::VALUE_BYTES,
            large::COLUMNS,
            config.gateway
        );
        println!(
            "{:<10} {:>9} {:>9} {:>13} {:>13} {:>13} {:>12}",
            "workload",
            "seconds",
            "us/cell",
            "base RSS MiB",
            "buffered MiB",
            "peak RSS MiB",
            "peak-base MiB"
        );
    }
    let report = large::run(&stack, config, |name, r| {
        if !json {
            println!(
                "{name:<10} {:>9.2} {:>9.1} {:>13.1} {:>13} {:>13.1} {:>12.1}",
                r.seconds,
                r.us_per_cell,
                mib(r.baseline_rss_bytes),
                r.buffered_rss_bytes
                    .map_or_else(|| "-".to_string(), |b| format!("{:.1}", mib(b))),
                mib(r.peak_rss_bytes),
                mib(r.peak_rss_bytes.saturating_sub(r.baseline_rss_bytes))
            );
        }
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
        return Ok(true);
    }
    for (name, r) in &report.workloads {
        println!(
            "{name}: mean of {} runs {:.1} us/cell, peak RSS {:.1} MiB, {:.1} MiB above the baseline = {:.2}x the payload ({:.1} MiB)",
            r.runs.len(),
            r.us_per_cell,
            mib(r.peak_rss_bytes),
            mib(r.peak_over_baseline_bytes),
            r.peak_over_baseline_per_payload,
            mib(r.payload_bytes)
        );
    }
    if let Some(ratio) = report.txn_over_raw {
        println!("txn_large / raw_large time per cell = {ratio:.2}x");
    }
    if !report.peak_reset {
        println!(
            "(the peak is the process's since it started: its high-water mark could not be reset)"
        );
    }
    Ok(true)
}

/// Each transactional workload against its raw baseline, with the ratio its protocol floor
/// reached against the same baseline where the floor workload ran (what the protocol's own
/// calls allow, whatever the transaction layer does).
fn print_ratios(report: &bench::BenchReport) {
    let pairs = [
        ("txn_get", "raw_get"),
        ("txn_put1", "raw_put"),
        ("txn_transfer2", "raw_rmw2"),
        (bench::TXN_ROW10, bench::RAW_ROW10),
    ];
    let floors = [
        ("txn_get", "floor_get", "raw_get"),
        ("txn_put1", "floor_put1", "raw_put"),
        ("txn_transfer2", "floor_transfer2", "raw_rmw2"),
    ];
    for (txn, raw) in pairs {
        if let Some((t, r)) = both(report, txn, raw) {
            let floor = floors.iter().find(|f| f.0 == txn).map(|f| f.1);
            let floor_ratio = floor
                .and_then(|floor| Some((floor, both(report, floor, raw)?)))
                .map_or(String::new(), |(floor, (f, r))| {
                    format!(" ({floor} / {raw} = {:.2})", f.ops_per_s / r.ops_per_s)
                });
            println!(
                "{txn} / {raw} = {:.2}{floor_ratio}; p50 {:.2}x, p99 {:.2}x",
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

/// The emulator of `bench --profile cluster` in this process, serving until standard input
/// closes.
pub fn serve_emulator(latency_us: u64) -> percolator::Result<bool> {
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
