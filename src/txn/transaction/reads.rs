//! Point reads at the snapshot, and locking what was read.

use tracing::Instrument;

use super::AsyncTransaction;
use crate::error::Result;
use crate::key::CellKey;
use crate::txn::commit::Written;
use crate::txn::safe_point;
use crate::txn::snapshot::SnapshotReader;

impl AsyncTransaction {
    /// Reads one cell at the snapshot.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
        let span = tracing::debug_span!(parent: &self.span, "read", cells = keys.len());
        self.get_many_unspanned(keys).instrument(span).await
    }

    async fn get_many_unspanned(&self, keys: &[CellKey]) -> Result<Vec<Option<Vec<u8>>>> {
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
        safe_point::check_snapshot(self.session.ctx(), snapshot).await?;
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
        let snapshot = self.start_ts().await?;
        let span = tracing::debug_span!(parent: &self.span, "read", cells = keys.len());
        let read = SnapshotReader::new(&self.session, snapshot)
            .read_with_newest(keys)
            .instrument(span)
            .await?;
        safe_point::check_snapshot(self.session.ctx(), snapshot).await?;
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
            Written::Put(v) => Some(Some(v)),
            Written::Delete => Some(None),
            Written::Lock => None,
        }
    }

    /// Reads one cell at the snapshot and locks it as if written: a transaction that commits a
    /// write to it after this one's snapshot makes this commit fail (and the other way round),
    /// which is how a reader opts out of write skew for the cells its decision rests on.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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

    /// Whether the cell has a value at the snapshot (this transaction's own writes included).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
}
