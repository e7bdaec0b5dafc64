//! The timestamp oracle: a standalone server (`percolator-oracle`), its window stores, and the
//! batching client transactions use.
//!
//! ```
//! use percolator::oracle::{ClientConfig, MemoryStore, OracleClient, OracleServer};
//! let oracle = OracleServer::start_local(MemoryStore::new())?;
//! let client = OracleClient::connect(&[oracle.local_addr().to_string()], ClientConfig::default())?;
//! let batch = client.get_timestamps(3)?;
//! assert!(client.get_timestamp()? > batch[2], "strictly increasing across calls");
//! # Ok::<(), percolator::Error>(())
//! ```
//!
//! # Timestamps
//! `physical_ms << 18 | logical`, strictly increasing and never repeated, also across restarts,
//! kill -9, a wall clock stepping backwards (the last physical value is kept) and logical
//! overflow (the next millisecond is taken, never a wrap). The server persists the top of an
//! allocation window (default 3 s of physical time ahead) before serving from it and never
//! serves above the persisted top; a restarted server starts strictly above it. A background
//! task extends the window while at least half of it is left, so requests never wait on
//! storage in steady state. See [`WindowStore`] for the stores and how a newer oracle fences an
//! older one.
//!
//! # Wire protocol (version 1)
//! TCP, or TLS over it when the server has a certificate ([`ServerConfig::tls`]); all integers
//! big-endian. The client speaks first.
//!
//! Handshake, 8 bytes each way:
//! - client: magic `"PTSO"`, `u16` version (1), `u16` flags. Flag bit 0 (`FLAG_TOKEN`): a
//!   token frame follows the hello, `u16 len` (1..=1024) then `len` bytes. Servers ignore other
//!   bits (this field was reserved, 0, before tokens), and a server requiring no token reads
//!   and ignores a token frame.
//! - server: magic `"PTSO"`, `u16` version it speaks, `u16` status: 0 ok, 1 version not
//!   supported, 2 too many connections, 3 standing by (another oracle owns the store), 4 a
//!   token is required and none came, 5 the token is wrong, 6 a client certificate is required
//!   and none came, 7 the client certificate's identity is not allowed, 8 TLS is required (sent
//!   in the clear to a client that spoke plain TCP to a TLS port). On a non-zero status the
//!   server closes the connection. After 1-3 a client tries its next address; after 4-8 it
//!   fails at once with [`Error::OracleAuth`](crate::Error::OracleAuth), as it does when the TLS
//!   handshake ends over certificates: the addresses of one list are secured alike.
//!   A client hello with the wrong magic is not answered; the connection is closed.
//!
//! Over TLS the server checks the client certificate (when it has client CAs) and the token
//! only after the TLS handshake and the hello, so a refused client learns why from the status
//! instead of from a TLS alert. A token is compared as SHA-256 digests in constant time and is
//! never logged; refusals are logged with the peer and which check failed.
//!
//! Then requests, which may be pipelined; replies come in request order:
//! - `0x01 u32 count`: `count` (1..=65536) timestamps. Reply `0x01 u64 first`: the timestamps
//!   are `first .. first + count`, contiguous.
//! - `0x02`: counters. Reply `0x02 u16 len` then `len / 8` `u64` fields, in the order of
//!   [`StatsSnapshot`]'s fields (`batch_sizes` last, one field per bucket); readers ignore
//!   fields they do not know.
//! - any request may instead be answered `0xEE u16 code u16 len` and `len` bytes of UTF-8
//!   message. Codes: 1 bad request (the connection is then closed), 2 unavailable (no window
//!   yet: retry), 3 fenced (this server stopped for good: fail over), 4 shutting down (fail
//!   over). After codes 3 and 4 the server closes the connection.
//!
//! Limits: messages (`len`) are at most 1024 bytes; an unknown request tag or a count outside
//! 1..=65536 closes the connection with a bad-request reply; the hello must arrive within the
//! handshake timeout, a started request must complete within the frame timeout, and an idle
//! connection is closed after the idle timeout; connections beyond the server's limit get
//! status 2. Each of these is logged with its reason and the peer; other connections are not
//! affected.
//!
//! # Client
//! [`OracleClient`] batches concurrent askers per connection, reconnects, and fails over along
//! its address list. [`TimestampSource`] is the interface the transaction layer uses;
//! [`LocalTimestamps`] implements it without a server.

// `Error` is the crate-wide enum with rich variants (see `error.rs`); boxing it per call would
// cost an allocation on every failure path for no gain here.
#![allow(clippy::result_large_err)]

mod alloc;
mod auth;
mod client;
pub mod protocol;
mod server;
mod stats;
mod store;

pub use alloc::{compose, physical_of, Clock, OffsetClock, SystemClock, LOGICAL_PER_MS};
pub use auth::{AuthFailure, OracleToken, ServerTls, MAX_TOKEN_LEN, TOKEN_ENV};
pub use client::{ClientConfig, LocalTimestamps, OracleClient, TimestampSource};
pub use server::{run, OracleHandle, OracleServer, ServerConfig};
pub use stats::StatsSnapshot;
pub use store::{
    Claim, FileStore, HBaseStore, Holder, MemoryStore, StoreSpec, WindowRecord, WindowStore,
    DEFAULT_LEASE,
};
