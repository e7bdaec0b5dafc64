//! The workloads' metrics as a scraper sees them: `percolator-workloads observe-demo
//! --metrics-listen` serves the observers' runs, lag and pending notifications while it runs.

#[path = "../../percolator-cli/tests/scrape/mod.rs"]
mod scrape;

use std::process::{Command, Stdio};

use scrape::{at_least, free_port, sample, scrape_until, Killed};

#[test]
fn observe_demo_exports_observer_runs_lag_and_pending_notifications() {
    let port = free_port();
    let mut demo = Killed(
        Command::new(env!("CARGO_BIN_EXE_percolator-workloads"))
            .args(["observe-demo", "--seconds", "30"])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let text = scrape_until(port, &mut demo.0, |t| {
        sample(t, r#"percolator_observer_runs_total{outcome="processed"}"#).is_some_and(|v| v > 0.0)
    });
    at_least(&text, "percolator_observer_lag_seconds_count", 1.0);
    assert!(
        sample(&text, "percolator_observer_notifications_pending").is_some(),
        "{text}"
    );
    at_least(
        &text,
        r#"percolator_transactions_total{outcome="committed"}"#,
        1.0,
    );
}
