//! A real HBase in a container, through the public image of `percolator-testcontainers` as a
//! service's own tests would use it: one container for the whole binary, then the conformance
//! suite, the transaction protocol suite (every test of `txn_protocol.rs`, compiled in here),
//! a 30 s bank demo with client crashes, and the failures a user meets.
//!
//! Where no Docker engine can run the image it prints "skipped" with the reason and the suites
//! run on the emulator; with `PERCOLATOR_DOCKER_TESTS=require` (CI) that fails instead.

// The protocol suite brings its own fixture, which loads the gateway module a second time;
// both copies reach the one container that `percolator-testcontainers` keeps per process.
#![allow(clippy::duplicate_mod)]

mod common;
#[path = "txn_protocol.rs"]
mod txn_protocol;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::gateway::{docker_gateway, docker_required};
use common::suite::CASES;
use common::Gateway;
use percolator_testcontainers::{engine_unavailable, Build, Error, HBaseImage};

/// Containers of this process that are still there, by id or by this crate's owner label.
fn containers_left(container: &str) -> Vec<String> {
    let mut left = Vec::new();
    for filter in [
        format!("id={container}"),
        format!("label=org.percolator.testcontainers={container}"),
    ] {
        let out = Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output()
            .expect("docker ps");
        left.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(String::from),
        );
    }
    left
}

/// Whether this machine can start containers at all; says why not once.
fn engine() -> bool {
    match engine_unavailable() {
        None => true,
        Some(why) if !docker_required() => {
            eprintln!("skipped: no Docker engine ({why})");
            false
        }
        Some(why) => panic!("PERCOLATOR_DOCKER_TESTS=require, but no Docker engine: {why}"),
    }
}

/// The release the image runs by default is the one `scripts/real-hbase` runs: the pom's.
#[test]
fn the_default_release_is_the_same_everywhere() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).expect(path);
    let pom = read("tests/real-hbase/pom.xml");
    let start = pom.find("<hbase.version>").expect("hbase.version") + "<hbase.version>".len();
    let pom_version = &pom[start..start + pom[start..].find('<').unwrap()];
    assert_eq!(percolator_testcontainers::DEFAULT_VERSION, pom_version);
    let arg = format!("ARG HBASE_VERSION={pom_version}\n");
    assert!(
        read("docker/Dockerfile").contains(&arg),
        "docker/Dockerfile: {arg}"
    );
    assert!(
        read("docker/Dockerfile.maven").contains(&arg),
        "docker/Dockerfile.maven: {arg}"
    );
    let compose = read("docker/docker-compose.yml");
    let default = format!("${{HBASE_VERSION:-{pom_version}}}");
    assert_eq!(
        compose.matches(&default).count(),
        3,
        "docker/docker-compose.yml: {default}"
    );
}

