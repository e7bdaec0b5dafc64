//! `hbase-emulator`: an in-memory HBase Thrift2 gateway for tests and local development.
//!
//! Speaks `THBaseService` (framed or unframed, binary or compact) with HBase 2.x semantics.
//! The store is in memory only: everything is lost when the process exits. Stops cleanly on
//! Ctrl-C or SIGTERM.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use clap::Parser;
use hbase_emulator::{self as emulator, EmulatorConfig};

/// In-memory HBase Thrift2 gateway (THBaseService, HBase 2.x semantics). Data is kept in
/// memory only and lost on exit.
#[derive(Parser, Debug)]
#[command(name = "hbase-emulator", version)]
struct Args {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: SocketAddr,
    /// Largest request accepted, in bytes.
    #[arg(long, default_value_t = 2 * 1024 * 1024)]
    max_frame_bytes: usize,
    /// Seconds after which an idle scanner is forgotten.
    #[arg(long, default_value_t = 60)]
    scanner_timeout_secs: u64,
    /// Microseconds every call takes, served in order per connection: `1000` behaves like a
    /// cluster whose calls cost a millisecond each.
    #[arg(long, default_value_t = 0)]
    latency_us: u64,
}

/// Every binary of the crate uses mimalloc: glibc's allocator took 12-19% of the benchmark's
/// CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs to stderr (stdout carries the address line), coloured only on a terminal.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let listener = TcpListener::bind(args.listen)?;
    let config = EmulatorConfig {
        max_frame_bytes: args.max_frame_bytes,
        scanner_idle_timeout: Duration::from_secs(args.scanner_timeout_secs),
        service_time: Duration::from_micros(args.latency_us),
        ..EmulatorConfig::default()
    };
    let handle = emulator::start(listener, config)?;
    println!(
        "hbase-emulator listening on {} (in-memory store: data is lost on exit)",
        handle.local_addr()
    );
    wait_for_termination()?;
    tracing::info!("shutting down");
    handle.shutdown();
    Ok(())
}

/// Blocks until Ctrl-C (SIGINT) or SIGTERM.
fn wait_for_termination() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r,
                _ = term.recv() => Ok(()),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await
        }
    })
}
