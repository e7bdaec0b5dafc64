//! The soak's child processes: the oracles of the standby group and the client it kills.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::bank::{self, BankConfig};
use crate::stack::Stack;
use percolator::txn::LivenessConfig;
use percolator::{Error, Result};

/// `percolator-workloads soak-client`: the child the soak kills (hidden).
#[derive(Clone, Debug, clap::Args)]
pub struct SoakClientConfig {
    /// HBase Thrift2 gateway.
    #[arg(long)]
    pub hbase: String,
    /// The oracles of the soak's standby group, comma-separated.
    #[arg(long)]
    pub oracle: String,
    /// The bank tables, made and filled by the soak.
    #[arg(long, value_delimiter = ',')]
    pub tables: Vec<String>,
    /// Accounts in each table.
    #[arg(long)]
    pub accounts_per_table: usize,
    /// The liveness table the soak's clients share.
    #[arg(long)]
    pub liveness_table: String,
}

/// A child process of the soak, killed when dropped.
pub(super) struct Process {
    pub child: Child,
    /// Kept open: a child writing to a closed pipe would fail.
    _stdout: Option<BufReader<ChildStdout>>,
}

impl Process {
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `command`, set to receive SIGKILL when this process dies: a soak stopped by a signal
/// leaves no oracle or client behind.
fn dies_with_us(mut command: Command) -> Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches nothing of the parent's state.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    command
}

/// A sibling binary of this one (`percolator-oracle`, or `percolator-workloads` itself).
fn sibling(name: &str) -> Result<std::path::PathBuf> {
    let me = std::env::current_exe().map_err(|e| Error::io("finding this binary", e))?;
    Ok(me.with_file_name(name))
}

/// A standby-mode oracle on `store`, listening on `listen`; returns it and its address.
pub(super) fn start_oracle(listen: &str, store: &str, lease_ms: u64) -> Result<(Process, String)> {
    let mut child = dies_with_us(Command::new(sibling("percolator-oracle")?))
        .args(["--listen", listen, "--store", store, "--standby"])
        .arg(format!("--lease-ms={lease_ms}"))
        .arg("--stats-interval-s=3600")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("starting percolator-oracle", e))?;
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .map_err(|e| Error::io("reading the oracle's address", e))?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| Error::IllegalArgument {
            message: format!("percolator-oracle printed {line:?} instead of its address"),
        })?
        .to_string();
    let process = Process {
        child,
        _stdout: Some(stdout),
    };
    Ok((process, addr))
}

/// The child the soak kills, on the killed bank's `tables`.
pub(super) fn start_client(
    hbase: &str,
    oracles: &str,
    config: &BankConfig,
    liveness_table: &str,
) -> Result<Process> {
    let child = dies_with_us(Command::new(sibling("percolator-workloads")?))
        .args(["soak-client", "--hbase", hbase, "--oracle", oracles])
        .arg(format!("--tables={}", config.tables.join(",")))
        .arg(format!(
            "--accounts-per-table={}",
            config.accounts_per_table
        ))
        .arg(format!("--liveness-table={liveness_table}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("starting the soak client", e))?;
    Ok(Process {
        child,
        _stdout: None,
    })
}

/// The child the soak kills: transfers on the given tables until it is killed.
pub fn run_client(config: &SoakClientConfig) -> Result<()> {
    let stack = Stack::start(Some(&config.hbase), Some(&config.oracle))?;
    let liveness = LivenessConfig {
        table: config.liveness_table.clone(),
        ttl_secs: 1,
        ..LivenessConfig::default()
    };
    let bank_config = BankConfig {
        tables: config.tables.clone(),
        accounts_per_table: config.accounts_per_table,
        initial_balance: 1000,
        clients: 4,
        auditors: 0,
        duration: Duration::from_secs(86_400),
        options: stack.txn_options(liveness)?,
        lock_granularity: percolator::txn::LockGranularity::Cell,
    };
    bank::run(&stack, &bank_config, &|_, _| {}).map(|_| ())
}
