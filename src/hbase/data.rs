//! The data calls of [`AsyncHBaseClient`]: typed operations in, typed results out.
//!
//! Each call's arguments are converted and encoded before its first `await`, so the futures
//! hold only the encoded request (and stay `Send`).

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use super::client::{AsyncHBaseClient, CallSpec};
use super::convert;
use super::types::*;
use super::wire::Arg;
use crate::thrift::hbase::{TDelete, TResult, TRowMutations};
use crate::{Error, Result};

/// Scanner page size when the scan does not set `caching`.
pub(crate) const DEFAULT_PAGE_ROWS: i32 = 100;

fn first_row<T>(items: &[T], row: impl Fn(&T) -> &Vec<u8>) -> &[u8] {
    items.first().map(|i| row(i).as_slice()).unwrap_or_default()
}

impl AsyncHBaseClient {
    /// Reads one row; a missing row is an empty result.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
    /// assert_eq!(hbase.get("t", &Get::new("r")).await?.value(b"f", b"q"), Some(&b"v"[..]));
    /// assert!(hbase.get("t", &Get::new("missing")).await?.is_empty());
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn get(&self, table: &str, get: &Get) -> Result<RowResult> {
        let spec = CallSpec::safe("get", table, &get.row);
        let tget = convert::get(get);
        let args = [(1, Arg::Binary(table.as_bytes())), (2, Arg::Struct(&tget))];
        convert::row_result(self.call::<TResult>(spec, &args).await?)
    }

