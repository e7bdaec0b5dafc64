//! Scanners: row-range iteration with batching and limits, and the gateway-wide registry of
//! open scanners (ids are shared by all connections, as on a real gateway).
//!
//! A scanner copies out a small batch of row handles under the table's map lock, then reads
//! each row under its own lock, so every returned row is atomic but scans never block writers
//! for long. Rows written after the scanner has passed them are not seen; rows ahead of it are
//! read in their state at the moment it gets there (a real region scanner reads at the MVCC
//! point of its opening instead).

use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{ServerError, ServerResult};
use crate::filter::FilterState;
use crate::store::{read_row, Cell, ReadSpec, Table};

/// How many row handles a scanner copies out of the table per map-lock acquisition.
const ROWS_PER_FETCH: usize = 64;

#[derive(Clone, Debug)]
pub struct ScanSpec {
    /// Inclusive start (the upper end when reversed); empty = unbounded.
    pub start: Vec<u8>,
    /// Exclusive stop (the lower end when reversed); empty = unbounded.
    pub stop: Vec<u8>,
    pub reversed: bool,
    pub read: ReadSpec,
    /// Split rows into results of at most this many cells.
    pub batch: Option<usize>,
    /// Return at most this many rows.
    pub limit: Option<u64>,
}

/// One result of a scan: a whole row, or one batch of a wide row (`partial` unless last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowChunk {
    pub row: Vec<u8>,
    pub cells: Vec<Cell>,
    pub partial: bool,
}

pub struct Scanner {
    table: Arc<Table>,
    spec: ScanSpec,
    /// The last row read; the scan resumes past it.
    last_row: Option<Vec<u8>>,
    pending: VecDeque<RowChunk>,
    rows_returned: u64,
    exhausted: bool,
    filter_state: FilterState,
}

impl Scanner {
    /// Opens a scanner; fails like a region server on a disabled table or unknown family.
    pub fn open(table: Arc<Table>, spec: ScanSpec) -> ServerResult<Self> {
        let schema = table.schema_for_data()?;
        for f in spec.read.columns.families() {
            if schema.family(f).is_none() {
                return Err(table.no_such_family(&schema, f));
            }
        }
        let exhausted = spec.limit == Some(0);
        Ok(Scanner {
            filter_state: FilterState {
                reversed: spec.reversed,
                done: false,
            },
            table,
            spec,
            last_row: None,
            pending: VecDeque::new(),
            rows_returned: 0,
            exhausted,
        })
    }

    fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        let start = match (&self.last_row, self.spec.start.is_empty()) {
            (Some(last), _) => Bound::Excluded(last.as_slice()),
            (None, true) => Bound::Unbounded,
            (None, false) => Bound::Included(self.spec.start.as_slice()),
        };
        let stop = if self.spec.stop.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(self.spec.stop.as_slice())
        };
        if self.spec.reversed {
            (stop, start)
        } else {
            (start, stop)
        }
    }

    /// The family of a scan that reads one: only rows storing a version in it can return
    /// anything.
    fn one_family(&self) -> Option<&[u8]> {
        let mut families = self.spec.read.columns.families();
        match (families.next(), families.next()) {
            (Some(family), None) => Some(family),
            _ => None,
        }
    }

    /// Up to `n` results; an empty list once the scan is exhausted.
    pub fn next(&mut self, n: usize, now_ms: i64) -> ServerResult<Vec<RowChunk>> {
        let mut out = Vec::new();
        while out.len() < n {
            if let Some(chunk) = self.pending.pop_front() {
                out.push(chunk);
                continue;
            }
            if self.exhausted {
                break;
            }
            let schema = self.table.schema_for_data()?;
            let (lower, upper) = self.bounds();
            let rows = self.table.rows_in_range(
                self.one_family(),
                lower,
                upper,
                self.spec.reversed,
                ROWS_PER_FETCH,
            );
            if rows.is_empty() {
                self.exhausted = true;
                break;
            }
            for (key, handle) in rows {
                let cells = {
                    let row = handle.lock();
                    let state = &mut self.filter_state;
                    read_row(&row, &key, &schema, &self.spec.read, now_ms, state)
                };
                self.last_row = Some(key.clone());
                if self.filter_state.done {
                    self.exhausted = true;
                }
                if !cells.is_empty() {
                    self.push_row(key, cells);
                }
                if self.exhausted || out.len() + self.pending.len() >= n {
                    break;
                }
            }
        }
        Ok(out)
    }

    fn push_row(&mut self, key: Vec<u8>, cells: Vec<Cell>) {
        let batch = self.spec.batch.unwrap_or(usize::MAX).max(1);
        let total = cells.len();
        let mut cells = cells.into_iter();
        let mut sent = 0;
        while sent < total {
            let chunk: Vec<Cell> = cells.by_ref().take(batch).collect();
            sent += chunk.len();
            self.pending.push_back(RowChunk {
                row: key.clone(),
                cells: chunk,
                partial: sent < total,
            });
        }
        self.rows_returned += 1;
        if self.spec.limit.is_some_and(|l| self.rows_returned >= l) {
            self.exhausted = true;
        }
    }
}

