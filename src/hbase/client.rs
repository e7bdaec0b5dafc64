//! The pooled, typed Thrift2 client and its retry rules.
//!
//! Retry rules, per call: a call whose request never fully left (the reply phase never began)
//! is replayed once on a fresh connection, whatever it is. After the request was sent,
//! idempotent calls are replayed once; non-idempotent ones (check-and-mutate, increment,
//! append) fail with `OutcomeUnknown`, and scanner pages fail as they are (a replay would skip
//! the rows the server already handed out).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use r2d2::PooledConnection;

use super::admin::Admin;
use super::async_client::AsyncHBaseClient;
use super::config::HBaseConfig;
use super::conn::{
    CallFailure, ConnectLog, Connection, Manager, ReceiveFailure, ThriftClient, TraceErrors,
};
use super::deferred::{Encoded, Sender};
use super::grouped::Groups;
use super::hot::{Reply, Request};
use super::scanner::Scanner;
use super::types::*;
use super::{convert, errors};
use crate::thrift::hbase::TTHBaseServiceSyncClient;
use crate::{Error, Peer, Result};

/// Scanner page size when the scan does not set `caching`.
pub(crate) const DEFAULT_PAGE_ROWS: i32 = 100;
/// How often a waiting checkout looks for a failed connect.
const CHECKOUT_POLL: Duration = Duration::from_millis(50);

/// Whether a call may be sent again after a connection failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Idempotent: replay once on a fresh connection.
    Safe,
    /// Non-idempotent: once sent, a lost reply is `OutcomeUnknown`.
    OutcomeUnknown,
    /// Advances server state (scanner pages): once sent, fail with the transport error.
    NotAfterSend,
}

pub(crate) struct CallSpec<'a> {
    pub method: &'static str,
    pub table: &'a str,
    pub row: &'a [u8],
    pub replay: Replay,
}

/// A pipelined call whose request is out (or failed to go out) and whose reply is pending.
struct SentCall {
    conn: PooledConnection<Manager>,
    encoded: Encoded,
    outcome: std::result::Result<(), CallFailure>,
}

/// Requests one thread keeps in flight at once in [`HBaseClient::check_and_mutate_all`].
const PIPELINE_DEPTH: usize = 16;

enum Attempt<T> {
    Done(Result<T>),
    Replay(Error),
}

struct Inner {
    pool: r2d2::Pool<Manager>,
    config: HBaseConfig,
    connect_log: Arc<ConnectLog>,
    rpc_count: AtomicU64,
    read_groups: Groups<Vec<Get>>,
    cam_groups: Groups<CheckAndMutate>,
}

/// A pooled Thrift2 client. Cheap to clone; clones share the pool and the RPC counter.
#[derive(Clone)]
pub struct HBaseClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for HBaseClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HBaseClient")
            .field("addr", &self.inner.config.addr)
            .field("rpc_count", &self.rpc_count())
            .finish()
    }
}

impl HBaseClient {
    /// Builds the pool and opens one connection, so an unreachable gateway fails here.
    pub fn connect(config: HBaseConfig) -> Result<HBaseClient> {
        if config.pool_size == 0 {
            return Err(Error::IllegalArgument {
                message: "HBaseConfig.pool_size must be at least 1".to_owned(),
            });
        }
        let connect_log = Arc::new(ConnectLog::default());
        let pool = r2d2::Pool::builder()
            .max_size(config.pool_size)
            .min_idle(Some(0))
            .test_on_check_out(true)
            .idle_timeout(Some(config.max_idle.max(Duration::from_millis(1))))
            .max_lifetime(None)
            .connection_timeout(config.connect_timeout.max(Duration::from_millis(1)))
            .error_handler(Box::new(TraceErrors))
            .build_unchecked(Manager::new(config.clone(), connect_log.clone()));
        let client = HBaseClient {
            inner: Arc::new(Inner {
                pool,
                config,
                connect_log,
                rpc_count: AtomicU64::new(0),
                read_groups: Groups::default(),
                cam_groups: Groups::default(),
            }),
        };
        drop(client.checkout()?);
        Ok(client)
    }

    pub fn config(&self) -> &HBaseConfig {
        &self.inner.config
    }

    /// Thrift calls made through this client and its clones, including replays.
    pub fn rpc_count(&self) -> u64 {
        self.inner.rpc_count.load(Ordering::Relaxed)
    }

