//! Shared helpers for the HBase test binaries: the gateway fixture, a fault-injecting TCP
//! proxy, and the conformance suite whose cases run against any Thrift2 gateway.
//!
//! Each test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod gateway;
pub mod proxy;
pub mod suite;

pub use gateway::{Gateway, TestTable};
