//! Scans at the snapshot, merged with the transaction's own writes.

use std::collections::{BTreeMap, VecDeque};

use super::AsyncTransaction;
use crate::error::Result;
use crate::txn::commit::Written;
use crate::txn::safe_point;
use crate::txn::snapshot::{ScanCursor, ScannedRow, SnapshotReader};

/// A row's columns during a scan merge: (family, qualifier) -> value, `None` = deleted here.
type RowWrites = BTreeMap<(Vec<u8>, Vec<u8>), Option<Vec<u8>>>;

impl AsyncTransaction {
    /// Scans rows `[start, stop)` of `table` at the snapshot (empty `stop` = to the end), up to
    /// `limit` rows that have a visible column, in ascending order. Includes this
    /// transaction's own writes.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
        let cursor = ScanCursor::new(table, start, stop, reverse);
        let mut own: BTreeMap<Vec<u8>, RowWrites> = BTreeMap::new();
        for (_, k) in self
            .writes
            .iter()
            .filter(|(t, k)| *t == table && cursor.in_range(k.row()))
        {
            let value = match k.written() {
                Written::Put(v) => Some(v.to_vec()),
                Written::Delete => None,
                Written::Lock => continue,
            };
            own.entry(k.row().to_vec())
                .or_default()
                .insert((k.family().to_vec(), k.qualifier().to_vec()), value);
        }
        // Merged from the back: the next row in scan order goes last.
        let mut own: Vec<_> = own.into_iter().collect();
        if !reverse {
            own.reverse();
        }
        Ok(RowStream {
            txn: self,
            cursor,
            stored: VecDeque::new(),
            own,
        })
    }
}

/// The rows of a scan, fetched a page at a time as they are consumed (see
/// [`AsyncTransaction::scan_stream`]).
///
/// ```
/// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    stored: VecDeque<ScannedRow>,
    /// This transaction's writes in range, the next one to merge last.
    own: Vec<(Vec<u8>, RowWrites)>,
}

impl RowStream<'_> {
    /// Up to `limit` rows, consuming the stream.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
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
                safe_point::check_snapshot(self.txn.session.ctx(), snapshot).await?;
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
            if self.stored.front().is_some_and(|r| r.row == row)
                && let Some(stored) = self.stored.pop_front()
            {
                columns.extend(stored.columns.into_iter().map(|(f, q, v)| ((f, q), v)));
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