    pub(super) fn read_groups(&self) -> &Groups<Vec<Get>> {
        &self.inner.read_groups
    }

    pub(super) fn cam_groups(&self) -> &Groups<CheckAndMutate> {
        &self.inner.cam_groups
    }

    pub(super) fn count_rpcs(&self, calls: usize) {
        self.inner
            .rpc_count
            .fetch_add(calls as u64, Ordering::Relaxed);
    }

    pub fn admin(&self) -> Admin<'_> {
        Admin::new(self)
    }

    pub fn asynchronous(&self) -> AsyncHBaseClient {
        AsyncHBaseClient::new(self.clone())
    }

    pub fn get(&self, table: &str, get: &Get) -> Result<RowResult> {
        let spec = CallSpec::safe("get", table, &get.row);
        match self.hot(spec, &get_request(table, get))? {
            Reply::Row(row) => convert::row_result(row),
            other => Err(unexpected(other)),
        }
    }

    /// Results come back in request order; missing rows are empty results.
    pub fn get_many(&self, table: &str, gets: &[Get]) -> Result<Vec<RowResult>> {
        let spec = CallSpec::safe("getMultiple", table, first_row(gets, |g| &g.row));
        rows(self.hot(spec, &get_multiple_request(table, gets))?)
    }

    /// Like [`get_many`](Self::get_many), but the gets are given later, from any thread,
    /// through the [`Sender`] handed to `start` (see `deferred`); meanwhile this thread waits
    /// for the reply. If the sender is abandoned, its error is returned.
    pub(crate) fn get_many_deferred(
        &self,
        table: &str,
        start: impl FnOnce(Sender),
    ) -> Result<Vec<RowResult>> {
        rows(self.deferred(CallSpec::safe("getMultiple", table, &[]), start)?)
    }

    pub fn exists(&self, table: &str, get: &Get) -> Result<bool> {
        let spec = CallSpec::safe("exists", table, &get.row);
        self.call(spec, |c| c.exists(bytes(table), convert::get(get)))
    }

    pub fn put(&self, table: &str, put: &Put) -> Result<()> {
        let spec = CallSpec::safe("put", table, &put.row);
        self.call(spec, |c| c.put(bytes(table), convert::put(put)))
    }

    pub fn put_many(&self, table: &str, puts: &[Put]) -> Result<()> {
        let spec = CallSpec::safe("putMultiple", table, first_row(puts, |p| &p.row));
        self.call(spec, |c| {
            c.put_multiple(bytes(table), puts.iter().map(convert::put).collect())
        })
    }

    pub fn delete(&self, table: &str, delete: &Delete) -> Result<()> {
        let spec = CallSpec::safe("deleteSingle", table, &delete.row);
        self.call(spec, |c| {
            c.delete_single(bytes(table), convert::delete(delete))
        })
    }

    pub fn delete_many(&self, table: &str, deletes: &[Delete]) -> Result<()> {
        let spec = CallSpec::safe("deleteMultiple", table, first_row(deletes, |d| &d.row));
        let failed = self.call(spec, |c| {
            c.delete_multiple(bytes(table), deletes.iter().map(convert::delete).collect())
        })?;
        // HBase 2.x always answers with an empty list; older gateways list the deletes that
        // were not applied.
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::ServerIo {
                message: format!(
                    "deleteMultiple on {table}: {} of {} deletes not applied",
                    failed.len(),
                    deletes.len()
                ),
                can_retry: true,
            })
        }
    }

    /// Applies `cam.mutations` iff `cam.value OP cell` (HBase's reversed direction).
    pub fn check_and_mutate(&self, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        let spec = CallSpec::once("checkAndMutate", table, &cam.row);
        applied(self.hot(spec, &cam_request(table, cam))?)
    }

    /// The checkAndMutates pipelined: every request goes out before any reply is read, so the
    /// round trips overlap without a thread per call. Up to `pipeline_per_connection` share a
    /// connection (in one write), over at most `PIPELINE_DEPTH` connections at a time, and
    /// beyond the first only on connections free now: a drained pool degrades to one
    /// connection at a time instead of waiting on itself. Each call follows the usual rules (a
    /// lost reply is `OutcomeUnknown`); results in order.
    pub fn check_and_mutate_all(&self, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        let share = self
            .inner
            .config
            .pipeline_per_connection
            .clamp(1, calls.len().max(1))
            .max(calls.len().div_ceil(PIPELINE_DEPTH));
        let mut results = Vec::with_capacity(calls.len());
        let mut rest = calls;
        while !rest.is_empty() {
            let mut inflight = Vec::new();
            for chunk in rest.chunks(share).take(PIPELINE_DEPTH) {
                let conn = if inflight.is_empty() {
                    match self.checkout() {
                        Ok(conn) => conn,
                        Err(e) => {
                            inflight.push((chunk, Err(e)));
                            break;
                        }
                    }
                } else {
                    match self.inner.pool.try_get() {
                        Some(conn) => conn,
                        None => break,
                    }
                };
                inflight.push((chunk, Ok(self.send_cams(conn, chunk))));
            }
            let sent: usize = inflight.iter().map(|(chunk, _)| chunk.len()).sum();
            rest = &rest[sent..];
            for (chunk, call) in inflight {
                match call {
                    Ok(call) => results.extend(self.finish_cams(call, chunk)),
                    Err(e) => {
                        // No connection: nothing of the chunk was sent. The first call fails
                        // with the reason; the others try on their own.
                        results.push(Err(e));
                        results.extend(
                            chunk[1..]
                                .iter()
                                .map(|&(table, cam)| self.check_and_mutate(table, cam)),
                        );
                    }
                }
            }
        }
        results
    }

    fn send_cams(
        &self,
        mut conn: PooledConnection<Manager>,
        calls: &[(&str, &CheckAndMutate)],
    ) -> SentCall {
        self.count_rpcs(calls.len());
        let requests: Vec<Request> = calls
            .iter()
            .map(|&(table, cam)| cam_request(table, cam))
            .collect();
        let encoded = conn.encode_many(&requests);
        let outcome = conn.send_encoded(true, &encoded);
        SentCall {
            conn,
            encoded,
            outcome,
        }
    }

    /// The replies to a chunk sent by `send_cams`. A lone request whose write failed is
    /// replayed under the usual rules; requests that shared a write never are (a failed write
    /// may have delivered some of them).
    fn finish_cams(&self, sent: SentCall, calls: &[(&str, &CheckAndMutate)]) -> Vec<Result<bool>> {
        if let [(table, cam)] = calls {
            return vec![self.finish_cam(sent, table, cam)];
        }
        let SentCall {
            mut conn,
            encoded,
            outcome,
        } = sent;
        let first = outcome.err().map(Err);
        self.cam_replies(&mut conn, &encoded, calls, first)
    }

    /// The reply to a lone checkAndMutate sent by `send_cams`.
    fn finish_cam(&self, sent: SentCall, table: &str, cam: &CheckAndMutate) -> Result<bool> {
        let SentCall {
            mut conn,
            encoded,
            outcome,
        } = sent;
        let spec = CallSpec::once("checkAndMutate", table, &cam.row);
        let reply = match outcome.and_then(|()| conn.recv_encoded(&encoded)) {
            Ok(reply) => Ok(reply),
            Err(failure) => self.after_failure(&spec, failure, conn, Some(&encoded)),
        };
        applied(reply?)
    }

    /// The replies to checkAndMutates pipelined on `conn` under `encoded`'s sequence id, one
    /// result each, in order. `first` is the first reply when it was already read (or failed).
    /// After a connection failure, every reply not read is `OutcomeUnknown`.
    pub(super) fn cam_replies(
        &self,
        conn: &mut Connection,
        encoded: &Encoded,
        calls: &[(&str, &CheckAndMutate)],
        mut first: Option<std::result::Result<Reply, CallFailure>>,
    ) -> Vec<Result<bool>> {
        let mut broken: Option<String> = None;
        let mut results = Vec::with_capacity(calls.len());
        for &(table, cam) in calls {
            let spec = CallSpec::once("checkAndMutate", table, &cam.row);
            if let Some(cause) = &broken {
                results.push(Err(self.lost_with_connection(&spec, cause)));
                continue;
            }
            let reply = first.take().unwrap_or_else(|| conn.recv_encoded(encoded));
            results.push(match reply {
                Ok(reply) => applied(reply),
                Err(failure) => {
                    if errors::is_connection_failure(&failure.error) {
                        broken = Some(failure.error.to_string());
                    }
                    Err(self.settle_once(failure, &spec))
                }
            });
        }
        results
    }

    /// Puts iff the cell equals `value`. `None` means "no such cell"; it is sent as the empty
    /// value (the generated client always sends the argument), which HBase also matches
    /// against a cell whose value is empty.
    pub fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        put: &Put,
    ) -> Result<bool> {
        let spec = CallSpec::once("checkAndPut", table, row);
        self.call(spec, |c| {
            c.check_and_put(
                bytes(table),
                row.to_vec(),
                family.to_vec(),
                qualifier.to_vec(),
                value.unwrap_or_default().to_vec(),
                convert::put(put),
            )
        })
    }

    /// Deletes iff the cell equals `value`; `None` as in [`HBaseClient::check_and_put`].
    pub fn check_and_delete(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        delete: &Delete,
    ) -> Result<bool> {
        let spec = CallSpec::once("checkAndDelete", table, row);
        self.call(spec, |c| {
            c.check_and_delete(
                bytes(table),
                row.to_vec(),
                family.to_vec(),
                qualifier.to_vec(),
                value.unwrap_or_default().to_vec(),
                convert::delete(delete),
            )
        })
    }

    pub fn mutate_row(&self, table: &str, mutations: &RowMutations) -> Result<()> {
        let spec = CallSpec::safe("mutateRow", table, &mutations.row);
        self.call(spec, |c| {
            c.mutate_row(bytes(table), convert::row_mutations(mutations))
        })
    }

    pub fn increment(&self, table: &str, inc: &Increment) -> Result<RowResult> {
        let spec = CallSpec::once("increment", table, &inc.row);
        let result = self.call(spec, |c| c.increment(bytes(table), convert::increment(inc)))?;
        convert::row_result(result)
    }

    pub fn append(&self, table: &str, app: &Append) -> Result<RowResult> {
        let spec = CallSpec::once("append", table, &app.row);
        let result = self.call(spec, |c| c.append(bytes(table), convert::append(app)))?;
        convert::row_result(result)
    }

    /// Opens a server-side scanner; the returned iterator pages through it.
    pub fn scan(&self, table: &str, scan: &Scan) -> Result<Scanner> {
        let id = self.open_scanner(table, scan)?;
        Ok(Scanner::new(self.clone(), table, scan, id))
    }

    /// Opens, reads up to `num_rows` rows and closes a scanner in one call.
    pub fn scan_results(&self, table: &str, scan: &Scan, num_rows: i32) -> Result<Vec<RowResult>> {
        let spec = CallSpec::safe("getScannerResults", table, &scan.start_row);
        let results = self.call(spec, |c| {
            c.get_scanner_results(bytes(table), convert::scan(scan), num_rows)
        })?;
        convert::row_results(results)
    }

    /// The raw `openScanner`: prefer [`HBaseClient::scan`], which closes what it opens.
    pub fn open_scanner(&self, table: &str, scan: &Scan) -> Result<i32> {
        let spec = CallSpec::safe("openScanner", table, &scan.start_row);
        self.call(spec, |c| c.open_scanner(bytes(table), convert::scan(scan)))
    }

    /// The raw `getScannerRows`: the next page of an open scanner, empty once exhausted.
    pub fn scanner_rows(&self, scanner_id: i32, num_rows: i32) -> Result<Vec<RowResult>> {
        self.scanner_rows_of("", scanner_id, num_rows)
    }

    /// `getScannerRows` for a scanner opened on `table`. The gateway opens region scanners
    /// lazily, so a missing table is first reported here, by its bare name, which only the
    /// caller can recognise as the table's.
    pub(crate) fn scanner_rows_of(
        &self,
        table: &str,
        scanner_id: i32,
        num_rows: i32,
    ) -> Result<Vec<RowResult>> {
        let spec = CallSpec {
            method: "getScannerRows",
            table,
            row: &[],
            replay: Replay::NotAfterSend,
        };
        let results = self.call(spec, |c| c.get_scanner_rows(scanner_id, num_rows))?;
        convert::row_results(results)
    }

    /// The raw `closeScanner`.
    pub fn close_scanner(&self, scanner_id: i32) -> Result<()> {
        let spec = CallSpec::safe("closeScanner", "", &[]);
        self.call(spec, |c| c.close_scanner(scanner_id))
    }

    /// Runs one Thrift call under the retry rules in the module docs.
    pub(crate) fn call<T>(
        &self,
        spec: CallSpec<'_>,
        mut f: impl FnMut(&mut ThriftClient) -> thrift::Result<T>,
    ) -> Result<T> {
        self.with_retries(spec, |conn, arm| conn.call(arm, &mut f))
    }

    /// A hot call (hand-encoded, see `hot`) under the same rules.
    fn hot(&self, spec: CallSpec<'_>, request: &Request) -> Result<Reply> {
        self.with_retries(spec, |conn, arm| conn.exchange(arm, request))
    }

    fn with_retries<T>(
        &self,
        spec: CallSpec<'_>,
        mut f: impl FnMut(&mut Connection, bool) -> std::result::Result<T, CallFailure>,
    ) -> Result<T> {
        let mut pooled = self.checkout()?;
        let first = match self.attempt(&mut pooled, &spec, &mut f) {
            Attempt::Done(result) => return result,
            Attempt::Replay(error) => error,
        };
        // The failed connection is marked broken; returning it makes the pool discard it.
        drop(pooled);
        self.replay(&spec, first, f)
    }

    fn replay<T>(
        &self,
        spec: &CallSpec<'_>,
        first: Error,
        mut f: impl FnMut(&mut Connection, bool) -> std::result::Result<T, CallFailure>,
    ) -> Result<T> {
        tracing::debug!(method = spec.method, table = spec.table, error = %first, "replaying once on a fresh connection");
        let mut fresh = Connection::open(&self.inner.config).map_err(|e| self.transport(e))?;
        match self.attempt(&mut fresh, spec, &mut f) {
            Attempt::Done(result) => result,
            Attempt::Replay(error) => Err(error),
        }
    }

    /// A deferred call (see `deferred`): one try, and a replay of the request under the usual
    /// rules if it was built.
    fn deferred(&self, spec: CallSpec<'_>, start: impl FnOnce(Sender)) -> Result<Reply> {
        let mut pooled = self.checkout()?;
        self.count_rpcs(1);
        let outbox = pooled.outbox();
        start(Sender::new(outbox.clone()));
        let arm = spec.replay == Replay::OutcomeUnknown;
        match pooled.receive(arm, &outbox) {
            Ok(reply) => Ok(reply),
            Err(ReceiveFailure::Abandoned(error)) => Err(error),
            Err(ReceiveFailure::Call(failure, encoded)) => {
                self.after_failure(&spec, failure, pooled, encoded.as_ref())
            }
        }
    }

    /// A failed try of an encoded request, under the retry rules: replayed once on a fresh
    /// connection when they allow it and the request was built.
    fn after_failure(
        &self,
        spec: &CallSpec<'_>,
        failure: CallFailure,
        conn: PooledConnection<Manager>,
        encoded: Option<&Encoded>,
    ) -> Result<Reply> {
        let attempt = self.classify(failure, spec);
        // A failed connection is marked broken: returning it makes the pool discard it.
        drop(conn);
        match (attempt, encoded) {
            (Attempt::Done(result), _) => result,
            (Attempt::Replay(error), None) => Err(error),
            (Attempt::Replay(error), Some(encoded)) => {
                self.replay(spec, error, |conn, arm| conn.exchange_encoded(arm, encoded))
            }
        }
    }

    fn attempt<T>(
        &self,
        conn: &mut Connection,
        spec: &CallSpec<'_>,
        f: &mut impl FnMut(&mut Connection, bool) -> std::result::Result<T, CallFailure>,
    ) -> Attempt<T> {
        self.count_rpcs(1);
        match f(conn, spec.replay == Replay::OutcomeUnknown) {
            Ok(value) => Attempt::Done(Ok(value)),
            Err(failure) => self.classify(failure, spec),
        }
    }

    /// What a failed try means under the retry rules.
    fn classify<T>(&self, failure: CallFailure, spec: &CallSpec<'_>) -> Attempt<T> {
        if !errors::is_connection_failure(&failure.error) {
            return Attempt::Done(Err(errors::server_error(
                failure.error,
                spec.method,
                spec.table,
            )));
        }
        let error =
            errors::connection_error(failure.error, failure.io_error, &self.inner.config.addr);
        match (failure.reply_started, spec.replay) {
            (false, _) | (true, Replay::Safe) => Attempt::Replay(error),
            (true, Replay::NotAfterSend) => Attempt::Done(Err(error)),
            (true, Replay::OutcomeUnknown) => Attempt::Done(Err(Error::OutcomeUnknown {
                method: spec.method,
                table: spec.table.to_owned(),
                row: spec.row.to_vec(),
                source: Box::new(error),
            })),
        }
    }

    /// The error of a failed call that must not be sent again: a lost reply, or a failed
    /// write, is `OutcomeUnknown`.
    fn settle_once(&self, failure: CallFailure, spec: &CallSpec<'_>) -> Error {
        match self.classify::<()>(failure, spec) {
            Attempt::Done(result) => result.err().unwrap_or_else(|| self.unknown(spec, None)),
            Attempt::Replay(error) => self.unknown(spec, Some(error)),
        }
    }

    /// `OutcomeUnknown` for a call whose reply was behind a failed one on the same connection.
    fn lost_with_connection(&self, spec: &CallSpec<'_>, cause: &str) -> Error {
        let source = std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            format!("an earlier reply on this connection failed: {cause}"),
        );
        self.unknown(spec, Some(self.transport(source)))
    }

    fn unknown(&self, spec: &CallSpec<'_>, source: Option<Error>) -> Error {
        let source =
            source.unwrap_or_else(|| self.transport(std::io::Error::other("no reply was read")));
        Error::OutcomeUnknown {
            method: spec.method,
            table: spec.table.to_owned(),
            row: spec.row.to_vec(),
            source: Box::new(source),
        }
    }

    /// A pooled connection, or the connect error that kept the pool from making one.
    pub(super) fn checkout(&self) -> Result<PooledConnection<Manager>> {
        let inner = &self.inner;
        let failures_before = inner.connect_log.failure_count();
        let wait = inner.config.connect_timeout + inner.config.read_timeout;
        let deadline = Instant::now() + wait;
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(CHECKOUT_POLL);
            if let Ok(conn) = inner.pool.get_timeout(slice) {
                return Ok(conn);
            }
            if inner.connect_log.failure_count() != failures_before {
                if let Some(source) = inner.connect_log.last_failure() {
                    return Err(self.transport(source));
                }
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!(
                        "a free connection to {} (pool of {})",
                        inner.config.addr, inner.config.pool_size
                    ),
                    after: wait,
                });
            }
        }
    }

    fn transport(&self, source: std::io::Error) -> Error {
        Error::Transport {
            peer: Peer::HBase,
            addr: self.inner.config.addr.clone(),
            source,
        }
    }
}

