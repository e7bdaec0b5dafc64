//! An `HBaseAccess` wrapper that misbehaves on chosen checkAndMutate calls: loses their
//! replies, drops them, delays them, or holds them at a gate the test opens. Calls are chosen by
//! the protocol step they carry (recognised from the mutation itself) and by row, because the
//! order of parallel prewrites and commits is not fixed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use percolator::format::{decode_lock_state, decode_write, LockState, WriteKind};
use percolator::hbase::{
    CheckAndMutate, CompareOp, Delete, Get, Mutation, Put, RowResult, Scan, TableDescriptor,
};
use percolator::txn::{CellKey, HBaseAccess, LockGranularity, Schema};
use percolator::{Error, HBaseClient, Peer, Result, TimestampSource};

use super::{raw_lock_in, Env};

/// The protocol step a checkAndMutate performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CasKind {
    Prewrite,
    Commit,
    Rollback,
    Fence,
    Heartbeat,
    Other,
}

/// Recognises the step from what the CAS writes: a commit puts a Put/Delete write record, a
/// rollback or fence a Rollback record or a released lock, a prewrite or heartbeat a lock.
pub fn classify(schema: &Schema, cam: &CheckAndMutate) -> CasKind {
    let puts = cam.mutations.mutations.iter().filter_map(|m| match m {
        Mutation::Put(p) => Some(p),
        Mutation::Delete(_) => None,
    });
    let cells: Vec<_> = puts.flat_map(|p| p.cells.iter()).collect();
    let conditional_on_a_lock = cam.op == CompareOp::Equal && cam.value.first() == Some(&1);
    let write = cells.iter().find(|c| c.family == schema.write_family);
    if let Some(record) = write.and_then(|c| decode_write(&c.value).ok()) {
        return match (record.kind, conditional_on_a_lock) {
            (WriteKind::Rollback, true) => CasKind::Rollback,
            (WriteKind::Rollback, false) => CasKind::Fence,
            _ => CasKind::Commit,
        };
    }
    let lock = cells.iter().find(|c| c.family == schema.lock_family);
    match lock.map(|c| decode_lock_state(Some(&c.value))) {
        Some(Ok(LockState::Locked(_))) if conditional_on_a_lock => CasKind::Heartbeat,
        Some(Ok(LockState::Locked(_))) => CasKind::Prewrite,
        Some(Ok(LockState::Released { .. })) => CasKind::Rollback,
        _ => CasKind::Other,
    }
}

/// A point where a call waits until the test lets it go.
#[derive(Default)]
pub struct Gate {
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Gate {
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    /// Arrives at the gate and waits there until it opens (a call held, or a test hook that
    /// pauses the client at a seam).
    pub fn pass(&self) {
        let mut state = self.state.lock();
        state.0 = true;
        self.changed.notify_all();
        while !state.1 {
            self.changed.wait(&mut state);
        }
    }

    /// Waits until a call arrived at the gate; false if none did within `limit`.
    pub fn wait_reached(&self, limit: Duration) -> bool {
        let mut state = self.state.lock();
        let deadline = std::time::Instant::now() + limit;
        while !state.0 {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return state.0;
            }
        }
        true
    }

    pub fn open(&self) {
        self.state.lock().1 = true;
        self.changed.notify_all();
    }

    /// Opens the gate when dropped, so a failing assertion cannot leave a call held forever
    /// (a scoped thread waiting at the gate would hang the test instead of failing it).
    pub fn opens_on_drop(self: &Arc<Self>) -> OpenOnDrop {
        OpenOnDrop(self.clone())
    }
}

pub struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// What happens to a chosen call.
#[derive(Clone)]
pub enum Fault {
    /// Applied, then reported as `OutcomeUnknown` (the reply was lost).
    LoseReply,
    /// Reported as `OutcomeUnknown` without being applied (the request was lost).
    DropRequest,
    /// Applied after a pause.
    Delay(Duration),
    /// Applied once the gate opens.
    Hold(Arc<Gate>),
    /// Another call, made from this one, applied in its place; then reported as
    /// `OutcomeUnknown` (the client cannot tell what happened).
    Instead(Rewrite),
    /// Applied, then applied again by a retry inside the gateway (its region moved between
    /// the apply and the reply), whose answer is the one returned: `false`, the condition no
    /// longer holding, for the client's own write.
    AppliedTwice,
    /// Applied, then reported as the gateway's HBase client giving up after its retries (a
    /// region moving between the apply and the reply): an HBase error, `canRetry` false.
    AppliedThenGaveUp,
    /// [`Fault::AppliedThenGaveUp`], and the region stays away: the next this many reads of
    /// the row fail the same way before it is back.
    AppliedThenAway(usize),
}

/// Makes the call a [`Fault::Instead`] applies from the call the client sent.
pub type Rewrite = Arc<dyn Fn(&CheckAndMutate) -> CheckAndMutate + Send + Sync>;

