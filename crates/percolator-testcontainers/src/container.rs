//! Starting the image: what must hold before the container is made, the request that makes
//! it, and what a failed start means.

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use testcontainers::bollard::models::{HostConfig, PortBinding};
use testcontainers::core::error::WaitContainerError;
use testcontainers::core::logs::LogFrame;
use testcontainers::core::ImageExt;
use testcontainers::{ContainerAsync, ContainerRequest, TestcontainersError};

use crate::engine::{self, docker, engine_unavailable, OWNER_LABEL};
use crate::error::Error;
use crate::image::{Build, HBaseImage, Network, GATEWAY_PORT};

/// How many of HBase's last log lines a failed start reports.
const LOG_TAIL: usize = 25;
const LINE_CHARS: usize = 240;

/// What the container printed: every stdout line (a handful: the harness's own) and the last
/// lines of stderr (HBase's log).
#[derive(Default)]
pub(crate) struct Printed {
    stdout: Vec<String>,
    stderr: VecDeque<String>,
}

impl Printed {
    fn accept(&mut self, frame: &LogFrame) {
        let (bytes, to_stdout) = match frame {
            LogFrame::StdOut(b) => (b, true),
            LogFrame::StdErr(b) => (b, false),
        };
        for line in String::from_utf8_lossy(bytes).lines() {
            if to_stdout {
                self.stdout.push(line.to_owned());
            } else {
                if self.stderr.len() == LOG_TAIL {
                    self.stderr.pop_front();
                }
                // HBase prints whole configurations on one line; the start of each is enough.
                let cut = line
                    .char_indices()
                    .nth(LINE_CHARS)
                    .map_or(line.len(), |(i, _)| i);
                self.stderr.push_back(line[..cut].to_owned());
            }
        }
    }

    /// The gateway address the harness printed once ready.
    fn gateway(&self) -> Option<String> {
        self.stdout
            .iter()
            .find_map(|l| l.strip_prefix("HBASE_THRIFT="))
            .map(|a| a.trim().to_owned())
    }

    fn tail(&self) -> String {
        let mut lines: Vec<&str> = self.stderr.iter().map(String::as_str).collect();
        // The harness's own words on stdout (a failed bind, a usage error) matter most.
        lines.extend(self.stdout.iter().rev().take(5).rev().map(String::as_str));
        if lines.is_empty() {
            "(nothing)".into()
        } else {
            lines.join("\n")
        }
    }
}

/// An image about to start: what it prints, and what its start needs to be explained.
pub(crate) struct Prepared {
    pub printed: Arc<Mutex<Printed>>,
    pub run_id: String,
    pub host_network: bool,
    pub ready_within: Duration,
    pub port: Option<u16>,
}

impl HBaseImage {
    /// Makes sure the engine has the image of this tag and release: built from a checkout when
    /// missing or stale (see [`Build`]), and refused when its label names another release.
    pub fn ensure_image(&self) -> Result<(), Error> {
        if let Some(reason) = engine_unavailable() {
            return Err(Error::NoEngine { reason });
        }
        let image = self.image_ref();
        if self.build == Build::IfNeeded
            && let Some(checkout) = engine::checkout()
        {
            engine::build(
                &checkout,
                &self.repository,
                &self.version,
                self.base.as_deref(),
            )?;
        }
        match engine::image_version(&image)? {
            None => Err(Error::ImageMissing {
                image,
                version: self.version.clone(),
            }),
            Some(found) if found != self.version => Err(Error::StaleImage {
                image,
                expected: self.version.clone(),
                found: if found.is_empty() {
                    "of no label".into()
                } else {
                    found
                },
            }),
            Some(_) => Ok(()),
        }
    }

