//! The seam between the protocol and HBase: the few operations transactions need. Production
//! uses [`HBaseClient`]; tests wrap it to drop replies or count calls.

use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::hbase::{
    CheckAndMutate, Delete, Get, HBaseClient, Part, Put, RowResult, Scan, Stamp, TableDescriptor,
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

    fn get_many_at(
        &self,
        table: &str,
        tso: &dyn TimestampSource,
        gets: WithTimestamp<Vec<Get>>,
    ) -> Result<(u64, Vec<RowResult>)> {
        let (ts, rows) = with_ticket(tso, gets, |batch, start| {
            self.get_many_grouped(table, batch, start)
        });
        let rows = rows?;
        Ok((ts.ok_or_else(no_timestamp)?, rows))
    }

    fn check_and_mutate_at(
        &self,
        table: &str,
        tso: &dyn TimestampSource,
        cam: WithTimestamp<CheckAndMutate>,
    ) -> Result<(u64, Result<bool>)> {
        let (ts, applied) = with_ticket(tso, cam, |batch, start| {
            self.check_and_mutate_grouped(table, batch, start)
        });
        match ts {
            Some(ts) => Ok((ts, applied)),
            // No timestamp: nothing was sent, and the call failed with the oracle's error.
            None => Err(applied.err().unwrap_or_else(no_timestamp)),
        }
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

/// Runs a grouped `call` whose part is built by `build` from a timestamp of `tso`: the call
/// gets the ticket's batch and the way to redeem it. Returns the timestamp, if one came, with
/// the call's result.
fn with_ticket<P: Part, T>(
    tso: &dyn TimestampSource,
    build: WithTimestamp<P>,
    call: impl FnOnce(Option<u64>, Box<dyn FnOnce(Stamp<P>)>) -> T,
) -> (Option<u64>, T) {
    let ticket = tso.ticket();
    let batch = ticket.batch_id();
    let ts = Arc::new(OnceLock::new());
    let seen = Arc::clone(&ts);
    let result = call(
        batch,
        Box::new(move |member: Stamp<P>| {
            ticket.then(Box::new(move |got| {
                member.send(got.map(|t| {
                    let _ = seen.set(t);
                    build(t)
                }))
            }))
        }),
    );
    (ts.get().copied(), result)
}

fn no_timestamp() -> Error {
    Error::Protocol {
        peer: crate::error::Peer::Oracle,
        message: "a request went out without its timestamp".into(),
    }
}
