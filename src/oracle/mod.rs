//! Timestamp oracle (see issue 3).

use crate::error::Result;

/// A source of strictly increasing timestamps.
pub trait TimestampSource: Send + Sync {
    /// A timestamp greater than every one this source returned before it was called.
    fn get_timestamp(&self) -> Result<u64>;
}
