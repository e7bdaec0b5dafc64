//! Typed HBase operations: what callers build, before any Thrift struct exists.
//!
//! Builders take `impl Into<Vec<u8>>` so callers can pass `&str`, `&[u8]` or owned bytes.
//! Conversions to and from the generated Thrift structs live in `convert.rs`.

mod atomic;
mod read;
mod scan;
mod schema;
mod write;

pub use atomic::{Append, CheckAndMutate, CompareOp, Increment, Mutation, RowMutations};
pub use read::{Cell, Column, Get, RowResult, TimeRange};
pub use scan::Scan;
pub use schema::{FamilyDescriptor, TableDescriptor};
pub use write::{Delete, DeleteType, Durability, Put, PutCell};
