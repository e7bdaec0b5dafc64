//! `hbase-emulator`: an in-memory HBase Thrift2 gateway for tests and local development.
//!
//! Speaks `THBaseService` (framed or unframed, binary or compact; or over HTTP, optionally
//! with TLS) with HBase 2.x semantics. The store is in memory only: everything is lost when
//! the process exits. Stops cleanly on Ctrl-C or SIGTERM.

use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use hbase_emulator::{self as emulator, EmulatorConfig};

/// In-memory HBase Thrift2 gateway (THBaseService, HBase 2.x semantics). Data is kept in
/// memory only and lost on exit.
///
/// By default it serves Thrift on a raw socket (framed or buffered, binary or compact, told
/// apart per connection). With --http it serves like `hbase.regionserver.thrift.http=true`:
/// each call is an HTTP/1.1 POST to any path, with the Thrift message (binary or compact) as
/// body; the reply is the body of a 200 response with `Content-Type: application/x-thrift`.
/// With --tls-cert and --tls-key it serves HTTPS, like `hbase.thrift.ssl.enabled=true` (HBase
/// has TLS in HTTP mode only, and so has the emulator).
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
    /// Serve Thrift over HTTP/1.1 POSTs (HBase's `hbase.regionserver.thrift.http=true`).
    #[arg(long)]
    http: bool,
    /// PEM certificate chain to serve HTTPS with (needs --http and --tls-key).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// PEM certificates of the authorities client certificates must chain to: a client
    /// certificate becomes required (an emulator option; HBase's gateway asks for none).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// Support impersonation (`hbase.thrift.support.proxyuser=true`) of these users only: a
    /// request whose `doAs` header names another user gets a 500, as from HBase. Without this
    /// flag every request with a `doAs` header gets a 500 ("Support for proxyuser is not
    /// configured"). Needs --http.
    #[arg(
        long,
        value_name = "USER[,USER]",
        value_delimiter = ',',
        requires = "http"
    )]
    allow_doas: Option<Vec<String>>,
}

fn read(path: &Path) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()).into())
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
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let client_ca = args.tls_client_ca.as_deref().map(read).transpose()?;
            Some(emulator::tls_config_from_pem(
                &read(cert)?,
                &read(key)?,
                client_ca.as_deref(),
            )?)
        }
        _ => None,
    };
    let transport = match (args.http, tls.is_some()) {
        (false, _) => "raw Thrift",
        (true, false) => "HTTP",
        (true, true) => "HTTPS",
    };
    let listener = TcpListener::bind(args.listen)?;
    let config = EmulatorConfig {
        max_frame_bytes: args.max_frame_bytes,
        scanner_idle_timeout: Duration::from_secs(args.scanner_timeout_secs),
        service_time: Duration::from_micros(args.latency_us),
        http: args.http,
        tls,
        proxy_users: args
            .allow_doas
            .map(|users| users.into_iter().collect::<HashSet<_>>()),
        ..EmulatorConfig::default()
    };
    let handle = emulator::start(listener, config)?;
    let termination = Termination::catch()?;
    println!(
        "hbase-emulator listening on {} ({transport}; in-memory store: data is lost on exit)",
        handle.local_addr()
    );
    termination.wait()?;
    tracing::info!("shutting down");
    handle.shutdown();
    Ok(())
}

/// Ctrl-C (SIGINT) and SIGTERM, caught from the moment this is made: made before the address
/// line is printed, so a signal sent as soon as that line is read stops the emulator cleanly.
struct Termination {
    runtime: tokio::runtime::Runtime,
    #[cfg(unix)]
    signals: [tokio::signal::unix::Signal; 2],
}

impl Termination {
    fn catch() -> std::io::Result<Termination> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        #[cfg(unix)]
        let signals = {
            use tokio::signal::unix::{signal, SignalKind};
            let _context = runtime.enter();
            [
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ]
        };
        Ok(Termination {
            runtime,
            #[cfg(unix)]
            signals,
        })
    }

    /// Blocks until one of the signals arrives.
    fn wait(self) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            let [mut int, mut term] = self.signals;
            self.runtime.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            });
            Ok(())
        }
        #[cfg(not(unix))]
        {
            self.runtime.block_on(tokio::signal::ctrl_c())
        }
    }
}
