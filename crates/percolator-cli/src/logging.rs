//! The log setup every binary of the crate shares: to standard error, filtered by `RUST_LOG`
//! (else `default_filter`), coloured only when standard error is a terminal, so that logs
//! piped to a file or collected by a supervisor carry no ANSI escape codes.

use std::io::IsTerminal;

/// Installs the process's tracing subscriber; call once, first thing in `main`.
///
/// ```no_run
/// percolator_cli::logging::init("warn");
/// tracing::warn!("to stderr, uncoloured unless stderr is a terminal");
/// ```
pub fn init(default_filter: &str) {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
