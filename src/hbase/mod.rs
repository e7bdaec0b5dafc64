//! HBase operations layer: typed requests and a Thrift2 client, native async with a blocking
//! face. A plain Thrift2 client: it knows nothing of transactions or timestamp oracles.
//!
//! Modules, each using only those before it:
//! - `types`, `config`, `convert`, `errors`: the typed operations, where the gateway is, the
//!   Thrift struct conversions, the error mapping.
//! - `input`, `wire`: any THBaseService call as bytes, and its reply decoded from a buffer.
//! - `conn`: one connection with several calls in flight, replies matched in order.
//! - `pool`: which connection a call goes on.
//! - `client`: [`AsyncHBaseClient`] and the retry rules; `data` its data calls.
//! - `scanner`, `admin`, `blocking`: scanners, administration, and [`HBaseClient`].

// `Error` is the crate-wide enum with rich variants (see `error.rs`); boxing it per call would
// cost an allocation on every failure path for no gain here.
#![allow(clippy::result_large_err)]

mod admin;
#[cfg(test)]
pub(crate) use admin::tests as admin_fixture;
mod blocking;
mod client;
mod config;
mod conn;
mod convert;
mod data;
mod endpoint;
pub(crate) mod errors;
mod gateways;
mod input;
#[cfg(feature = "kerberos")]
pub mod kerberos;
pub(crate) mod link;
mod pool;
mod scanner;
mod security;
mod tally;
pub mod types;
mod wire;

#[cfg(test)]
mod conn_tests;
#[cfg(test)]
mod wire_tests;

pub use admin::{Admin, RegionLocation, ServerType};
pub use blocking::HBaseClient;
pub use client::AsyncHBaseClient;
pub use config::{HBaseConfig, Protocol, Transport};
pub use endpoint::{Endpoint, Scheme};
pub use errors::TlsFailure;
#[cfg(feature = "kerberos")]
pub use kerberos::KerberosError;
pub use scanner::Scanner;
pub use security::{Kerberos, Qop, TlsOptions};
pub use tally::FamilyWrites;
pub use types::*;

pub(crate) use convert::TTL_FOREVER;
