use std::borrow::Cow;
use std::time::Duration;

use testcontainers::core::{ContainerPort, WaitFor};
use testcontainers::Image;

/// The HBase release of `tests/real-hbase/pom.xml`, which `scripts/real-hbase` runs by default.
pub const DEFAULT_VERSION: &str = "2.6.1";
/// The image repository `scripts/docker-image build` tags.
pub const DEFAULT_REPOSITORY: &str = "percolator-hbase";
/// The gateway's port inside the container's own network.
pub const GATEWAY_PORT: ContainerPort = ContainerPort::Tcp(9090);
/// Start-up of a standalone HBase in a container takes 20-60 s on two cores.
pub const DEFAULT_READY_WITHIN: Duration = Duration::from_secs(240);

/// The line the harness prints once a real request through the gateway succeeded (it lists
/// the namespaces and reads `hbase:meta`), followed by `HBASE_THRIFT=HOST:PORT`.
pub(crate) const READY_LINE: &str = "real-hbase: ready";

/// How the container reaches the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// The container's own network, its gateway port published on the host's 127.0.0.1.
    Bridge,
    /// The host's network, the gateway bound to 127.0.0.1: for engines with no bridge network
    /// (`dockerd --bridge=none`).
    Host,
    /// `Host` when the engine has no `bridge` network, else `Bridge`; `PERCOLATOR_DOCKER_NETWORK`
    /// (`host` or `bridge`) decides first.
    Auto,
}

/// When the image is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Built from a percolator checkout (`PERCOLATOR_CHECKOUT`, or the one this crate came
    /// from) when missing or built from other sources; an image current for the checkout is
    /// reused. Without a checkout, an image of the right tag and release is reused as is.
    IfNeeded,
    /// Never built: the image of the tag must be on the engine.
    Never,
}

/// A real HBase standalone with its Thrift2 gateway: the image `docker/Dockerfile` builds,
/// run as the project's own real-HBase tests run it.
///
/// It implements testcontainers' [`Image`], so `testcontainers::runners::SyncRunner::start`
/// runs it as any module's image. [`HBaseImage::start`] does more: it builds the image when
/// missing, refuses a stale one, picks the network the engine has, binds the gateway to
/// 127.0.0.1, and explains a failed start with the end of HBase's log.
#[derive(Debug, Clone)]
pub struct HBaseImage {
    pub(crate) repository: String,
    pub(crate) version: String,
    pub(crate) network: Network,
    pub(crate) gateway_port: Option<u16>,
    pub(crate) ready_within: Duration,
    pub(crate) build: Build,
    pub(crate) base: Option<String>,
    /// Decided at start: what the container's environment and ports are.
    pub(crate) host_network: bool,
    env: Vec<(String, String)>,
}

impl Default for HBaseImage {
    fn default() -> Self {
        HBaseImage {
            repository: DEFAULT_REPOSITORY.into(),
            version: DEFAULT_VERSION.into(),
            network: Network::Auto,
            gateway_port: None,
            ready_within: DEFAULT_READY_WITHIN,
            build: Build::IfNeeded,
            base: None,
            host_network: false,
            env: Vec::new(),
        }
        .with_environment()
    }
}

impl HBaseImage {
    /// Another HBase release (2.4.x, 2.5.x, 2.6.x): the image is tagged with it.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Another image repository than `percolator-hbase`.
    pub fn with_repository(mut self, repository: impl Into<String>) -> Self {
        self.repository = repository.into();
        self
    }

    /// How the container reaches the host (default [`Network::Auto`]).
    pub fn with_network(mut self, network: Network) -> Self {
        self.network = network;
        self.with_environment()
    }

    /// The gateway on this port of 127.0.0.1 (default: a free one the engine or the harness picks).
    pub fn with_gateway_port(mut self, port: u16) -> Self {
        self.gateway_port = Some(port);
        self.with_environment()
    }

