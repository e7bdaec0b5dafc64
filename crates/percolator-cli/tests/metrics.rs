//! The library's metrics as a service's exporter sees them: Prometheus text rendered in
//! process after transactions, a conflict, a crashed client's lock and a GC round; and scraped
//! over HTTP from `percolator-oracle --metrics-listen` while it runs.

mod scrape;
#[path = "../../../tests/txn_support/mod.rs"]
mod txn_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use percolator::gc::{GcOptions, GcWorker};
use percolator::txn::Seam;
use percolator::Error;
use scrape::{at_least, free_port, sample, scrape, scrape_until, Killed};
use txn_support::Env;

/// One recorder per process: every test here reads the same one.
fn recorder() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| percolator_cli::metrics_http::install().expect("install the recorder"))
}

#[test]
fn commits_conflicts_resolved_locks_the_oracle_and_hbase_calls_are_counted() {
    let recorder = recorder();
    let env = Env::start();
    let table = env.table("metrics");
    let client = env.client();
    let key = env.key(&table, "r");
    let set = |t: &mut percolator::Transaction, v: &str| {
        t.set(&key.table, &key.row, &key.family, &key.qualifier, v)
    };
    client.run(|t| set(t, "1")).unwrap();

    // A write conflict: the second writer commits between the first's snapshot and commit.
    let mut first = client.begin().unwrap();
    first.start_ts().unwrap();
    client.run(|t| set(t, "2")).unwrap();
    set(&mut first, "3").unwrap();
    assert!(matches!(first.commit(), Err(Error::WriteConflict { .. })));

    // A client that dies before its commit point leaves a lock the next reader rolls back.
    let crashing = env.client_with(
        env.options()
            .to_builder()
            .lock_ttl(Duration::from_millis(1))
            .crash_injector(Arc::new(|seam| seam == Seam::BeforePrimaryCommit))
            .build(),
    );
    let mut doomed = crashing.begin().unwrap();
    set(&mut doomed, "4").unwrap();
    assert!(doomed.commit().is_err());
    std::thread::sleep(Duration::from_millis(20));
    let reader = client.begin().unwrap();
    let value = reader
        .get(&key.table, &key.row, &key.family, &key.qualifier)
        .unwrap();
    assert_eq!(value.as_deref(), Some(&b"2"[..]));

    let text = recorder.render();
    at_least(
        &text,
        r#"percolator_transactions_total{outcome="committed"}"#,
        2.0,
    );
    at_least(
        &text,
        r#"percolator_transactions_total{outcome="conflict"}"#,
        1.0,
    );
    at_least(
        &text,
        r#"percolator_locks_resolved_total{outcome="rolled_back"}"#,
        1.0,
    );
    at_least(&text, "percolator_commit_duration_seconds_count", 2.0);
    for phase in ["prewrite", "commit_ts", "commit_point"] {
        at_least(
            &text,
            &format!(r#"percolator_commit_phase_duration_seconds_count{{phase="{phase}"}}"#),
            2.0,
        );
    }
    at_least(&text, "percolator_oracle_wait_seconds_count", 4.0);
    at_least(&text, "percolator_oracle_requests_total", 1.0);
    at_least(
        &text,
        r#"percolator_hbase_calls_total{method="checkAndMutate"}"#,
        4.0,
    );
    assert!(
        text.contains("# TYPE percolator_transactions_total counter"),
        "{text}"
    );
    assert!(
        text.contains(r#"percolator_commit_duration_seconds_bucket{le="0.005"}"#),
        "histograms are exported with buckets: {text}"
    );
}

#[test]
fn a_gc_round_exports_its_safe_point_lag_and_what_it_collected() {
    let recorder = recorder();
    let env = Env::start();
    let table = env.table("metrics_gc");
    let client = env.client();
    let key = env.key(&table, "r");
    for v in ["a", "b", "c"] {
        client
            .run(|t| t.set(&key.table, &key.row, &key.family, &key.qualifier, v))
            .unwrap();
    }
    let gc = GcOptions::default()
        .with_life_time(Duration::from_secs(5))
        .unwrap()
        .resolving_locks_in(vec![table.clone()]);
    let worker = GcWorker::new(client.asynchronous(), env.hbase.clone(), gc);
    std::thread::sleep(Duration::from_secs(6));
    let tables = vec![table.clone()];
    let report = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(worker.run_once(&tables, &|_| {}))
        .unwrap();
    assert!(report.removed() > 0, "{report:?}");
    let text = recorder.render();
    at_least(
        &text,
        "percolator_gc_cells_collected_total",
        report.removed() as f64,
    );
    let lag = sample(&text, "percolator_gc_safe_point_lag_seconds").expect("the lag gauge");
    assert!(
        (4.0..60.0).contains(&lag),
        "lag {lag} s for a 5 s life time"
    );
}

#[test]
fn the_oracle_serves_its_counters_as_prometheus_text() {
    let port = free_port();
    let mut oracle = Killed(
        Command::new(env!("CARGO_BIN_EXE_percolator-oracle"))
            .args(["--listen", "127.0.0.1:0", "--store", "memory"])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(oracle.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let client = percolator::OracleClient::connect(&[addr], Default::default()).unwrap();
    client.get_timestamps(10).unwrap();
    let text = scrape_until(port, &mut oracle.0, |t| {
        sample(t, "percolator_oracle_timestamps_total").is_some_and(|v| v >= 10.0)
    });
    at_least(&text, "percolator_oracle_requests_total", 1.0);
    at_least(&text, "percolator_oracle_window_extensions_total", 1.0);
    at_least(&text, "percolator_oracle_connections", 1.0);
    let (status, _) = scrape(port, "/nothing").unwrap();
    assert!(status.contains("404"), "{status}");
}
