//! The blocking API: [`Client`] and [`Transaction`] are thin layers over the async ones, each
//! call run to completion on the caller's thread (see `crate::runtime::wait`).

mod client;
mod transaction;

pub use client::Client;
pub use transaction::{RowIter, Transaction};
