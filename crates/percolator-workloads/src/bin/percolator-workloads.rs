//! `percolator-workloads`: the demos, the soak and the benchmarks (the command line itself is
//! [`percolator_workloads::cli::Cli`]).

use std::process::ExitCode;

use percolator_workloads::cli::{Cli, Command};
use percolator_workloads::{bench_command, demo, gc_bench, gc_scale, large, observe_demo, soak};

/// mimalloc, as in every binary of the project: glibc's allocator took 12-19% of the
/// benchmark's CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    percolator_cli::cli::main(|cli: Cli| {
        let reports_waits = matches!(
            cli.command,
            Command::Demo(_) | Command::ObserveDemo(_) | Command::Soak(_)
        );
        (run(cli.command), reports_waits)
    })
}

fn run(command: Command) -> percolator::Result<bool> {
    match command {
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
        Command::GcScale(config) => gc_scale::run(&config).map(|rounds| {
            println!(
                "{}",
                serde_json::to_string_pretty(&rounds).unwrap_or_default()
            );
            true
        }),
        Command::GcBench(config) => gc_bench::run(&config).map(|report| {
            println!(
                "{}",
                serde_json::to_string_pretty(&report).unwrap_or_default()
            );
            true
        }),
    }
}
