//! The seam between the protocol and HBase: the few operations transactions need. Production
//! uses [`HBaseClient`]; tests wrap it to drop replies or count calls.

use crate::error::Result;
use crate::hbase::{
    CheckAndMutate, Delete, Get, HBaseClient, Put, RowResult, Scan, TableDescriptor,
};

pub trait HBaseAccess: Send + Sync + 'static {
    fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>>;
    /// Must report a lost reply as `Error::OutcomeUnknown`, never retry blindly.
    fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool>;
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
