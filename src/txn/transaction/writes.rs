//! Buffered writes: nothing reaches HBase before the commit.

use super::AsyncTransaction;
use crate::error::{Error, Result};
use crate::key::CellKey;
use crate::txn::commit::Write;

impl AsyncTransaction {
    /// Buffers a write of `value` to one cell.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
                column: key.column(),
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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

    /// Buffers a lock-only write: the commit checks for conflicts on `key` and writes no value.
    pub(super) fn lock_key(&mut self, key: CellKey) -> Result<()> {
        if self.writes.contains(&key) {
            // Written already: the write locks it.
            return Ok(());
        }
        self.buffer(key, Write::Lock)
    }

    /// Buffers a write to a cell of a project family (an observer's acknowledgment in `_pa`),
    /// which user code cannot write.
    pub(crate) fn set_system(&mut self, key: CellKey, value: Vec<u8>) -> Result<()> {
        self.check_writable()?;
        self.buffer_unchecked(key, Write::Put(value))
    }

    fn buffer(&mut self, key: CellKey, write: Write) -> Result<()> {
        self.check_writable()?;
        self.session
            .ctx()
            .schema()
            .refuse_percolator_family(&key.family, &key)?;
        self.buffer_unchecked(key, write)
    }

    /// `TransactionTooLarge` instead, with nothing buffered, when the write would take the
    /// transaction past `TxnOptions::max_txn_bytes`: refused here, nothing of it is written.
    fn buffer_unchecked(&mut self, key: CellKey, write: Write) -> Result<()> {
        let limit = self.session.ctx().opts().max_txn_bytes;
        if let Err(bytes) = self.writes.insert_within(&key, &write, limit) {
            return Err(Error::TransactionTooLarge {
                cells: self.writes.len() + usize::from(!self.writes.contains(&key)),
                bytes,
                limit,
            });
        }
        self.first.get_or_insert(key);
        Ok(())
    }
}
