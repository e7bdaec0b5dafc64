//! An in-memory HBase emulator: a server that speaks HBase's Thrift2 protocol (`THBaseService`)
//! with HBase 2.x semantics, for tests and local development without a cluster.
//!
//! # README: the HBase emulator
//!
//! `hbase-emulator --listen 127.0.0.1:9090` starts a server that a Thrift2 client (this
//! crate's, or HBase's own `ThriftConnection`, or any generated client) can use in place of
//! `hbase thrift2 start`. **All data lives in memory and is lost when the process exits.**
//! In tests, start one per test on an ephemeral port:
//!
//! ```
//! use percolator::{HBaseClient, HBaseConfig};
//! let emu = hbase_emulator::start_local()?;
//! let client = HBaseClient::connect(HBaseConfig::new(emu.local_addr().to_string()))?;
//! assert!(!client.admin().table_exists("t")?);
//! // ... run the test ...
//! emu.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it emulates, and how faithfully:
//! - **Wire**: unframed (buffered) and framed transport, binary and compact protocol, detected
//!   per connection; or HTTP, with or without TLS (below). Requests are bounded by `max_frame_bytes` (2 MiB, like HBase). Unknown
//!   methods get `UNKNOWN_METHOD`, missing required arguments `PROTOCOL_ERROR`, runtime
//!   failures (bad filter, empty row, unset checkAndMutate value) `INTERNAL_ERROR`; the
//!   arguments HBase's IDL leaves optional (`value` of checkAndPut/Delete/Mutate, `numRows`,
//!   `splitKeys`, ...) may be omitted, as Java clients do.
//! - **Data**: every `THBaseService` data method, with HBase 2.x rules: newest version first;
//!   per-cell > per-put > server timestamps; family VERSIONS (default 1) and MIN_VERSIONS; TTL
//!   against the cell timestamp in ms; `[min, max)` time ranges; all four delete types, whose
//!   markers hide older *and later-written* puts at or below them (no major compaction ever
//!   runs); checkAndPut/Delete/Mutate comparing `value OP cell` under the row lock; atomic
//!   mutateRow, increment and append.
//! - **Scanners**: start/stop rows, reversed, batch size (partial results), limit, time range,
//!   versions, columns, filters; ids shared by all connections; idle scanners expire after
//!   `scanner_idle_timeout` (60 s).
//! - **Filters**: the filter language with AND, OR, SKIP, WHILE and parentheses over
//!   PrefixFilter, KeyOnlyFilter, FirstKeyOnlyFilter, ColumnPrefixFilter,
//!   MultipleColumnPrefixFilter, ColumnRangeFilter, RowFilter, FamilyFilter, QualifierFilter,
//!   ValueFilter, SingleColumnValue(Exclude)Filter, TimestampsFilter and InclusiveStopFilter,
//!   with `binary:`, `binaryprefix:`, `substring:` and `regexstring:` comparators.
//! - **Admin**: tables (create, delete, enable, disable, truncate, modify, descriptors by name,
//!   pattern or namespace) and column families, namespaces (`default` and `hbase` exist),
//!   one region per table, `getThriftServerType` = TWO.
//! - **HTTP mode** (`EmulatorConfig::http`, HBase's `hbase.regionserver.thrift.http=true`):
//!   each call is the body of an HTTP/1.1 POST to any path, its reply the body of a `200`
//!   response with `Content-Type: application/x-thrift` and a `Content-Length`; a Thrift
//!   exception (`TIOError`, `TApplicationException`) is a reply like any other, inside a
//!   `200`. Connections are kept alive (HTTP/1.0 only with `Connection: keep-alive`),
//!   pipelined requests are answered in order, bodies come by `Content-Length` or chunked,
//!   `Expect: 100-continue` is honoured. Refusals, as HBase's servlet and Jetty give them: an
//!   undecodable body `500` (`TServlet` turns the Thrift error into a `ServletException`),
//!   GET is served like POST (libthrift's `TServlet.doGet` calls `doPost`, so a GET without a
//!   body is a `500`; HEAD is a GET without the response body), TRACE and OPTIONS `403`, PUT
//!   and DELETE `405` (`400` over HTTP/1.0), other methods `501`; then, closing the connection: a malformed request `400`,
//!   a head above 65534 bytes `431`, a body above `max_frame_bytes` `413`. Error bodies are
//!   `text/plain` with the Java exception's message (Jetty's are HTML pages).
//! - **Impersonation** (HTTP mode): HBase's `ThriftHttpServlet` reads the end user from a
//!   header named `doAs` (any case). Without `hbase.thrift.support.proxyuser` (the emulator's
//!   `proxy_users: None`) a request carrying one gets a `500` ("Support for proxyuser is not
//!   configured"); with it (`Some(users)`), a `doAs` naming a user outside the set gets a
//!   `500` ("User: hbase is not allowed to impersonate NAME", Hadoop's
//!   `AuthorizationException`), and one inside the set is served.
//! - **TLS** (`EmulatorConfig::tls`, HBase's `hbase.thrift.ssl.enabled=true`): HTTPS, TLS 1.2
//!   and 1.3 through rustls with *ring*. Like HBase, TLS is for HTTP mode only. Requiring
//!   client certificates ([`tls_config_from_pem`] with a client CA) is an emulator option:
//!   HBase's gateway asks for none.
//! - **Errors**: `TIOError` messages start with the Java exception class
//!   (`org.apache.hadoop.hbase.TableNotFoundException: ns:t`, `...NoSuchColumnFamilyException`,
//!   `...TableNotEnabledException`, ...) and `canRetry` is false where HBase's exception is a
//!   `DoNotRetryIOException`.
//!
//! Differences from a real gateway: a scan sees each row as it is when the scan reaches it
//! (HBase reads a region at the MVCC point of the scanner's opening); versions beyond VERSIONS
//! and versions hidden by delete markers are dropped at write time (what a real region does
//! at its next flush, so a time-range read never finds versions a flush would have removed);
//! KEEP_DELETED_CELLS, NEW_VERSION_BEHAVIOR, protobuf `filterBytes`, visibility labels and
//! system tables are not emulated (the first three answer a `TIOError` saying so); split keys
//! are accepted and ignored. HBase's HTTP mode decodes binary protocol only (its servlet has a
//! fixed `TBinaryProtocol` factory, whatever `hbase.regionserver.thrift.compact` says); the
//! emulator also accepts compact bodies there, and answers each in the protocol it came in.
//! With a service time, an HTTP-mode connection's thread waits it out before each response.
//! Like the real gateway, a connection that sends nothing for
//! `idle_timeout` (60 s, `hbase.thrift.server.socket.read.timeout`) is closed.

