//! The families of each transactional table, as this client found them: every transaction
//! checks its tables against them, and they are read once per table (again only when a
//! family is missing from them, since it may have been added since).
//!
//! A client that starts under load sends many transactions at a table it has not looked at
//! yet. Were each of them to read the descriptor, a busy gateway would get one descriptor
//! read per transaction, all at once, for the same answer. Instead the first caller that
//! misses a table reads it, and every caller that misses it meanwhile waits for that read
//! (single flight). Its outcome, value or error, reaches every one of them; an error is not
//! kept, so the next caller reads again. A reader whose future is dropped before its read
//! ends hands the read to the next caller.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::error::Result;
use crate::hbase::RowResult;
use crate::txn::lock_guess::LockCellGuess;
use crate::txn::meta::RowCell;
use crate::txn::refresh::Refreshed;
use crate::txn::{FastMap, FastSet};

/// A table as this client found it: the names of its families, its meta row's place in the
/// meta cache and its prewrites' lock guess, so that a commit reaches all three with one
/// lookup.
pub(crate) struct KnownTable {
    families: FastSet<Vec<u8>>,
    meta: RowCell,
    guess: LockCellGuess,
}

impl std::fmt::Debug for KnownTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownTable")
            .field("families", &self.families)
            .finish_non_exhaustive()
    }
}

impl KnownTable {
    pub fn new(families: impl IntoIterator<Item = Vec<u8>>, meta: RowCell) -> KnownTable {
        KnownTable {
            families: families.into_iter().collect(),
            meta,
            guess: LockCellGuess::default(),
        }
    }

    pub fn contains(&self, family: &[u8]) -> bool {
        self.families.contains(family)
    }

    /// The families' names, sorted, for an error that lists them.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .families
            .iter()
            .map(|f| crate::Binary(f).to_string())
            .collect();
        names.sort();
        names
    }

    /// The table's meta row as the meta cache holds it.
    pub fn meta(&self) -> &Refreshed<Arc<RowResult>> {
        &self.meta
    }

    pub fn lock_guess(&self) -> &LockCellGuess {
        &self.guess
    }
}

pub(crate) type Families = Arc<KnownTable>;

#[derive(Default)]
pub(crate) struct TableFamilies {
    known: RwLock<FastMap<String, Families>>,
    /// The read under way for each table, which callers that miss it join.
    flights: Mutex<FastMap<String, Arc<Flight>>>,
}

/// One read of a table's families and the callers waiting for it.
#[derive(Default)]
struct Flight {
    /// Set once: the read's outcome, or `None` when its reader was dropped before it ended.
    outcome: OnceLock<Option<Result<Families>>>,
    done: Notify,
}

/// What a caller does about a table that is not known.
enum Role {
    Read(Arc<Flight>),
    Wait(Arc<Flight>),
}

impl TableFamilies {
    /// The families of `table`, if a read of them has succeeded.
    pub fn cached(&self, table: &str) -> Option<Families> {
        self.known.read().get(table).cloned()
    }

    /// Reads `table`'s families with `read`, or waits for the read of them under way, and
    /// keeps what a successful read returned.
    pub async fn read<F, Fut>(&self, table: &str, read: F) -> Result<Families>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Families>>,
    {
        loop {
            match self.role(table) {
                Role::Read(flight) => {
                    let mut reading = Reading {
                        cache: self,
                        table,
                        flight,
                        outcome: None,
                    };
                    let outcome = read().await;
                    reading.outcome = Some(outcome.clone());
                    return outcome;
                }
                Role::Wait(flight) => {
                    if let Some(outcome) = flight.wait().await {
                        return outcome.clone();
                    }
                    // Its reader was dropped: this caller (or another) reads.
                }
            }
        }
    }

    fn role(&self, table: &str) -> Role {
        let mut flights = self.flights.lock();
        match flights.get(table) {
            Some(flight) => Role::Wait(flight.clone()),
            None => {
                let flight = Arc::new(Flight::default());
                flights.insert(table.to_string(), flight.clone());
                Role::Read(flight)
            }
        }
    }
}

impl Flight {
    async fn wait(&self) -> &Option<Result<Families>> {
        loop {
            // Created before the outcome is looked at: an outcome set in between still wakes.
            let done = self.done.notified();
            if let Some(outcome) = self.outcome.get() {
                return outcome;
            }
            done.await;
        }
    }
}

/// A read under way. However it ends (its outcome set, or its future dropped), the outcome is
/// published, the flight leaves the map and its waiters wake.
struct Reading<'a> {
    cache: &'a TableFamilies,
    table: &'a str,
    flight: Arc<Flight>,
    outcome: Option<Result<Families>>,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        let outcome = self.outcome.take();
        if let Some(Ok(families)) = &outcome {
            // Known before the flight leaves the map: a caller never finds neither.
            self.cache
                .known
                .write()
                .insert(self.table.to_string(), families.clone());
        }
        let _ = self.flight.outcome.set(outcome);
        {
            let mut flights = self.cache.flights.lock();
            if flights
                .get(self.table)
                .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
            {
                flights.remove(self.table);
            }
        }
        self.flight.done.notify_waiters();
    }
}

#[cfg(test)]
#[path = "families_tests.rs"]
mod tests;
