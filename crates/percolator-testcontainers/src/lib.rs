//! A real HBase in a container for a service's integration tests: a
//! [testcontainers](https://docs.rs/testcontainers) image of HBase standalone (master, region
//! server and ZooKeeper in one JVM) with its Thrift2 gateway, exactly as the percolator
//! project's own real-HBase tests run it.
//!
//! ```
//! use percolator::oracle::MemoryStore;
//! use percolator::txn::{setup, Schema};
//! use percolator::{Client, HBaseClient, HBaseConfig, OracleServer, TxnOptions};
//! use percolator_testcontainers::HBaseImage;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # if let Some(why) = percolator_testcontainers::engine_unavailable() {
//! #     eprintln!("skipped: no Docker engine ({why})");
//! #     return Ok(());
//! # }
//! let hbase = HBaseImage::default().start()?; // ready: a request through the gateway succeeded
//! let oracle = OracleServer::start_local(MemoryStore::new())?;
//! let admin = HBaseClient::connect(HBaseConfig::new(hbase.gateway()))?;
//! setup::create_table(&admin, &Schema::default(), "orders", &["f"])?;
//!
//! let oracles = [oracle.local_addr().to_string()];
//! let client = Client::connect(HBaseConfig::new(hbase.gateway()), &oracles, TxnOptions::default())?;
//! client.run(|txn| txn.set("orders", "o-1", "f", "status", "paid"))?;
//! let status = client.begin()?.get("orders", "o-1", "f", "status")?;
//! assert_eq!(status.as_deref(), Some(&b"paid"[..]));
//! client.shutdown();
//! # Ok(())
//! # }
//! ```
//!
//! The container is removed when `hbase` is dropped, also when the test panics.
//! [`HBaseImage::start_shared`] gives every test of a binary one container instead.
//!
//! # The image
//! `percolator-hbase:VERSION` is built by `scripts/docker-image build` from a percolator
//! checkout: the jars come from the host's Maven, the base is a public JDK 17 image or one made
//! from Debian's packages (`scripts/docker-image base`) on engines that cannot pull, and the
//! build needs no network. [`HBaseImage::start`] builds it when the engine lacks it, from
//! `PERCOLATOR_CHECKOUT` or the checkout this crate was compiled from (a path or git
//! dependency), and reuses an image built from the same sources, so test binaries do not
//! rebuild it. The image's label names its HBase release, and an image whose release is not
//! its tag's is refused.
//!
//! # Networks
//! On an engine with a bridge network the gateway's port is published on 127.0.0.1 only (never
//! 0.0.0.0). On an engine without one (`dockerd --bridge=none`) the container uses the host's
//! network and its gateway binds 127.0.0.1. [`Network::Auto`] picks; `PERCOLATOR_DOCKER_NETWORK`
//! (`host` or `bridge`) overrides.
//!
//! # Failures
//! Every failure is an [`Error`] of one line that says what to do: no engine, a base the
//! engine cannot pull (naming the local-base step), a missing or stale image, a port taken, a
//! container that never became ready within [`HBaseImage::with_ready_within`] or stopped (with
//! the last lines of HBase's log). A failed start removes its container.
//!
//! # Layout
//! - `image`: [`HBaseImage`], its settings and testcontainers' [`Image`](testcontainers::Image).
//! - `engine`: the docker CLI: is an engine there, an image's labels, the build.
//! - `container`: a start's preparation and its failures; [`HBaseContainerAsync`].
//! - `blocking`: [`HBaseContainer`] and the shared container (feature `blocking`, default).

#[cfg(feature = "blocking")]
mod blocking;
mod container;
mod engine;
mod error;
mod image;

#[cfg(feature = "blocking")]
pub use blocking::HBaseContainer;
pub use container::HBaseContainerAsync;
pub use engine::engine_unavailable;
pub use error::Error;
pub use image::{
    Build, HBaseImage, Network, DEFAULT_READY_WITHIN, DEFAULT_REPOSITORY, DEFAULT_VERSION,
    GATEWAY_PORT,
};
pub use testcontainers;
