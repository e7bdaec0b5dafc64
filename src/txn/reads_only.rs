//! A test double for unit tests of the read paths: `ReadsOnly(reader)` answers getMultiples
//! through `reader` and refuses every other call, so a test states only how its store reads.

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::hbase::{CheckAndMutate, Delete, Get, Put, RowResult, Scan, TableDescriptor};
use crate::txn::store::HBaseAccess;

/// How a test store answers a getMultiple.
#[async_trait]
pub(crate) trait Reads: Send + Sync + 'static {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>>;
}

pub(crate) struct ReadsOnly<R>(pub R);

fn unexpected<T>() -> Result<T> {
    Err(Error::IllegalArgument {
        message: "this test store only reads".into(),
    })
}

#[async_trait]
impl<R: Reads> HBaseAccess for ReadsOnly<R> {
    async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.0.get_many(table, gets).await
    }
    async fn check_and_mutate(&self, _: &str, _: &CheckAndMutate) -> Result<bool> {
        unexpected()
    }
    async fn scan_page(&self, _: &str, _: &Scan, _: i32) -> Result<Vec<RowResult>> {
        unexpected()
    }
    async fn put(&self, _: &str, _: &Put) -> Result<()> {
        unexpected()
    }
    async fn delete(&self, _: &str, _: &Delete) -> Result<()> {
        unexpected()
    }
    async fn table_descriptor(&self, _: &str) -> Result<TableDescriptor> {
        unexpected()
    }
}
