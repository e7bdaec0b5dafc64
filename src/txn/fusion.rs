//! Read fusion: reads that transactions issue at the same moment on one table travel together
//! as getMultiples of at most `MAX_GETS` gets beside their leader's (each get keeps its own
//! time range, so each transaction still reads its own snapshot). Transactions woken by one
//! oracle answer issue their first reads together; the gateway then decodes, looks up and
//! answers them in a few calls instead of one each.
//!
//! The first reader of a moment leads: it lets the other ready tasks run once (a yield, no
//! timer), then sends everything gathered and hands each member its rows. A member whose
//! leader failed or vanished reads again alone, so it sees its own outcome; reads are
//! idempotent, so nothing is lost or doubled.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::error::Result;
use crate::hbase::{Get, RowResult};
use crate::txn::store::HBaseAccess;

/// Gets a gathering takes beside its leader's; a reader that finds it full leads the next one.
/// Small enough that the reads woken by one oracle answer travel as a few calls the gateway
/// serves side by side, not one long call that it serves on one thread while the client waits:
/// on the embedded bench's two cores, 16 rather than 256 moved `txn_get` from 70% to 80% of
/// the cores and 11% more operations a second (16a020a; docs/benchmarks.md). Past a dozen
/// gets a call's fixed cost is spread thin, so the cap gives up little of what fusion saves
/// (3% more CPU per read there).
pub(crate) const MAX_GETS: usize = 16;

/// What a member hears from its leader: its rows, or `None` for "read alone".
type Share = Option<Vec<RowResult>>;

/// The reads gathered for one table.
#[derive(Default)]
struct Gathering {
    gets: Vec<Get>,
    members: Vec<(Range<usize>, oneshot::Sender<Share>)>,
}

/// Shared between the map (while readers may join) and its leader (until it sends).
type Shared = Arc<Mutex<Gathering>>;

#[derive(Default)]
pub(crate) struct ReadFusion {
    /// Each table's gathering that readers may still join.
    open: Mutex<HashMap<String, Shared>>,
}

enum Role {
    Leader(Shared),
    Member(oneshot::Receiver<Share>),
}

impl ReadFusion {
    /// Reads `gets` from `table`, fused with whatever other reads of `table` are issued now.
    pub async fn get_many(
        &self,
        store: &dyn HBaseAccess,
        table: &str,
        gets: &[Get],
    ) -> Result<Vec<RowResult>> {
        let role = {
            let mut open = self.open.lock();
            let joined = open.get(table).and_then(|g| {
                let mut g = g.lock();
                (g.gets.len() + gets.len() <= MAX_GETS).then(|| {
                    let (tx, rx) = oneshot::channel();
                    let at = g.gets.len();
                    g.gets.extend_from_slice(gets);
                    g.members.push((at..at + gets.len(), tx));
                    rx
                })
            });
            match joined {
                Some(rx) => Role::Member(rx),
                // None open, or the open one is full: the full one's leader still sends it,
                // and this reader leads the next.
                None => {
                    let fresh = Shared::default();
                    open.insert(table.to_string(), fresh.clone());
                    Role::Leader(fresh)
                }
            }
        };
        match role {
            Role::Member(rx) => match rx.await {
                Ok(Some(rows)) => Ok(rows),
                _ => store.get_many(table, gets).await,
            },
            Role::Leader(mine) => {
                let mut lead = Lead {
                    fusion: self,
                    table,
                    mine,
                    closed: false,
                    gathered: None,
                };
                tokio::task::yield_now().await;
                let gathered = lead.take();
                if gathered.members.is_empty() {
                    return store.get_many(table, gets).await;
                }
                let mut all = gets.to_vec();
                all.extend_from_slice(&gathered.gets);
                lead.gathered = Some(gathered);
                match store.get_many(table, &all).await {
                    Ok(mut rows) if rows.len() == all.len() => {
                        let others = rows.split_off(gets.len());
                        lead.hand_out(others);
                        Ok(rows)
                    }
                    // The members read alone and see their own outcome; so does the leader.
                    _ => {
                        drop(lead);
                        store.get_many(table, gets).await
                    }
                }
            }
        }
    }
}

/// A leader's gathering. Dropped before its members got their rows (the read failed, or the
/// leader's future was dropped), it tells them to read alone.
struct Lead<'a> {
    fusion: &'a ReadFusion,
    table: &'a str,
    mine: Shared,
    /// The gathering was taken out of the map (later readers start a new one).
    closed: bool,
    gathered: Option<Gathering>,
}

impl Lead<'_> {
    /// Closes the gathering and returns it.
    fn take(&mut self) -> Gathering {
        self.closed = true;
        // A reader that found this gathering full has put the next one in its place already.
        let mut open = self.fusion.open.lock();
        if open
            .get(self.table)
            .is_some_and(|g| Arc::ptr_eq(g, &self.mine))
        {
            open.remove(self.table);
        }
        std::mem::take(&mut *self.mine.lock())
    }

    /// Gives each member its rows: `rows` are theirs in order, back to back.
    fn hand_out(&mut self, rows: Vec<RowResult>) {
        let Some(gathered) = self.gathered.take() else {
            return;
        };
        let mut rows = rows.into_iter();
        for (range, tx) in gathered.members {
            let mine: Vec<RowResult> = rows.by_ref().take(range.len()).collect();
            let _ = tx.send(Some(mine));
        }
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        let gathered = match self.gathered.take() {
            Some(g) => g,
            // Dropped while gathering: close it, so its members are not left waiting.
            None if !self.closed => self.take(),
            None => return,
        };
        for (_, tx) in gathered.members {
            let _ = tx.send(None);
        }
    }
}

#[cfg(test)]
#[path = "fusion_tests.rs"]
mod tests;
