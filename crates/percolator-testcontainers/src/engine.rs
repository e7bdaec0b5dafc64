//! The Docker engine as the docker CLI sees it: whether one answers, what an image's labels
//! say, and building the image from a percolator checkout.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::Error;

/// The label `docker/Dockerfile` sets to the HBase release the image holds.
pub(crate) const VERSION_LABEL: &str = "org.percolator.hbase.version";
/// Every container this crate starts carries it, so that none outlives its test unseen.
pub(crate) const OWNER_LABEL: &str = "org.percolator.testcontainers";

/// What a docker command printed, or why it did not finish.
pub(crate) struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `docker ARGS` for at most `within`: a hung engine must not hang a test.
pub(crate) fn docker(args: &[&str], within: Duration) -> Result<Output, Error> {
    run(Command::new("docker").args(args), within).map_err(|detail| Error::Docker {
        command: format!("docker {}", args.join(" ")),
        detail,
    })
}

fn run(command: &mut Command, within: Duration) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let readers = [
        std::thread::spawn(move || drain(out.as_mut())),
        std::thread::spawn(move || drain(err.as_mut())),
    ];
    let deadline = Instant::now() + within;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {within:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for it: {e}")),
        }
    };
    let [stdout, stderr] = readers.map(|r| r.join().unwrap_or_default());
    Ok(Output {
        ok: status.success(),
        stdout,
        stderr,
    })
}

fn drain(pipe: Option<&mut impl Read>) -> String {
    let mut text = String::new();
    if let Some(pipe) = pipe {
        let _ = pipe.read_to_string(&mut text);
    }
    text
}

/// Why no Docker engine can be used here, or `None` when one answers. A rootless or Docker
/// Desktop engine listens on a socket of its own: when `DOCKER_HOST` is unset and only such a
/// socket answers, it is exported so that testcontainers and the CLI talk to the same engine.
/// Asked once per process.
pub fn engine_unavailable() -> Option<String> {
    static ANSWER: OnceLock<Option<String>> = OnceLock::new();
    ANSWER.get_or_init(probe_engine).clone()
}

fn probe_engine() -> Option<String> {
    if std::env::var_os("DOCKER_HOST").is_none_or(|h| h.is_empty()) {
        if let Err(tried) = find_socket() {
            return Some(tried);
        }
    } else if let Some(path) = std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(str::to_owned))
        && !Path::new(&path).exists()
    {
        return Some(format!("DOCKER_HOST=unix://{path}: no such socket"));
    }
    match docker(
        &["version", "--format", "{{.Server.Version}}"],
        Duration::from_secs(15),
    ) {
        Ok(out) if out.ok => None,
        Ok(out) => Some(format!(
            "the engine did not answer `docker version`: {}",
            last_line(&out.stderr)
        )),
        Err(e) => Some(e.to_string()),
    }
}