    pub(crate) fn prepare(self) -> Result<(ContainerRequest<HBaseImage>, Prepared), Error> {
        self.ensure_image()?;
        if let Some(port) = self.gateway_port
            && let Err(e) = TcpListener::bind(("127.0.0.1", port))
        {
            return Err(Error::PortTaken {
                port,
                detail: e.to_string(),
            });
        }
        let host_network = match self.network {
            Network::Host => true,
            Network::Bridge => false,
            Network::Auto => auto_host_network()?,
        };
        let (ready_within, port) = (self.ready_within, self.gateway_port);
        let printed = Arc::new(Mutex::new(Printed::default()));
        let sink = Arc::clone(&printed);
        let run_id = format!("{}-{}", std::process::id(), next_run());
        let mut request = self
            .decided(host_network)
            .with_label(OWNER_LABEL, &run_id)
            .with_startup_timeout(ready_within)
            .with_log_consumer(move |frame: &LogFrame| {
                sink.lock().unwrap_or_else(|e| e.into_inner()).accept(frame)
            });
        request = if host_network {
            request.with_network("host")
        } else {
            request.with_host_config_modifier(move |config: &mut HostConfig| {
                publish_on_loopback(config, port)
            })
        };
        Ok((
            request,
            Prepared {
                printed,
                run_id,
                host_network,
                ready_within,
                port,
            },
        ))
    }
}

fn next_run() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// testcontainers publishes on every interface; the gateway is for this host's tests only.
fn publish_on_loopback(config: &mut HostConfig, port: Option<u16>) {
    let binding = PortBinding {
        host_ip: Some("127.0.0.1".into()),
        host_port: Some(port.map(|p| p.to_string()).unwrap_or_default()),
    };
    config.port_bindings = Some(HashMap::from([(
        format!("{}/tcp", GATEWAY_PORT.as_u16()),
        Some(vec![binding]),
    )]));
    config.publish_all_ports = Some(false);
}

fn auto_host_network() -> Result<bool, Error> {
    match std::env::var("PERCOLATOR_DOCKER_NETWORK").as_deref() {
        Ok("host") => return Ok(true),
        Ok("bridge") => return Ok(false),
        _ => {}
    }
    let out = docker(
        &[
            "network",
            "ls",
            "--filter",
            "driver=bridge",
            "--format",
            "{{.Name}}",
        ],
        Duration::from_secs(30),
    )?;
    Ok(!out.stdout.lines().any(|name| name.trim() == "bridge"))
}

impl Prepared {
    /// The gateway's address once the container runs: the harness's printed one on the
    /// host's network, else the published port (`host_port`) on loopback.
    pub fn gateway(&self, host_port: Option<u16>) -> Result<String, Error> {
        if let Some(port) = host_port {
            return Ok(format!("127.0.0.1:{port}"));
        }
        let printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        printed.gateway().ok_or_else(|| Error::Exited {
            container: self.run_id.clone(),
            log_tail: format!(
                "the harness said it was ready but printed no HBASE_THRIFT line\n{}",
                printed.tail()
            ),
        })
    }

    /// What a failed start means, after removing whatever container it left.
    pub fn failure(&self, error: TestcontainersError) -> Error {
        let leftover = remove_labelled(&self.run_id);
        let tail = self
            .printed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tail();
        let container = leftover.unwrap_or_else(|| self.run_id.clone());
        let text = format!("{error} {tail}");
        if let Some(port) = self.port
            && (text.contains("Address already in use")
                || text.contains("port is already allocated")
                || text.contains("BindException"))
        {
            return Error::PortTaken {
                port,
                detail: engine::last_line(&error.to_string()).to_owned(),
            };
        }
        match error {
            TestcontainersError::WaitContainer(WaitContainerError::StartupTimeout) => {
                Error::NotReady {
                    container,
                    within: self.ready_within,
                    log_tail: tail,
                }
            }
            TestcontainersError::WaitContainer(WaitContainerError::WaitLog(_)) => Error::Exited {
                container,
                log_tail: tail,
            },
            other => other.into(),
        }
    }
}

/// Removes the containers of one start (a failed start may leave one behind), returning the
/// id of the first.
pub(crate) fn remove_labelled(run_id: &str) -> Option<String> {
    let filter = format!("label={OWNER_LABEL}={run_id}");
    let ids = docker(&["ps", "-aq", "--filter", &filter], Duration::from_secs(30)).ok()?;
    let ids: Vec<&str> = ids.stdout.split_whitespace().collect();
    for id in &ids {
        let _ = docker(&["rm", "-f", "-v", id], Duration::from_secs(60));
    }
    ids.first().map(|id| (*id).to_owned())
}

