//! Async face of [`HBaseClient`] for tokio code.
//!
//! Each call runs the blocking client on tokio's blocking pool (`spawn_blocking`), so a slow
//! gateway never stalls the async workers. The pool connections are shared with the blocking
//! client it came from, and so is the RPC counter.

use super::client::HBaseClient;
use super::types::*;
use crate::{Error, Result};

/// Async versions of the data methods. Must be awaited inside a tokio runtime.
#[derive(Clone, Debug)]
pub struct AsyncHBaseClient {
    client: HBaseClient,
}

impl AsyncHBaseClient {
    pub(crate) fn new(client: HBaseClient) -> Self {
        AsyncHBaseClient { client }
    }

    /// Connects (see [`HBaseClient::connect`]).
    pub async fn connect(config: crate::hbase::HBaseConfig) -> Result<AsyncHBaseClient> {
        match tokio::task::spawn_blocking(move || HBaseClient::connect(config)).await {
            Ok(client) => Ok(AsyncHBaseClient::new(client?)),
            Err(_) => Err(Error::Shutdown),
        }
    }

    pub async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        let table = table.to_owned();
        self.run(move |c| c.admin().table_descriptor(&table)).await
    }

    /// The blocking client underneath.
    pub fn blocking(&self) -> &HBaseClient {
        &self.client
    }

    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&HBaseClient) -> Result<T> + Send + 'static,
    {
        let client = self.client.clone();
        match tokio::task::spawn_blocking(move || f(&client)).await {
            Ok(result) => result,
            Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            // Only a runtime shutting down cancels a blocking task.
            Err(_) => Err(Error::Shutdown),
        }
    }

    pub async fn get(&self, table: &str, get: &Get) -> Result<RowResult> {
        let (table, get) = (table.to_owned(), get.clone());
        self.run(move |c| c.get(&table, &get)).await
    }

    pub async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        let (table, gets) = (table.to_owned(), gets.to_vec());
        self.run(move |c| c.get_many(&table, &gets)).await
    }

    pub async fn exists(&self, table: &str, get: &Get) -> Result<bool> {
        let (table, get) = (table.to_owned(), get.clone());
        self.run(move |c| c.exists(&table, &get)).await
    }

    pub async fn put(&self, table: &str, put: &Put) -> Result<()> {
        let (table, put) = (table.to_owned(), put.clone());
        self.run(move |c| c.put(&table, &put)).await
    }

    pub async fn put_many(&self, table: &str, puts: &[Put]) -> Result<()> {
        let (table, puts) = (table.to_owned(), puts.to_vec());
        self.run(move |c| c.put_many(&table, &puts)).await
    }

    pub async fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        let (table, delete) = (table.to_owned(), delete.clone());
        self.run(move |c| c.delete(&table, &delete)).await
    }

    pub async fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        let (table, deletes) = (table.to_owned(), deletes.to_vec());
        self.run(move |c| c.delete_many(&table, &deletes)).await
    }

    pub async fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        let (table, cam) = (table.to_owned(), cam.clone());
        self.run(move |c| c.check_and_mutate(&table, &cam)).await
    }

    pub async fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        put: &Put,
    ) -> Result<bool> {
        let owned = (
            table.to_owned(),
            row.to_vec(),
            family.to_vec(),
            qualifier.to_vec(),
        );
        let (value, put) = (value.map(<[u8]>::to_vec), put.clone());
        self.run(move |c| {
            let (table, row, family, qualifier) = owned;
            c.check_and_put(&table, &row, &family, &qualifier, value.as_deref(), &put)
        })
        .await
    }

    pub async fn check_and_delete(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        delete: &Delete,
    ) -> Result<bool> {
        let owned = (
            table.to_owned(),
            row.to_vec(),
            family.to_vec(),
            qualifier.to_vec(),
        );
        let (value, delete) = (value.map(<[u8]>::to_vec), delete.clone());
        self.run(move |c| {
            let (table, row, family, qualifier) = owned;
            c.check_and_delete(&table, &row, &family, &qualifier, value.as_deref(), &delete)
        })
        .await
    }

    pub async fn mutate_row(&self, table: &str, mutations: &RowMutations) -> Result<()> {
        let (table, mutations) = (table.to_owned(), mutations.clone());
        self.run(move |c| c.mutate_row(&table, &mutations)).await
    }

    pub async fn increment(&self, table: &str, inc: &Increment) -> Result<RowResult> {
        let (table, inc) = (table.to_owned(), inc.clone());
        self.run(move |c| c.increment(&table, &inc)).await
    }

    pub async fn append(&self, table: &str, app: &Append) -> Result<RowResult> {
        let (table, app) = (table.to_owned(), app.clone());
        self.run(move |c| c.append(&table, &app)).await
    }

    /// Every row of the scan (paged as the blocking [`HBaseClient::scan`] pages).
    pub async fn scan_all(&self, table: &str, scan: &Scan) -> Result<Vec<RowResult>> {
        let (table, scan) = (table.to_owned(), scan.clone());
        self.run(move |c| c.scan(&table, &scan)?.collect()).await
    }

    pub async fn scan_results(
        &self,
        table: &str,
        scan: &Scan,
        num_rows: i32,
    ) -> Result<Vec<RowResult>> {
        let (table, scan) = (table.to_owned(), scan.clone());
        self.run(move |c| c.scan_results(&table, &scan, num_rows))
            .await
    }
}
