//! Operator tools over the transaction API: how the data commands (`get`, `put`, `delete`,
//! `scan`) name columns and show values, lock inspection and resolution (`locks`), and the
//! progress shown by long work (migration, GC). [`crate::commands`] runs them from the command
//! line.

mod data;
pub(crate) mod locks;
pub(crate) mod progress;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use locks::{check_owners, list_locks, resolve_locks, LockInfo, Resolution};
pub use progress::ProgressMode;
