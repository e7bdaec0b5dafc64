//! The conformance suite against a real HBase in Docker (testcontainers): the image from
//! `docker/Dockerfile`, which runs the same Maven project and script as `scripts/real-hbase`
//! (the HBase version is the one in `tests/real-hbase/pom.xml`), built here every time (the
//! layer cache makes an unchanged tree quick). Without a reachable Docker engine it prints
//! "skipped: no Docker engine" and passes, so the default test run needs no Docker.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::suite::CASES;
use common::Gateway;
use percolator::{HBaseClient, HBaseConfig};
use testcontainers::core::IntoContainerPort;
use testcontainers::runners::SyncRunner;
use testcontainers::GenericImage;

const IMAGE: &str = "percolator-hbase";
/// Master start-up plus region assignment of the system tables.
const READY_WITHIN: Duration = Duration::from_secs(300);

/// Why no Docker engine can be used, if none can. A rootless or Docker Desktop engine listens
/// on a socket of its own; when one answers and `DOCKER_HOST` is unset, it is exported so that
/// testcontainers talks to the same engine.
fn docker_unavailable() -> Option<String> {
    if let Ok(host) = std::env::var("DOCKER_HOST")
        && !host.is_empty()
    {
        return match host.strip_prefix("unix://") {
            Some(path) if !Path::new(path).exists() => {
                Some(format!("DOCKER_HOST={host}: no such socket"))
            }
            _ => None,
        };
    }
    let mut sockets = vec![PathBuf::from("/var/run/docker.sock")];
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR") {
        sockets.push(Path::new(&dir).join("docker.sock"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        sockets.push(Path::new(&home).join(".docker/run/docker.sock"));
        sockets.push(Path::new(&home).join(".docker/desktop/docker.sock"));
    }
    let mut tried = Vec::new();
    for socket in &sockets {
        match std::os::unix::net::UnixStream::connect(socket) {
            Ok(_) => {
                if socket != &sockets[0] {
                    let host = format!("unix://{}", socket.display());
                    // SAFETY: this binary's only test calls it first, while no other thread of
                    // the process reads the environment (testcontainers reads it afterwards).
                    unsafe { std::env::set_var("DOCKER_HOST", host) };
                }
                return None;
            }
            Err(e) => tried.push(format!("{}: {e}", socket.display())),
        }
    }
    Some(tried.join("; "))
}

/// The HBase version `scripts/real-hbase` runs by default, which the image builds too: the
/// `hbase.version` property of `tests/real-hbase/pom.xml`. It names the image's tag.
fn hbase_version() -> String {
    let pom = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real-hbase/pom.xml");
    let text = std::fs::read_to_string(&pom).expect("read tests/real-hbase/pom.xml");
    let tag = "<hbase.version>";
    let start = text.find(tag).expect("hbase.version in the pom") + tag.len();
    let end = start + text[start..].find('<').expect("closing tag");
    text[start..end].trim().to_string()
}

/// Builds the image (context: the repository root) every time: the engine's layer cache makes
/// an unchanged tree cost seconds, and an edited one is never run stale.
fn ensure_image(tag: &str) {
    let image = format!("{IMAGE}:{tag}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    eprintln!(
        "building {image} from {} (the first build downloads HBase from Maven Central)",
        root.join("docker/Dockerfile").display()
    );
    let status = Command::new("docker")
        .args(["build", "-f"])
        .arg(root.join("docker/Dockerfile"))
        .args(["--build-arg", &format!("HBASE_VERSION={tag}"), "-t", &image])
        .arg(root)
        .status()
        .expect("run `docker build` (the docker CLI is needed to build the image)");
    assert!(status.success(), "docker build of {image} failed");
}

/// Polls until the gateway answers an admin call backed by the master.
fn wait_until_ready(addr: &str) {
    let deadline = Instant::now() + READY_WITHIN;
    let config = HBaseConfig::new(addr)
        .connect_timeout(Duration::from_secs(2))
        .read_timeout(Duration::from_secs(20))
        .pool_size(1);
    loop {
        let ready = match HBaseClient::connect(config.clone()) {
            Ok(client) => client.admin().list_namespaces(),
            Err(e) => Err(e),
        };
        match ready {
            Ok(namespaces) if namespaces.iter().any(|n| n == "default") => return,
            not_yet => {
                if Instant::now() >= deadline {
                    panic!("HBase at {addr} not ready after {READY_WITHIN:?}: {not_yet:?}")
                }
            }
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

#[test]
fn conformance_suite_against_real_hbase_in_docker() {
    if let Some(reason) = docker_unavailable() {
        eprintln!("skipped: no Docker engine ({reason})");
        return;
    }
    let tag = hbase_version();
    ensure_image(&tag);
    let container = GenericImage::new(IMAGE, &tag)
        .with_exposed_port(9090.tcp())
        .start()
        .expect("start the HBase container");
    let host = container.get_host().expect("container host");
    let port = container
        .get_host_port_ipv4(9090)
        .expect("mapped Thrift2 port");
    let addr = format!("{host}:{port}");
    wait_until_ready(&addr);

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
        "cases failing against real HBase: {failed:?}"
    );
}
