//! The blocking transaction, and the iterator of its scans.

use tokio::runtime::Handle;

use crate::error::Result;
use crate::key::CellKey;
use crate::runtime::wait as block_on;
use crate::txn::snapshot::ScannedRow;
use crate::txn::transaction::{AsyncTransaction, RowStream};

/// A snapshot-isolated transaction for threaded code; see [`AsyncTransaction`], whose
/// methods these are.
///
/// ```no_run
/// # fn demo(client: &percolator::Client) -> percolator::Result<()> {
/// let mut txn = client.begin()?;
/// let old = txn.get("accounts", "alice", "f", "balance")?;
/// txn.set("accounts", "alice", "f", "balance", b"10".to_vec())?;
/// txn.commit()?;
/// # let _ = old; Ok(()) }
/// ```
pub struct Transaction {
    inner: AsyncTransaction,
    runtime: Handle,
}

impl Transaction {
    pub(super) fn new(inner: AsyncTransaction, runtime: Handle) -> Transaction {
        Transaction { inner, runtime }
    }

    /// The snapshot timestamp, fetched now if no operation has fixed it yet.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let txn = client.begin()?;
    /// let ts = txn.start_ts()?; // fixes the snapshot now
    /// assert_eq!(txn.start_ts()?, ts);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_ts(&self) -> Result<u64> {
        block_on(&self.runtime, self.inner.start_ts())
    }

    /// HBase RPCs this transaction has made so far.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let txn = client.begin()?;
    /// txn.get("t", "row", "f", "q")?;
    /// assert_eq!(txn.rpc_count(), 1, "a snapshot read of one row is one round trip");
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rpc_count(&self) -> u64 {
        self.inner.rpc_count()
    }

    /// Reads one cell at the snapshot.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| txn.set("t", "row", "f", "q", b"v".to_vec()))?;
    /// let txn = client.begin()?;
    /// assert_eq!(txn.get("t", "row", "f", "q")?, Some(b"v".to_vec()));
    /// assert_eq!(txn.get("t", "other", "f", "q")?, None);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(
        &self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let (row, family, qualifier) = (row.as_ref(), family.as_ref(), qualifier.as_ref());
        block_on(&self.runtime, self.inner.get(table, row, family, qualifier))
    }

    /// Reads many cells (any tables and rows) at the snapshot, batched per table and row.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// use percolator::CellKey;
    /// client.run(|txn| txn.set("t", "a", "f", "q", b"1".to_vec()))?;
    /// let keys = [CellKey::new("t", "a", "f", "q")?, CellKey::new("t", "b", "f", "q")?];
    /// assert_eq!(client.begin()?.get_many(&keys)?, [Some(b"1".to_vec()), None]);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_many(&self, keys: &[CellKey]) -> Result<Vec<Option<Vec<u8>>>> {
        block_on(&self.runtime, self.inner.get_many(keys))
    }

    /// Reads one cell and locks it against write skew; see
    /// [`AsyncTransaction::get_for_update`].
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// let on_call = txn.get_for_update("t", "alice", "f", "on_call")?;
    /// txn.set("t", "bob", "f", "on_call", b"no".to_vec())?;
    /// txn.commit()?; // fails with WriteConflict if alice changed meanwhile
    /// # let _ = on_call;
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_for_update(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let (row, family, qualifier) = (row.as_ref(), family.as_ref(), qualifier.as_ref());
        block_on(
            &self.runtime,
            self.inner.get_for_update(table, row, family, qualifier),
        )
    }

    /// Locks cells without reading or changing them; see [`AsyncTransaction::lock_keys`].
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.lock_keys(&[percolator::CellKey::new("t", "config", "f", "q")?])?;
    /// txn.set("t", "derived", "f", "q", b"v".to_vec())?;
    /// txn.commit()?;
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_keys(&mut self, keys: &[CellKey]) -> Result<()> {
        self.inner.lock_keys(keys)
    }

    /// Sets a weak notification on a column; see [`AsyncTransaction::notify`].
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.notify("t", "doc1", "f", "content")?;
    /// txn.commit()?;
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn notify(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.inner.notify(table, row, family, qualifier)
    }

    /// Whether the cell has a value at the snapshot (own writes included).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| txn.set("t", "row", "f", "q", b"v".to_vec()))?;
    /// assert!(client.begin()?.key_exists("t", "row", "f", "q")?);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key_exists(
        &self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let (row, family, qualifier) = (row.as_ref(), family.as_ref(), qualifier.as_ref());
        block_on(
            &self.runtime,
            self.inner.key_exists(table, row, family, qualifier),
        )
    }

    /// Rows `[start, stop)` with a visible column, ascending, up to `limit`.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| {
    ///     for row in ["a", "b", "c"] {
    ///         txn.set("t", row, "f", "q", b"v".to_vec())?;
    ///     }
    ///     Ok(())
    /// })?;
    /// let rows = client.begin()?.scan("t", "a", "c", 10)?;
    /// assert_eq!(rows.iter().map(|r| &r.row[..]).collect::<Vec<_>>(), [b"a", b"b"]);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
        limit: usize,
    ) -> Result<Vec<ScannedRow>> {
        let (start, stop) = (start.as_ref(), stop.as_ref());
        block_on(&self.runtime, self.inner.scan(table, start, stop, limit))
    }

    /// [`scan`](Self::scan) in descending order.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| {
    ///     for row in ["a", "b", "c"] {
    ///         txn.set("t", row, "f", "q", b"v".to_vec())?;
    ///     }
    ///     Ok(())
    /// })?;
    /// let rows = client.begin()?.scan_reverse("t", "", "", 2)?;
    /// assert_eq!(rows.iter().map(|r| &r.row[..]).collect::<Vec<_>>(), [b"c", b"b"]);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_reverse(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
        limit: usize,
    ) -> Result<Vec<ScannedRow>> {
        let (start, stop) = (start.as_ref(), stop.as_ref());
        block_on(
            &self.runtime,
            self.inner.scan_reverse(table, start, stop, limit),
        )
    }

    /// Every row of `[start, stop)`, ascending (or descending with `reverse`), fetched a page
    /// at a time as the iterator advances.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| {
    ///     for i in 0..300 {
    ///         txn.set("t", format!("r{i:03}"), "f", "q", b"v".to_vec())?;
    ///     }
    ///     Ok(())
    /// })?;
    /// let txn = client.begin()?;
    /// let n = txn.scan_iter("t", "", "", false)?.filter(|r| r.is_ok()).count();
    /// assert_eq!(n, 300);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_iter(
        &self,
        table: &str,
        start: impl AsRef<[u8]>,
        stop: impl AsRef<[u8]>,
        reverse: bool,
    ) -> Result<RowIter<'_>> {
        let stream = if reverse {
            self.inner.scan_reverse_stream(table, start, stop)?
        } else {
            self.inner.scan_stream(table, start, stop)?
        };
        Ok(RowIter {
            stream,
            runtime: &self.runtime,
        })
    }

    /// Buffers a write of `value` to one cell.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// assert_eq!(txn.get("t", "row", "f", "q")?, Some(b"v".to_vec()), "own writes are visible");
    /// txn.commit()?;
    /// # client.shutdown();
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
        self.inner.set(table, row, family, qualifier, value)
    }

    /// Put-if-absent; see [`AsyncTransaction::insert`].
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| txn.insert("t", "user:1", "f", "name", b"ann".to_vec()))?;
    /// let again = client.run(|txn| txn.insert("t", "user:1", "f", "name", b"bob".to_vec()));
    /// assert!(matches!(again, Err(percolator::Error::KeyExists { .. })));
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        value: impl Into<Vec<u8>>,
    ) -> Result<()> {
        let (row, family, qualifier) = (row.as_ref(), family.as_ref(), qualifier.as_ref());
        let value = value.into();
        block_on(
            &self.runtime,
            self.inner.insert(table, row, family, qualifier, value),
        )
    }

    /// Buffers a transactional delete of one cell.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// client.run(|txn| txn.set("t", "row", "f", "q", b"v".to_vec()))?;
    /// client.run(|txn| txn.delete("t", "row", "f", "q"))?;
    /// assert_eq!(client.begin()?.get("t", "row", "f", "q")?, None);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(
        &mut self,
        table: &str,
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.inner.delete(table, row, family, qualifier)
    }

    /// Commits the buffered writes and returns the commit timestamp.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// let start_ts = txn.start_ts()?;
    /// assert!(txn.commit()? > start_ts);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit(self) -> Result<u64> {
        // A commit waits on several round trips in turn: as a task on the client's runtime
        // each reply wakes it there, and this thread sleeps and wakes once, not once per trip.
        let commit = self.runtime.spawn(self.inner.commit());
        match block_on(&self.runtime, commit) {
            Ok(result) => result,
            Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            Err(_) => Err(crate::Error::Shutdown),
        }
    }

    /// Discards the buffered writes.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
    /// let mut txn = client.begin()?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// txn.rollback();
    /// assert_eq!(client.begin()?.get("t", "row", "f", "q")?, None);
    /// # client.shutdown();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rollback(self) {
        block_on(&self.runtime, self.inner.rollback())
    }
}

/// The rows of [`Transaction::scan_iter`].
///
/// ```
/// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
/// # let client = percolator::Client::connect(hbase, &oracles, Default::default())?;
/// let txn = client.begin()?;
/// let mut rows = txn.scan_iter("t", "", "", true)?;
/// assert!(rows.next().is_none(), "an empty table");
/// # client.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RowIter<'t> {
    stream: RowStream<'t>,
    runtime: &'t Handle,
}

impl Iterator for RowIter<'_> {
    type Item = Result<ScannedRow>;

    fn next(&mut self) -> Option<Self::Item> {
        block_on(self.runtime, self.stream.next()).transpose()
    }
}
