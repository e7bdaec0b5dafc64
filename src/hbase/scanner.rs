//! An open server-side scanner, read page by page through `getScannerRows`: as a blocking
//! iterator ([`Scanner`]) or all at once ([`AsyncHBaseClient::scan_all`]).

use std::collections::VecDeque;

use super::client::AsyncHBaseClient;
use super::data::DEFAULT_PAGE_ROWS;
use super::types::{RowResult, Scan};
use crate::runtime;
use crate::Result;

/// How many rows to ask for per page, and how many the scan's limit still allows.
struct Paging {
    page_rows: i32,
    /// Complete rows still to come when the scan has a limit.
    rows_left: Option<i64>,
}

impl Paging {
    fn new(scan: &Scan) -> Self {
        Paging {
            page_rows: scan.caching.filter(|c| *c > 0).unwrap_or(DEFAULT_PAGE_ROWS),
            rows_left: scan.limit.filter(|l| *l > 0).map(i64::from),
        }
    }

    /// The next page's size, or `None` once the limit is reached.
    fn next_page(&self) -> Option<i32> {
        match self.rows_left {
            Some(0) => None,
            Some(left) => {
                let wanted = left.min(i64::from(self.page_rows));
                Some(i32::try_from(wanted).unwrap_or(self.page_rows))
            }
            None => Some(self.page_rows),
        }
    }

    fn count(&mut self, rows: &[RowResult]) {
        if let Some(left) = self.rows_left.as_mut() {
            // A row split by batchSize counts once, on its last (non-partial) piece.
            let complete = rows.iter().filter(|r| !r.partial).count();
            *left = left.saturating_sub(complete as i64).max(0);
        }
    }
}

impl AsyncHBaseClient {
    /// Every row of the scan, paged as [`Scanner`] pages; the scanner is closed at the end.
    ///
    /// ```
    /// use percolator::hbase::{Put, Scan};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")]).await?;
    /// let rows = hbase.scan_all("t", &Scan::new().caching(1)).await?;
    /// assert_eq!(rows.len(), 2);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn scan_all(&self, table: &str, scan: &Scan) -> Result<Vec<RowResult>> {
        let id = self.open_scanner(table, scan).await?;
        let mut paging = Paging::new(scan);
        let mut all = Vec::new();
        let read = loop {
            let Some(wanted) = paging.next_page() else {
                break Ok(());
            };
            match self.scanner_rows_of(table, id, wanted).await {
                Ok(rows) if rows.is_empty() => break Ok(()),
                Ok(rows) => {
                    paging.count(&rows);
                    all.extend(rows);
                }
                Err(e) => break Err(e),
            }
        };
        if let Err(error) = self.close_scanner(id).await {
            tracing::debug!(table, id, %error, "closing scanner failed");
        }
        read.map(|()| all)
    }
}

/// Iterates the rows of a scan, fetching `caching` rows per round trip (100 if unset).
///
/// The server-side scanner is closed when the scan is exhausted, when it reaches its `limit`,
/// after an error (the scanner's position is then unknown, so iteration ends), and on drop.
///
/// ```
/// use percolator::hbase::{Put, Scan};
/// # let emulator = hbase_emulator::start_local()?;
/// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
/// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")])?;
/// let mut scanner = hbase.scan("t", &Scan::new().caching(1))?;
/// assert_eq!(scanner.next().transpose()?.map(|r| r.row), Some(b"a".to_vec()));
/// assert_eq!(scanner.count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Scanner {
    client: AsyncHBaseClient,
    table: String,
    /// `None` once closed.
    id: Option<i32>,
    paging: Paging,
    buffered: VecDeque<RowResult>,
}

impl Scanner {
    pub(crate) fn new(client: AsyncHBaseClient, table: &str, scan: &Scan, id: i32) -> Self {
        Scanner {
            client,
            table: table.to_owned(),
            id: Some(id),
            paging: Paging::new(scan),
            buffered: VecDeque::new(),
        }
    }

    /// The gateway's scanner id, while the scanner is open.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let mut scanner = hbase.scan("t", &Scan::new())?;
    /// assert!(scanner.id().is_some());
    /// assert!(scanner.next().is_none());
    /// assert_eq!(scanner.id(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> Option<i32> {
        self.id
    }

    /// Closes the server-side scanner now and reports whether the gateway accepted it.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let scanner = hbase.scan("t", &Scan::new())?;
    /// scanner.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(mut self) -> Result<()> {
        match self.id.take() {
            Some(id) => runtime::wait(self.client.handle(), self.client.close_scanner(id)),
            None => Ok(()),
        }
    }

    /// Best-effort close: an expired or already-closed scanner is not worth an error here.
    fn release(&mut self) {
        if let Some(id) = self.id.take() {
            let closed = runtime::wait(self.client.handle(), self.client.close_scanner(id));
            if let Err(error) = closed {
                tracing::debug!(table = %self.table, id, %error, "closing scanner failed");
            }
        }
    }
}

impl Iterator for Scanner {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Result<RowResult>> {
        loop {
            if let Some(row) = self.buffered.pop_front() {
                return Some(Ok(row));
            }
            let id = self.id?;
            let Some(wanted) = self.paging.next_page() else {
                self.release();
                return None;
            };
            let page = self.client.scanner_rows_of(&self.table, id, wanted);
            match runtime::wait(self.client.handle(), page) {
                Ok(rows) if rows.is_empty() => {
                    self.release();
                    return None;
                }
                Ok(rows) => {
                    self.paging.count(&rows);
                    self.buffered.extend(rows);
                }
                Err(error) => {
                    self.release();
                    return Some(Err(error));
                }
            }
        }
    }
}

impl Drop for Scanner {
    fn drop(&mut self) {
        self.release();
    }
}

impl std::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("table", &self.table)
            .field("id", &self.id)
            .field("buffered", &self.buffered.len())
            .finish()
    }
}
