//! The command lines of the crate's binaries, as clap derives: [`Cli`] for `percolator`,
//! [`oracle::Cli`] for `percolator-oracle`. They live in the library, not in the binaries, so
//! that tests can walk them (every option and argument has help text).

pub mod oracle;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `percolator`'s command line.
///
/// ```
/// use clap::Parser;
/// let args = ["percolator", "locks", "--hbase", "h:9090", "t"];
/// let cli = percolator_cli::cli::Cli::parse_from(args);
/// assert!(matches!(cli.command, percolator_cli::cli::Command::Data(_)));
/// ```
#[derive(Parser)]
#[command(
    name = "percolator",
    version,
    about = "Percolator transactions on HBase: the operator tools",
    long_about = None
)]
pub struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub command: Command,
}

impl AsRef<Common> for Cli {
    fn as_ref(&self) -> &Common {
        &self.common
    }
}

/// What every command of `percolator` and of `percolator-workloads` takes besides its own
/// options: how an error is shown, the metrics listener, and how the gateway and the oracle
/// are reached.
#[derive(clap::Args, Clone)]
pub struct Common {
    /// On an error, also print the gateway's whole message (the Java exception's stack trace),
    /// which the one-line error leaves out.
    #[arg(long, global = true, help_heading = "Every command's options")]
    pub verbose: bool,
    /// Serve the library's metrics as Prometheus text at http://ADDR/metrics while the command
    /// runs (for the long-running ones: `gc`, `migrate apply`, and the workloads).
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
}

impl Common {
    /// Puts the options in force for the command about to run: the gateway and oracle
    /// settings, and the metrics listener. The exit code when the listener cannot start.
    pub fn apply(&self) -> Result<(), ExitCode> {
        crate::gateway::set(self.gateway.clone());
        if let Some(addr) = &self.metrics_listen
            && let Err(e) = crate::metrics_http::serve(addr)
        {
            eprintln!("{}", error_report(&e, self.verbose));
            return Err(ExitCode::from(2));
        }
        crate::oracle_access::set(self.oracle_access.clone());
        Ok(())
    }
}

/// A binary's `main`: parses its command line `C` (after letting a closed standard output end
/// the process quietly and sending logs to stderr, `warn` unless `RUST_LOG` says otherwise),
/// puts the [`Common`] options in force, and runs `command`, which returns the command's
/// outcome and whether it reports its longest waits, and ends the process with the outcome's
/// exit code.
pub fn main<C: Parser + AsRef<Common>>(
    command: impl FnOnce(C) -> (percolator::Result<bool>, bool),
) -> ExitCode {
    quiet_on_closed_pipe();
    crate::logging::init("warn");
    let cli = C::parse();
    let common = cli.as_ref().clone();
    if let Err(code) = common.apply() {
        return code;
    }
    let (result, reports_waits) = command(cli);
    exit(result, common.verbose, reports_waits)
}

/// How a command's outcome ends the process: 0 when it succeeded, 1 when it ran and found
/// problems, 2 on an error (printed on stderr). With `reports_waits`, a command that ran also
/// says what it waited for longest: under region moves and server crashes, the figure that
/// says whether the gateway's HBase client settings suit the work.
fn exit(result: percolator::Result<bool>, verbose: bool, reports_waits: bool) -> ExitCode {
    if reports_waits && result.is_ok() {
        eprintln!("waits: {}", percolator::metrics::longest_waits());
    }
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{}", error_report(&e, verbose));
            ExitCode::from(2)
        }
    }
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
}