/// A running HBase container with its gateway, removed when dropped (also when a test panics
/// and unwinds).
pub struct HBaseContainerAsync {
    container: ContainerAsync<HBaseImage>,
    gateway: String,
}

impl HBaseContainerAsync {
    /// The Thrift2 gateway as `127.0.0.1:PORT`, for `percolator::HBaseConfig::new`.
    pub fn gateway(&self) -> &str {
        &self.gateway
    }

    /// The container itself, for what testcontainers offers beyond this crate.
    pub fn container(&self) -> &ContainerAsync<HBaseImage> {
        &self.container
    }
}

impl HBaseImage {
    /// Starts the image from async code (any tokio runtime): builds it when needed, waits until
    /// a real request through its gateway succeeded, and returns it with its gateway address.
    pub async fn start_async(self) -> Result<HBaseContainerAsync, Error> {
        use testcontainers::runners::AsyncRunner;
        let (request, prepared) = self.prepare()?;
        let container = match request.start().await {
            Ok(container) => container,
            Err(e) => return Err(prepared.failure(e)),
        };
        let host_port = if prepared.host_network {
            None
        } else {
            Some(container.get_host_port_ipv4(GATEWAY_PORT).await?)
        };
        let gateway = prepared.gateway(host_port)?;
        Ok(HBaseContainerAsync { container, gateway })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(stdout: bool, text: &str) -> LogFrame {
        let bytes = text.as_bytes().to_vec().into();
        if stdout {
            LogFrame::StdOut(bytes)
        } else {
            LogFrame::StdErr(bytes)
        }
    }

    #[test]
    fn the_gateway_is_the_address_the_harness_printed_once_ready() {
        let mut printed = Printed::default();
        printed.accept(&frame(true, "real-hbase: HBase 2.6.1, mode plain\n"));
        assert_eq!(printed.gateway(), None);
        printed.accept(&frame(
            true,
            "real-hbase: ready\nHBASE_THRIFT=127.0.0.1:40123\n",
        ));
        assert_eq!(printed.gateway().as_deref(), Some("127.0.0.1:40123"));
    }

    #[test]
    fn a_failed_start_reports_the_last_lines_of_the_log_each_cut_short() {
        let mut printed = Printed::default();
        assert_eq!(printed.tail(), "(nothing)");
        for i in 0..100 {
            printed.accept(&frame(false, &format!("log line {i}\n")));
        }
        printed.accept(&frame(false, &"x".repeat(10_000)));
        printed.accept(&frame(true, "real-hbase: gateway on port 9090 failed\n"));
        let tail = printed.tail();
        let lines: Vec<&str> = tail.lines().collect();
        assert_eq!(lines.len(), LOG_TAIL + 1);
        assert_eq!(lines[0], format!("log line {}", 100 - LOG_TAIL + 1));
        assert_eq!(lines[LOG_TAIL - 1].len(), LINE_CHARS);
        assert_eq!(lines[LOG_TAIL], "real-hbase: gateway on port 9090 failed");
    }

    #[test]
    fn the_published_port_binds_loopback_only() {
        let mut config = HostConfig {
            publish_all_ports: Some(true),
            ..Default::default()
        };
        publish_on_loopback(&mut config, None);
        assert_eq!(config.publish_all_ports, Some(false));
        let bindings = config.port_bindings.as_ref().unwrap();
        let binding = &bindings["9090/tcp"].as_ref().unwrap()[0];
        assert_eq!(binding.host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(binding.host_port.as_deref(), Some(""));
        publish_on_loopback(&mut config, Some(19090));
        let binding = &config.port_bindings.unwrap()["9090/tcp"].as_ref().unwrap()[0].clone();
        assert_eq!(binding.host_port.as_deref(), Some("19090"));
    }
}
