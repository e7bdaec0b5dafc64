//! The async transaction: snapshot reads, buffered writes, commit.
//!
//! Layout: this file holds the transaction's state, its start timestamp and the commit;
//! `reads.rs` the point reads, `scan.rs` the scans and [`RowStream`], `writes.rs` the
//! buffered writes.

mod reads;
mod scan;
mod writes;

pub use scan::RowStream;

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::OnceLock;

use tracing::field::{display, Empty};
use tracing::instrument::Instrumented;
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::hbase::Delete;
use crate::key::CellKey;
use crate::metrics;
use crate::txn::commit::WriteBuffer;
use crate::txn::commit::{self, Committed};
use crate::txn::open_txns::Registration;
use crate::txn::session::Session;
use crate::txn::spans::in_span;
use crate::txn::stats::Stats;
use crate::txn::timestamps;

/// A snapshot-isolated transaction, async. Reads see the snapshot at `start_ts` plus this
/// transaction's own writes; writes are buffered until [`commit`](Self::commit).
///
/// The start timestamp is fetched by the first operation that needs it, so the snapshot is
/// taken after `begin`, which is all snapshot isolation and real-time order ask.
///
/// ```no_run
/// # async fn demo(client: percolator::AsyncClient) -> percolator::Result<()> {
/// let mut txn = client.begin().await?;
/// let balance = txn.get("accounts", "alice", "f", "balance").await?;
/// txn.set("accounts", "alice", "f", "balance", b"10".to_vec())?;
/// let commit_ts = txn.commit().await?;
/// # let _ = (balance, commit_ts); Ok(()) }
/// ```
pub struct AsyncTransaction {
    session: Session,
    /// The start timestamp once taken, published as open until this transaction is dropped
    /// (docs/gc.md).
    start: OnceLock<Registration>,
    writes: WriteBuffer,
    /// The first written key becomes the primary.
    first: Option<CellKey>,
    /// Columns given a weak notification ([`notify`](Self::notify)).
    notified: BTreeSet<CellKey>,
    /// Values read at the snapshot already by [`get_many_with_newest`](Self::get_many_with_newest),
    /// served again without a round trip.
    remembered: HashMap<CellKey, Option<Vec<u8>>>,
    /// A snapshot at a chosen timestamp: reads only.
    read_only: bool,
    /// The transaction's trace: begin, reads, the commit and its phases, and any lock
    /// resolution are its children (docs/observability.md).
    span: tracing::Span,
}

fn transaction_span() -> tracing::Span {
    tracing::debug_span!(
        "transaction",
        start_ts = Empty,
        commit_ts = Empty,
        primary = Empty
    )
}

impl AsyncTransaction {
    pub(crate) fn new(session: Session) -> AsyncTransaction {
        Stats::bump(&session.ctx().stats().begun);
        AsyncTransaction {
            session,
            start: OnceLock::new(),
            writes: WriteBuffer::default(),
            first: None,
            notified: BTreeSet::new(),
            remembered: HashMap::new(),
            read_only: false,
            span: transaction_span(),
        }
    }

    pub(crate) fn read_only_at(session: Session, ts: u64) -> AsyncTransaction {
        let registration = session.ctx().open_txns().register(ts);
        let span = transaction_span();
        span.record("start_ts", ts);
        AsyncTransaction {
            session,
            start: OnceLock::from(registration),
            writes: WriteBuffer::default(),
            first: None,
            notified: BTreeSet::new(),
            remembered: HashMap::new(),
            read_only: true,
            span,
        }
    }

    /// The snapshot timestamp, fetched now if no operation has fixed it yet.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// let ts = txn.start_ts().await?;
    /// assert_eq!(txn.start_ts().await?, ts, "fixed once");
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn start_ts(&self) -> Result<u64> {
        if let Some(ts) = self.fixed_start_ts() {
            return Ok(ts);
        }
        let ctx = self.session.ctx();
        let ts = in_span!(self.begin_span(), timestamps::timestamp(ctx))?;
        // Reads of one transaction that start together may each fetch a timestamp: the first
        // one stored is the snapshot for all of them, and the others are never registered.
        let start = self.start.get_or_init(|| self.registered(ts));
        Ok(start.start_ts())
    }

    fn begin_span(&self) -> tracing::Span {
        tracing::debug_span!(parent: &self.span, "begin")
    }

