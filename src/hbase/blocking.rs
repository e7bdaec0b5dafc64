//! The blocking face of the client: every call is the async one, waited for on the caller's
//! thread (see `runtime`), so a blocking client works from any thread, tokio's included.

use super::admin::Admin;
use super::client::AsyncHBaseClient;
use super::config::HBaseConfig;
use super::scanner::Scanner;
use super::types::*;
use crate::runtime;
use crate::Result;

/// A pooled Thrift2 client for blocking code. Cheap to clone; clones share the pool and the
/// RPC counter, as does the [`AsyncHBaseClient`] it wraps.
#[derive(Clone, Debug)]
pub struct HBaseClient {
    inner: AsyncHBaseClient,
}

impl AsyncHBaseClient {
    /// The blocking face of this client, sharing its pool and RPC counter.
    pub fn blocking(&self) -> HBaseClient {
        HBaseClient {
            inner: self.clone(),
        }
    }
}

impl HBaseClient {
    /// Builds the pool and opens one connection, so an unreachable gateway fails here. The
    /// connections live on the shared I/O runtime: a blocking client may outlive any runtime
    /// it was made on.
    pub fn connect(config: HBaseConfig) -> Result<HBaseClient> {
        let handle = runtime::io_handle()?;
        let inner = runtime::wait(
            &handle,
            AsyncHBaseClient::connect_on(config, handle.clone()),
        )?;
        Ok(HBaseClient { inner })
    }

    fn wait<F>(&self, future: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        runtime::wait(self.inner.handle(), future)
    }

    pub fn config(&self) -> &HBaseConfig {
        self.inner.config()
    }

    /// Thrift calls made through this client and its clones, including replays.
    pub fn rpc_count(&self) -> u64 {
        self.inner.rpc_count()
    }

    pub fn admin(&self) -> Admin<'_> {
        Admin::new(&self.inner)
    }

    /// The async client underneath, sharing the pool and the RPC counter.
    pub fn asynchronous(&self) -> AsyncHBaseClient {
        self.inner.clone()
    }

    pub fn get(&self, table: &str, get: &Get) -> Result<RowResult> {
        self.wait(self.inner.get(table, get))
    }

    /// Results come back in request order; missing rows are empty results.
    pub fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.wait(self.inner.get_many(table, gets))
    }

    pub fn exists(&self, table: &str, get: &Get) -> Result<bool> {
        self.wait(self.inner.exists(table, get))
    }

    pub fn put(&self, table: &str, put: &Put) -> Result<()> {
        self.wait(self.inner.put(table, put))
    }

    pub fn put_many(&self, table: &str, puts: &[Put]) -> Result<()> {
        self.wait(self.inner.put_many(table, puts))
    }

    pub fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        self.wait(self.inner.delete(table, delete))
    }

    pub fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        self.wait(self.inner.delete_many(table, deletes))
    }

    /// Applies `cam.mutations` iff `cam.value OP cell` (HBase's reversed direction).
    pub fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        self.wait(self.inner.check_and_mutate(table, cam))
    }

    /// The checkAndMutates overlapped, as [`AsyncHBaseClient::check_and_mutate_all`].
    pub fn check_and_mutate_all(&self, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        self.wait(self.inner.check_and_mutate_all(calls))
    }

    /// Puts iff the cell equals `value`; see [`AsyncHBaseClient::check_and_put`].
    pub fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        put: &Put,
    ) -> Result<bool> {
        let call = self
            .inner
            .check_and_put(table, row, family, qualifier, value, put);
        self.wait(call)
    }

    /// Deletes iff the cell equals `value`; `None` as in [`HBaseClient::check_and_put`].
    pub fn check_and_delete(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        delete: &Delete,
    ) -> Result<bool> {
        let call = self
            .inner
            .check_and_delete(table, row, family, qualifier, value, delete);
        self.wait(call)
    }

    pub fn mutate_row(&self, table: &str, mutations: &RowMutations) -> Result<()> {
        self.wait(self.inner.mutate_row(table, mutations))
    }

    pub fn increment(&self, table: &str, inc: &Increment) -> Result<RowResult> {
        self.wait(self.inner.increment(table, inc))
    }

    pub fn append(&self, table: &str, app: &Append) -> Result<RowResult> {
        self.wait(self.inner.append(table, app))
    }

    /// Opens a server-side scanner; the returned iterator pages through it.
    pub fn scan(&self, table: &str, scan: &Scan) -> Result<Scanner> {
        let id = self.open_scanner(table, scan)?;
        Ok(Scanner::new(self.inner.clone(), table, scan, id))
    }

    /// Opens, reads up to `num_rows` rows and closes a scanner in one call.
    pub fn scan_results(&self, table: &str, scan: &Scan, num_rows: i32) -> Result<Vec<RowResult>> {
        self.wait(self.inner.scan_results(table, scan, num_rows))
    }

    /// The raw `openScanner`: prefer [`HBaseClient::scan`], which closes what it opens.
    pub fn open_scanner(&self, table: &str, scan: &Scan) -> Result<i32> {
        self.wait(self.inner.open_scanner(table, scan))
    }

    /// The raw `getScannerRows`: the next page of an open scanner, empty once exhausted.
    pub fn scanner_rows(&self, scanner_id: i32, num_rows: i32) -> Result<Vec<RowResult>> {
        self.wait(self.inner.scanner_rows_of("", scanner_id, num_rows))
    }

    /// The raw `closeScanner`.
    pub fn close_scanner(&self, scanner_id: i32) -> Result<()> {
        self.wait(self.inner.close_scanner(scanner_id))
    }
}
