//! `percolator-oracle`'s command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use percolator::oracle::{ClientConfig, DEFAULT_LEASE};

use crate::oracle_access::OracleAccess;

/// `percolator-oracle`'s command line: serving (the default, with the [`ServeArgs`]) or one of
/// the [`Command`]s.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::oracle::Cli::parse_from(["percolator-oracle", "--store", "memory"]);
/// assert_eq!(cli.serve.store.as_deref(), Some("memory"));
/// ```
#[derive(Parser)]
#[command(
    name = "percolator-oracle",
    about = "Timestamp oracle for percolator transactions",
    // Without this the rustdoc above, code block and all, becomes `--help`'s long text.
    long_about = None,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The server's options.
#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7077")]
    pub listen: String,
    /// Window store: file:PATH, hbase:HOST:PORT[/TABLE], or memory (not durable: tests only).
    #[arg(long)]
    pub store: Option<String>,
    /// How far ahead each window extension reaches, in ms.
    #[arg(long, default_value_t = 3000)]
    pub window_ms: u64,
    /// Lease of a shared (hbase) store, in ms: a successor waits this long for us to stop.
    #[arg(long, default_value_t = DEFAULT_LEASE.as_millis() as u64)]
    pub lease_ms: u64,
    /// Stand by: claim the (hbase) store only once no live oracle holds it, turning clients
    /// away meanwhile. Run several so; one serves, the others take over when its lease lapses.
    #[arg(long)]
    pub standby: bool,
    /// Most client connections served at once; more are refused.
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,
    /// Runtime worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Period of the stats log line (5, 5s, 500ms, 1m).
    #[arg(long, default_value_t = 10)]
    pub stats_interval_s: u64,
    /// Serve the server's metrics as Prometheus text at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Serve TLS only, with this certificate chain (PEM, the server's certificate first);
    /// with --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS certificate's private key, PEM.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require every client to show a certificate signed by a CA in this PEM file (mutual
    /// TLS); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Allow only client certificates with this identity (subject common name or DNS name);
    /// repeat for several. Needs --tls-client-ca.
    #[arg(long, value_name = "NAME", requires = "tls_client_ca")]
    pub allow_client: Vec<String>,
    /// Require clients to present the token in this file (default: env
    /// PERCOLATOR_ORACLE_TOKEN, if set).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Shift the wall clock the server reads (tests: restarts across a clock step).
    #[arg(long, default_value_t = 0, hide = true, allow_negative_numbers = true)]
    pub clock_offset_ms: i64,
}

/// What `percolator-oracle` does instead of serving.
#[derive(Subcommand)]
pub enum Command {
    /// Print N timestamps, one per line.
    Fetch {
        /// Oracle address; a comma-separated list fails over in order.
        #[arg(long)]
        addr: String,
        /// How many timestamps to fetch.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// The most each connect and each request may wait (5, 5s, 500ms, 1m): against an oracle
        /// that accepts connections and never answers, the command fails after it, naming it.
        #[arg(long, value_name = "DURATION", default_value_t = 30.0, value_parser = crate::tools::duration::seconds)]
        timeout: f64,
        #[command(flatten)]
        access: OracleAccess,
    },
    /// Print a server's counters as JSON.
    Stats {
        /// Oracle address, HOST:PORT.
        #[arg(long)]
        addr: String,
        /// The most each connect and each request may wait (5, 5s, 500ms, 1m).
        #[arg(long, value_name = "DURATION", default_value_t = 30.0, value_parser = crate::tools::duration::seconds)]
        timeout: f64,
        #[command(flatten)]
        access: OracleAccess,
    },
    /// Measure timestamps/s and latency with N concurrent one-at-a-time requesters.
    Bench {
        /// Oracle address(es); omitted: start one in-process on the memory store.
        #[arg(long)]
        addr: Option<String>,
        /// Requesters, each with one request in flight at a time.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// How long to measure (5, 5s, 500ms, 1m).
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Client connections.
        #[arg(long, default_value_t = ClientConfig::default().connections)]
        connections: usize,
        /// Runtime threads for the requesters.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Run the client's connections on a thread of their own instead of on the
        /// requesters' runtime.
        #[arg(long)]
        client_thread: bool,
        /// Print one JSON object instead of a line of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        access: OracleAccess,
    },
}
