//! What a soak found, and how it is printed.

use serde::Serialize;

use crate::bank::BankReport;
use crate::observe_demo::ObserveDemoReport;

#[derive(Debug, Default, Serialize)]
pub struct SoakReport {
    pub seconds: f64,
    pub bank: Option<BankReport>,
    pub observers: Option<ObserveDemoReport>,
    pub oracle_kills: usize,
    pub oracles_displaced: usize,
    pub timestamps: usize,
    pub timestamp_requests_failed: u64,
    pub longest_without_a_timestamp_ms: u128,
    pub client_kills: usize,
    pub killed_client_total: i64,
    pub killed_client_expected: i64,
    pub gc_rounds: u64,
    pub gc_failed_rounds: u64,
    pub gc_versions_collected: u64,
    pub locks_left: usize,
    /// Write records and data versions per cell of the GC'd tables at the end.
    pub versions_per_cell_mean: f64,
    pub versions_per_cell_max: u64,
    pub memory: Vec<Memory>,
    /// The soak process's resident memory every 30 s (seconds, kB): it holds the clients of
    /// the bank, the observers and GC, and also the run's own records (the bank's ledger of
    /// every transfer, every timestamp handed out), which grow with the run by design.
    pub soak_memory_trace: Vec<(u64, u64)>,
    pub violations: Vec<String>,
}

/// A process's resident memory at the start and the end.
#[derive(Debug, Default, Serialize)]
pub struct Memory {
    pub process: String,
    pub start_kb: u64,
    pub end_kb: u64,
}

/// Resident memory of `pid` in kB, from /proc (0 where there is none).
pub(super) fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Prints the report (text or JSON); true when every invariant held.
pub fn print(r: &SoakReport, json: bool) -> bool {
    if json {
        println!(
            "{}",
            serde_json::to_string(r).expect("the soak report serializes")
        );
        return r.violations.is_empty();
    }
    println!("soak: {:.0} s", r.seconds);
    if let Some(b) = &r.bank {
        println!(
            "  bank: {} transfers committed, {} retried, {} client crashes, {} undetermined, {} audits",
            b.committed, b.conflicts, b.crashes, b.undetermined, b.audits
        );
    }
    if let Some(o) = &r.observers {
        println!(
            "  observers: {} documents written, {} runs processed, {} workers died, {} words checked",
            o.documents_written, o.processed, o.workers_died, o.words_checked
        );
    }
    println!(
        "  oracle: {} kills, {} timestamps, {} requests failed, longest without a timestamp {} ms",
        r.oracle_kills, r.timestamps, r.timestamp_requests_failed, r.longest_without_a_timestamp_ms
    );
    println!(
        "  killed client: {} kills, total {} (expected {})",
        r.client_kills, r.killed_client_total, r.killed_client_expected
    );
    println!(
        "  gc: {} rounds ({} failed), {} versions collected; versions per cell at the end: mean {:.2}, max {}",
        r.gc_rounds, r.gc_failed_rounds, r.gc_versions_collected, r.versions_per_cell_mean, r.versions_per_cell_max
    );
    for m in &r.memory {
        println!(
            "  memory {:<9} start {:>8} kB  end {:>8} kB",
            m.process, m.start_kb, m.end_kb
        );
    }
    let trace: Vec<String> = r
        .soak_memory_trace
        .iter()
        .map(|(s, kb)| format!("{s}s {}MB", kb / 1024))
        .collect();
    println!("  soak memory every 30 s: {}", trace.join(", "));
    if r.violations.is_empty() {
        println!("all invariants hold");
    }
    for v in &r.violations {
        println!("VIOLATION: {v}");
    }
    r.violations.is_empty()
}