impl<'a> CallSpec<'a> {
    pub(crate) fn safe(method: &'static str, table: &'a str, row: &'a [u8]) -> Self {
        CallSpec {
            method,
            table,
            row,
            replay: Replay::Safe,
        }
    }

    /// Non-idempotent: at most once once sent.
    pub(crate) fn once(method: &'static str, table: &'a str, row: &'a [u8]) -> Self {
        CallSpec {
            method,
            table,
            row,
            replay: Replay::OutcomeUnknown,
        }
    }
}

pub(crate) fn get_request(table: &str, get: &Get) -> Request {
    Request::Get {
        table: bytes(table),
        get: convert::get(get),
    }
}

pub(crate) fn get_multiple_request(table: &str, gets: &[Get]) -> Request {
    Request::GetMultiple {
        table: bytes(table),
        gets: gets.iter().map(convert::get).collect(),
    }
}

pub(crate) fn cam_request(table: &str, cam: &CheckAndMutate) -> Request {
    Request::CheckAndMutate {
        table: bytes(table),
        row: cam.row.clone(),
        family: cam.family.clone(),
        qualifier: cam.qualifier.clone(),
        op: convert::compare_op(cam.op),
        value: cam.value.clone(),
        mutations: convert::row_mutations(&cam.mutations),
    }
}

/// A get answers with one row, a getMultiple with several: either is rows to the caller.
fn rows(reply: Reply) -> Result<Vec<RowResult>> {
    match reply {
        Reply::Row(row) => Ok(vec![convert::row_result(row)?]),
        Reply::Rows(rows) => convert::row_results(rows),
        other => Err(unexpected(other)),
    }
}

fn applied(reply: Reply) -> Result<bool> {
    match reply {
        Reply::Applied(applied) => Ok(applied),
        other => Err(unexpected(other)),
    }
}

/// `hot` checks that a reply answers the method sent; a mismatch here is a bug of ours.
fn unexpected(reply: Reply) -> Error {
    Error::Protocol {
        peer: Peer::HBase,
        message: format!("unexpected reply to {}", reply.method()),
    }
}

pub(crate) fn bytes(table: &str) -> Vec<u8> {
    table.as_bytes().to_vec()
}

fn first_row<T>(items: &[T], row: impl Fn(&T) -> &Vec<u8>) -> &[u8] {
    items.first().map(|i| row(i).as_slice()).unwrap_or_default()
}
