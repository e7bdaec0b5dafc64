//! `percolator`: the operator tools, `create`, `migrate`, the data commands, `gc` and `doctor`
//! (the command line itself is [`percolator_cli::cli::Cli`]).

use std::process::ExitCode;

use percolator_cli::cli::{Cli, Command};

/// Every binary of the project uses mimalloc: glibc's allocator took 12-19% of the benchmark's
/// CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    percolator_cli::cli::main(|cli: Cli| {
        let reports_waits = matches!(
            cli.command,
            Command::Gc(_)
                | Command::Migrate {
                    command: percolator_cli::commands::MigrateCommand::Apply(_)
                }
        );
        let result = match cli.command {
            Command::Create(args) => percolator_cli::commands::create(&args),
            Command::Migrate { command } => percolator_cli::commands::migrate(&command),
            Command::Data(command) => percolator_cli::commands::data(&command),
            Command::Gc(command) => command.run().map(|()| true),
            Command::Doctor(args) => percolator_cli::commands::doctor(&args),
        };
        (result, reports_waits)
    })
}
