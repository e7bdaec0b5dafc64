//! The rows the benchmarks work on, shared by the raw and transactional workloads (`bench`)
//! and the protocol's floors (`floor`), so that all of them touch the same cells alike.

use std::ops::Range;

use rand::Rng;

/// The key of row `i`.
pub(crate) fn row(i: usize) -> String {
    format!("row{i:07}")
}

/// The rows that task (or thread) `task` of `tasks` works on: a slice of its own when each
/// gets two or more, all of them otherwise.
///
/// With slices of their own no two tasks write one row, as no two clients of an application
/// that partitions its keys would. The floors cannot work otherwise (they have no recovery
/// paths), and the transactional workloads then cost what the layer adds to the same calls,
/// not what conflicts between the bench's own tasks add: a conflicting transaction's work
/// counts for no operation, and a read that meets a lock waits. Over all tasks, every row is
/// as likely as with one shared range.
pub(crate) fn task_rows(task: usize, tasks: usize, rows: usize) -> Range<usize> {
    let per_task = rows / tasks.max(1);
    if per_task < 2 {
        return 0..rows;
    }
    task * per_task..(task + 1) * per_task
}

/// A row of `rows`, at random.
pub(crate) fn one_row(rng: &mut impl Rng, rows: &Range<usize>) -> usize {
    rng.gen_range(rows.clone())
}

/// Two distinct rows of `rows` (two or more of them), at random.
pub(crate) fn two_rows(rng: &mut impl Rng, rows: &Range<usize>) -> (usize, usize) {
    let a = rng.gen_range(rows.clone());
    let mut b = rng.gen_range(rows.start..rows.end - 1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn tasks_get_disjoint_slices_when_each_has_two_rows_or_more() {
        let slices: Vec<_> = (0..4).map(|t| task_rows(t, 4, 10)).collect();
        assert_eq!(slices, [0..2, 2..4, 4..6, 6..8]);
        // One row each is too few for a slice of its own: every task shares all of them.
        assert!((0..8).all(|t| task_rows(t, 8, 10) == (0..10)));
        assert_eq!(task_rows(0, 0, 10), 0..10, "no tasks counts as one");
    }

    #[test]
    fn picks_stay_in_the_slice_and_two_rows_differ() {
        let mut rng = StdRng::seed_from_u64(7);
        let rows = 40..43;
        for _ in 0..1_000 {
            assert!(rows.contains(&one_row(&mut rng, &rows)));
            let (a, b) = two_rows(&mut rng, &rows);
            assert!(a != b && rows.contains(&a) && rows.contains(&b), "{a} {b}");
        }
        // A slice of two: both rows, in either order.
        let pairs: std::collections::HashSet<_> =
            (0..100).map(|_| two_rows(&mut rng, &(5..7))).collect();
        assert_eq!(pairs, [(5, 6), (6, 5)].into_iter().collect());
    }
}
