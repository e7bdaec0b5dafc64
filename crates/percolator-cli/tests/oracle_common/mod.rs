//! Helpers shared by the oracle test files: starting the binary, and requesters that record
//! every timestamp they get so that uniqueness and order can be checked afterwards.
#![allow(dead_code)] // each test file uses a different subset

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use percolator::oracle::ClientConfig;
use percolator::OracleClient;

/// The `percolator-oracle` binary: this package's own in its tests; in percolator-workloads'
/// tests (the bank against oracle processes), the one built beside `percolator-workloads` by
/// the same `cargo test` of the workspace.
pub fn bin() -> std::path::PathBuf {
    let workloads = match option_env!("CARGO_BIN_EXE_percolator-oracle") {
        Some(own) => return own.into(),
        None => option_env!("CARGO_BIN_EXE_percolator-workloads"),
    };
    let oracle =
        std::path::Path::new(workloads.unwrap_or_default()).with_file_name("percolator-oracle");
    assert!(
        oracle.is_file(),
        "no {} (build it: cargo build -p percolator-cli --bin percolator-oracle)",
        oracle.display()
    );
    oracle
}

/// A `percolator-oracle` server process.
pub struct OracleProcess {
    pub child: Child,
    pub addr: String,
}

impl OracleProcess {
    /// Starts the binary with `args` and waits for its `listening on ADDR` line.
    pub fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> OracleProcess {
        Self::start_with_stderr(args, Stdio::null())
    }

    /// Like [`start`](Self::start), with the server's log going to `stderr`.
    pub fn start_with_stderr<S: AsRef<std::ffi::OsStr>>(
        args: &[S],
        stderr: impl Into<Stdio>,
    ) -> OracleProcess {
        let mut child = Command::new(bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn percolator-oracle");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        OracleProcess { child, addr }
    }

    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL the oracle");
        self.child.wait().expect("reap the oracle");
    }

    /// Sends SIGTERM and returns whether the process exited successfully.
    pub fn terminate(&mut self) -> bool {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: signalling a child we spawned and have not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        self.child.wait().expect("reap the oracle").success()
    }
}

impl Drop for OracleProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A client patient enough to ride out server restarts.
pub fn patient_client(addrs: &[String]) -> OracleClient {
    OracleClient::connect(
        addrs,
        ClientConfig {
            request_timeout: Duration::from_secs(30),
            ..ClientConfig::default()
        },
    )
    .expect("connect to the oracle")
}

/// A client that gives up on a request after 200 ms (a fenced or standing-by oracle stops
/// answering).
pub fn impatient_client(addr: &str) -> OracleClient {
    let config = ClientConfig {
        request_timeout: Duration::from_millis(200),
        ..ClientConfig::default()
    };
    OracleClient::connect(&[addr.to_owned()], config).expect("connect to the oracle")
}

/// Threads that each fetch timestamps in a loop from a shared source and keep them in order.
pub struct Requesters {
    stop: Arc<AtomicBool>,
    /// Highest timestamp any requester has received so far.
    pub max_seen: Arc<AtomicU64>,
    pub fetched: Arc<AtomicU64>,
    errors: Arc<Mutex<Vec<String>>>,
    threads: Vec<JoinHandle<Vec<u64>>>,
}

impl Requesters {
    pub fn start(sources: &[Arc<OracleClient>], threads_per_source: usize) -> Requesters {
        let stop = Arc::new(AtomicBool::new(false));
        let max_seen = Arc::new(AtomicU64::new(0));
        let fetched = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for source in sources {
            for i in 0..threads_per_source {
                let (source, stop, max_seen, fetched, errors) = (
                    Arc::clone(source),
                    Arc::clone(&stop),
                    Arc::clone(&max_seen),
                    Arc::clone(&fetched),
                    Arc::clone(&errors),
                );
                // Every other thread asks for small batches, exercising multi-slot askers.
                let batch = if i % 2 == 0 { 1 } else { 3 };
                threads.push(std::thread::spawn(move || {
                    let mut got = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let result = if batch == 1 {
                            source.get_timestamp().map(|t| vec![t])
                        } else {
                            source.get_timestamps(batch)
                        };
                        match result {
                            Ok(ts) => {
                                max_seen.fetch_max(*ts.last().unwrap(), Ordering::SeqCst);
                                fetched.fetch_add(ts.len() as u64, Ordering::Relaxed);
                                got.extend(ts);
                            }
                            Err(e) => errors.lock().push(e.to_string()),
                        }
                    }
                    got
                }));
            }
        }
        Requesters {
            stop,
            max_seen,
            fetched,
            errors,
            threads,
        }
    }

    /// Waits until the requesters together fetched `n` more timestamps.
    pub fn wait_for_more(&self, n: u64) {
        let target = self.fetched.load(Ordering::Relaxed) + n;
        wait_until("requesters to make progress", || {
            self.fetched.load(Ordering::Relaxed) >= target
        });
    }

    /// Stops the requesters and returns each one's sequence plus the errors seen.
    pub fn finish(self) -> (Vec<Vec<u64>>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let sequences = self
            .threads
            .into_iter()
            .map(|t| t.join().expect("requester thread"))
            .collect();
        let errors = std::mem::take(&mut *self.errors.lock());
        (sequences, errors)
    }
}

/// Asserts each sequence strictly increases and no timestamp appears twice anywhere; returns
/// how many timestamps there were.
pub fn assert_unique_and_increasing(sequences: &[Vec<u64>]) -> usize {
    let mut all = HashSet::new();
    for (i, seq) in sequences.iter().enumerate() {
        for w in seq.windows(2) {
            assert!(w[0] < w[1], "requester {i} went from {} to {}", w[0], w[1]);
        }
        for &ts in seq {
            assert!(all.insert(ts), "timestamp {ts} was handed out twice");
        }
    }
    all.len()
}

/// Polls `done` until it holds; panics (instead of hanging the suite) after a minute.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
