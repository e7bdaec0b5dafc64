//! Operator tools over the transaction API: one-transaction data commands (`get`, `put`,
//! `delete`, `scan`), lock inspection and resolution (`locks`), and the command-line faces of
//! these and of [`crate::migrate`] (`cli`, driven by the `percolator` binary).

pub mod cli;
mod data;
pub(crate) mod locks;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use locks::{check_owners, list_locks, resolve_locks, LockInfo, Resolution};
