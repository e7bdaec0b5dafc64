//! Data methods of the gateway: gets, mutations, check-and-mutate, increments, scanners and
//! region locations.
//!
//! Each follows the real handler's order: parse the table name, build the Java client object
//! (whose validation failures are runtime errors), then find the table and run the operation.

use std::sync::Arc;

use crate::convert::{self, check_row};
use crate::error::{ServerError, ServerResult};
use crate::filter::CompareOp;
use crate::handler::Handler;
use crate::scanner::Scanner;
use crate::store::{self, Check, Delta, Mutation, Table, TableName};
use percolator_thrift::hbase::{
    TAppend, TCompareOp, TDelete, TGet, THRegionInfo, THRegionLocation, TIncrement, TPut, TResult,
    TRowMutations, TScan, TServerName,
};

/// The server-side check that every mutation of a check-and-mutate is on the checked row.
fn same_row(checked: &[u8], mutation_row: &[u8]) -> ServerResult<()> {
    if checked == mutation_row {
        Ok(())
    } else {
        Err(ServerError::do_not_retry("Action's getRow must match"))
    }
}

impl Handler {
    fn table(&self, name: &TableName) -> ServerResult<Arc<Table>> {
        self.store.table(name)
    }

    fn read(&self, name: &TableName, tget: &TGet) -> ServerResult<Vec<store::Cell>> {
        let spec = convert::get(tget)?;
        store::get(&*self.table(name)?, &tget.row, &spec, self.now())
    }

    pub fn exists(&self, table: &[u8], tget: &TGet) -> ServerResult<bool> {
        let name = TableName::parse(table)?;
        Ok(!self.read(&name, tget)?.is_empty())
    }

    pub fn exists_all(&self, table: &[u8], tgets: &[TGet]) -> ServerResult<Vec<bool>> {
        let name = TableName::parse(table)?;
        tgets
            .iter()
            .map(|g| self.read(&name, g).map(|cells| !cells.is_empty()))
            .collect()
    }

    pub fn get(&self, table: &[u8], tget: &TGet) -> ServerResult<TResult> {
        let name = TableName::parse(table)?;
        let cells = self.read(&name, tget)?;
        Ok(convert::result(&tget.row, cells, false))
    }

    /// Results in request order; a missing row gives an empty result in its place.
    pub fn get_multiple(&self, table: &[u8], tgets: &[TGet]) -> ServerResult<Vec<TResult>> {
        let name = TableName::parse(table)?;
        let specs = tgets
            .iter()
            .map(convert::get)
            .collect::<ServerResult<Vec<_>>>()?;
        let t = self.table(&name)?;
        let now = self.now();
        tgets
            .iter()
            .zip(specs)
            .map(|(g, spec)| {
                store::get(&t, &g.row, &spec, now).map(|c| convert::result(&g.row, c, false))
            })
            .collect()
    }

    pub fn put(&self, table: &[u8], tput: &TPut) -> ServerResult<()> {
        let name = TableName::parse(table)?;
        let m = convert::put(tput)?;
        store::mutate(&*self.table(&name)?, &tput.row, &[m], self.now())
    }

    /// A batch: every action is tried; the failed ones are reported together.
    fn batch(&self, table: &[u8], actions: Vec<(&[u8], Mutation)>) -> ServerResult<()> {
        let count = actions.len();
        let t = self
            .table(&TableName::parse(table)?)
            .map_err(|e| self.batch_failure(count, e))?;
        let now = self.now();
        let failures: Vec<ServerError> = actions
            .into_iter()
            .filter_map(|(row, m)| store::mutate(&t, row, &[m], now).err())
            .collect();
        match failures.first() {
            None => Ok(()),
            Some(first) => Err(ServerError::retries_exhausted(
                failures.len(),
                first,
                Some(&self.server_name()),
            )),
        }
    }

    /// `error` as the batch path reports it for `count` actions: a runtime failure stays what
    /// it is; an IO error becomes RetriesExhaustedWithDetailsException, naming this server
    /// unless the table was never located.
    fn batch_failure(&self, count: usize, error: ServerError) -> ServerError {
        if !matches!(error, ServerError::Io { .. }) {
            return error;
        }
        let server = (!error.is_table_not_found()).then(|| self.server_name());
        ServerError::retries_exhausted(count, &error, server.as_deref())
    }

    fn server_name(&self) -> String {
        format!(
            "{},{},{}",
            self.identity.host, self.identity.port, self.identity.start_code
        )
    }