struct Entry {
    last_used_ms: AtomicI64,
    /// A scanner whose table or family could not be opened still gets an id: the real
    /// gateway's client opens the region scanner lazily, so the failure comes back from every
    /// `getScannerRows`, not from `openScanner`.
    scanner: Mutex<ServerResult<Scanner>>,
}

/// Open scanners by id. Idle scanners expire after the configured timeout; expiry is checked
/// on access and swept when a scanner is opened, so no background thread is needed.
pub struct Scanners {
    next_id: AtomicI32,
    idle_timeout_ms: i64,
    open: Mutex<HashMap<i32, Arc<Entry>>>,
}

impl Scanners {
    pub fn new(idle_timeout_ms: i64) -> Self {
        Scanners {
            next_id: AtomicI32::new(0),
            idle_timeout_ms,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn expired(&self, entry: &Entry, now_ms: i64) -> bool {
        now_ms.saturating_sub(entry.last_used_ms.load(Ordering::Relaxed)) > self.idle_timeout_ms
    }

    pub fn register(&self, scanner: ServerResult<Scanner>, now_ms: i64) -> i32 {
        let mut open = self.open.lock();
        open.retain(|_, e| !self.expired(e, now_ms));
        let id = loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if !open.contains_key(&id) {
                break id;
            }
        };
        open.insert(
            id,
            Arc::new(Entry {
                last_used_ms: AtomicI64::new(now_ms),
                scanner: Mutex::new(scanner),
            }),
        );
        id
    }

    /// The next `n` results of scanner `id`; `TIllegalArgument` for unknown or expired ids.
    pub fn next(&self, id: i32, n: usize, now_ms: i64) -> ServerResult<Vec<RowChunk>> {
        let entry = {
            let mut open = self.open.lock();
            let entry = open.get(&id).cloned();
            match entry {
                Some(e) if !self.expired(&e, now_ms) => e,
                Some(_) => {
                    open.remove(&id);
                    return Err(invalid_id());
                }
                None => return Err(invalid_id()),
            }
        };
        entry.last_used_ms.store(now_ms, Ordering::Relaxed);
        let result = match &mut *entry.scanner.lock() {
            Ok(scanner) => scanner.next(n, now_ms),
            Err(failed) => Err(failed.clone()),
        };
        entry.last_used_ms.store(now_ms, Ordering::Relaxed);
        result
    }

    /// Closing an unknown id is not an error (HBase 2.4.10+).
    pub fn close(&self, id: i32) {
        self.open.lock().remove(&id);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }
}

fn invalid_id() -> ServerError {
    ServerError::IllegalArgument("Invalid scanner Id".to_owned())
}