mod admin;
#[cfg(test)]
mod admin_tests;
#[cfg(test)]
mod cas_tests;
mod cell;
mod clock;
mod conn;
mod convert;
mod data;
#[cfg(test)]
mod data_tests;
mod dispatch;
mod error;
mod filter;
mod handler;
mod http;
mod http_conn;
mod paced;
#[cfg(test)]
mod scan_tests;
mod scanner;
mod server;
#[cfg(test)]
mod server_tests;
mod store;
#[cfg(test)]
pub(crate) mod testutil;
mod timer;
mod tls;
mod wire;

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

pub use clock::Clock;
/// The TLS library the emulator serves with, for building an [`EmulatorConfig::tls`].
pub use rustls;
pub use server::EmulatorHandle;
pub use tls::tls_config_from_pem;

/// Settings of one emulator instance.
///
/// ```
/// use std::time::Duration;
/// use hbase_emulator::{self as emulator, EmulatorConfig};
/// let config = EmulatorConfig {
///     service_time: Duration::from_millis(1), // behave like a cluster a millisecond away
///     ..EmulatorConfig::default()
/// };
/// let emu = emulator::start(std::net::TcpListener::bind("127.0.0.1:0")?, config)?;
/// assert!(emu.local_addr().ip().is_loopback());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// Largest request accepted, framed or not (HBase's default frame limit is 2 MiB).
    pub max_frame_bytes: usize,
    /// Scanners untouched for this long are forgotten (HBase: 60 s).
    pub scanner_idle_timeout: Duration,
    /// The server's wall clock: server-assigned timestamps, TTL and scanner expiry.
    pub clock: Clock,
    /// Time every call takes before its reply is written, one call after another per
    /// connection: a cluster's round trip to a region server (about a millisecond), which the
    /// in-memory store otherwise answers in microseconds. Zero by default.
    pub service_time: Duration,
    /// A connection that sends nothing for this long is closed, as the real gateway's socket
    /// read timeout does (60 s by default, on both).
    pub idle_timeout: Duration,
    /// HTTP mode, as `hbase.regionserver.thrift.http=true`: each Thrift call is the body of an
    /// HTTP/1.1 POST (any path), its reply the body of the `200` response
    /// (`Content-Type: application/x-thrift`), on keep-alive connections. Off by default (the
    /// raw socket transport). See the crate documentation for the statuses of refused requests.
    pub http: bool,
    /// TLS, as `hbase.thrift.ssl.enabled=true`: HTTP mode only (HBase has no TLS for its raw
    /// transport; `start` refuses TLS without `http`). [`tls_config_from_pem`] builds one.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Impersonation in HTTP mode, as `hbase.thrift.support.proxyuser=true` with the
    /// gateway's user allowed to impersonate these users: a request whose `doAs` header names
    /// another user is refused. `None` (the default, as HBase's) refuses every request that
    /// sends a `doAs` header. Ignored by the raw transport, which has no headers.
    pub proxy_users: Option<HashSet<String>>,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            max_frame_bytes: 2 * 1024 * 1024,
            scanner_idle_timeout: Duration::from_secs(60),
            clock: Clock::system(),
            service_time: Duration::ZERO,
            idle_timeout: Duration::from_secs(60),
            http: false,
            tls: None,
            proxy_users: None,
        }
    }
}

/// Serves on `listener` (already bound, e.g. to port 0) until the handle is shut down: for
/// a chosen address or settings other than the defaults.
///
/// ```
/// use std::net::TcpListener;
/// use hbase_emulator::{self as emulator, EmulatorConfig};
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let addr = listener.local_addr()?;
/// let emu = emulator::start(listener, EmulatorConfig::default())?;
/// assert_eq!(emu.local_addr(), addr);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn start(listener: TcpListener, config: EmulatorConfig) -> std::io::Result<EmulatorHandle> {
    server::start(listener, config)
}

/// An emulator on 127.0.0.1 with an ephemeral port and default settings: one per test.
///
/// ```
/// use percolator::{HBaseClient, HBaseConfig};
/// let emu = hbase_emulator::start_local()?;
/// let client = HBaseClient::connect(HBaseConfig::new(emu.local_addr().to_string()))?;
/// assert!(client.admin().list_namespaces()?.contains(&"default".to_string()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start_local() -> std::io::Result<EmulatorHandle> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    start(listener, EmulatorConfig::default())
}
