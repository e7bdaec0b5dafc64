//! HBase operations layer: typed requests and a pooled Thrift2 client.

pub mod types;

pub use types::*;
