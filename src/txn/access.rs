//! The seam between the protocol and HBase: the few operations transactions need. Production
//! uses [`HBaseClient`]; tests wrap it to drop replies or count calls.

use crate::error::Result;
use crate::hbase::{
    CheckAndMutate, Delete, Get, HBaseClient, Put, RowResult, Scan, TableDescriptor,
};
use crate::oracle::TimestampSource;

/// Builds a request from the timestamp it must carry.
pub type WithTimestamp<T> = Box<dyn FnOnce(u64) -> T + Send>;

pub trait HBaseAccess: Send + Sync + 'static {
    fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>>;
    /// Must report a lost reply as `Error::OutcomeUnknown`, never retry blindly.
    fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool>;

    /// Several checkAndMutates whose round trips may overlap; results in order. The default
    /// runs them one after another.
    fn check_and_mutate_all(&self, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        calls
            .iter()
            .map(|&(table, cam)| self.check_and_mutate(table, cam))
            .collect()
    }

    /// Fetches a timestamp from `tso` and reads with the gets built from it; returns both.
    /// Production sends the gets from wherever the timestamp arrives, so the caller sleeps
    /// once (see `hbase::Sender`); this default fetches, then reads.
    fn get_many_at(
        &self,
        table: &str,
        tso: &dyn TimestampSource,
        gets: WithTimestamp<Vec<Get>>,
    ) -> Result<(u64, Vec<RowResult>)> {
        let ts = tso.get_timestamp()?;
        Ok((ts, self.get_many(table, &gets(ts))?))
    }

    /// Like [`get_many_at`](Self::get_many_at) for a checkAndMutate. The outer error
    /// means no timestamp was obtained and nothing was sent; the inner result is the call's.
    fn check_and_mutate_at(
        &self,
        table: &str,
        tso: &dyn TimestampSource,
        cam: WithTimestamp<CheckAndMutate>,
    ) -> Result<(u64, Result<bool>)> {
        let ts = tso.get_timestamp()?;
        Ok((ts, self.check_and_mutate(table, &cam(ts))))
    }

    /// One page of a scan in one round trip (open, read `rows`, close).
    fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>>;
    fn put(&self, table: &str, put: &Put) -> Result<()>;
    fn delete(&self, table: &str, delete: &Delete) -> Result<()>;
    fn table_descriptor(&self, table: &str) -> Result<TableDescriptor>;
}

impl HBaseAccess for HBaseClient {
    fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        if let [one] = gets {
            return Ok(vec![self.get(table, one)?]);
        }
        HBaseClient::get_many(self, table, gets)
    }

    fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        HBaseClient::check_and_mutate(self, table, cam)
    }

    fn check_and_mutate_all(&self, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        HBaseClient::check_and_mutate_all(self, calls)
    }

    fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        self.scan_results(table, scan, rows)
    }

    fn put(&self, table: &str, put: &Put) -> Result<()> {
        HBaseClient::put(self, table, put)
    }

    fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        HBaseClient::delete(self, table, delete)
    }

    fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        self.admin().table_descriptor(table)
    }
}
