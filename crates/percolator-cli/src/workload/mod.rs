//! Workloads behind the `percolator` binary: the bank demo (also the bank test) and the bench.
//! Private: the binary reaches them through the hidden `cli` module of the crate root.

pub mod bank;
#[cfg(test)]
mod bank_test;
pub mod bench;
pub mod demo;
mod floor;
pub mod gc_bench;
pub mod handed;
pub mod large;
pub mod notify_bench;
pub mod observe_demo;
mod rows;
pub mod soak;
pub mod stack;
mod usage;

/// Held by a unit test that commits transactions: the library's failpoints are process-wide,
/// and the bank's crash test arms them under the same lock, so the two never overlap.
#[cfg(test)]
fn failpoints_off() -> fail::FailScenario<'static> {
    fail::FailScenario::setup()
}