fn find_socket() -> Result<(), String> {
    let mut sockets = vec![PathBuf::from("/var/run/docker.sock")];
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR") {
        sockets.push(Path::new(&dir).join("docker.sock"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        sockets.push(Path::new(&home).join(".docker/run/docker.sock"));
        sockets.push(Path::new(&home).join(".docker/desktop/docker.sock"));
    }
    let mut tried = Vec::new();
    for (i, socket) in sockets.iter().enumerate() {
        match std::os::unix::net::UnixStream::connect(socket) {
            Ok(_) => {
                if i > 0 {
                    // SAFETY: asked once, before this crate starts any thread of its own; a
                    // test binary's other threads do not write the environment.
                    unsafe {
                        std::env::set_var("DOCKER_HOST", format!("unix://{}", socket.display()))
                    };
                }
                return Ok(());
            }
            Err(e) => tried.push(format!("{}: {e}", socket.display())),
        }
    }
    Err(tried.join("; "))
}

pub(crate) fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// The HBase release an image's label names, or `None` when the engine has no such image.
pub(crate) fn image_version(image: &str) -> Result<Option<String>, Error> {
    let format = format!("{{{{ index .Config.Labels \"{VERSION_LABEL}\" }}}}");
    let out = docker(
        &["image", "inspect", "--format", &format, image],
        Duration::from_secs(30),
    )?;
    if out.ok {
        Ok(Some(out.stdout.trim().to_owned()))
    } else if out.stderr.contains("No such image") || out.stderr.contains("No such object") {
        Ok(None)
    } else {
        Err(Error::Docker {
            command: format!("docker image inspect {image}"),
            detail: last_line(&out.stderr).to_owned(),
        })
    }
}

/// The percolator checkout whose `scripts/docker-image` builds the image: `PERCOLATOR_CHECKOUT`,
/// else the one this crate was compiled from (a path or git dependency).
pub(crate) fn checkout() -> Option<PathBuf> {
    let named = std::env::var_os("PERCOLATOR_CHECKOUT")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    [named, Some(own)]
        .into_iter()
        .flatten()
        .find(|dir| dir.join("scripts/docker-image").is_file())
}

/// Builds (or finds current) `repository:version` with the checkout's script, which stages
/// the jars with the host's Maven and reuses an image built from the same harness.
pub(crate) fn build(
    checkout: &Path,
    repository: &str,
    version: &str,
    base: Option<&str>,
) -> Result<(), Error> {
    let image = format!("{repository}:{version}");
    let mut command = Command::new(checkout.join("scripts/docker-image"));
    command
        .args(["build", "--version", version])
        .env("PERCOLATOR_HBASE_IMAGE", repository);
    if let Some(base) = base {
        command.args(["--base", base]);
    }
    // A first build resolves HBase with Maven and makes the image: minutes, not hours.
    let out = run(&mut command, Duration::from_secs(1800)).map_err(|detail| Error::Build {
        image: image.clone(),
        detail,
    })?;
    if out.ok {
        return Ok(());
    }
    Err(build_failure(image, &out.stderr))
}

/// What the build script's last words mean.
fn build_failure(image: String, stderr: &str) -> Error {
    let said = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("docker-image: "))
        .unwrap_or_else(|| last_line(stderr));
    if said.contains("could not pull the base image") {
        let base = said
            .split("base image ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("?")
            .to_owned();
        let detail = stderr
            .lines()
            .find_map(|l| l.strip_prefix("docker-image: pull failure: "))
            .unwrap_or("no registry reachable")
            .trim()
            .to_owned();
        return Error::BaseNotPulled { base, detail };
    }
    if let Some(missing) = stderr.lines().find_map(|l| {
        l.strip_prefix("real-hbase: ")
            .filter(|rest| rest.ends_with(" not found"))
    }) {
        return Error::NoBuildTools {
            image,
            detail: missing.to_owned(),
        };
    }
    Error::Build {
        image,
        detail: said.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_that_cannot_be_pulled_is_named_with_the_engines_words() {
        let stderr = "Step 1/14 : FROM nosuch:1\n\
            docker-image: pull failure: dial tcp: lookup registry: no such host\n\
            docker-image: the engine could not pull the base image nosuch:1 (no registry reachable from it). Make a local base\n";
        match build_failure("percolator-hbase:2.6.1".into(), stderr) {
            Error::BaseNotPulled { base, detail } => {
                assert_eq!(base, "nosuch:1");
                assert_eq!(detail, "dial tcp: lookup registry: no such host");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_host_without_maven_cannot_build_and_says_so() {
        let stderr = "real-hbase: mvn not found\n";
        let err = build_failure("percolator-hbase:2.6.1".into(), stderr);
        assert!(matches!(&err, Error::NoBuildTools { detail, .. } if detail == "mvn not found"));
        assert!(err.is_unavailable());
    }

    #[test]
    fn any_other_failure_is_the_scripts_last_word() {
        let stderr =
            "docker-image: staged 3 jars\ndocker-image: docker build failed; log: /x.log\n";
        let err = build_failure("percolator-hbase:2.6.1".into(), stderr);
        assert_eq!(
            err.to_string(),
            "building percolator-hbase:2.6.1 failed: docker build failed; log: /x.log"
        );
        assert!(!err.is_unavailable());
    }
}
