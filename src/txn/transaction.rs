//! The async transaction: snapshot reads, buffered writes, commit.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tokio::sync::OnceCell;

use crate::error::{Error, Result};
use crate::hbase::Delete;
use crate::key::CellKey;
use crate::txn::committer::{Committed, Committer};
use crate::txn::mutation::Write;
use crate::txn::open_txns::Registration;
use crate::txn::session::Session;
use crate::txn::snapshot::{ScanCursor, ScannedRow, SnapshotReader};
use crate::txn::stats::Stats;

/// A row's columns during a scan merge: (family, qualifier) -> value, `None` = deleted here.
type RowWrites = BTreeMap<(Vec<u8>, Vec<u8>), Option<Vec<u8>>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Active,
    /// A snapshot at a chosen timestamp: reads only.
    ReadOnly,
    Committed,
    RolledBack,
}

/// A snapshot-isolated transaction, async. Reads see the snapshot at `start_ts` plus this
/// transaction's own writes; writes are buffered until [`commit`](Self::commit).
///
/// The start timestamp is fetched by the first operation that needs it, so the snapshot is
/// taken after `begin`, which is all snapshot isolation and real-time order ask.
///
/// ```no_run
/// # async fn demo(client: percolator::AsyncClient) -> percolator::Result<()> {
/// let mut txn = client.begin().await?;
/// let balance = txn.get("accounts", "alice", "f", "balance").await?;
/// txn.set("accounts", "alice", "f", "balance", b"10".to_vec())?;
/// let commit_ts = txn.commit().await?;
/// # let _ = (balance, commit_ts); Ok(()) }
/// ```
pub struct AsyncTransaction {
    session: Session,
    /// The start timestamp once taken, published as open until this transaction is dropped
    /// (docs/gc.md).
    start: OnceCell<Registration>,
    writes: BTreeMap<CellKey, Write>,
    /// The first written key becomes the primary.
    first: Option<CellKey>,
    /// Columns given a weak notification ([`notify`](Self::notify)).
    notified: BTreeSet<CellKey>,
    /// Values read at the snapshot already by [`get_many_with_newest`](Self::get_many_with_newest),
    /// served again without a round trip.
    remembered: HashMap<CellKey, Option<Vec<u8>>>,
    state: State,
}

impl AsyncTransaction {
    pub(crate) fn new(session: Session) -> AsyncTransaction {
        Stats::bump(&session.ctx().stats().begun);
        AsyncTransaction {
            session,
            start: OnceCell::new(),
            writes: BTreeMap::new(),
            first: None,
            notified: BTreeSet::new(),
            remembered: HashMap::new(),
            state: State::Active,
        }
    }

    pub(crate) fn read_only_at(session: Session, ts: u64) -> AsyncTransaction {
        let registration = session.ctx().open_txns().register(ts);
        AsyncTransaction {
            session,
            start: OnceCell::new_with(Some(registration)),
            writes: BTreeMap::new(),
            first: None,
            notified: BTreeSet::new(),
            remembered: HashMap::new(),
            state: State::ReadOnly,
        }
    }

    /// The snapshot timestamp, fetched now if no operation has fixed it yet.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// let ts = txn.start_ts().await?;
    /// assert_eq!(txn.start_ts().await?, ts, "fixed once");
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn start_ts(&self) -> Result<u64> {
        let start = self
            .start
            .get_or_try_init(|| async {
                let ctx = self.session.ctx();
                Ok::<_, Error>(ctx.open_txns().register(ctx.timestamp().await?))
            })
            .await?;
        Ok(start.start_ts())
    }

    /// The start timestamp if it is fixed already (for error reports).
    fn known_start_ts(&self) -> u64 {
        self.start.get().map_or(0, Registration::start_ts)
    }

