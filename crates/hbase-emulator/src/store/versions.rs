//! One column's stored versions.
//!
//! Kept oldest first in one ring buffer rather than a tree: timestamps mostly arrive in
//! increasing order (server time, or a transaction's commit timestamp), so a write is a push
//! at the newest end, a read seeks back from there and walks contiguous memory, and dropping
//! the oldest past VERSIONS is a pop at the other end. A column with a long history (every
//! version kept, as transactional tables are) then costs a write no walk down a tree.

use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(super) struct Versions(VecDeque<(i64, Vec<u8>)>);

impl Versions {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Stores `value` at `ts`, replacing a version at the same timestamp (the later write wins).
    pub fn insert(&mut self, ts: i64, value: Vec<u8>) {
        if self.0.back().is_none_or(|(newest, _)| *newest < ts) {
            self.0.push_back((ts, value));
            return;
        }
        match self.0.binary_search_by_key(&ts, |(t, _)| *t) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (ts, value)),
        }
    }

    pub fn remove(&mut self, ts: i64) {
        if let Ok(i) = self.0.binary_search_by_key(&ts, |(t, _)| *t) {
            self.0.remove(i);
        }
    }

    pub fn pop_oldest(&mut self) {
        self.0.pop_front();
    }

    /// The versions below `max` (exclusive; `i64::MAX`, HBase's LATEST, bounds nothing),
    /// newest first.
    pub fn newest_below(&self, max: i64) -> impl Iterator<Item = (i64, &Vec<u8>)> {
        let end = match max {
            i64::MAX => self.0.len(),
            max => self.count_below(max),
        };
        self.0.range(..end).rev().map(|(t, v)| (*t, v))
    }

    /// How many versions are below `max`. Reads mostly ask for the newest versions (a fresh
    /// snapshot is above every commit), so the search gallops from the newest end: one probe
    /// then, and a binary search only as far back as the read goes.
    fn count_below(&self, max: i64) -> usize {
        // Every version at `hi` or after is at or above `max`.
        let mut hi = self.0.len();
        let mut step = 1;
        while hi > 0 {
            let lo = hi.saturating_sub(step);
            if self.0[lo].0 < max {
                let (mut l, mut h) = (lo + 1, hi);
                while l < h {
                    let mid = l + (h - l) / 2;
                    if self.0[mid].0 < max {
                        l = mid + 1;
                    } else {
                        h = mid;
                    }
                }
                return l;
            }
            hi = lo;
            step *= 2;
        }
        0
    }

    /// Every stored timestamp, oldest first.
    pub fn timestamps(&self) -> impl Iterator<Item = i64> + '_ {
        self.0.iter().map(|(t, _)| *t)
    }

    /// Keeps the versions whose timestamp `keep` accepts, in one pass.
    pub fn retain(&mut self, mut keep: impl FnMut(i64) -> bool) {
        self.0.retain(|(t, _)| keep(*t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamps(v: &Versions, max: i64) -> Vec<i64> {
        v.newest_below(max).map(|(t, _)| t).collect()
    }

    #[test]
    fn out_of_order_writes_are_kept_sorted_and_a_repeated_timestamp_replaces() {
        let mut v = Versions::default();
        for ts in [5, 9, 1, 7, 9] {
            v.insert(ts, vec![ts as u8]);
        }
        v.insert(7, b"again".to_vec());
        assert_eq!(stamps(&v, i64::MAX), [9, 7, 5, 1]);
        assert_eq!(v.newest_below(8).next(), Some((7, &b"again".to_vec())));
        assert_eq!(v.len(), 4);
    }

    #[test]
    fn reads_below_a_bound_skip_newer_versions() {
        let mut v = Versions::default();
        for ts in 1..=5 {
            v.insert(ts, Vec::new());
        }
        assert_eq!(stamps(&v, 4), [3, 2, 1]);
        assert_eq!(stamps(&v, 1), Vec::<i64>::new());
        assert_eq!(stamps(&v, 100), [5, 4, 3, 2, 1]);
    }

    #[test]
    fn the_galloping_search_agrees_with_a_scan_at_every_bound() {
        let mut v = Versions::default();
        for ts in (0..100).map(|i| i * 3) {
            v.insert(ts, Vec::new());
        }
        for max in -1..305 {
            let expected: Vec<i64> = (0..100).map(|i| i * 3).filter(|t| *t < max).rev().collect();
            assert_eq!(stamps(&v, max), expected, "below {max}");
        }
    }

    #[test]
    fn retain_drops_exactly_the_rejected_versions() {
        let mut v = Versions::default();
        for ts in 1..=6 {
            v.insert(ts, Vec::new());
        }
        v.retain(|ts| ts % 2 == 0);
        assert_eq!(stamps(&v, i64::MAX), [6, 4, 2]);
    }

    #[test]
    fn removal_and_the_oldest_dropped_first() {
        let mut v = Versions::default();
        for ts in [10, 20, 30] {
            v.insert(ts, Vec::new());
        }
        v.remove(20);
        v.remove(25);
        assert_eq!(v.timestamps().collect::<Vec<_>>(), [10, 30]);
        v.pop_oldest();
        assert_eq!(stamps(&v, i64::MAX), [30]);
        v.pop_oldest();
        assert!(v.is_empty());
    }
}
