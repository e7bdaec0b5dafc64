//! Timestamp oracle (see issue 3).
