use std::time::Duration;

/// Why no HBase container could be had. Each message is one line that says what to do; the
/// two about a start that failed add the last lines of HBase's log after it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No Docker engine answers (no socket, a stopped daemon, no docker CLI).
    #[error("no Docker engine: {reason}")]
    NoEngine { reason: String },

    /// The engine could not pull the image the build starts from.
    #[error(
        "the Docker engine could not pull the base image {base} ({detail}); make a local base \
         from Debian's packages with `scripts/docker-image base` in a percolator checkout, or \
         name a Java 17 image that the engine has in PERCOLATOR_BASE_IMAGE"
    )]
    BaseNotPulled { base: String, detail: String },

    /// The image is not on the engine and no checkout to build it from is known.
    #[error(
        "image {image} is not on the Docker engine and no percolator checkout is known to build \
         it from: set PERCOLATOR_CHECKOUT to one, or run `scripts/docker-image build --version \
         {version}` there"
    )]
    ImageMissing { image: String, version: String },

    /// The image must be built, and this host lacks what the build runs (Java 17+, Maven).
    #[error(
        "image {image} must be built, and building it needs Java 17+ and Maven on this host \
         ({detail})"
    )]
    NoBuildTools { image: String, detail: String },

    /// Building the image failed for a reason other than the base.
    #[error("building {image} failed: {detail}")]
    Build { image: String, detail: String },

    /// The image under this tag holds another HBase release than its tag names.
    #[error(
        "image {image} holds HBase {found}, not {expected}: a stale build; rebuild it with \
         `scripts/docker-image build --version {expected} --force`"
    )]
    StaleImage {
        image: String,
        expected: String,
        found: String,
    },

    /// The gateway port asked for is taken on 127.0.0.1.
    #[error("port {port} on 127.0.0.1 is already taken ({detail}); choose another or leave it to the engine")]
    PortTaken { port: u16, detail: String },

    /// HBase did not report ready within the readiness time; the container was removed.
    /// `container` is its id, or this crate's label of the start when testcontainers had
    /// removed it already.
    #[error(
        "HBase in container {container} was not ready within {within:?} (no request through its \
         gateway succeeded); the container was removed. Last lines of its log:\n{log_tail}"
    )]
    NotReady {
        container: String,
        within: Duration,
        log_tail: String,
    },

    /// The container stopped before HBase was ready; it was removed.
    #[error(
        "HBase in container {container} stopped before it was ready; the container was removed. \
         Last lines of its log:\n{log_tail}"
    )]
    Exited { container: String, log_tail: String },

    /// A docker command failed in a way none of the above names.
    #[error("`{command}` failed: {detail}")]
    Docker { command: String, detail: String },

    /// testcontainers itself failed (creating, starting or inspecting the container).
    #[error("testcontainers: {0}")]
    Testcontainers(#[from] testcontainers::TestcontainersError),
}

impl Error {
    /// Whether this machine cannot run the image at all (no engine, nothing to build it from
    /// or with, a base it cannot pull), as opposed to an image or a start that went wrong. Test suites
    /// skip on these where a container is optional.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Error::NoEngine { .. }
                | Error::BaseNotPulled { .. }
                | Error::ImageMissing { .. }
                | Error::NoBuildTools { .. }
        )
    }
}