struct Rule {
    kind: CasKind,
    row: Vec<u8>,
    fault: Fault,
    remaining: usize,
}

/// A row whose next reads are answered only once a gate opens, and how many more are.
type ReadHold = (Vec<u8>, Arc<Gate>, usize);

/// A checkAndMutate seen by the store: its step and row.
pub type Call = (CasKind, Vec<u8>);

pub struct FaultyStore {
    inner: HBaseClient,
    schema: Schema,
    rules: Mutex<Vec<Rule>>,
    fired: Mutex<Vec<Call>>,
    read_holds: Mutex<Vec<ReadHold>>,
    /// Tables whose next puts fail as if their region were moving, and how many more do.
    moving_puts: Mutex<Vec<(String, usize)>>,
    /// Rows whose next reads fail as if their region were moving, and how many more do.
    moving_reads: Mutex<Vec<(Vec<u8>, usize)>>,
}

impl FaultyStore {
    pub fn new(inner: HBaseClient, schema: Schema) -> Arc<FaultyStore> {
        Arc::new(FaultyStore {
            inner,
            schema,
            rules: Mutex::new(Vec::new()),
            fired: Mutex::new(Vec::new()),
            read_holds: Mutex::new(Vec::new()),
            moving_puts: Mutex::new(Vec::new()),
            moving_reads: Mutex::new(Vec::new()),
        })
    }

    /// The next `times` reads that touch `row` are served, and their answers held at `gate`
    /// until it opens: the reader acts on what it read while the test changes the row.
    pub fn hold_reads_of(&self, row: &str, gate: Arc<Gate>, times: usize) {
        self.read_holds
            .lock()
            .push((row.as_bytes().to_vec(), gate, times));
    }

    fn take_read_hold(&self, gets: &[Get]) -> Option<Arc<Gate>> {
        let mut holds = self.read_holds.lock();
        let (_, gate, remaining) = holds
            .iter_mut()
            .find(|(row, _, left)| *left > 0 && gets.iter().any(|g| g.row == *row))?;
        *remaining -= 1;
        Some(gate.clone())
    }

    /// The next `times` puts to `table` are not applied and fail as the gateway reports a
    /// region in transition: its HBase client gave up after its retries.
    pub fn move_puts_to(&self, table: &str, times: usize) {
        self.moving_puts.lock().push((table.to_string(), times));
    }

    /// The moving tables' regions are back: puts to them are applied again.
    pub fn puts_settle(&self) {
        self.moving_puts.lock().clear();
    }

    /// Puts to a moving table that are still to fail.
    pub fn moving_puts_left(&self) -> usize {
        self.moving_puts.lock().iter().map(|(_, n)| n).sum()
    }

    /// The next `times` reads of `row` fail as the gateway reports a region in transition.
    pub fn move_reads_of(&self, row: &str, times: usize) {
        self.moving_reads
            .lock()
            .push((row.as_bytes().to_vec(), times));
    }

    /// Reads of a moving row that are still to fail.
    pub fn moving_reads_left(&self) -> usize {
        self.moving_reads.lock().iter().map(|(_, n)| n).sum()
    }

    fn read_is_moving(&self, gets: &[Get]) -> Option<Vec<u8>> {
        let mut moving = self.moving_reads.lock();
        let (row, left) = moving
            .iter_mut()
            .find(|(row, n)| *n > 0 && gets.iter().any(|g| g.row == *row))?;
        *left -= 1;
        Some(row.clone())
    }

    fn put_is_moving(&self, table: &str) -> bool {
        let mut moving = self.moving_puts.lock();
        let Some((_, left)) = moving.iter_mut().find(|(t, n)| t == table && *n > 0) else {
            return false;
        };
        *left -= 1;
        true
    }

    /// Applies `fault` to the next `times` calls of step `kind` on `row`.
    pub fn inject(&self, kind: CasKind, row: &str, fault: Fault, times: usize) {
        self.rules.lock().push(Rule {
            kind,
            row: row.as_bytes().to_vec(),
            fault,
            remaining: times,
        });
    }

    /// The calls a fault was applied to, in order.
    pub fn fired(&self) -> Vec<Call> {
        self.fired.lock().clone()
    }

    fn take_fault(&self, cam: &CheckAndMutate) -> Option<Fault> {
        let kind = classify(&self.schema, cam);
        let mut rules = self.rules.lock();
        let rule = rules
            .iter_mut()
            .find(|r| r.remaining > 0 && r.kind == kind && r.row == cam.row)?;
        rule.remaining -= 1;
        self.fired.lock().push((kind, cam.row.clone()));
        Some(rule.fault.clone())
    }
}

fn lost(table: &str, row: &[u8]) -> Error {
    Error::OutcomeUnknown {
        method: "checkAndMutate",
        table: table.to_string(),
        row: row.to_vec(),
        source: Box::new(Error::Transport {
            peer: Peer::HBase,
            addr: "injected".into(),
            source: std::sync::Arc::new(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "reply lost",
            )),
        }),
    }
}