    /// Results come back in request order; missing rows are empty results.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("a").add("f", "q", "1")).await?;
    /// let rows = hbase.get_many("t", &[Get::new("a"), Get::new("b")]).await?;
    /// assert_eq!((rows[0].row.as_slice(), rows[1].is_empty()), (&b"a"[..], true));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        let spec =
            CallSpec::safe("getMultiple", table, first_row(gets, |g| &g.row)).rows(gets.len());
        let tgets: Vec<_> = gets.iter().map(convert::get).collect();
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Structs(&tgets)),
        ];
        convert::row_results(self.call(spec, &args).await?)
    }

    /// Whether the get would return any cell, without transferring them.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
    /// assert!(hbase.exists("t", &Get::new("r")).await?);
    /// assert!(!hbase.exists("t", &Get::new("other")).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn exists(&self, table: &str, get: &Get) -> Result<bool> {
        let spec = CallSpec::safe("exists", table, &get.row);
        let tget = convert::get(get);
        let args = [(1, Arg::Binary(table.as_bytes())), (2, Arg::Struct(&tget))];
        self.call(spec, &args).await
    }

    /// Writes the put's cells.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
    /// assert!(hbase.exists("t", &Get::new("r")).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn put(&self, table: &str, put: &Put) -> Result<()> {
        let spec = CallSpec::safe("put", table, &put.row);
        let tput = convert::put(put);
        let args = [(1, Arg::Binary(table.as_bytes())), (2, Arg::Struct(&tput))];
        self.call::<()>(spec, &args).await?;
        self.tally(|t| t.put(put));
        Ok(())
    }

    /// Writes several puts in one call (each row atomically, not the batch).
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")]).await?;
    /// assert!(hbase.exists("t", &Get::new("b")).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn put_many(&self, table: &str, puts: &[Put]) -> Result<()> {
        let spec =
            CallSpec::safe("putMultiple", table, first_row(puts, |p| &p.row)).rows(puts.len());
        let tputs: Vec<_> = puts.iter().map(convert::put).collect();
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Structs(&tputs)),
        ];
        self.call::<()>(spec, &args).await?;
        self.tally(|t| puts.iter().for_each(|p| t.put(p)));
        Ok(())
    }

    /// Applies one delete.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
    /// hbase.delete("t", &Delete::new("r")).await?;
    /// assert!(!hbase.exists("t", &Get::new("r")).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        let spec = CallSpec::safe("deleteSingle", table, &delete.row);
        let tdelete = convert::delete(delete);
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Struct(&tdelete)),
        ];
        self.call::<()>(spec, &args).await?;
        self.tally(|t| t.delete(delete));
        Ok(())
    }

    /// Applies several deletes in one call.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("a").add("f", "q", "1")).await?;
    /// hbase.delete_many("t", &[Delete::new("a"), Delete::new("b")]).await?;
    /// assert!(!hbase.exists("t", &Get::new("a")).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        let spec = CallSpec::safe("deleteMultiple", table, first_row(deletes, |d| &d.row))
            .rows(deletes.len());
        let tdeletes: Vec<_> = deletes.iter().map(convert::delete).collect();
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Structs(&tdeletes)),
        ];
        let failed: Vec<TDelete> = self.call(spec, &args).await?;
        // HBase 2.x always answers with an empty list; older gateways list the deletes that
        // were not applied.
        if failed.is_empty() {
            self.tally(|t| deletes.iter().for_each(|d| t.delete(d)));
            return Ok(());
        }
        Err(Error::ServerIo {
            message: format!(
                "deleteMultiple on {table}: {} of {} deletes not applied",
                failed.len(),
                deletes.len()
            ),
            can_retry: true,
            exception: None,
        })
    }

    /// Applies `cam.mutations` iff `cam.value OP cell` (HBase's reversed direction).
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let cam = CheckAndMutate::new("r", "f", "q", CompareOp::Equal, "").put(Put::new("r").add("f", "q", "v"));
    /// assert!(hbase.check_and_mutate("t", &cam).await?);
    /// assert!(!hbase.check_and_mutate("t", &cam).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        let spec = CallSpec::once("checkAndMutate", table, &cam.row);
        let mutations = convert::row_mutations(&cam.mutations);
        let applied = self.call(spec, &cam_args(table, cam, &mutations)).await?;
        if applied {
            self.tally(|t| t.row(&cam.mutations));
        }
        Ok(applied)
    }

    /// The checkAndMutates overlapped: every request goes out (pipelined where connections are
    /// shared, see `pool`) before any reply is awaited. Each call follows the usual rules (a
    /// lost reply is `OutcomeUnknown`); results in order.
    ///
    /// ```
    /// use percolator::hbase::{CheckAndMutate, CompareOp, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let cam = |row: &str| CheckAndMutate::new(row, "f", "q", CompareOp::Equal, "").put(Put::new(row).add("f", "q", "v"));
    /// let (a, b) = (cam("a"), cam("b"));
    /// let results = hbase.check_and_mutate_all(&[("t", &a), ("t", &b)]).await;
    /// assert!(results.into_iter().all(|r| r.unwrap()));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check_and_mutate_all(
        &self,
        calls: &[(&str, &CheckAndMutate)],
    ) -> Vec<Result<bool>> {
        join_all(
            calls
                .iter()
                .map(|&(table, cam)| self.check_and_mutate(table, cam)),
        )
        .await
    }

    /// Puts iff the cell equals `value`. `None` means "no such cell"; it is sent as the empty
    /// value (the generated client always sends the argument), which HBase also matches
    /// against a cell whose value is empty.
    ///
    /// ```
    /// use percolator::hbase::Put;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let put = Put::new("r").add("f", "q", "v");
    /// assert!(hbase.check_and_put("t", b"r", b"f", b"q", None, &put).await?);
    /// assert!(!hbase.check_and_put("t", b"r", b"f", b"q", None, &put).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        put: &Put,
    ) -> Result<bool> {
        let tput = convert::put(put);
        let check = Check {
            table,
            row,
            family,
            qualifier,
            value,
        };
        let spec = CallSpec::once("checkAndPut", table, row);
        let applied = self.check_and(spec, check, &tput).await?;
        if applied {
            self.tally(|t| t.put(put));
        }
        Ok(applied)
    }

    /// Deletes iff the cell equals `value`; `None` as in [`AsyncHBaseClient::check_and_put`].
    ///
    /// ```
    /// use percolator::hbase::{Delete, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v")).await?;
    /// let delete = Delete::new("r");
    /// assert!(!hbase.check_and_delete("t", b"r", b"f", b"q", Some(b"x"), &delete).await?);
    /// assert!(hbase.check_and_delete("t", b"r", b"f", b"q", Some(b"v"), &delete).await?);
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn check_and_delete(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        delete: &Delete,
    ) -> Result<bool> {
        let tdelete = convert::delete(delete);
        let check = Check {
            table,
            row,
            family,
            qualifier,
            value,
        };
        let spec = CallSpec::once("checkAndDelete", table, row);
        let applied = self.check_and(spec, check, &tdelete).await?;
        if applied {
            self.tally(|t| t.delete(delete));
        }
        Ok(applied)
    }

    async fn check_and(
        &self,
        spec: CallSpec<'_>,
        check: Check<'_>,
        mutation: &dyn super::wire::Encode,
    ) -> Result<bool> {
        let args = [
            (1, Arg::Binary(check.table.as_bytes())),
            (2, Arg::Binary(check.row)),
            (3, Arg::Binary(check.family)),
            (4, Arg::Binary(check.qualifier)),
            (5, Arg::Binary(check.value.unwrap_or_default())),
            (6, Arg::Struct(mutation)),
        ];
        self.call(spec, &args).await
    }

    /// Applies the puts and deletes of one row atomically.
    ///
    /// ```
    /// use percolator::hbase::{Delete, Get, Put, RowMutations};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "old", "1")).await?;
    /// let m = RowMutations::new("r").put(Put::new("r").add("f", "new", "2")).delete(Delete::new("r").column("f", "old"));
    /// hbase.mutate_row("t", &m).await?;
    /// let row = hbase.get("t", &Get::new("r")).await?;
    /// assert_eq!((row.value(b"f", b"new"), row.value(b"f", b"old")), (Some(&b"2"[..]), None));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn mutate_row(&self, table: &str, mutations: &RowMutations) -> Result<()> {
        let spec = CallSpec::safe("mutateRow", table, &mutations.row);
        let tmutations = convert::row_mutations(mutations);
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Struct(&tmutations)),
        ];
        self.call::<()>(spec, &args).await?;
        self.tally(|t| t.row(mutations));
        Ok(())
    }

    /// Adds to counters atomically and returns their new values.
    ///
    /// ```
    /// use percolator::hbase::Increment;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let row = hbase.increment("t", &Increment::new("r").add("f", "n", 3)).await?;
    /// assert_eq!(row.value(b"f", b"n"), Some(&3i64.to_be_bytes()[..]));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn increment(&self, table: &str, inc: &Increment) -> Result<RowResult> {
        let spec = CallSpec::once("increment", table, &inc.row);
        let tinc = convert::increment(inc);
        let args = [(1, Arg::Binary(table.as_bytes())), (2, Arg::Struct(&tinc))];
        convert::row_result(self.call(spec, &args).await?)
    }

    /// Appends to values atomically and returns the new values.
    ///
    /// ```
    /// use percolator::hbase::Append;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.append("t", &Append::new("r").add("f", "q", "ab")).await?;
    /// let row = hbase.append("t", &Append::new("r").add("f", "q", "c")).await?;
    /// assert_eq!(row.value(b"f", b"q"), Some(&b"abc"[..]));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn append(&self, table: &str, app: &Append) -> Result<RowResult> {
        let spec = CallSpec::once("append", table, &app.row);
        let tapp = convert::append(app);
        let args = [(1, Arg::Binary(table.as_bytes())), (2, Arg::Struct(&tapp))];
        convert::row_result(self.call(spec, &args).await?)
    }

    /// One page of a scan in one call: opens, reads up to `num_rows` rows and closes.
    ///
    /// ```
    /// use percolator::hbase::{Put, Scan};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put_many("t", &[Put::new("a").add("f", "q", "1"), Put::new("b").add("f", "q", "2")]).await?;
    /// let rows = hbase.scan_results("t", &Scan::new(), 1).await?;
    /// assert_eq!((rows.len(), rows[0].row.as_slice()), (1, &b"a"[..]));
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn scan_results(
        &self,
        table: &str,
        scan: &Scan,
        num_rows: i32,
    ) -> Result<Vec<RowResult>> {
        let spec =
            CallSpec::safe("getScannerResults", table, &scan.start_row).rows(rows_asked(num_rows));
        let tscan = convert::scan(scan);
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Struct(&tscan)),
            (3, Arg::I32(num_rows)),
        ];
        convert::row_results(self.call(spec, &args).await?)
    }

    /// The raw `openScanner`.
    ///
    /// Prefer [`AsyncHBaseClient::scan_all`] or [`AsyncHBaseClient::scan_results`], which close
    /// what they open.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let id = hbase.open_scanner("t", &Scan::new()).await?;
    /// hbase.close_scanner(id).await?;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn open_scanner(&self, table: &str, scan: &Scan) -> Result<i32> {
        let spec = CallSpec::safe("openScanner", table, &scan.start_row);
        let tscan = convert::scan(scan);
        let args = [(1, Arg::Binary(table.as_bytes())), (2, Arg::Struct(&tscan))];
        let (id, gateway) = self.call_at::<i32>(spec, &args).await?;
        Ok(self.gateways().scanner_opened(gateway, id))
    }

    /// The gateway holding the scanner handed out as `scanner_id`, and the gateway's own id
    /// for it; a scanner this client did not open is refused as the gateway would.
    fn scanner_at(&self, scanner_id: i32) -> Result<(usize, i32)> {
        self.gateways()
            .scanner(scanner_id)
            .ok_or_else(|| Error::IllegalArgument {
                message: format!("Invalid scanner Id: {scanner_id}"),
            })
    }

    /// `getScannerRows` for a scanner opened on `table` (empty if unknown). The gateway opens
    /// region scanners lazily, so a missing table is first reported here, by its bare name,
    /// which only the caller can recognise as the table's.
    pub(crate) async fn scanner_rows_of(
        &self,
        table: &str,
        scanner_id: i32,
        num_rows: i32,
    ) -> Result<Vec<RowResult>> {
        let (gateway, id) = self.scanner_at(scanner_id)?;
        let spec = CallSpec::not_after_send("getScannerRows", table)
            .rows(rows_asked(num_rows))
            .on(gateway);
        let args = [(1, Arg::I32(id)), (2, Arg::I32(num_rows))];
        convert::row_results(self.call(spec, &args).await?)
    }

    /// The raw `closeScanner`.
    ///
    /// ```
    /// use percolator::hbase::Scan;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let id = hbase.open_scanner("t", &Scan::new()).await?;
    /// hbase.close_scanner(id).await?;
    /// assert!(hbase.blocking().scanner_rows(id, 1).is_err());
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn close_scanner(&self, scanner_id: i32) -> Result<()> {
        let (gateway, id) = self.scanner_at(scanner_id)?;
        let args = [(1, Arg::I32(id))];
        let closed = self
            .call(CallSpec::safe("closeScanner", "", &[]).on(gateway), &args)
            .await;
        self.gateways().scanner_closed(scanner_id);
        closed
    }
}

