//! HBase operations layer: typed requests and a pooled Thrift2 client.
//!
//! - `types`: the typed operations callers build.
//! - `config`: where the gateway is and how to speak to it.
//! - `client`: [`HBaseClient`], pooled and with per-call retry rules; `scanner`, `admin` and
//!   `async_client` hang off it.
//! - `conn`, `convert`, `errors`: connections, Thrift struct conversions, error mapping.

// `Error` is the crate-wide enum with rich variants (see `error.rs`); boxing it per call would
// cost an allocation on every failure path for no gain here.
#![allow(clippy::result_large_err)]

mod admin;
mod async_client;
mod client;
mod config;
mod conn;
mod convert;
mod deferred;
mod errors;
mod grouped;
mod hot;
mod scanner;
pub mod types;

pub use admin::{Admin, RegionLocation, ServerType};
pub use async_client::AsyncHBaseClient;
pub use client::HBaseClient;
pub use config::{HBaseConfig, Protocol, Transport};
pub use deferred::Sender;
pub(crate) use grouped::{Part, Stamp};
pub use scanner::Scanner;
pub use types::*;
