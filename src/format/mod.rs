//! The stored formats: every cell this crate writes to HBase and reads back, in one place, so
//! that a change of format is one change here and its vectors (`vectors`) say whether the
//! bytes of existing tables still read.
//!
//! In each transactional table, beside the user's families (docs/design.md):
//! - the data cell of a write, in the user's column at version start_ts;
//! - `lock`: the lock family's cell for each column (or each row, in a table that locks rows):
//!   released with its high-water mark, or a lock;
//! - `write`: the write family's records, one per commit or rollback;
//! - `observer`: notifications (notify family) and acknowledgments (ack family).
//!
//! Elsewhere:
//! - `meta`: the meta table's rows (migration marker, lock granularity, observed columns, the
//!   GC safe point), and the observers' lease and worker rows there (`observer`);
//! - `liveness`: each client's row in the liveness table.
//!
//! `column` names a user column inside the percolator families, and `bytes` holds the
//! primitives the records are built of. Every decoder is strict: a damaged cell is reported as
//! corrupted, never misread.

mod bytes;
mod column;
pub mod liveness;
mod lock;
pub mod meta;
pub mod observer;
mod write;

pub use bytes::CodecError;
pub use column::{column_qualifier, split_column_qualifier};
pub use lock::{
    decode_lock_state, encode_lock, encode_released, lock_column, Lock, LockState, MutationKind,
    RowColumn, ROW_LOCK_QUALIFIER,
};
pub use write::{decode_write, encode_write, WriteKind, WriteRecord};

#[cfg(test)]
mod codec_tests;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod vectors;
