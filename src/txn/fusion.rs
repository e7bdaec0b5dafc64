//! Read fusion: reads that transactions issue at the same moment on one table travel as one
//! getMultiple (each get keeps its own time range, so each transaction still reads its own
//! snapshot). Transactions woken by one oracle answer issue their first reads together; the
//! gateway then decodes, looks up and answers them in one call instead of one each.
//!
//! The first reader of a moment leads: it lets the other ready tasks run once (a yield, no
//! timer), then sends everything gathered and hands each member its rows. A member whose
//! leader failed or vanished reads again alone, so it sees its own outcome; reads are
//! idempotent, so nothing is lost or doubled.

use std::collections::HashMap;
use std::ops::Range;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::error::Result;
use crate::hbase::{Get, RowResult};
use crate::txn::store::HBaseAccess;

/// Gets one fused read may carry; later readers start the next one.
const MAX_GETS: usize = 256;

/// What a member hears from its leader: its rows, or `None` for "read alone".
type Share = Option<Vec<RowResult>>;

/// The reads gathered for one table.
#[derive(Default)]
struct Gathering {
    gets: Vec<Get>,
    members: Vec<(Range<usize>, oneshot::Sender<Share>)>,
}

#[derive(Default)]
pub(crate) struct ReadFusion {
    open: Mutex<HashMap<String, Gathering>>,
}

enum Role {
    Leader,
    Member(oneshot::Receiver<Share>),
    /// The current gathering is full.
    Alone,
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
            match open.get_mut(table) {
                Some(g) if g.gets.len() + gets.len() <= MAX_GETS => {
                    let (tx, rx) = oneshot::channel();
                    let at = g.gets.len();
                    g.gets.extend_from_slice(gets);
                    g.members.push((at..at + gets.len(), tx));
                    Role::Member(rx)
                }
                Some(_) => Role::Alone,
                None => {
                    open.insert(table.to_string(), Gathering::default());
                    Role::Leader
                }
            }
        };
        match role {
            Role::Alone => store.get_many(table, gets).await,
            Role::Member(rx) => match rx.await {
                Ok(Some(rows)) => Ok(rows),
                _ => store.get_many(table, gets).await,
            },
            Role::Leader => {
                let mut lead = Lead {
                    fusion: self,
                    table,
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
    /// The gathering was taken out of the map (later readers start a new one).
    closed: bool,
    gathered: Option<Gathering>,
}

impl Lead<'_> {
    /// Closes the gathering and returns it.
    fn take(&mut self) -> Gathering {
        self.closed = true;
        self.fusion
            .open
            .lock()
            .remove(self.table)
            .unwrap_or_default()
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