    pub fn put_multiple(&self, table: &[u8], tputs: &[TPut]) -> ServerResult<()> {
        TableName::parse(table)?;
        let actions = tputs
            .iter()
            .map(|p| Ok((p.row.as_slice(), convert::put(p)?)))
            .collect::<ServerResult<Vec<_>>>()?;
        self.batch(table, actions)
    }

    pub fn delete_single(&self, table: &[u8], tdelete: &TDelete) -> ServerResult<()> {
        let name = TableName::parse(table)?;
        let m = convert::delete(tdelete)?;
        store::mutate(&*self.table(&name)?, &tdelete.row, &[m], self.now())
    }

    /// Always answers an empty list, like the real gateway.
    pub fn delete_multiple(
        &self,
        table: &[u8],
        tdeletes: &[TDelete],
    ) -> ServerResult<Vec<TDelete>> {
        TableName::parse(table)?;
        let actions = tdeletes
            .iter()
            .map(|d| Ok((d.row.as_slice(), convert::delete(d)?)))
            .collect::<ServerResult<Vec<_>>>()?;
        self.batch(table, actions).map(|()| Vec::new())
    }

    fn check_then(
        &self,
        name: &TableName,
        row: &[u8],
        check: Check,
        mutations: &[Mutation],
    ) -> ServerResult<bool> {
        check_row(row)?;
        store::check_and_mutate(&*self.table(name)?, row, &check, mutations, self.now())
    }

    /// An unset value means "the cell must not exist" (`ifNotExists`).
    pub fn check_and_put(
        &self,
        table: &[u8],
        row: &[u8],
        family: Vec<u8>,
        qualifier: Vec<u8>,
        value: Option<Vec<u8>>,
        tput: &TPut,
    ) -> ServerResult<bool> {
        let name = TableName::parse(table)?;
        let m = convert::put(tput)?;
        same_row(row, &tput.row)?;
        let check = Check {
            family,
            qualifier,
            op: CompareOp::Equal,
            value: value.unwrap_or_default(),
        };
        self.check_then(&name, row, check, &[m])
    }

    pub fn check_and_delete(
        &self,
        table: &[u8],
        row: &[u8],
        family: Vec<u8>,
        qualifier: Vec<u8>,
        value: Option<Vec<u8>>,
        tdelete: &TDelete,
    ) -> ServerResult<bool> {
        let name = TableName::parse(table)?;
        let m = convert::delete(tdelete)?;
        same_row(row, &tdelete.row)?;
        let check = Check {
            family,
            qualifier,
            op: CompareOp::Equal,
            value: value.unwrap_or_default(),
        };
        self.check_then(&name, row, check, &[m])
    }

    /// An unset value crashes the real handler with a NullPointerException: INTERNAL_ERROR.
    #[allow(clippy::too_many_arguments)]
    pub fn check_and_mutate(
        &self,
        table: &[u8],
        row: &[u8],
        family: Vec<u8>,
        qualifier: Vec<u8>,
        op: TCompareOp,
        value: Option<Vec<u8>>,
        trm: &TRowMutations,
    ) -> ServerResult<bool> {
        let name = TableName::parse(table)?;
        let value = value.ok_or_else(|| {
            ServerError::internal(
                "java.lang.NullPointerException: checkAndMutate value is null (send an empty \
                 value to compare against a missing cell)",
            )
        })?;
        let mutations = convert::row_mutations(trm)?;
        let op = convert::compare_op(op)?;
        same_row(row, &trm.row)?;
        let check = Check {
            family,
            qualifier,
            op,
            value,
        };
        // Unlike checkAndPut/checkAndDelete, HBase 2.x runs checkAndMutate through the batch
        // path, so its table and region errors arrive wrapped.
        self.check_then(&name, row, check, &mutations)
            .map_err(|e| self.batch_failure(1, e))
    }

    pub fn mutate_row(&self, table: &[u8], trm: &TRowMutations) -> ServerResult<()> {
        let name = TableName::parse(table)?;
        let mutations = convert::row_mutations(trm)?;
        let t = self.table(&name).map_err(|e| self.batch_failure(1, e))?;
        store::mutate(&t, &trm.row, &mutations, self.now()).map_err(|e| self.batch_failure(1, e))
    }

    fn read_modify_write(
        &self,
        table: &[u8],
        row: &[u8],
        columns: Vec<(Vec<u8>, Vec<u8>, Delta)>,
        return_results: bool,
    ) -> ServerResult<TResult> {
        let name = TableName::parse(table)?;
        check_row(row)?;
        if columns.is_empty() {
            return Err(ServerError::internal(
                "Invalid arguments to increment/append, no columns specified",
            ));
        }
        let cells = store::read_modify_write(&*self.table(&name)?, row, &columns, self.now())?;
        let cells = if return_results { cells } else { Vec::new() };
        Ok(convert::result(row, cells, false))
    }

