//! Workloads behind the `percolator` binary: the bank demo (also the bank test) and the bench.

pub mod bank;
pub mod bench;
pub mod demo;
pub mod stack;