    /// HBase RPCs this transaction has made so far (reads, prewrites, commits, resolution).
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// txn.get("t", "row", "f", "q").await?;
    /// assert_eq!(txn.rpc_count(), 1);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rpc_count(&self) -> u64 {
        self.session.rpcs()
    }

    fn check_readable(&self) -> Result<()> {
        match self.state {
            State::Active | State::ReadOnly => Ok(()),
            State::Committed => Err(self.closed("committed")),
            State::RolledBack => Err(self.closed("rolled back")),
        }
    }

    fn check_writable(&self) -> Result<()> {
        match self.state {
            State::ReadOnly => Err(Error::IllegalArgument {
                message: format!(
                    "snapshot at {} is read-only: it cannot write",
                    self.known_start_ts()
                ),
            }),
            _ => self.check_readable(),
        }
    }

    fn closed(&self, state: &'static str) -> Error {
        Error::TransactionClosed {
            start_ts: self.known_start_ts(),
            state,
        }
    }

    /// Reads one cell at the snapshot.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client.run(async |txn| txn.set("t", "row", "f", "q", b"v".to_vec())).await?;
    /// let txn = client.begin().await?;
    /// assert_eq!(txn.get("t", "row", "f", "q").await?, Some(b"v".to_vec()));
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn get(
        &self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        Ok(self
            .get_many(std::slice::from_ref(&key))
            .await?
            .pop()
            .flatten())
    }

    /// Reads many cells (any tables and rows) at the snapshot, batched per table and row.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// use percolator::CellKey;
    /// let keys = [CellKey::new("t", "a", "f", "q")?, CellKey::new("t", "b", "f", "q")?];
    /// let txn = client.begin().await?;
    /// assert_eq!(txn.get_many(&keys).await?, [None, None]);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn get_many(&self, keys: &[CellKey]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_readable()?;
        let unbuffered: Vec<CellKey> = keys
            .iter()
            .filter(|k| self.known(k).is_none())
            .cloned()
            .collect();
        let snapshot = self.start_ts().await?;
        let fetched = SnapshotReader::new(&self.session, snapshot)
            .read(&unbuffered)
            .await?;
        // After the read: GC may have collected what it needed (docs/design.md invariant 13).
        self.session.ctx().check_snapshot(snapshot).await?;
        let mut fetched = fetched.into_iter();
        Ok(keys
            .iter()
            .map(|k| match self.known(k) {
                Some(known) => known.map(<[u8]>::to_vec),
                None => fetched.next().flatten(),
            })
            .collect())
    }

    /// Reads `keys` at the snapshot (from storage: call it before writing them), and for each
    /// the commit_ts of its newest change at any version, 0 if none (see
    /// `SnapshotReader::read_with_newest`). Observers learn from it whether their snapshot shows
    /// every change they acknowledge. Later reads of these keys cost no round trip.
    pub(crate) async fn get_many_with_newest(
        &mut self,
        keys: &[CellKey],
    ) -> Result<Vec<(Option<Vec<u8>>, u64)>> {
        self.check_readable()?;
        let snapshot = self.start_ts().await?;
        let read = SnapshotReader::new(&self.session, snapshot)
            .read_with_newest(keys)
            .await?;
        self.session.ctx().check_snapshot(snapshot).await?;
        for (key, (value, _)) in keys.iter().zip(&read) {
            self.remembered.insert(key.clone(), value.clone());
        }
        Ok(read)
    }

    /// What a read of `key` returns without a round trip: this transaction's own write, or a
    /// value it has read already and remembered.
    fn known(&self, key: &CellKey) -> Option<Option<&[u8]>> {
        self.buffered(key)
            .or_else(|| self.remembered.get(key).map(|v| v.as_deref()))
    }

    /// What this transaction wrote to `key`, if it changed its value: `Some(None)` for a
    /// delete. A key only locked reads from the snapshot.
    fn buffered(&self, key: &CellKey) -> Option<Option<&[u8]>> {
        match self.writes.get(key)? {
            Write::Put(v) => Some(Some(v)),
            Write::Delete => Some(None),
            Write::Lock => None,
        }
    }

    /// Reads one cell at the snapshot and locks it as if written: a transaction that commits a
    /// write to it after this one's snapshot makes this commit fail (and the other way round),
    /// which is how a reader opts out of write skew for the cells its decision rests on.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// let alice = txn.get_for_update("t", "alice", "f", "on_call").await?;
    /// txn.set("t", "bob", "f", "on_call", b"no".to_vec())?;
    /// txn.commit().await?;
    /// # let _ = alice;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn get_for_update(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.check_writable()?;
        let value = self
            .get_many(std::slice::from_ref(&key))
            .await?
            .pop()
            .flatten();
        self.lock_key(key)?;
        Ok(value)
    }

    /// Locks cells without reading or changing them: committing then conflicts with any
    /// commit to them after this transaction's snapshot (see
    /// [`get_for_update`](Self::get_for_update)).
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.lock_keys(&[percolator::CellKey::new("t", "config", "f", "q")?])?;
    /// txn.commit().await?;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_keys(&mut self, keys: &[CellKey]) -> Result<()> {
        self.check_writable()?;
        for key in keys {
            self.lock_key(key.clone())?;
        }
        Ok(())
    }

    fn lock_key(&mut self, key: CellKey) -> Result<()> {
        if self.writes.contains_key(&key) {
            // Written already: the write locks it.
            return Ok(());
        }
        self.buffer(key, Write::Lock)
    }

    /// Whether the cell has a value at the snapshot (this transaction's own writes included).
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// assert!(!txn.key_exists("t", "row", "f", "q").await?);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn key_exists(
        &self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<bool> {
        Ok(self.get(table, row, family, qualifier).await?.is_some())
    }

    /// Scans rows `[start, stop)` of `table` at the snapshot (empty `stop` = to the end), up to
    /// `limit` rows that have a visible column, in ascending order. Includes this
    /// transaction's own writes.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client.run(async |txn| txn.set("t", "a", "f", "q", b"v".to_vec())).await?;
    /// let rows = client.begin().await?.scan("t", "", "", 10).await?;
    /// assert_eq!(rows.len(), 1);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn scan(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
        limit: usize,
    ) -> Result<Vec<ScannedRow>> {
        self.stream(table, start.as_ref(), stop.as_ref(), false)?
            .take(limit)
            .await
    }

    /// [`scan`](Self::scan) in descending order: the last rows of `[start, stop)` first.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// client
    ///     .run(async |txn| {
    ///         txn.set("t", "a", "f", "q", b"1".to_vec())?;
    ///         txn.set("t", "b", "f", "q", b"2".to_vec())
    ///     })
    ///     .await?;
    /// let rows = client.begin().await?.scan_reverse("t", "", "", 10).await?;
    /// assert_eq!(rows[0].row, b"b");
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn scan_reverse(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
        limit: usize,
    ) -> Result<Vec<ScannedRow>> {
        self.stream(table, start.as_ref(), stop.as_ref(), true)?
            .take(limit)
            .await
    }

    /// Rows `[start, stop)` of `table` at the snapshot in ascending order, fetched a page at
    /// a time as they are consumed, with no limit. Includes this transaction's own writes as
    /// of this call.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// let mut rows = txn.scan_stream("t", "", "")?;
    /// while let Some(row) = rows.next().await? {
    ///     println!("{:?}", row.row);
    /// }
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_stream(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
    ) -> Result<RowStream<'_>> {
        self.stream(table, start.as_ref(), stop.as_ref(), false)
    }

    /// [`scan_stream`](Self::scan_stream) in descending order.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// let last = txn.scan_reverse_stream("t", "", "")?.next().await?;
    /// assert!(last.is_none(), "an empty table");
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_reverse_stream(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
    ) -> Result<RowStream<'_>> {
        self.stream(table, start.as_ref(), stop.as_ref(), true)
    }

    fn stream(
        &self,
        table: &str,
        start: &[u8],
        stop: &[u8],
        reverse: bool,
    ) -> Result<RowStream<'_>> {
        self.check_readable()?;
        let cursor = ScanCursor::new(table, start, stop, reverse);
        let mut own: BTreeMap<Vec<u8>, RowWrites> = BTreeMap::new();
        for (k, v) in self
            .writes
            .iter()
            .filter(|(k, _)| k.table == table && cursor.in_range(&k.row))
        {
            let value = match v {
                Write::Put(v) => Some(v.clone()),
                Write::Delete => None,
                Write::Lock => continue,
            };
            own.entry(k.row.clone())
                .or_default()
                .insert((k.family.clone(), k.qualifier.clone()), value);
        }
        // Merged from the back: the next row in scan order goes last.
        let mut own: Vec<_> = own.into_iter().collect();
        if !reverse {
            own.reverse();
        }
        Ok(RowStream {
            txn: self,
            cursor,
            stored: std::collections::VecDeque::new(),
            own,
        })
    }

    /// Buffers a write of `value` to one cell.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// txn.commit().await?;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        value: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.set_key(key, value.into())
    }

    fn set_key(&mut self, key: CellKey, value: Vec<u8>) -> Result<()> {
        let limit = self.session.ctx().opts().max_value_size;
        if value.len() > limit {
            return Err(Error::ValueTooLarge {
                table: key.table,
                row: key.row,
                size: value.len(),
                limit,
            });
        }
        self.buffer(key, Write::Put(value))
    }

    /// Buffers a write of `value` to a cell that must not have a value yet (put-if-absent):
    /// `KeyExists` (fatal) if it has one at the snapshot. A transaction that gives it a value
    /// after the snapshot makes this one's commit fail with a write conflict, as for any
    /// write, so an insert never overwrites a value it did not see.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.insert("t", "user:1", "f", "name", b"ann".to_vec()).await?;
    /// txn.commit().await?;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn insert(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        value: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.check_writable()?;
        if self.get_many(std::slice::from_ref(&key)).await?[0].is_some() {
            return Err(Error::KeyExists {
                column: key.column(),
                table: key.table,
                row: key.row,
                start_ts: self.known_start_ts(),
            });
        }
        self.set_key(key, value.into())
    }

    /// Buffers a transactional delete of one cell (a Delete write record, never an HBase
    /// delete marker: docs/design.md invariant 6).
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.delete("t", "row", "f", "q")?;
    /// txn.commit().await?;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.buffer(key, Write::Delete)
    }

    /// Sets a weak notification on a column without changing its value: the column's
    /// observer runs on this row once the transaction commits (the column is locked like
    /// [`lock_keys`](Self::lock_keys) does, so the commit leaves a lock-only write record the
    /// observer sees as new). See `docs/observers.md`.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.notify("t", "doc1", "f", "content")?;
    /// txn.commit().await?;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn notify(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<()> {
        let key = CellKey::new(table, row.as_ref(), family.as_ref(), qualifier.as_ref())?;
        self.lock_key(key.clone())?;
        self.notified.insert(key);
        Ok(())
    }

    /// Buffers a write to a cell of a project family (an observer's acknowledgment in `_pa`),
    /// which user code cannot write.
    pub(crate) fn set_system(&mut self, key: CellKey, value: Vec<u8>) -> Result<()> {
        self.check_writable()?;
        self.buffer_unchecked(key, Write::Put(value));
        Ok(())
    }

    fn buffer(&mut self, key: CellKey, write: Write) -> Result<()> {
        self.check_writable()?;
        if self
            .session
            .ctx()
            .schema()
            .is_percolator_family(&key.family)
        {
            return Err(Error::IllegalArgument {
                message: format!("{key} is in a percolator family"),
            });
        }
        self.buffer_unchecked(key, write);
        Ok(())
    }

    fn buffer_unchecked(&mut self, key: CellKey, write: Write) {
        if self.first.is_none() {
            self.first = Some(key.clone());
        }
        self.writes.insert(key, write);
    }

    /// Commits the buffered writes and returns the commit timestamp (`start_ts` for a
    /// transaction that wrote nothing: it needs no commit).
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// let commit_ts = txn.commit().await?;
    /// assert!(commit_ts > 0);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn commit(self) -> Result<u64> {
        Ok(self.commit_with(None).await?.commit_ts)
    }

    /// Commits with `extra`, a delete in the primary's row (the first written), landing in the
    /// commit point's CAS; `Committed::extra_applied` says whether it did. A read-only
    /// transaction commits nothing, so nothing is applied either.
    pub(crate) async fn commit_with(mut self, extra: Option<Delete>) -> Result<Committed> {
        self.check_readable()?;
        let read_only = self.state == State::ReadOnly;
        self.state = State::Committed;
        if self.start.get().is_none() && self.first.is_some() {
            // Nothing was read (a read-only snapshot has its start_ts from the outset), so no
            // snapshot is owed: a start_ts at hand saves a round trip.
            let ctx = self.session.ctx();
            if let Some(ts) = ctx.recent_timestamp() {
                let _ = self.start.set(ctx.open_txns().register(ts));
            }
        }
        let start_ts = self.start_ts().await?;
        let Some(primary) = self.first.take().filter(|_| !read_only) else {
            return Ok(Committed {
                commit_ts: start_ts,
                extra_applied: false,
            });
        };
        self.session.ctx().check_snapshot(start_ts).await?;
        let mut writes = std::mem::take(&mut self.writes);
        let primary_write = writes.remove(&primary).unwrap_or(Write::Lock);
        let mut ordered = Vec::with_capacity(writes.len() + 1);
        ordered.push((primary, primary_write));
        ordered.extend(writes);
        let notify =
            crate::txn::notify::notify_flags(self.session.ctx(), &ordered, &self.notified).await?;
        Committer::new(self.session.clone(), start_ts, ordered, notify)
            .with_primary_extra(extra)
            .commit()
            .await
    }

    /// Discards the buffered writes. Nothing was written before commit, so nothing to undo.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// txn.rollback();
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rollback(mut self) {
        self.state = State::RolledBack;
        self.writes.clear();
    }
}

