//! An engine that accepts connections and never answers: the start gives up within the
//! engine probe's bound, with one line, instead of hanging. (Its own binary: whether an engine
//! answers is asked once per process.)

use std::net::TcpListener;
use std::time::{Duration, Instant};

use percolator_testcontainers::{Error, HBaseImage};

#[test]
fn an_engine_that_never_answers_is_given_up_on_within_the_probe_bound() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts and holds every connection, answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    if std::process::Command::new("docker")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no docker CLI");
        return;
    }
    // SAFETY: set before anything of this crate reads the environment; the thread above
    // does not read it.
    unsafe { std::env::set_var("DOCKER_HOST", format!("tcp://{addr}")) };
    let started = Instant::now();
    let err = HBaseImage::default().start().map(|_| ()).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::NoEngine { .. }), "{err:?}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let line = err.to_string();
    assert!(line.starts_with("no Docker engine: "), "{line}");
    assert!(!line.contains('\n'), "{line}");
}
