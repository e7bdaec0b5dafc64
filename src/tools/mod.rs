//! Operator tools over the transaction API: how the data commands (`get`, `put`, `delete`,
//! `scan`) name columns and show values, and lock inspection and resolution (`locks`).
//! [`crate::commands`] runs them from the command line.

mod data;
pub(crate) mod locks;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use locks::{check_owners, list_locks, resolve_locks, LockInfo, Resolution};
