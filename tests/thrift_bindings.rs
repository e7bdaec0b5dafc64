//! The committed bindings (crates/percolator-thrift/src/hbase.rs) must be what Apache Thrift 0.17 generates from
//! thrift/hbase.thrift. Runs where the `thrift` compiler is installed; says so and skips
//! elsewhere.

use std::process::Command;

#[test]
fn generated_bindings_match_the_idl() {
    let version = Command::new("thrift").arg("--version").output();
    match version {
        Ok(out) if String::from_utf8_lossy(&out.stdout).contains("0.17.") => {}
        _ => {
            eprintln!(
                "skipped: thrift 0.17 compiler not installed (apt-get install thrift-compiler)"
            );
            return;
        }
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/thrift/generate.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("--check")
        .output()
        .expect("run generate.sh");
    assert!(
        out.status.success(),
        "bindings out of date: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
