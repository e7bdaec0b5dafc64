//! The seam between the protocol and HBase: the few operations transactions need, async.
//! Production uses the pooled, pipelined [`AsyncHBaseClient`]; tests wrap it to lose replies,
//! hold calls at a gate or count them, and run exactly the requests production sends.

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::Result;
use crate::hbase::{
    AsyncHBaseClient, CheckAndMutate, Delete, Get, HBaseClient, Put, RowResult, Scan,
    TableDescriptor,
};

/// The smallest row key after `row`: where a scan resumes after it.
pub(crate) fn row_after(row: &[u8]) -> Vec<u8> {
    [row, &[0]].concat()
}

/// Where the scan after `page` (asked for `rows` rows) starts, or `None` when the page was
/// short and the range is done.
pub(crate) fn next_page_start(page: &[RowResult], rows: i32) -> Option<Vec<u8>> {
    match page.last() {
        Some(last) if page.len() >= rows as usize => Some(row_after(&last.row)),
        _ => None,
    }
}

/// What the transaction layer asks of HBase.
///
/// ```
/// # use percolator::txn::HBaseAccess;
/// fn takes_any_store(_: std::sync::Arc<dyn HBaseAccess>) {}
/// ```
#[async_trait]
pub trait HBaseAccess: Send + Sync + 'static {
    /// Results in request order; a missing row is an empty result.
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>>;

    /// Must report a lost reply as `Error::OutcomeUnknown`, never retry blindly.
    async fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool>;

    /// One page of a scan in one round trip (open, read `rows`, close).
    async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>>;
    async fn put(&self, table: &str, put: &Put) -> Result<()>;
    async fn delete(&self, table: &str, delete: &Delete) -> Result<()>;

    /// Several deletes of one table. Production sends them in one round trip; the default
    /// (for test stores) sends them one by one, all at once.
    async fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        for done in futures::future::join_all(deletes.iter().map(|d| self.delete(table, d))).await {
            done?;
        }
        Ok(())
    }
    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor>;
}

#[async_trait]
impl HBaseAccess for AsyncHBaseClient {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        if let [one] = gets {
            return Ok(vec![self.get(table, one).await?]);
        }
        AsyncHBaseClient::get_many(self, table, gets).await
    }

    // Written out, not as an `async fn`: `async_trait` would box an async block around the
    // call's future, one more layer to poll and move on every checkAndMutate of a commit.
    fn check_and_mutate<'c, 't, 'm, 'f>(
        &'c self,
        table: &'t str,
        cam: &'m CheckAndMutate,
    ) -> BoxFuture<'f, Result<bool>>
    where
        'c: 'f,
        't: 'f,
        'm: 'f,
        Self: 'f,
    {
        Box::pin(AsyncHBaseClient::check_and_mutate(self, table, cam))
    }

    async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        self.scan_results(table, scan, rows).await
    }

    async fn put(&self, table: &str, put: &Put) -> Result<()> {
        AsyncHBaseClient::put(self, table, put).await
    }

    async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        AsyncHBaseClient::delete(self, table, delete).await
    }

    async fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        if deletes.is_empty() {
            return Ok(());
        }
        AsyncHBaseClient::delete_many(self, table, deletes).await
    }

    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        AsyncHBaseClient::table_descriptor(self, table).await
    }
}

/// The blocking client as a store: its async face, sharing its connections.
#[async_trait]
impl HBaseAccess for HBaseClient {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        HBaseAccess::get_many(&self.asynchronous(), table, gets).await
    }

    async fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        HBaseAccess::check_and_mutate(&self.asynchronous(), table, cam).await
    }

    async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        HBaseAccess::scan_page(&self.asynchronous(), table, scan, rows).await
    }

    async fn put(&self, table: &str, put: &Put) -> Result<()> {
        HBaseAccess::put(&self.asynchronous(), table, put).await
    }

    async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        HBaseAccess::delete(&self.asynchronous(), table, delete).await
    }

    async fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        HBaseAccess::delete_many(&self.asynchronous(), table, deletes).await
    }

    async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        HBaseAccess::table_descriptor(&self.asynchronous(), table).await
    }
}
