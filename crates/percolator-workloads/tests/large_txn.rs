//! A client killed with SIGKILL in the middle of a large commit (100,000 cells, the size of
//! `bench --workloads txn_large`) leaves nothing half done. The client is a child process
//! (`percolator-workloads large-client`) writing over cells that already hold an older
//! transaction's values; the parent kills it at a point of its commit, then a fresh client reads
//! every cell and must see all the new values or all the old ones, as the primary decided, and
//! no lock may survive those reads.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use percolator::txn::{setup, LivenessConfig, Schema, Seam};
use percolator::{CellKey, Client, HBaseClient, HBaseConfig, TxnOptions};
use percolator_workloads::large::{client_cell, tagged_value};

const CELLS: usize = 100_000;
/// Cells a reader asks for in one transaction.
const READ_CHUNK: usize = 1_000;
/// Readers at once: the killed transaction's locks are resolved one at a time per reader.
const READERS: usize = 8;

struct Servers {
    _emulator: hbase_emulator::EmulatorHandle,
    _oracle: percolator::OracleHandle,
    hbase: String,
    oracle: String,
}

fn servers() -> Servers {
    let emulator = hbase_emulator::start_local().unwrap();
    let oracle =
        percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new()).unwrap();
    Servers {
        hbase: emulator.local_addr().to_string(),
        oracle: oracle.local_addr().to_string(),
        _emulator: emulator,
        _oracle: oracle,
    }
}

impl Servers {
    fn table(&self, name: &str) -> String {
        let admin = HBaseClient::connect(HBaseConfig::new(self.hbase.clone())).unwrap();
        setup::create_table(&admin, &Schema::default(), name, &["f"]).unwrap();
        name.to_string()
    }

    /// `percolator-workloads large-client` writing `tag`'s values to every cell of `table`.
    fn writer(&self, table: &str, tag: &str, extra: &[&str]) -> Child {
        let cells = CELLS.to_string();
        Command::new(env!("CARGO_BIN_EXE_percolator-workloads"))
            .args([
                "large-client",
                "--hbase",
                &self.hbase,
                "--oracle",
                &self.oracle,
            ])
            .args(["--table", table, "--cells", &cells, "--tag", tag])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    }

    /// Commits `tag`'s values to every cell, in a child that is left to finish.
    fn commit_all(&self, table: &str, tag: &str) {
        let status = self.writer(table, tag, &[]).wait().unwrap();
        assert!(status.success(), "the writer of {tag} failed: {status}");
    }

