//! The `percolator-workloads` binary end to end: help text on every option, the shared flags
//! grouped, the bench's ratio lines, and the notify bench across a killed worker.

#[path = "../../percolator-cli/tests/command_line/mod.rs"]
mod command_line;

use clap::CommandFactory;
use command_line::{assert_documented, assert_security_flags_grouped};

/// Runs `percolator-workloads args`: (exit code, stdout, stderr).
fn workloads(args: &[&str]) -> (i32, String, String) {
    command_line::run(env!("CARGO_BIN_EXE_percolator-workloads"), args)
}

#[test]
fn every_option_and_argument_has_help_text() {
    assert_documented([percolator_workloads::cli::Cli::command()], 50);
}

/// The flags every command takes, as `percolator`'s: grouped, and out of the short help.
#[test]
fn the_shared_security_flags_are_grouped_and_left_out_of_short_help() {
    assert_security_flags_grouped(percolator_workloads::cli::Cli::command(), 8);
}

#[test]
fn the_bench_prints_each_ratio_with_its_floor_and_no_targets() {
    let (code, out, err) = workloads(&[
        "bench",
        "--seconds",
        "0.3",
        "--rounds",
        "1",
        "--rows",
        "100",
        "--threads",
        "2",
        "--workloads",
        "raw_get,txn_get,floor_get",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("txn_get / raw_get = "), "{out}");
    assert!(out.contains("(floor_get / raw_get = "), "{out}");
    assert!(!out.to_lowercase().contains("target"), "{out}");
}

/// `notify_kill` kills an observer worker (as a crash) and starts another every 5 s while each
/// writer waits for its change's run: a change that no run processed within 10 s would be an
/// error, so a run over a kill that reports none lost nothing across the handover.
#[test]
fn the_notify_bench_with_a_worker_killed_loses_no_change() {
    let (code, out, err) = workloads(&[
        "bench",
        "--api",
        "async",
        "--seconds",
        "7",
        "--rounds",
        "1",
        "--threads",
        "4",
        "--workloads",
        "notify_kill",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect(&out);
    let result = &report["workloads"]["notify_kill"];
    assert!(result["ops"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(result["errors"].as_u64(), Some(0), "{out}");
    assert!(result["max_us"].as_f64().unwrap() >= result["p99_us"].as_f64().unwrap());
}

/// The cluster's side of a short-value write as the bench counts it: the data cell, the lock
/// and its release, and the write record, against a raw put's one cell; and the gateway
/// process's CPU, measured when it is a process of its own (the cluster profile's emulator).
#[test]
fn the_bench_counts_the_cells_a_write_costs_the_cluster_and_the_gateways_cpu() {
    let (code, out, err) = workloads(&[
        "bench",
        "--profile",
        "cluster",
        "--seconds",
        "0.5",
        "--rounds",
        "1",
        "--rows",
        "100",
        "--threads",
        "2",
        "--workloads",
        "raw_put,txn_put1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect(&out);
    let cells = |workload: &str, family: &str| {
        let written = report["workloads"][workload]["written_per_op"]
            .as_array()
            .expect(&out);
        written
            .iter()
            .find(|f| f["family"] == family)
            .and_then(|f| f["cells"].as_f64())
            .map_or(0.0, |c| (c * 100.0).round() / 100.0)
    };
    assert_eq!(cells("raw_put", "f"), 1.0, "{out}");
    let txn: Vec<f64> = ["f", "_pl", "_pw"]
        .iter()
        .map(|f| cells("txn_put1", f))
        .collect();
    assert_eq!(
        txn,
        [1.0, 2.0, 1.0],
        "data, lock and release, write record: {out}"
    );
    for workload in ["raw_put", "txn_put1"] {
        let server = report["workloads"][workload]["server_cpu_us_per_op"].as_f64();
        assert!(server.is_some_and(|us| us > 0.0), "{workload}: {out}");
    }
}