    /// How long HBase may take to be ready before the start fails (default 240 s).
    pub fn with_ready_within(mut self, within: Duration) -> Self {
        self.ready_within = within;
        self
    }

    /// When the image is built (default [`Build::IfNeeded`]).
    pub fn with_build(mut self, build: Build) -> Self {
        self.build = build;
        self
    }

    /// The image a build starts from (default: `PERCOLATOR_BASE_IMAGE`, else the local base
    /// of `scripts/docker-image base` when the engine has it, else `eclipse-temurin:17-jre`).
    pub fn with_base(mut self, base: impl Into<String>) -> Self {
        self.base = Some(base.into());
        self
    }

    /// `repository:version`.
    pub fn image_ref(&self) -> String {
        format!("{}:{}", self.repository, self.version)
    }

    /// The network decided: `host` or not.
    pub(crate) fn decided(mut self, host_network: bool) -> Self {
        self.host_network = host_network;
        self.with_environment()
    }

    /// The harness's settings for the decided network: with the host's network the gateway
    /// binds loopback on a port of its choosing (or the one asked for); in its own network it
    /// binds 9090 on every interface of that network, published on the host's loopback only.
    fn with_environment(mut self) -> Self {
        self.env = if self.host_network {
            vec![
                ("REAL_HBASE_BIND".into(), "127.0.0.1".into()),
                (
                    "REAL_HBASE_PORT".into(),
                    self.gateway_port.unwrap_or(0).to_string(),
                ),
            ]
        } else {
            vec![
                ("REAL_HBASE_BIND".into(), "0.0.0.0".into()),
                ("REAL_HBASE_PORT".into(), GATEWAY_PORT.as_u16().to_string()),
            ]
        };
        self
    }
}

impl Image for HBaseImage {
    fn name(&self) -> &str {
        &self.repository
    }

    fn tag(&self) -> &str {
        &self.version
    }

    fn ready_conditions(&self) -> Vec<WaitFor> {
        vec![WaitFor::message_on_stdout(READY_LINE)]
    }

    fn env_vars(
        &self,
    ) -> impl IntoIterator<Item = (impl Into<Cow<'_, str>>, impl Into<Cow<'_, str>>)> {
        self.env.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn expose_ports(&self) -> &[ContainerPort] {
        if self.host_network {
            &[]
        } else {
            std::slice::from_ref(&GATEWAY_PORT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(image: &HBaseImage) -> Vec<(String, String)> {
        image
            .env_vars()
            .into_iter()
            .map(|(k, v)| (k.into().into_owned(), v.into().into_owned()))
            .collect()
    }

    #[test]
    fn on_the_hosts_network_the_gateway_binds_loopback_and_publishes_nothing() {
        let image = HBaseImage::default().decided(true);
        assert_eq!(
            env(&image),
            [
                ("REAL_HBASE_BIND".into(), "127.0.0.1".into()),
                ("REAL_HBASE_PORT".into(), "0".into())
            ]
        );
        assert!(image.expose_ports().is_empty());
        let fixed = HBaseImage::default().with_gateway_port(19090).decided(true);
        assert_eq!(env(&fixed)[1], ("REAL_HBASE_PORT".into(), "19090".into()));
    }

    #[test]
    fn in_its_own_network_the_gateway_listens_on_9090_for_the_published_port() {
        let image = HBaseImage::default()
            .with_gateway_port(19090)
            .decided(false);
        assert_eq!(
            env(&image),
            [
                ("REAL_HBASE_BIND".into(), "0.0.0.0".into()),
                ("REAL_HBASE_PORT".into(), "9090".into())
            ]
        );
        assert_eq!(image.expose_ports(), [GATEWAY_PORT]);
    }

    #[test]
    fn the_tag_names_the_release() {
        let image = HBaseImage::default().with_version("2.5.8");
        assert_eq!(image.image_ref(), "percolator-hbase:2.5.8");
        assert_eq!((image.name(), image.tag()), ("percolator-hbase", "2.5.8"));
    }
}
