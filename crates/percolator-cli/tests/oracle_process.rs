//! The `percolator-oracle` binary as a process: kill -9 while clients fetch, SIGTERM, refusing
//! corrupt or shared window files, and the fetch / bench subcommands.

mod oracle_common;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use oracle_common::{assert_unique_and_increasing, bin, patient_client, OracleProcess, Requesters};
use percolator::oracle::FileStore;
use rand::Rng;

const KILLS: usize = 20;

#[test]
fn kill_9_twenty_times_never_repeats_or_reorders_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("window");
    // A short window makes the server persist often, so kills land mid-extension too. Each
    // restart also sees the wall clock a second further back: only the persisted top can keep
    // the new incarnation above the old one.
    let args = |listen: &str, restarts: usize| {
        let store = format!("file:{}", path.display());
        let offset = format!("--clock-offset-ms=-{}", restarts * 1000);
        [
            "--listen",
            listen,
            "--store",
            &store,
            "--window-ms",
            "100",
            &offset,
        ]
        .map(String::from)
    };
    let mut server = OracleProcess::start(&args("127.0.0.1:0", 0));
    let addr = server.addr.clone();
    let clients: Vec<_> = (0..3)
        .map(|_| Arc::new(patient_client(std::slice::from_ref(&addr))))
        .collect();
    let requesters = Requesters::start(&clients, 3);
    let mut rng = rand::thread_rng();
    for round in 0..KILLS {
        requesters.wait_for_more(200);
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..150)));
        server.kill9();
        // Every reply received so far was served before the kill, so below the persisted top.
        let served = requesters
            .max_seen
            .load(std::sync::atomic::Ordering::SeqCst);
        let top = FileStore::read_top(&path)
            .unwrap()
            .expect("window file exists");
        assert!(
            served <= top,
            "round {round}: served {served} above persisted top {top}"
        );
        server = OracleProcess::start(&args(&addr, round + 1));
        assert_eq!(server.addr, addr);
    }
    requesters.wait_for_more(500);
    let (sequences, errors) = requesters.finish();
    let total = assert_unique_and_increasing(&sequences);
    assert!(
        sequences.iter().all(|s| !s.is_empty()),
        "every requester got timestamps"
    );
    assert!(errors.is_empty(), "patient clients saw errors: {errors:?}");
    println!("{total} unique timestamps over {KILLS} kill -9 restarts");
    assert!(server.terminate(), "clean exit on SIGTERM");
}

#[test]
fn sigterm_exits_cleanly_and_a_restart_continues_above() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("file:{}", dir.path().join("window").display());
    let mut server = OracleProcess::start(&["--listen", "127.0.0.1:0", "--store", &store]);
    let before = patient_client(&[server.addr.clone()])
        .get_timestamps(10)
        .unwrap();
    assert!(server.terminate(), "exit status after SIGTERM");
    let mut server = OracleProcess::start(&["--listen", "127.0.0.1:0", "--store", &store]);
    let after = patient_client(&[server.addr.clone()])
        .get_timestamp()
        .unwrap();
    assert!(after > *before.last().unwrap());
    assert!(server.terminate());
}

fn serve_and_expect_failure(store: &str) -> String {
    let out = Command::new(bin())
        .args(["--listen", "127.0.0.1:0", "--store", store])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the server must refuse to start");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_corrupt_window_file_stops_the_server_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("window");
    std::fs::write(&path, b"PTSOWIN1\x00\x00torn").unwrap();
    let stderr = serve_and_expect_failure(&format!("file:{}", path.display()));
    assert!(stderr.contains("corrupt"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), b"PTSOWIN1\x00\x00torn");
}

#[test]
fn two_servers_cannot_share_a_window_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("file:{}", dir.path().join("window").display());
    let mut first = OracleProcess::start(&["--listen", "127.0.0.1:0", "--store", &store]);
    // The listening line comes before the claim: make sure the first one has claimed.
    patient_client(&[first.addr.clone()])
        .get_timestamp()
        .unwrap();
    let stderr = serve_and_expect_failure(&store);
    assert!(stderr.contains("in use by another oracle"), "{stderr}");
    assert!(first.terminate());
}

#[test]
fn fetch_prints_increasing_timestamps_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("file:{}", dir.path().join("window").display());
    let mut server = OracleProcess::start(&["--listen", "127.0.0.1:0", "--store", &store]);
    let out = Command::new(bin())
        .args(["fetch", "--addr", &server.addr, "--count", "70000"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let values: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), 70000);
    assert!(values.windows(2).all(|w| w[0] < w[1]));
    assert!(server.terminate());
}

#[test]
fn bench_without_an_address_reports_json() {
    let out = Command::new(bin())
        .args(["bench", "--concurrency", "16", "--seconds", "0.5", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in ["timestamps_per_s", "p50_us", "p99_us"] {
        assert!(report[field].as_f64().unwrap() > 0.0, "{field} in {report}");
    }
    assert_eq!(report["order_violations"], 0);
    assert_eq!(report["errors"], 0);
}
