//! An open server-side scanner, read page by page through `getScannerRows`.

use std::collections::VecDeque;

use super::client::{HBaseClient, DEFAULT_PAGE_ROWS};
use super::types::{RowResult, Scan};
use crate::Result;

/// Iterates the rows of a scan, fetching `caching` rows per round trip (100 if unset).
///
/// The server-side scanner is closed when the scan is exhausted, when it reaches its `limit`,
/// after an error (the scanner's position is then unknown, so iteration ends), and on drop.
pub struct Scanner {
    client: HBaseClient,
    table: String,
    /// `None` once closed.
    id: Option<i32>,
    page_rows: i32,
    /// Complete rows still to come when the scan has a limit.
    rows_left: Option<i64>,
    buffered: VecDeque<RowResult>,
}

impl Scanner {
    pub(crate) fn new(client: HBaseClient, table: &str, scan: &Scan, id: i32) -> Self {
        Scanner {
            client,
            table: table.to_owned(),
            id: Some(id),
            page_rows: scan.caching.filter(|c| *c > 0).unwrap_or(DEFAULT_PAGE_ROWS),
            rows_left: scan.limit.filter(|l| *l > 0).map(i64::from),
            buffered: VecDeque::new(),
        }
    }

    /// The gateway's scanner id, while the scanner is open.
    pub fn id(&self) -> Option<i32> {
        self.id
    }

    /// Closes the server-side scanner now and reports whether the gateway accepted it.
    pub fn close(mut self) -> Result<()> {
        match self.id.take() {
            Some(id) => self.client.close_scanner(id),
            None => Ok(()),
        }
    }

    /// Best-effort close: an expired or already-closed scanner is not worth an error here.
    fn release(&mut self) {
        if let Some(id) = self.id.take() {
            if let Err(error) = self.client.close_scanner(id) {
                tracing::debug!(table = %self.table, id, %error, "closing scanner failed");
            }
        }
    }

    fn fetch_page(&mut self, id: i32) -> Result<Vec<RowResult>> {
        let wanted = match self.rows_left {
            Some(left) => i64::from(self.page_rows).min(left),
            None => i64::from(self.page_rows),
        };
        let wanted = i32::try_from(wanted).unwrap_or(self.page_rows);
        self.client.scanner_rows_of(&self.table, id, wanted)
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
            if self.rows_left == Some(0) {
                self.release();
                return None;
            }
            match self.fetch_page(id) {
                Ok(rows) if rows.is_empty() => {
                    self.release();
                    return None;
                }
                Ok(rows) => {
                    if let Some(left) = self.rows_left.as_mut() {
                        // A row split by batchSize counts once, on its last (non-partial) piece.
                        let complete = rows.iter().filter(|r| !r.partial).count();
                        *left = left.saturating_sub(complete as i64).max(0);
                    }
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