/// The arguments of checkAndMutate; `mutations` is `cam.mutations` converted.
pub(super) fn cam_args<'a>(
    table: &'a str,
    cam: &'a CheckAndMutate,
    mutations: &'a TRowMutations,
) -> [(i16, Arg<'a>); 7] {
    [
        (1, Arg::Binary(table.as_bytes())),
        (2, Arg::Binary(&cam.row)),
        (3, Arg::Binary(&cam.family)),
        (4, Arg::Binary(&cam.qualifier)),
        (5, Arg::I32(convert::compare_op(cam.op).0)),
        (6, Arg::Binary(&cam.value)),
        (7, Arg::Struct(mutations)),
    ]
}

/// The condition of a checkAndPut or checkAndDelete.
struct Check<'a> {
    table: &'a str,
    row: &'a [u8],
    family: &'a [u8],
    qualifier: &'a [u8],
    value: Option<&'a [u8]>,
}

/// Polls every future until all are done; outputs in order.
async fn join_all<F: Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(outputs.iter_mut().filter_map(Option::take).collect())
        }
    })
    .await
}

/// The rows a scanner call asks for, as the pool weighs the call (a bad count weighs one).
fn rows_asked(num_rows: i32) -> usize {
    usize::try_from(num_rows).unwrap_or(1)
}
