//! No engine at the socket `DOCKER_HOST` names: one line that says so, at once, and nothing
//! started. (Its own binary: whether an engine answers is asked once per process.)

use std::time::{Duration, Instant};

use percolator_testcontainers::{Error, HBaseImage};

#[test]
fn a_missing_engine_is_one_line_naming_the_socket() {
    // SAFETY: this binary's only test, before anything reads the environment.
    unsafe {
        std::env::set_var(
            "DOCKER_HOST",
            "unix:///nonexistent/percolator-test/docker.sock",
        )
    };
    let started = Instant::now();
    let err = HBaseImage::default().start().map(|_| ()).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::NoEngine { .. }), "{err:?}");
    assert!(err.is_unavailable());
    let line = err.to_string();
    assert_eq!(
        line,
        "no Docker engine: DOCKER_HOST=unix:///nonexistent/percolator-test/docker.sock: no such socket"
    );
}
