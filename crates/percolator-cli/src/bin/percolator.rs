//! `percolator`: the demo, the benchmark, `migrate`, `gc`, and the data commands (the
//! command line itself is [`percolator_cli::cli::Cli`]).

use std::process::ExitCode;

use clap::Parser;
use percolator_cli::cli::{Cli, Command};
use percolator_cli::workload::{bench_command, demo, large, observe_demo, soak};

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
        Command::Bench(args) => bench_command::run(args),
        Command::ServeEmulator { latency_us } => bench_command::serve_emulator(latency_us),
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