    /// Starts a writer of `tag` and kills it with SIGKILL once it printed `line` and then
    /// `after` passed.
    fn kill_writer_at(&self, table: &str, tag: &str, extra: &[&str], line: &str, after: Duration) {
        let mut child = self.writer(table, tag, extra);
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut printed = String::new();
        stdout.read_line(&mut printed).unwrap();
        assert_eq!(printed.trim(), line, "the writer ended before it got there");
        std::thread::sleep(after);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Every cell's value, read by a client that never met the killed one: it waits out or
    /// resolves every lock it finds.
    fn read_all(&self, table: &str) -> Vec<Option<Vec<u8>>> {
        let liveness = LivenessConfig {
            table: "percolator_liveness".into(),
            ttl_secs: 1,
            ..LivenessConfig::default()
        };
        let options = TxnOptions::builder()
            .liveness(liveness)
            .max_lock_wait(Duration::from_secs(60))
            .build();
        let config = HBaseConfig::new(self.hbase.clone());
        let client = Client::connect(config, std::slice::from_ref(&self.oracle), options).unwrap();
        let chunks: Vec<_> = (0..CELLS).step_by(READ_CHUNK).collect();
        let mut values = vec![None; CELLS];
        std::thread::scope(|s| {
            let readers: Vec<_> = (0..READERS)
                .map(|r| {
                    let (client, chunks) = (&client, &chunks);
                    s.spawn(move || {
                        let mut read = Vec::new();
                        for &start in chunks.iter().skip(r).step_by(READERS) {
                            let keys: Vec<CellKey> = (start..(start + READ_CHUNK).min(CELLS))
                                .map(|i| {
                                    let (row, column) = client_cell(i);
                                    CellKey::new(table, row, "f", column).unwrap()
                                })
                                .collect();
                            let got = client.begin().unwrap().get_many(&keys).unwrap();
                            read.push((start, got));
                        }
                        read
                    })
                })
                .collect();
            for reader in readers {
                for (start, got) in reader.join().unwrap() {
                    for (i, v) in got.into_iter().enumerate() {
                        values[start + i] = v;
                    }
                }
            }
        });
        client.shutdown();
        values
    }

    /// Locks left in `table`, whatever their state.
    fn locks(&self, table: &str) -> usize {
        let admin = HBaseClient::connect(HBaseConfig::new(self.hbase.clone())).unwrap();
        percolator::locks::list_locks(&admin, &Schema::default(), table)
            .unwrap()
            .len()
    }
}

/// The tag whose values every cell holds; fails naming the first cell that differs.
fn all_of(values: &[Option<Vec<u8>>], tags: [&str; 2]) -> String {
    let tag = tags
        .into_iter()
        .find(|t| values[0].as_deref() == Some(tagged_value(t, 0).as_slice()))
        .unwrap_or_else(|| panic!("cell 0 holds neither tag: {:?}", values[0]));
    for (i, v) in values.iter().enumerate() {
        assert_eq!(
            v.as_deref(),
            Some(tagged_value(tag, i).as_slice()),
            "cell {i} is not {tag}'s like cell 0: half of the transaction shows"
        );
    }
    tag.to_string()
}

/// Kills a writer of `new` over `old` values where `extra` says, then reads. At a seam the
/// kill leaves locks (`seam`), which the reads must settle.
fn killed_writer_leaves(
    table: &str,
    extra: &[&str],
    line: &str,
    after: Duration,
    seam: bool,
) -> String {
    let s = servers();
    let table = s.table(table);
    s.commit_all(&table, "old");
    s.kill_writer_at(&table, "new", extra, line, after);
    if seam {
        assert!(s.locks(&table) > 0, "the kill left the commit half done");
    }
    let values = s.read_all(&table);
    let tag = all_of(&values, ["old", "new"]);
    assert_eq!(s.locks(&table), 0, "a lock survived the reads");
    tag
}

#[test]
fn a_writer_killed_halfway_through_its_prewrites_leaves_every_old_value() {
    let seam = Seam::AfterSecondaryPrewrite.name();
    let pause = format!("{seam}:{}", CELLS / 2);
    let tag = killed_writer_leaves(
        "killed_in_prewrites",
        &["--pause-at", &pause],
        &format!("paused at {seam}"),
        Duration::ZERO,
        true,
    );
    assert_eq!(tag, "old", "the primary never committed");
}

#[test]
fn a_writer_killed_between_its_secondary_commit_rounds_leaves_every_new_value() {
    let seam = Seam::BetweenSecondaryCommits.name();
    let tag = killed_writer_leaves(
        "killed_between_rounds",
        &["--pause-at", seam],
        &format!("paused at {seam}"),
        Duration::ZERO,
        true,
    );
    assert_eq!(tag, "new", "the primary committed");
}

/// Killed at no seam: some time into the secondaries' commits, most of them still to send.
#[test]
fn a_writer_killed_while_its_secondaries_commit_leaves_every_new_value() {
    let seam = Seam::AfterPrimaryCommit.name();
    let tag = killed_writer_leaves(
        "killed_in_secondaries",
        &["--announce-at", seam],
        &format!("reached {seam}"),
        Duration::from_millis(100),
        false,
    );
    assert_eq!(tag, "new", "the primary committed");
}

/// `bench --workloads txn_large` reports, for the transaction and its raw baseline, the time
/// per cell and the client's peak memory, measured with the gateway in a child process.
#[test]
fn the_large_bench_reports_time_and_peak_memory_per_cell() {
    let out = Command::new(env!("CARGO_BIN_EXE_percolator-workloads"))
        .args(["bench", "--workloads", "txn_large", "--large-cells", "2000"])
        .args(["--rounds", "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["gateway"]
        .as_str()
        .unwrap()
        .contains("child process"));
    for name in ["txn_large", "raw_large"] {
        let w = &report["workloads"][name];
        assert_eq!(w["cells"], 2000, "{report:#}");
        assert!(w["us_per_cell"].as_f64().unwrap() > 0.0, "{report:#}");
        let (peak, baseline) = (
            w["peak_rss_bytes"].as_u64(),
            w["baseline_rss_bytes"].as_u64(),
        );
        assert!(peak.unwrap() >= baseline.unwrap(), "{report:#}");
    }
    assert!(report["txn_over_raw"].as_f64().unwrap() > 0.0);
}