    /// Values are 8-byte big-endian longs; `returnResults` defaults to true.
    pub fn increment(&self, table: &[u8], tinc: &TIncrement) -> ServerResult<TResult> {
        let columns = tinc
            .columns
            .iter()
            .map(|c| {
                (
                    c.family.clone(),
                    c.qualifier.clone(),
                    Delta::Increment(c.amount.unwrap_or(1)),
                )
            })
            .collect();
        self.read_modify_write(
            table,
            &tinc.row,
            columns,
            tinc.return_results.unwrap_or(true),
        )
    }

    pub fn append(&self, table: &[u8], tappend: &TAppend) -> ServerResult<TResult> {
        let columns = tappend
            .columns
            .iter()
            .map(|c| {
                (
                    c.family.clone(),
                    c.qualifier.clone(),
                    Delta::Append(&c.value),
                )
            })
            .collect();
        self.read_modify_write(
            table,
            &tappend.row,
            columns,
            tappend.return_results.unwrap_or(true),
        )
    }

    fn scanner(&self, table: &[u8], tscan: &TScan) -> ServerResult<Scanner> {
        let name = TableName::parse(table)?;
        let spec = convert::scan(tscan)?;
        Scanner::open(self.table(&name)?, spec)
    }

    /// A bad scan (filter, arguments) fails here; a missing or disabled table or an unknown
    /// family fails at the first `getScannerRows`, as on the real gateway.
    pub fn open_scanner(&self, table: &[u8], tscan: &TScan) -> ServerResult<i32> {
        let scanner = match self.scanner(table, tscan) {
            Err(e) if !matches!(e, ServerError::Io { .. }) => return Err(e),
            opened_or_deferred => opened_or_deferred,
        };
        Ok(self.scanners.register(scanner, self.now()))
    }

    pub fn get_scanner_rows(&self, id: i32, num_rows: i32) -> ServerResult<Vec<TResult>> {
        let n = row_count(num_rows)?;
        let chunks = self.scanners.next(id, n, self.now())?;
        Ok(chunks.into_iter().map(convert::chunk_result).collect())
    }

    pub fn get_scanner_results(
        &self,
        table: &[u8],
        tscan: &TScan,
        num_rows: i32,
    ) -> ServerResult<Vec<TResult>> {
        let mut scanner = self.scanner(table, tscan)?;
        let n = row_count(num_rows)?;
        let chunks = scanner.next(n, self.now())?;
        Ok(chunks.into_iter().map(convert::chunk_result).collect())
    }

    /// Every region of the table: none for a missing table (the real gateway answers from a
    /// meta scan that finds nothing, not with an error).
    pub fn region_locations(&self, table: &[u8]) -> ServerResult<Vec<THRegionLocation>> {
        let t = match self.table(&TableName::parse(table)?) {
            Ok(t) => t,
            Err(e) if e.is_table_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(t.regions()
            .into_iter()
            .map(|(start, end)| self.location(&t, start, end))
            .collect())
    }

    /// The region of the table that holds `row`, served by this gateway's address.
    pub fn region_location(&self, table: &[u8], row: &[u8]) -> ServerResult<THRegionLocation> {
        let t = self.table(&TableName::parse(table)?)?;
        let (start, end) = t
            .regions()
            .into_iter()
            .find(|(start, end)| {
                start.as_slice() <= row && (end.is_empty() || row < end.as_slice())
            })
            .unwrap_or_default();
        Ok(self.location(&t, start, end))
    }

    fn location(&self, t: &Table, start: Vec<u8>, end: Vec<u8>) -> THRegionLocation {
        THRegionLocation {
            server_name: TServerName {
                host_name: self.identity.host.clone(),
                port: Some(self.identity.port),
                start_code: Some(self.identity.start_code),
            },
            region_info: THRegionInfo {
                region_id: t.region_id(),
                table_name: t.name().to_string().into_bytes(),
                start_key: Some(start),
                end_key: Some(end),
                offline: Some(false),
                split: Some(false),
                replica_id: Some(0),
            },
        }
    }
}

/// `ResultScanner.next(n)` allocates an `ArrayList(n)`: a negative count is a runtime error.
fn row_count(num_rows: i32) -> ServerResult<usize> {
    usize::try_from(num_rows)
        .map_err(|_| ServerError::internal(format!("Illegal Capacity: {num_rows}")))
}
