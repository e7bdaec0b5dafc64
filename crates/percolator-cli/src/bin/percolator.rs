//! `percolator`: the demo, the benchmark, `migrate`, `gc`, and the data commands (the
//! command line itself is [`percolator_cli::cli::Cli`]).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use percolator_cli::cli::{Cli, Command, Profile};
use percolator_cli::workload::{bench, demo, large, observe_demo, soak, stack::Stack};

/// The cluster profile's service time per call.
const CLUSTER_LATENCY_US: u64 = 1000;

/// Every binary of the crate uses mimalloc: glibc's allocator took 12-19% of the benchmark's
/// CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    percolator_cli::cli::quiet_on_closed_pipe();
    percolator_cli::logging::init("warn");
    let cli = Cli::parse();
    let verbose = cli.verbose;
    percolator_cli::gateway::set(cli.gateway.clone());
    if let Some(addr) = &cli.metrics_listen
        && let Err(e) = percolator_cli::metrics_http::serve(addr)
    {
        eprintln!("{}", percolator_cli::cli::error_report(&e, verbose));
        return ExitCode::from(2);
    }
    percolator_cli::oracle_access::set(cli.oracle_access.clone());
    // What a long run waited for, one line on stderr: under region moves and server crashes,
    // the figure that says whether the gateway's HBase client settings suit the workload.
    let reports_waits = matches!(
        cli.command,
        Command::Demo(_)
            | Command::ObserveDemo(_)
            | Command::Soak(_)
            | Command::Gc(_)
            | Command::Migrate {
                command: percolator_cli::commands::MigrateCommand::Apply(_)
            }
    );
    let result = match cli.command {
        Command::Demo(config) => demo::run(&config).map(|report| report.violations.is_empty()),
        Command::ObserveDemo(config) => observe_demo::run(&config).map(|r| {
            observe_demo::print(&r, config.json);
            r.mismatches.is_empty() && r.pending_notifications == 0
        }),
        Command::Soak(config) => soak::run(&config).map(|r| soak::print(&r, config.json)),
        Command::SoakClient(config) => soak::run_client(&config).map(|()| true),
        Command::LargeClient(config) => large::run_client(&config).map(|()| true),
        Command::Bench {
            seconds,
            threads,
            rows,
            rounds,
            workloads,
            large_cells,
            json,
            hbase,
            oracle,
            local_timestamps,
            profile,
            pool,
            pipeline,
            api,
            lock_granularity,
            regions,
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
                lock_granularity,
                regions,
            };
            let tune = move |c: percolator::HBaseConfig| {
                let c = c.pool_size(pool.max(1));
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
                    Err(e) => {
                        eprintln!("error: starting the cluster-profile emulator: {e}");
                        return ExitCode::from(2);
                    }
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
                let hbase = hbase.or_else(|| cluster.as_ref().map(|c| c.addr.clone()));
                run_bench(&config, json, hbase, oracle, local_timestamps, tune)
            }
        }
        Command::ServeEmulator { latency_us } => serve_emulator(latency_us),
        Command::Create(args) => percolator_cli::commands::create(&args),
        Command::Migrate { command } => percolator_cli::commands::migrate(&command),
        Command::Data(command) => percolator_cli::commands::data(&command),
        Command::Gc(command) => command.run().map(|()| true),
        Command::Doctor(args) => percolator_cli::commands::doctor(&args),
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
    if reports_waits && result.is_ok() {
        eprintln!("waits: {}", percolator::metrics::longest_waits());
    }
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{}", percolator_cli::cli::error_report(&e, verbose));
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
        print_ratios(&report);
    }
    Ok(true)
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