/// The rows of a scan, fetched a page at a time as they are consumed (see
/// [`AsyncTransaction::scan_stream`]).
///
/// ```
/// # let emulator = percolator::emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// let txn = client.begin().await?;
/// let rows = txn.scan_stream("t", "", "")?.take(10).await?;
/// assert!(rows.is_empty());
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RowStream<'t> {
    txn: &'t AsyncTransaction,
    cursor: ScanCursor,
    stored: std::collections::VecDeque<ScannedRow>,
    /// This transaction's writes in range, the next one to merge last.
    own: Vec<(Vec<u8>, RowWrites)>,
}

impl RowStream<'_> {
    /// Up to `limit` rows, consuming the stream.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// assert!(txn.scan_stream("t", "", "")?.take(5).await?.is_empty());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn take(mut self, limit: usize) -> Result<Vec<ScannedRow>> {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.next().await? {
                Some(row) => out.push(row),
                None => break,
            }
        }
        Ok(out)
    }

    /// The next row with a visible column, or `None` at the end of the range.
    ///
    /// ```
    /// # let emulator = percolator::emulator::start_local()?;
    /// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    /// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
    /// # percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    /// # let oracles = [oracle.local_addr().to_string()];
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// assert!(txn.scan_stream("t", "", "")?.next().await?.is_none());
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn next(&mut self) -> Result<Option<ScannedRow>> {
        loop {
            while self.stored.is_empty() && !self.cursor.done {
                let snapshot = self.txn.start_ts().await?;
                let page = SnapshotReader::new(&self.txn.session, snapshot)
                    .next_page(&mut self.cursor)
                    .await?;
                self.txn.session.ctx().check_snapshot(snapshot).await?;
                self.stored.extend(page);
            }
            let stored_row = self.stored.front().map(|r| r.row.as_slice());
            let own_row = self.own.last().map(|(row, _)| row.as_slice());
            let take_own = match (stored_row, own_row) {
                (None, None) => return Ok(None),
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(s), Some(o)) => {
                    if self.cursor.reverse() {
                        o >= s
                    } else {
                        o <= s
                    }
                }
            };
            if !take_own {
                return Ok(self.stored.pop_front());
            }
            let (row, writes) = self.own.pop().unwrap_or_default();
            let mut columns: BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>> = BTreeMap::new();
            if self.stored.front().is_some_and(|r| r.row == row) {
                if let Some(stored) = self.stored.pop_front() {
                    columns.extend(stored.columns.into_iter().map(|(f, q, v)| ((f, q), v)));
                }
            }
            for (col, value) in writes {
                match value {
                    Some(v) => columns.insert(col, v),
                    None => columns.remove(&col),
                };
            }
            if !columns.is_empty() {
                return Ok(Some(ScannedRow {
                    row,
                    columns: columns.into_iter().map(|((f, q), v)| (f, q, v)).collect(),
                }));
            }
        }
    }
}
