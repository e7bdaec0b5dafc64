//! The README's code runs as printed: each of its `rust` blocks is the start of a file of
//! `examples/`, verbatim (the file adds only its `main`), and here each example runs against
//! the emulator and an in-process oracle, creating what it uses.

#[path = "../examples/blocking.rs"]
#[allow(dead_code)] // its `main` is for `cargo run --example`
mod blocking;
#[path = "../examples/transfer.rs"]
#[allow(dead_code)]
mod transfer;

use percolator::oracle::MemoryStore;
use percolator::OracleServer;

const README: &str = include_str!("../README.md");
const EXAMPLES: [(&str, &str); 2] = [
    (
        "examples/transfer.rs",
        include_str!("../examples/transfer.rs"),
    ),
    (
        "examples/blocking.rs",
        include_str!("../examples/blocking.rs"),
    ),
];

/// The README's fenced blocks of Rust, in order.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), text) => {
                block.push_str(text);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn every_rust_block_of_the_readme_is_an_example_verbatim() {
    let blocks = rust_blocks(README);
    assert_eq!(
        blocks.len(),
        EXAMPLES.len(),
        "the README has {} rust blocks; each must be one of {:?}",
        blocks.len(),
        EXAMPLES.map(|(path, _)| path)
    );
    for (block, (path, example)) in blocks.iter().zip(EXAMPLES) {
        let shown = example
            .split("\n\n#[tokio::main]")
            .next()
            .unwrap_or(example);
        let shown = shown.split("\n\nfn main()").next().unwrap_or(shown);
        assert_eq!(
            block.trim(),
            shown.trim(),
            "the README's copy of {path} differs"
        );
    }
}

/// An emulator and an oracle on 127.0.0.1: the addresses the examples take.
fn services() -> (hbase_emulator::EmulatorHandle, percolator::OracleHandle) {
    let emulator = hbase_emulator::start_local().expect("emulator");
    let oracle = OracleServer::start_local(MemoryStore::new()).expect("oracle");
    (emulator, oracle)
}

#[test]
fn the_async_example_runs_its_spawned_transfers() {
    let (emulator, oracle) = services();
    let (hbase, oracle_addr) = (
        emulator.local_addr().to_string(),
        oracle.local_addr().to_string(),
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(
        runtime
            .block_on(transfer::transfers(&hbase, &oracle_addr))
            .unwrap(),
        4
    );
    // The tables exist now: a second run checks them and goes on.
    assert_eq!(
        runtime
            .block_on(transfer::transfers(&hbase, &oracle_addr))
            .unwrap(),
        4
    );
}

#[test]
fn the_blocking_example_counts() {
    let (emulator, oracle) = services();
    let (hbase, oracle_addr) = (
        emulator.local_addr().to_string(),
        oracle.local_addr().to_string(),
    );
    assert_eq!(blocking::count(&hbase, &oracle_addr).unwrap(), b"1");
    assert_eq!(blocking::count(&hbase, &oracle_addr).unwrap(), b"2");
}
