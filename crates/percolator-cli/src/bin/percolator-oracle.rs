//! `percolator-oracle`: serve timestamps, fetch some, or benchmark a server.
//!
//! Serving prints `listening on ADDR` on stdout once bound (scripts and tests wait for it);
//! logs go to stderr (`RUST_LOG` filters them).

// The crate's `Error` is deliberately rich; see `error.rs`.
#![allow(clippy::result_large_err)]

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use percolator::oracle::{
    run, ClientConfig, OffsetClock, OracleClient, OracleToken, ServerConfig, ServerTls, StoreSpec,
};
use percolator::{Error, Result};
use percolator_cli::cli::oracle::{Cli, Command, ServeArgs};
use percolator_cli::oracle_bench::{run_bench, BenchConfig};

/// Every binary of the crate uses mimalloc: glibc's allocator took 12-19% of the benchmark's
/// CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    percolator_cli::logging::init("info");
    let outcome = match cli.command {
        None => serve(cli.serve),
        Some(Command::Fetch {
            addr,
            count,
            timeout,
            access,
        }) => bounded(timeout, access).and_then(|config| fetch(&addr, count, config)),
        Some(Command::Stats {
            addr,
            timeout,
            access,
        }) => bounded(timeout, access).and_then(|config| stats(&addr, config)),
        Some(Command::Bench {
            addr,
            concurrency,
            seconds,
            connections,
            threads,
            client_thread,
            json,
            access,
        }) => {
            percolator_cli::oracle_access::set(access);
            percolator_cli::oracle_access::client_config(ClientConfig {
                connections,
                ..ClientConfig::default()
            })
            .and_then(|client| {
                bench(
                    BenchConfig {
                        addrs: addr.as_deref().map(split_addrs),
                        concurrency,
                        duration: Duration::from_secs_f64(seconds),
                        client,
                        threads,
                        client_thread,
                        ..BenchConfig::default()
                    },
                    json,
                )
            })
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "percolator-oracle failed");
            eprintln!("percolator-oracle: {e}");
            ExitCode::FAILURE
        }
    }
}

fn split_addrs(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect()
}

fn serve(args: ServeArgs) -> Result<()> {
    let spec: StoreSpec = args
        .store
        .as_deref()
        .ok_or_else(|| Error::IllegalArgument {
            message: "--store is required to serve (file:PATH or hbase:HOST:PORT[/TABLE])".into(),
        })?
        .parse()?;
    if let Some(addr) = &args.metrics_listen {
        percolator_cli::metrics_http::serve(addr)?;
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(ServerTls {
            client_ca: args.tls_client_ca.clone(),
            allowed_clients: args.allow_client.clone(),
            ..ServerTls::new(cert, key)
        }),
        _ => None,
    };
    let token = match &args.token_file {
        Some(path) => Some(OracleToken::from_file(path)?),
        None => OracleToken::from_env()?,
    };
    let store = spec.open(Duration::from_millis(args.lease_ms))?;
    let config = ServerConfig {
        tls,
        token,
        window: Duration::from_millis(args.window_ms),
        extend_below: Duration::from_millis(args.window_ms / 2),
        max_connections: args.max_connections,
        standby: args.standby,
        stats_interval: Duration::from_secs(args.stats_interval_s.max(1)),
        clock: Arc::new(OffsetClock {
            offset_ms: args.clock_offset_ms,
        }),
        ..ServerConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::io("building the runtime", e))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| Error::io(format!("binding {}", args.listen), e))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::io("reading the bound address", e))?;
        println!("listening on {local}");
        std::io::stdout()
            .flush()
            .map_err(|e| Error::io("writing stdout", e))?;
        run(listener, store, config, shutdown_signal()).await
    })
}

/// Resolves on SIGTERM or ctrl-c.
async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGTERM; only ctrl-c stops the server");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = tokio::signal::ctrl_c() => tracing::info!("ctrl-c: shutting down"),
    }
}

/// A client configuration whose connects and requests wait at most `seconds` each, secured as
/// the flags say.
fn bounded(
    seconds: f64,
    access: percolator_cli::oracle_access::OracleAccess,
) -> Result<ClientConfig> {
    let limit = Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Error::IllegalArgument {
            message: format!("--timeout {seconds} is not a positive number of seconds"),
        })?;
    percolator_cli::oracle_access::set(access);
    percolator_cli::oracle_access::client_config(ClientConfig {
        connect_timeout: limit,
        request_timeout: limit,
        ..ClientConfig::default()
    })
}

fn fetch(addr: &str, count: u64, config: ClientConfig) -> Result<()> {
    let client = OracleClient::connect(&split_addrs(addr), config)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut left = count;
    while left > 0 {
        let n = left.min(u64::from(percolator::oracle::protocol::MAX_COUNT)) as u32;
        for ts in client.get_timestamps(n)? {
            writeln!(out, "{ts}").map_err(|e| Error::io("writing stdout", e))?;
        }
        left -= u64::from(n);
    }
    out.flush().map_err(|e| Error::io("writing stdout", e))
}

fn stats(addr: &str, config: ClientConfig) -> Result<()> {
    let client = OracleClient::connect(&split_addrs(addr), config)?;
    let snapshot = client.server_stats()?;
    println!(
        "{}",
        serde_json::to_string(&snapshot).expect("stats serialize to JSON")
    );
    Ok(())
}

fn bench(config: BenchConfig, json: bool) -> Result<()> {
    let r = run_bench(&config)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&r).expect("bench report serializes to JSON")
        );
    } else {
        println!(
            "concurrency {:>5}  connections {}  {:>12.0} timestamps/s  p50 {:>8.1} us  p99 {:>8.1} us  p99.9 {:>8.1} us  max {:>9.1} us  mean batch {:>7.1}  errors {}  order violations {}",
            r.concurrency, r.connections, r.timestamps_per_s, r.p50_us, r.p99_us, r.p999_us, r.max_us, r.mean_batch, r.errors, r.order_violations
        );
    }
    Ok(())
}