    /// `ts` published as this transaction's start (docs/gc.md).
    fn registered(&self, ts: u64) -> Registration {
        self.span.record("start_ts", ts);
        self.session.ctx().open_txns().register(ts)
    }

    /// The start timestamp if it is fixed already.
    fn fixed_start_ts(&self) -> Option<u64> {
        self.start.get().map(Registration::start_ts)
    }

    /// The start timestamp if it is fixed already, else 0 (for error reports).
    fn known_start_ts(&self) -> u64 {
        self.fixed_start_ts().unwrap_or(0)
    }

    /// HBase RPCs this transaction has made so far (reads, prewrites, commits, resolution).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let txn = client.begin().await?;
    /// txn.get("t", "row", "f", "q").await?;
    /// assert_eq!(txn.rpc_count(), 1);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rpc_count(&self) -> u64 {
        self.session.rpcs()
    }

    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::IllegalArgument {
                message: format!(
                    "snapshot at {} is read-only: it cannot write",
                    self.known_start_ts()
                ),
            });
        }
        Ok(())
    }

    /// Commits the buffered writes and returns the commit timestamp (`start_ts` for a
    /// transaction that wrote nothing: it needs no commit).
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// let commit_ts = txn.commit().await?;
    /// assert!(commit_ts > 0);
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn commit(self) -> Result<u64> {
        let span = self.commit_span();
        Ok(in_span!(span, self.commit_unspanned(None))?.commit_ts)
    }

    /// Commits with `extra`, a delete in the primary's row (the first written), landing in the
    /// commit point's CAS; `Committed::extra_applied` says whether it did. A read-only
    /// transaction commits nothing, so nothing is applied either.
    ///
    /// Not an `async fn`: the commit's future is copied whole as each layer around it starts,
    /// and this one adds only the span.
    pub(crate) fn commit_with(
        self,
        extra: Option<Delete>,
    ) -> Instrumented<impl Future<Output = Result<Committed>> + Send> {
        let span = self.commit_span();
        self.commit_unspanned(extra).instrument(span)
    }

    fn commit_span(&self) -> tracing::Span {
        tracing::debug_span!(parent: &self.span, "commit")
    }

    // A plain fn around an `async move` block, not an `async fn`: an async fn that takes
    // `self` by value keeps it twice in its future (the argument and the body's own), and the
    // whole future is copied as the commit starts.
    #[allow(clippy::manual_async_fn)]
    fn commit_unspanned(
        mut self,
        extra: Option<Delete>,
    ) -> impl Future<Output = Result<Committed>> + Send {
        async move {
            let read_only = self.read_only;
            // The commit owns the transaction, so no read can be fetching a start_ts beside
            // it: one found missing is set in place, without `OnceLock`'s synchronisation.
            let start_ts = match self.fixed_start_ts() {
                Some(ts) => ts,
                None => {
                    // Nothing was read (a read-only snapshot has its start_ts from the outset),
                    // so no snapshot is owed: a start_ts at hand saves a round trip.
                    let ctx = self.session.ctx();
                    let ts =
                        match timestamps::recent_timestamp(ctx).filter(|_| self.first.is_some()) {
                            Some(ts) => ts,
                            None => in_span!(self.begin_span(), timestamps::timestamp(ctx))?,
                        };
                    self.start = OnceLock::from(self.registered(ts));
                    ts
                }
            };
            let Some(primary) = self.first.take().filter(|_| !read_only) else {
                self.span.record("commit_ts", start_ts);
                return Ok(Committed {
                    commit_ts: start_ts,
                    extra_applied: false,
                });
            };
            self.span.record("primary", display(&primary));
            let writes = std::mem::take(&mut self.writes);
            let (session, weak) = (&self.session, &self.notified);
            let committed = commit::commit(session, start_ts, primary, writes, weak, extra).await;
            metrics::count(metrics::transaction_outcome(&committed));
            if let Ok(c) = &committed {
                self.span.record("commit_ts", c.commit_ts);
            }
            committed
        }
    }

    /// Discards the buffered writes. Nothing was written before commit, so nothing to undo;
    /// it is async like every other call that ends a transaction, so that code awaiting it
    /// stays right if the end of a transaction ever needs the cluster.
    ///
    /// ```
    /// # let (_services, hbase, oracles) = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doc_fixture.rs"));
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
    /// let mut txn = client.begin().await?;
    /// txn.set("t", "row", "f", "q", b"v".to_vec())?;
    /// txn.rollback().await;
    /// # client.shutdown().await;
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn rollback(self) {}
}
