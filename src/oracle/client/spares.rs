//! Spare timestamps: a few more than its askers need, carried by a batch once someone has asked
//! for a timestamp at hand ([`TimestampSource::recent_timestamp`](super::TimestampSource)).
//!
//! A spare is handed out only while it is young (issued at most a given age ago) and above every
//! timestamp the client has handed out before, regular or spare: so a caller that got a
//! timestamp, and then a spare, has them in order, as from two round trips. Every batch's
//! askers are recorded here (`high`) before they are woken.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Spares a batch carries when they are wanted: more than one batch's worth of blind writes on
/// a busy client, and free for the oracle (one range either way).
pub(crate) const SPARE_SLOTS: u32 = 16;
/// Batches carry spares for this long after someone last looked for one. Each batch's askers
/// are above the spares before it, so the spares stay usable only if every batch brings more,
/// the commit_ts batch of the blind write that looked included: it leaves a prewrite later,
/// which against a slow or loaded gateway takes tens of milliseconds. Spares cost the oracle
/// nothing, so the window is wide.
const WANTED_FOR: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    /// The unused spares, `next..end`.
    next: u64,
    end: u64,
    /// When the request that issued them left.
    sent: Option<Instant>,
    /// The highest timestamp handed out so far, to an asker or as a spare.
    high: u64,
    /// When someone last looked for a spare.
    wanted: Option<Instant>,
}

#[derive(Default)]
pub(crate) struct Spares {
    state: Mutex<State>,
}

impl Spares {
    /// Spare slots for a batch about to leave at `now` with `slots` asked for: some while spares
    /// are wanted.
    pub fn to_request(&self, slots: u32, max_count: u32, now: Instant) -> u32 {
        let wanted = self.state.lock().wanted;
        let recently = wanted.is_some_and(|at| now.saturating_duration_since(at) <= WANTED_FOR);
        if recently && slots.saturating_add(SPARE_SLOTS) <= max_count {
            SPARE_SLOTS
        } else {
            0
        }
    }

    /// A batch sent at `sent` came back: its askers get timestamps up to `top`; `spares`
    /// (first, count) are unused. Called before the askers are woken.
    pub fn record(&self, sent: Instant, top: u64, spares: Option<(u64, u32)>) {
        let mut s = self.state.lock();
        s.high = s.high.max(top);
        if let Some((first, count)) = spares {
            // Another lane's older batch may come back after a newer one: keep the newer spares.
            if first > s.high && count > 0 {
                s.next = first;
                s.end = first + u64::from(count);
                s.sent = Some(sent);
            }
        }
    }

    /// A spare issued by a request that left at most `max_age` before `now`, above everything
    /// handed out so far; `None` when there is none (the next batch then brings some).
    pub fn take(&self, max_age: Duration, now: Instant) -> Option<u64> {
        let mut s = self.state.lock();
        s.wanted = Some(now);
        let young = s
            .sent
            .is_some_and(|sent| now.saturating_duration_since(sent) <= max_age);
        if young && s.next < s.end && s.next > s.high {
            let ts = s.next;
            s.next += 1;
            s.high = ts;
            return Some(ts);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGE: Duration = Duration::from_millis(2);

    #[test]
    fn spares_are_asked_for_while_wanted() {
        let spares = Spares::default();
        let t0 = Instant::now();
        assert_eq!(spares.to_request(3, 65536, t0), 0, "nobody wants any yet");
        assert_eq!(spares.take(AGE, t0), None);
        assert_eq!(spares.to_request(3, 65536, t0), SPARE_SLOTS);
        assert_eq!(
            spares.to_request(3, 65536, t0 + WANTED_FOR / 2),
            SPARE_SLOTS
        );
        assert_eq!(
            spares.to_request(65530, 65536, t0),
            0,
            "never past the request limit"
        );
        assert_eq!(
            spares.to_request(3, 65536, t0 + WANTED_FOR * 2),
            0,
            "wanted no more"
        );
        // Taking one wants more: the next batch's askers will be above those left.
        spares.record(t0, 10, Some((11, 4)));
        assert_eq!(
            spares.take(AGE, t0 + WANTED_FOR * 2),
            None,
            "too old by now"
        );
        assert_eq!(
            spares.to_request(3, 65536, t0 + WANTED_FOR * 2),
            SPARE_SLOTS
        );
    }

    #[test]
    fn a_blind_write_s_commit_ts_batch_still_carries_spares_after_a_slow_prewrite() {
        let spares = Spares::default();
        let looked = Instant::now();
        assert_eq!(spares.take(Duration::from_secs(60), looked), None);
        // Its start_ts batch carries spares; its commit_ts batch leaves a prewrite later. Without
        // spares of its own, its askers would be above the first batch's, and the next blind
        // write would find none usable.
        let slow_prewrite = Duration::from_millis(200);
        assert_eq!(
            spares.to_request(1, 65536, looked + slow_prewrite),
            SPARE_SLOTS
        );
    }

    #[test]
    fn a_spare_is_young_and_above_everything_handed_out_before() {
        let spares = Spares::default();
        let sent = Instant::now();
        spares.record(sent, 100, Some((101, 2)));
        assert_eq!(spares.take(AGE, sent), Some(101));
        assert_eq!(spares.take(AGE, sent), Some(102));
        assert_eq!(spares.take(AGE, sent), None, "used up");

        spares.record(sent, 200, Some((201, 4)));
        assert_eq!(spares.take(AGE, sent + AGE * 2), None, "too old");

        // A newer batch's askers got 300..=310: its spares are above them.
        spares.record(sent, 310, Some((311, 4)));
        // An older batch of another lane comes back late: its spares would be below 310.
        spares.record(sent, 150, Some((151, 4)));
        assert_eq!(spares.take(AGE, sent), Some(311));
        // Askers of a still newer batch were handed out up to 400 with no spares carried: the
        // remaining ones are below what was handed out, so none is given.
        spares.record(sent, 400, None);
        assert_eq!(spares.take(AGE, sent), None);
    }
}
