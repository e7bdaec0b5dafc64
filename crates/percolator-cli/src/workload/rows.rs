//! The rows the benchmarks work on, shared by the raw and transactional workloads (`bench`)
//! and the protocol's floors (`floor`), so that all of them touch the same cells alike.

use rand::Rng;

/// The key of row `i`.
pub(crate) fn row(i: usize) -> String {
    format!("row{i:07}")
}

/// Two distinct rows of `rows`, at random.
pub(crate) fn two_rows(rng: &mut impl Rng, rows: usize) -> (usize, usize) {
    let a = rng.gen_range(0..rows);
    let mut b = rng.gen_range(0..rows - 1);
    if b >= a {
        b += 1;
    }
    (a, b)
}

/// A counter's next value (a missing or unreadable one counts as 0).
pub(crate) fn add_one(v: Option<&[u8]>) -> Vec<u8> {
    let n: i64 = v
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .unwrap_or(0);
    (n + 1).to_string().into_bytes()
}