/// What the gateway sends when its client gave up on a call whose region moved: HBase's
/// `RetriesExhaustedException` message over a `NotServingRegionException`, as HBase 2.x
/// words it, with `canRetry` false.
fn gave_up(row: &[u8]) -> Error {
    Error::ServerIo {
        message: format!(
            "Failed after attempts=2, exceptions:\n2026-11-30T10:00:01.234Z, \
             RpcRetryingCaller{{globalStartTime=2026-11-30T10:00:00.100Z, pause=100, maxAttempts=2}}, \
             org.apache.hadoop.hbase.NotServingRegionException: t,{},1.c5f998a0b1. is not online on \
             rs1.example.com,16020,1700000000000\n",
            String::from_utf8_lossy(row)
        ),
        can_retry: false,
        exception: None,
    }
}

#[async_trait::async_trait]
impl HBaseAccess for FaultyStore {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        if let Some(row) = self.read_is_moving(gets) {
            return Err(gave_up(&row));
        }
        let rows = HBaseAccess::get_many(&self.inner, table, gets).await;
        if let Some(gate) = self.take_read_hold(gets) {
            let _ = tokio::task::spawn_blocking(move || gate.pass()).await;
        }
        rows
    }

    async fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        let fault = self.take_fault(cam);
        if let Some(Fault::DropRequest) = fault {
            return Err(lost(table, &cam.row));
        }
        if let Some(Fault::Instead(rewrite)) = &fault {
            HBaseAccess::check_and_mutate(&self.inner, table, &rewrite(cam)).await?;
            return Err(lost(table, &cam.row));
        }
        match fault {
            Some(Fault::Delay(pause)) => tokio::time::sleep(pause).await,
            // The gate blocks a thread; off the runtime's workers.
            Some(Fault::Hold(ref gate)) => {
                let gate = Arc::clone(gate);
                let _ = tokio::task::spawn_blocking(move || gate.pass()).await;
            }
            _ => {}
        }
        let applied = HBaseAccess::check_and_mutate(&self.inner, table, cam).await;
        match fault {
            Some(Fault::LoseReply) => applied.and_then(|_| Err(lost(table, &cam.row))),
            Some(Fault::AppliedTwice) => {
                applied?;
                HBaseAccess::check_and_mutate(&self.inner, table, cam).await
            }
            Some(Fault::AppliedThenGaveUp) => applied.and_then(|_| Err(gave_up(&cam.row))),
            Some(Fault::AppliedThenAway(reads)) => {
                applied?;
                self.moving_reads.lock().push((cam.row.clone(), reads));
                Err(gave_up(&cam.row))
            }
            _ => applied,
        }
    }

    async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        HBaseAccess::scan_page(&self.inner, table, scan, rows).await
    }

    async fn put(&self, table: &str, put: &Put) -> Result<()> {
        if self.put_is_moving(table) {
            return Err(gave_up(&put.row));
        }
        HBaseAccess::put(&self.inner, table, put).await
    }

    async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        HBaseAccess::delete(&self.inner, table, delete).await
    }

    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        HBaseAccess::table_descriptor(&self.inner, table).await
    }
}

/// A timestamp source that, when asked for the `nth` timestamp (a transaction's commit_ts is
/// its second), first records the lock state of `watch` as stored in HBase at that moment.
pub struct ProbingTso {
    inner: Arc<dyn TimestampSource>,
    hbase: HBaseClient,
    schema: Schema,
    granularity: LockGranularity,
    watch: Vec<CellKey>,
    nth: usize,
    calls: AtomicUsize,
    seen: Mutex<Option<Vec<LockState>>>,
}

impl ProbingTso {
    pub fn new(env: &Env, watch: Vec<CellKey>, nth: usize) -> Arc<ProbingTso> {
        Arc::new(ProbingTso {
            inner: env.tso.clone(),
            hbase: env.hbase.clone(),
            schema: env.schema.clone(),
            granularity: env.granularity,
            watch,
            nth,
            calls: AtomicUsize::new(0),
            seen: Mutex::new(None),
        })
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The lock states seen at the `nth` call, in the order of `watch`.
    pub fn seen(&self) -> Option<Vec<LockState>> {
        self.seen.lock().clone()
    }
}

#[async_trait::async_trait]
impl TimestampSource for ProbingTso {
    async fn timestamp(&self) -> Result<u64> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.nth {
            let states = self
                .watch
                .iter()
                .map(|k| {
                    let raw = raw_lock_in(&self.hbase, &self.schema, self.granularity, k);
                    decode_lock_state(raw.as_deref()).expect("decodable lock")
                })
                .collect();
            *self.seen.lock() = Some(states);
        }
        self.inner.timestamp().await
    }
}
