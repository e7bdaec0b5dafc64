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
///
/// ```
/// use percolator::hbase::{Get, Put};
/// # let emulator = hbase_emulator::start_local()?;
/// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
/// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
/// let row = hbase.get("t", &Get::new("r"))?;
/// assert_eq!(row.value(b"f", b"q"), Some(&b"v"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct HBaseClient {
    inner: AsyncHBaseClient,
}

impl AsyncHBaseClient {
    /// The blocking face of this client, sharing its pool and RPC counter.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let blocking = hbase.blocking();
    /// assert_eq!(blocking.config().addr, hbase.config().addr);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use percolator::{HBaseClient, HBaseConfig};
    /// let emulator = hbase_emulator::start_local()?;
    /// let hbase = HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// assert!(hbase.admin().list_namespaces()?.contains(&"default".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// The configuration the client was built with.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert_eq!(hbase.config().addr, emulator.local_addr().to_string());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self) -> &HBaseConfig {
        self.inner.config()
    }

    /// Thrift calls made through this client and its clones, including replays.
    ///
    /// ```
    /// use percolator::hbase::Get;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let before = hbase.rpc_count();
    /// hbase.get("t", &Get::new("r"))?;
    /// assert_eq!(hbase.rpc_count(), before + 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rpc_count(&self) -> u64 {
        self.inner.rpc_count()
    }

    /// Table, family and namespace administration through this client.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().table_exists("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn admin(&self) -> Admin<'_> {
        Admin::new(&self.inner)
    }

    /// The async client underneath, sharing the pool and the RPC counter.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let client = hbase.asynchronous();
    /// assert_eq!(client.config(), hbase.config());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn asynchronous(&self) -> AsyncHBaseClient {
        self.inner.clone()
    }

    /// Reads one row; a missing row is an empty result.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// assert_eq!(hbase.get("t", &Get::new("r"))?.value(b"f", b"q"), Some(&b"v"[..]));
    /// assert!(hbase.get("t", &Get::new("missing"))?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, table: &str, get: &Get) -> Result<RowResult> {
        self.wait(self.inner.get(table, get))
    }

    /// Results come back in request order; missing rows are empty results.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("a").add("f", "q", "1"))?;
    /// let rows = hbase.get_many("t", &[Get::new("a"), Get::new("b")])?;
    /// assert_eq!((rows[0].row.as_slice(), rows[1].is_empty()), (&b"a"[..], true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.wait(self.inner.get_many(table, gets))
    }

    /// Whether the get would return any cell, without transferring them.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// assert!(hbase.exists("t", &Get::new("r"))?);
    /// assert!(!hbase.exists("t", &Get::new("other"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exists(&self, table: &str, get: &Get) -> Result<bool> {
        self.wait(self.inner.exists(table, get))
    }

    /// Writes the put's cells.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// assert!(hbase.exists("t", &Get::new("r"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, table: &str, put: &Put) -> Result<()> {
        self.wait(self.inner.put(table, put))
    }

    /// Writes several puts in one call (each row atomically, not the batch).
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")])?;
    /// assert!(hbase.exists("t", &Get::new("b"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_many(&self, table: &str, puts: &[Put]) -> Result<()> {
        self.wait(self.inner.put_many(table, puts))
    }

    /// Applies one delete.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// hbase.delete("t", &Delete::new("r"))?;
    /// assert!(!hbase.exists("t", &Get::new("r"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        self.wait(self.inner.delete(table, delete))
    }

    /// Applies several deletes in one call.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")])?;
    /// hbase.delete_many("t", &[Delete::new("a"), Delete::new("b")])?;
    /// assert!(!hbase.exists("t", &Get::new("a"))? && !hbase.exists("t", &Get::new("b"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        self.wait(self.inner.delete_many(table, deletes))
    }

    /// Applies `cam.mutations` iff `cam.value OP cell` (HBase's reversed direction).
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "").put(Put::new("r").add("f", "q", "v"));
    /// assert!(hbase.check_and_mutate("t", &cam)?);
    /// assert!(!hbase.check_and_mutate("t", &cam)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        self.wait(self.inner.check_and_mutate(table, cam))
    }

    /// The checkAndMutates overlapped, as [`AsyncHBaseClient::check_and_mutate_all`].
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let cam = |row: &str| CheckAndMutate::new(row, "f", "q", CompareOp::Equal, "").put(Put::new(row).add("f", "q", "v"));
    /// let (a, b) = (cam("a"), cam("b"));
    /// let results = hbase.check_and_mutate_all(&[("t", &a), ("t", &b)]);
    /// assert!(results.into_iter().all(|r| r.unwrap()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_and_mutate_all(&self, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        self.wait(self.inner.check_and_mutate_all(calls))
    }

    /// Puts iff the cell equals `value`; see [`AsyncHBaseClient::check_and_put`].
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let put = Put::new("r").add("f", "q", "v");
    /// assert!(hbase.check_and_put("t", b"r", b"f", b"q", None, &put)?);
    /// assert!(!hbase.check_and_put("t", b"r", b"f", b"q", None, &put)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use percolator::hbase::{Delete, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// let delete = Delete::new("r");
    /// assert!(!hbase.check_and_delete("t", b"r", b"f", b"q", Some(b"x"), &delete)?);
    /// assert!(hbase.check_and_delete("t", b"r", b"f", b"q", Some(b"v"), &delete)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// Applies the puts and deletes of one row atomically.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Get, Put, RowMutations};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "old", "1"))?;
    /// let m = RowMutations::new("r").put(Put::new("r").add("f", "new", "2")).delete(Delete::new("r").column("f", "old"));
    /// hbase.mutate_row("t", &m)?;
    /// let row = hbase.get("t", &Get::new("r"))?;
    /// assert_eq!((row.value(b"f", b"new"), row.value(b"f", b"old")), (Some(&b"2"[..]), None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mutate_row(&self, table: &str, mutations: &RowMutations) -> Result<()> {
        self.wait(self.inner.mutate_row(table, mutations))
    }

    /// Adds to counters atomically and returns their new values.
    ///
    /// ```
    /// use percolator::hbase::Increment;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.increment("t", &Increment::new("r").add("f", "n", 2))?;
    /// let row = hbase.increment("t", &Increment::new("r").add("f", "n", 3))?;
    /// assert_eq!(row.value(b"f", b"n"), Some(&5i64.to_be_bytes()[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn increment(&self, table: &str, inc: &Increment) -> Result<RowResult> {
        self.wait(self.inner.increment(table, inc))
    }

    /// Appends to values atomically and returns the new values.
    ///
    /// ```
    /// use percolator::hbase::Append;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.append("t", &Append::new("r").add("f", "q", "ab"))?;
    /// let row = hbase.append("t", &Append::new("r").add("f", "q", "c"))?;
    /// assert_eq!(row.value(b"f", b"q"), Some(&b"abc"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append(&self, table: &str, app: &Append) -> Result<RowResult> {
        self.wait(self.inner.append(table, app))
    }

    /// Opens a server-side scanner; the returned iterator pages through it.
    ///
    /// ```
    /// use percolator::hbase::{Put, Scan};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")])?;
    /// let rows: Vec<_> = hbase.scan("t", &Scan::new())?.collect::<Result<_, _>>()?;
    /// assert_eq!(rows.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan(&self, table: &str, scan: &Scan) -> Result<Scanner> {
        let id = self.open_scanner(table, scan)?;
        Ok(Scanner::new(self.inner.clone(), table, scan, id))
    }

    /// Opens, reads up to `num_rows` rows and closes a scanner in one call.
    ///
    /// ```
    /// use percolator::hbase::{Put, Scan};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")])?;
    /// let rows = hbase.scan_results("t", &Scan::new(), 1)?;
    /// assert_eq!(rows[0].row, b"a");
    /// assert_eq!(rows.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_results(&self, table: &str, scan: &Scan, num_rows: i32) -> Result<Vec<RowResult>> {
        self.wait(self.inner.scan_results(table, scan, num_rows))
    }

    /// The raw `openScanner`: prefer [`HBaseClient::scan`], which closes what it opens.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let id = hbase.open_scanner("t", &Scan::new())?;
    /// assert!(hbase.scanner_rows(id, 10)?.is_empty());
    /// hbase.close_scanner(id)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_scanner(&self, table: &str, scan: &Scan) -> Result<i32> {
        self.wait(self.inner.open_scanner(table, scan))
    }

    /// The raw `getScannerRows`: the next page of an open scanner, empty once exhausted.
    ///
    /// ```
    /// use percolator::hbase::{Put, Scan};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// let id = hbase.open_scanner("t", &Scan::new())?;
    /// assert_eq!(hbase.scanner_rows(id, 10)?.len(), 1);
    /// assert!(hbase.scanner_rows(id, 10)?.is_empty());
    /// hbase.close_scanner(id)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scanner_rows(&self, scanner_id: i32, num_rows: i32) -> Result<Vec<RowResult>> {
        self.wait(self.inner.scanner_rows_of("", scanner_id, num_rows))
    }

    /// The raw `closeScanner`.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let id = hbase.open_scanner("t", &Scan::new())?;
    /// hbase.close_scanner(id)?;
    /// assert!(hbase.scanner_rows(id, 1).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close_scanner(&self, scanner_id: i32) -> Result<()> {
        self.wait(self.inner.close_scanner(scanner_id))
    }
}
