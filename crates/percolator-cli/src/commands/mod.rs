//! The command-line faces of `percolator migrate ...`, `gc`, `create`, `doctor` and of the data
//! commands (`get`, `put`, `delete`, `scan`, `locks`): argument structs for clap, and functions that run one command,
//! print its result (text, or JSON with `--json`) and say whether it succeeded. Errors are
//! returned for the binary to print; `Ok(false)` means "ran, found problems" (exit 1).

mod create;
mod data;
pub mod doctor;
mod gc;
mod migrate;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use percolator::hbase::{HBaseClient, HBaseConfig};
use percolator::oracle::{ClientConfig, OracleClient};
use percolator::txn::{Client, LivenessConfig, TxnOptions};
use percolator::{Error, Result, RetryClass};

pub use create::{create, CreateArgs};
pub use data::{data, DataArgs, DataCommand};
pub use doctor::{doctor, DoctorArgs};
pub use gc::GcCommand;
pub use migrate::{migrate, ApplyArgs, BenchArgs, DisableArgs, MigrateArgs, MigrateCommand};

/// The `--timeout` of the one-transaction commands, in seconds.
pub const DEFAULT_TIMEOUT_S: f64 = 30.0;

/// `--timeout SECONDS` as a duration (at least a millisecond; refuses what is not a number).
fn timeout(seconds: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .map(|d| d.max(Duration::from_millis(1)))
        .map_err(|_| Error::IllegalArgument {
            message: format!("--timeout {seconds} is not a number of seconds"),
        })
}

/// A gateway config whose connect and read deadlines are `timeout`: no single wait on the
/// gateway outlasts it.
pub(crate) fn hbase_config(addr: &str, timeout: Duration) -> Result<HBaseConfig> {
    Ok(crate::gateway::config(addr)?
        .connect_timeout(timeout)
        .read_timeout(timeout))
}

/// Connects to the gateway, and fails here, once and clearly, when it cannot be reached. A
/// gateway that answers that HBase behind it is in transition (a server recovering, a master
/// call timing out) was reached: the command's own calls wait that out as they go.
fn hbase(addr: &str, timeout: Duration) -> Result<HBaseClient> {
    let client = HBaseClient::connect(hbase_config(addr, timeout)?)?;
    reached(client.admin().list_tables())?;
    Ok(client)
}

/// Whether the probe's answer shows the gateway reached.
fn reached<T>(probe: Result<T>) -> Result<()> {
    match probe {
        Ok(_) => Ok(()),
        Err(e @ Error::ServerIo { .. }) if e.retry_class() == RetryClass::Retry => Ok(()),
        Err(e) => Err(e),
    }
}

/// The gateway, reached within `seconds` (else an error naming it); its calls wait at most
/// that long each.
pub(crate) fn connect_hbase(addr: &str, seconds: f64) -> Result<HBaseClient> {
    let deadline = timeout(seconds)?;
    let waiting = Waiting::default();
    waiting.on(format!("the HBase gateway at {addr}"));
    let addr = addr.to_string();
    within(deadline, &waiting, move || hbase(&addr, deadline))
}

/// The oracle at `addrs` (a fail-over list), reached within `seconds` (else an error naming
/// it): connected, with the timestamp that showed it answers.
pub(crate) fn connect_oracle(addrs: &[String], seconds: f64) -> Result<(OracleClient, u64)> {
    let deadline = timeout(seconds)?;
    let waiting = Waiting::default();
    waiting.on(format!("the timestamp oracle at {}", addrs.join(",")));
    let addrs = addrs.to_vec();
    within(deadline, &waiting, move || oracle(&addrs, deadline))
}

/// A client of the oracle at `addrs` whose waits on it last at most `timeout`, and its first
/// timestamp: a silent oracle is found, and named, before a transaction waits on it.
fn oracle(addrs: &[String], timeout: Duration) -> Result<(OracleClient, u64)> {
    let config = crate::oracle_access::client_config(ClientConfig {
        connect_timeout: timeout,
        request_timeout: timeout,
        ..ClientConfig::default()
    })?;
    let client = OracleClient::connect(addrs, config)?;
    let ts = client.get_timestamp()?;
    Ok((client, ts))
}

/// A transactional client over the gateway and oracle clients a command has already reached,
/// sharing their connections.
/// A client whose liveness row goes in `liveness`'s table, where it also looks for the owners
/// of the locks it meets: the table the writers of those locks use.
fn transactional(
    hbase: &HBaseClient,
    tso: OracleClient,
    liveness: LivenessConfig,
) -> Result<Client> {
    let options = TxnOptions::builder()
        .max_lock_wait(Duration::from_secs(2))
        .liveness(liveness)
        .build();
    percolator::txn::setup::create_liveness_table(hbase, options.liveness())?;
    Client::new(Arc::new(hbase.asynchronous()), Arc::new(tso), options)
}

/// What a command is waiting for, for the error when its deadline passes ("the HBase gateway
/// at HOST:PORT"); the command updates it as it moves from one server to the next.
#[derive(Clone, Default)]
struct Waiting(Arc<Mutex<String>>);

impl Waiting {
    fn on(&self, what: impl Into<String>) {
        *self.0.lock() = what.into();
    }
}

/// Runs `run` with a deadline on the whole of it: if it has not returned after `timeout`,
/// returns [`Error::Timeout`] with the time that passed and what it was waiting for (its
/// thread is left behind: the binary exits on the error). A silent server (one that accepts
/// connections and never answers) then costs at most `timeout`, whatever the library's own
/// retries and timeouts add up to.
fn within<T: Send + 'static>(
    timeout: Duration,
    waiting: &Waiting,
    run: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("command".into())
        .spawn(move || {
            let _ = tx.send(run());
        })
        .map_err(|e| Error::io("starting the command's thread", e))?;
    match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Error::Timeout {
            what: Some(waiting.0.lock().clone())
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| "an answer".into()),
            // Whole milliseconds: the time that really passed, readable.
            after: Duration::from_millis(started.elapsed().as_millis() as u64),
        }),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => Err(Error::Shutdown),
        },
    }
}

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_io(message: &str) -> Result<()> {
        Err(Error::ServerIo {
            message: message.into(),
            can_retry: false,
            exception: None,
        })
    }

    #[test]
    fn a_gateway_whose_hbase_is_in_transition_was_reached() {
        let timed_out = "callTimeout=3000, callDuration=3114: Call to address=localhost:40157 \
            failed on local exception: org.apache.hadoop.hbase.ipc.CallTimeoutException";
        assert!(reached(server_io(timed_out)).is_ok());
        assert!(reached(server_io(
            "org.apache.hadoop.hbase.security.AccessDeniedException: no"
        ))
        .is_err());
        let refused = Error::Transport {
            peer: percolator::Peer::HBase,
            addr: "127.0.0.1:1".into(),
            source: std::sync::Arc::new(std::io::ErrorKind::ConnectionRefused.into()),
        };
        assert!(reached::<()>(Err(refused)).is_err());
    }
}
