//! `Session`: one transaction's way to HBase, counting the round trips it makes (for the
//! transaction and for the client).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::{Error, Result};
use crate::hbase::{CheckAndMutate, Get, RowResult, Scan};
use crate::key::CellKey;
use crate::txn::context::Context;
use crate::txn::stats::Stats;

/// Not `Clone`: the commit borrows its transaction's session, so the count needs no
/// allocation of its own; work that outlives the transaction (its background secondaries)
/// takes a session of its own.
pub(crate) struct Session {
    ctx: Arc<Context>,
    rpcs: AtomicU64,
}

impl Session {
    pub fn new(ctx: Arc<Context>) -> Session {
        Session {
            ctx,
            rpcs: AtomicU64::new(0),
        }
    }

    pub fn ctx(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn rpcs(&self) -> u64 {
        self.rpcs.load(Ordering::Relaxed)
    }

    /// Counts one HBase round trip, for this transaction and for the client.
    pub fn count(&self) {
        self.rpcs.fetch_add(1, Ordering::Relaxed);
        Stats::bump(&self.ctx.stats().hbase_rpcs);
    }

    pub async fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        self.count();
        let rows = self.ctx.get_many(table, gets).await?;
        if rows.len() != gets.len() {
            return Err(Error::Protocol {
                peer: crate::error::Peer::HBase,
                message: format!("asked for {} rows, got {}", gets.len(), rows.len()),
            });
        }
        Ok(rows)
    }

    /// The raw lock cell `q` of `key`'s row (one Get): the cell's own, or its row's.
    pub async fn lock_cell(&self, key: &CellKey, q: Vec<u8>) -> Result<Option<Vec<u8>>> {
        let schema = self.ctx.schema();
        let get = Get::new(key.row.clone()).column(schema.lock_family.clone(), q.clone());
        let rows = self.get_many(&key.table, &[get]).await?;
        Ok(rows[0].value(&schema.lock_family, &q).map(<[u8]>::to_vec))
    }

    /// The store's own future, not one around it: a commit makes most of its calls here.
    pub fn cas<'a>(
        &'a self,
        table: &'a str,
        cam: &'a CheckAndMutate,
    ) -> BoxFuture<'a, Result<bool>> {
        self.count();
        self.ctx.store().check_and_mutate(table, cam)
    }

    pub async fn scan_page(&self, table: &str, scan: &Scan, rows: i32) -> Result<Vec<RowResult>> {
        self.count();
        self.ctx.store().scan_page(table, scan, rows).await
    }
}