/// Maven offline blames a missing plugin prefix; the harness's build says the network is
/// missing instead, which is what a build inside a container without one meets.
#[test]
fn maven_without_a_network_says_the_network_is_missing() {
    if Command::new("mvn").arg("-v").output().is_err() {
        eprintln!("skipped: no mvn");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.xml");
    std::fs::write(
        &settings,
        "<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>\
         <url>http://127.0.0.1:9/</url></mirror></mirrors></settings>",
    )
    .unwrap();
    let args = format!(
        "-s {} -Dmaven.repo.local={}",
        settings.display(),
        dir.path().join("repo").display()
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("scripts/real-hbase"))
        .args(["build", "--version", "0.0.0-offline-check"])
        .env("REAL_HBASE_MAVEN_ARGS", args)
        .output()
        .expect("run scripts/real-hbase build");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("real-hbase: maven could not reach its repository: the network"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(root.join("target/real-hbase/maven/0.0.0-offline-check"));
}

#[test]
fn conformance_suite_against_the_container() {
    let Some(addr) = docker_gateway() else { return };
    let gateway = Gateway::external(&addr);
    let failed: Vec<&str> = CASES
        .iter()
        .filter(|case| {
            eprintln!("case {}", case.name);
            catch_unwind(AssertUnwindSafe(|| (case.run)(&gateway))).is_err()
        })
        .map(|case| case.name)
        .collect();
    assert!(
        failed.is_empty(),
        "cases failing against the container: {failed:?}"
    );
}

/// The `percolator-workloads` binary the test command built beside this test (scripts/bin-dir's
/// rule).
fn workloads_bin() -> PathBuf {
    let dir = std::env::var_os("PERCOLATOR_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("this test's path");
            exe.parent()
                .and_then(|deps| deps.parent())
                .expect("target dir")
                .to_path_buf()
        });
    let bin = dir.join("percolator-workloads");
    assert!(
        bin.is_file(),
        "no percolator-workloads binary at {}: build it (cargo build -p percolator-workloads) or set PERCOLATOR_BIN_DIR",
        bin.display()
    );
    bin
}

#[test]
fn bank_demo_with_client_crashes_against_the_container() {
    let Some(addr) = docker_gateway() else { return };
    let out = Command::new(workloads_bin())
        .args([
            "demo",
            "--hbase",
            &addr,
            "--seconds",
            "30",
            "--crash-rate",
            "0.01",
        ])
        .output()
        .expect("run percolator-workloads demo");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the demo failed: {}", out.status);
    let done = text
        .lines()
        .find(|l| l.starts_with("done in"))
        .expect("the demo's report");
    assert!(done.contains(" 0 undetermined"), "{done}");
    assert!(
        !done.contains(" 0 client crashes"),
        "no client crashed: {done}"
    );
    let total = text
        .lines()
        .find(|l| l.starts_with("total "))
        .expect("the total line");
    let words: Vec<&str> = total
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(words.len(), 2, "{total}");
    assert_eq!(words[0], words[1], "the total moved: {total}");
    assert!(text.contains("all invariants hold"), "{text}");
}

/// Whether the failure tests run: they need an engine, and the shared container proves the
/// image starts at all (so a failure below is the one each test provokes).
fn failures_can_be_provoked() -> bool {
    engine() && docker_gateway().is_some()
}

/// The error `image`'s start fails with, printed (docs quote these); a start that succeeds
/// fails the test.
fn start_error(image: HBaseImage) -> Error {
    match image.start() {
        Ok(hbase) => panic!("started at {}, where the start must fail", hbase.gateway()),
        Err(e) => {
            eprintln!("{e}");
            e
        }
    }
}

#[test]
fn an_image_whose_release_is_not_its_tags_is_refused() {
    if !failures_can_be_provoked() {
        return;
    }
    // An image of the default release, tagged as another one: what a stale build looks like.
    let stale = "percolator-hbase-stale-test:2.5.8";
    let default = HBaseImage::default().image_ref();
    let tagged = Command::new("docker")
        .args(["tag", &default, stale])
        .status();
    assert!(tagged.unwrap().success());
    let err = start_error(
        HBaseImage::default()
            .with_repository("percolator-hbase-stale-test")
            .with_version("2.5.8")
            .with_build(Build::Never),
    );
    let _ = Command::new("docker").args(["rmi", stale]).output();
    assert!(matches!(err, Error::StaleImage { .. }), "{err:?}");
    let line = err.to_string();
    assert!(line.contains("holds HBase 2.6.1, not 2.5.8"), "{line}");
    assert!(line.contains("--force"), "{line}");
}

#[test]
fn a_taken_gateway_port_is_named_and_starts_nothing() {
    if !failures_can_be_provoked() {
        return;
    }
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let err = start_error(HBaseImage::default().with_gateway_port(port));
    assert!(matches!(err, Error::PortTaken { .. }), "{err:?}");
    let line = err.to_string();
    assert!(
        line.contains(&format!("port {port} on 127.0.0.1 is already taken")),
        "{line}"
    );
}

#[test]
fn a_container_not_ready_in_time_is_explained_with_its_log_and_removed() {
    if !failures_can_be_provoked() {
        return;
    }
    let within = Duration::from_secs(10);
    let err = start_error(HBaseImage::default().with_ready_within(within));
    let Error::NotReady {
        container,
        within: said,
        log_tail,
    } = err
    else {
        panic!("a start past its readiness time: {err:?}")
    };
    assert_eq!(said, within);
    assert_ne!(log_tail, "(nothing)", "no line of HBase's log");
    assert!(
        containers_left(&container).is_empty(),
        "container {container} was left"
    );
}

#[test]
fn a_base_the_engine_cannot_pull_names_the_local_base_step() {
    if !failures_can_be_provoked() {
        return;
    }
    let err = start_error(
        HBaseImage::default()
            .with_repository("percolator-hbase-nopull-test")
            .with_base("percolator-no-such-base-image:0"),
    );
    assert!(matches!(err, Error::BaseNotPulled { .. }), "{err:?}");
    let line = err.to_string();
    assert!(line.contains("percolator-no-such-base-image:0"), "{line}");
    assert!(line.contains("scripts/docker-image base"), "{line}");
}

#[test]
fn a_container_is_removed_when_its_test_panics() {
    if !failures_can_be_provoked() {
        return;
    }
    let mut id = String::new();
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let hbase = HBaseImage::default()
            .start()
            .expect("start a second container");
        id = hbase.container().id().to_owned();
        panic!("a test failing with its container running");
    }));
    assert!(unwound.is_err());
    assert!(!id.is_empty());
    assert!(
        containers_left(&id).is_empty(),
        "container {id} outlived its test's panic"
    );
}
