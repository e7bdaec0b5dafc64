//! The same start for synchronous tests, and one container shared by a whole test binary.

use std::sync::OnceLock;

use testcontainers::runners::SyncRunner;
use testcontainers::Container;

use crate::container::remove_labelled;
use crate::engine::OWNER_LABEL;
use crate::error::Error;
use crate::image::{HBaseImage, GATEWAY_PORT};

/// A running HBase container with its gateway, removed when dropped (also when a test panics
/// and unwinds).
pub struct HBaseContainer {
    container: Container<HBaseImage>,
    gateway: String,
}

impl HBaseContainer {
    /// The Thrift2 gateway as `127.0.0.1:PORT`, for `percolator::HBaseConfig::new`.
    pub fn gateway(&self) -> &str {
        &self.gateway
    }

    /// The container itself, for what testcontainers offers beyond this crate.
    pub fn container(&self) -> &Container<HBaseImage> {
        &self.container
    }
}

impl HBaseImage {
    /// Starts the image: builds it when needed, waits until a real request through its
    /// gateway succeeded (at most [`HBaseImage::with_ready_within`]), and returns it with its
    /// gateway address. Not from inside an async runtime: use [`HBaseImage::start_async`] there.
    pub fn start(self) -> Result<HBaseContainer, Error> {
        let (request, prepared) = self.prepare()?;
        let container = match request.start() {
            Ok(container) => container,
            Err(e) => return Err(prepared.failure(e)),
        };
        let host_port = if prepared.host_network {
            None
        } else {
            Some(container.get_host_port_ipv4(GATEWAY_PORT)?)
        };
        let gateway = prepared.gateway(host_port)?;
        Ok(HBaseContainer { container, gateway })
    }

    /// One container for the whole process, started by the first caller; every later call
    /// gets the same one (or the same error, without a second wait). A process's statics are
    /// never dropped, so it is removed when the process exits normally, as a test binary does
    /// after its last test, passed or failed. Its settings are the first caller's.
    pub fn start_shared(self) -> Result<&'static HBaseContainer, &'static Error> {
        static SHARED: OnceLock<Result<HBaseContainer, Error>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let started = self.start();
                if started.is_ok() {
                    // SAFETY: registers a plain function with no captured state.
                    unsafe { libc::atexit(remove_shared) };
                }
                started
            })
            .as_ref()
    }
}

extern "C" fn remove_shared() {
    // Every container this process started carries its pid in the owner label.
    let prefix = format!("{}-", std::process::id());
    let listed = crate::engine::docker(
        &[
            "ps",
            "-a",
            "--filter",
            &format!("label={OWNER_LABEL}"),
            "--format",
            &format!("{{{{.ID}}}} {{{{.Label \"{OWNER_LABEL}\"}}}}"),
        ],
        std::time::Duration::from_secs(30),
    );
    let Ok(listed) = listed else { return };
    for line in listed.stdout.lines() {
        if let Some((_, run)) = line.split_once(' ')
            && run.starts_with(&prefix)
        {
            remove_labelled(run);
        }
    }
}
