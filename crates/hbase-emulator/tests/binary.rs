//! The `hbase-emulator` binary: its address on stdout, its logs on stderr, uncoloured when
//! stderr is not a terminal.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

#[test]
fn the_emulator_logs_to_stderr_without_colours_when_it_is_not_a_terminal() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hbase-emulator"))
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("hbase-emulator listening on "), "{line}");
    // SIGTERM: it logs that it is shutting down, and exits.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    child.wait().unwrap();
    assert!(log.contains("shutting down"), "{log:?}");
    assert!(!log.contains("\x1b["), "ANSI escapes in {log:?}");
    assert!(!rest.contains("shutting down"), "logs on stdout: {rest:?}");
}
