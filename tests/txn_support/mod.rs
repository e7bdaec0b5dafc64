//! Shared fixture for the transaction tests: an in-process timestamp oracle on 127.0.0.1, the
//! HBase gateway named by `HBASE_THRIFT=host:port` (a real HBase) or else an in-process
//! emulator, transactional tables, and helpers that read the raw percolator columns.
//!
//! On a real HBase every test shares one long-lived cluster, so tables get names unique across
//! processes and runs and are dropped in the background when their `Env` goes away (a drop
//! costs about a second there); the liveness table (TTL 1 s, rows keyed by unique client ids)
//! is shared by all tests.
#![allow(dead_code)]

pub mod crash;
pub mod faulty;
#[path = "../common/gateway.rs"]
pub mod gateway;
#[path = "../common/proxy.rs"]
pub mod proxy;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hbase_emulator::{self as emulator, EmulatorHandle};
use parking_lot::Mutex;
use percolator::format::{
    decode_lock_state, decode_write, encode_lock, Lock, LockState, MutationKind, RowColumn,
    WriteRecord,
};
use percolator::hbase::CheckAndMutate;
use percolator::hbase::{Get, TimeRange};
use percolator::oracle::TimestampSource;
use percolator::txn::actions;
use percolator::txn::{
    self, CellKey, Client, HBaseAccess, LivenessConfig, LockGranularity, Schema, TxnOptions,
};
use percolator::{HBaseClient, HBaseConfig};

pub const FAMILY: &str = "f";

pub struct Env {
    /// The in-process emulator; `None` on the real HBase named by `HBASE_THRIFT`.
    pub emulator: Option<EmulatorHandle>,
    /// The gateway's address.
    pub addr: String,
    pub hbase: HBaseClient,
    pub tso: Arc<dyn TimestampSource>,
    pub liveness: LivenessConfig,
    pub schema: Schema,
    /// The lock granularity of the tables [`Env::table`] makes:
    /// `PERCOLATOR_TEST_LOCK_GRANULARITY` (`cell` or `row`), cell when unset, so that a suite
    /// can be run again with every table locking rows.
    pub granularity: LockGranularity,
    /// Tables this fixture created on a real HBase, dropped with it.
    tables: Mutex<Vec<String>>,
    _oracle: oracle_fixture::Oracle,
}

/// Liveness rows expire after a second, so dead clients are noticed quickly.
const LIVENESS_TTL_SECS: i32 = 1;

/// The liveness table every test on a real HBase shares. The TTL is part of its name, so a
/// table that a run with another TTL left behind is never reused by mistake.
const SHARED_LIVENESS_TABLE: &str = "percolator_test_liveness_ttl1";

/// Begins a transaction whose snapshot is taken now. A snapshot is otherwise taken by the
/// transaction's first operation; scripts in which others commit between a `begin` and the
/// first read pin it here.
#[allow(dead_code)]
pub fn begin_now(client: &percolator::txn::Client) -> percolator::txn::Transaction {
    let txn = client.begin().unwrap();
    txn.start_ts().unwrap();
    txn
}

/// A table name unique across tests, processes and runs (a real HBase outlives test runs).
pub fn unique(prefix: &str) -> String {
    gateway::unique_name(prefix)
}

impl Env {
    /// The gateway named by `HBASE_THRIFT` if set, else a fresh emulator.
    pub fn start() -> Env {
        match gateway::external_addr() {
            Some(addr) => Env::real(&addr),
            None => Env::start_emulator(),
        }
    }

    /// Always a fresh in-process emulator, for tests that need what only it offers.
    pub fn start_emulator() -> Env {
        let emulator = emulator::start_local().expect("start the emulator");
        let addr = emulator.local_addr().to_string();
        let hbase = HBaseClient::connect(HBaseConfig::new(&addr)).expect("connect to the emulator");
        let liveness = LivenessConfig {
            table: unique("liveness"),
            ttl_secs: LIVENESS_TTL_SECS,
            ..LivenessConfig::default()
        };
        txn::setup::create_liveness_table(&hbase, &liveness).expect("liveness table");
        Env::with(Some(emulator), addr, hbase, liveness)
    }

    /// The real gateway at `addr`, with the shared liveness table.
    fn real(addr: &str) -> Env {
        // Admin calls (create, disable) take about a second on a real HBase; the client's
        // other calls finish in milliseconds.
        let hbase = HBaseClient::connect(gateway::external_config(addr))
            .unwrap_or_else(|e| panic!("connect to HBASE_THRIFT={addr}: {e}"));
        let liveness = LivenessConfig {
            table: SHARED_LIVENESS_TABLE.into(),
            ttl_secs: LIVENESS_TTL_SECS,
            ..LivenessConfig::default()
        };
        // Once per process; concurrent creation by another process is tolerated by
        // `create_liveness_table` itself.
        static CREATED: OnceLock<()> = OnceLock::new();
        CREATED.get_or_init(|| {
            txn::setup::create_liveness_table(&hbase, &liveness).expect("liveness table");
            let desc = hbase
                .admin()
                .table_descriptor(&liveness.table)
                .expect("liveness table descriptor");
            let ttl = desc.families.first().and_then(|f| f.ttl_secs);
            assert_eq!(
                ttl,
                Some(liveness.ttl_secs),
                "{} exists with another TTL: {desc:?}",
                liveness.table
            );
        });
        Env::with(None, addr.to_owned(), hbase, liveness)
    }

    fn with(
        emulator: Option<EmulatorHandle>,
        addr: String,
        hbase: HBaseClient,
        liveness: LivenessConfig,
    ) -> Env {
        let oracle = oracle_fixture::Oracle::start();
        Env {
            tso: oracle.source(),
            emulator,
            addr,
            hbase,
            liveness,
            schema: Schema::default(),
            granularity: granularity_from_env(),
            tables: Mutex::new(Vec::new()),
            _oracle: oracle,
        }
    }

    /// Whether this fixture runs on a real HBase (not the emulator).
    pub fn is_real(&self) -> bool {
        self.emulator.is_none()
    }

    /// A new transactional table with user family `f`, of the fixture's lock granularity.
    pub fn table(&self, prefix: &str) -> String {
        self.table_with(prefix, self.granularity)
    }

    /// A new transactional table with user family `f` that locks by `granularity`.
    pub fn table_with(&self, prefix: &str, granularity: LockGranularity) -> String {
        self.table_in(&self.schema, prefix, granularity)
    }

    /// [`Env::table_with`], its granularity recorded in `schema`'s meta table: the one the
    /// clients that use the table read (a table's granularity is in its meta row).
    pub fn table_in(&self, schema: &Schema, prefix: &str, granularity: LockGranularity) -> String {
        let name = unique(prefix);
        txn::setup::create_table_with(&self.hbase, schema, &name, &[FAMILY], granularity)
            .expect("create table");
        self.created(&name);
        name
    }

    /// The lock-family qualifier `key` answers to in the fixture's tables.
    pub fn lock_qualifier(&self, key: &CellKey) -> Vec<u8> {
        lock_qualifier(&self.schema, self.granularity, key)
    }

    /// `lock`, a cell's lock as a cell table stores it, as the fixture's tables store it: in
    /// a table that locks rows, the row's lock listing that one cell. For scripts that write
    /// locks by hand.
    pub fn as_stored(&self, key: &CellKey, lock: Lock) -> Lock {
        if !self.rows_locked() {
            return lock;
        }
        Lock {
            kind: MutationKind::Lock,
            short_value: None,
            row: Some(vec![RowColumn {
                family: key.family.clone(),
                qualifier: key.qualifier.clone(),
                kind: lock.kind,
                short_value: lock.short_value.clone(),
            }]),
            primary_row: true,
            ..lock
        }
    }

    /// The prewrite CAS of `lock` (as [`Env::as_stored`] made it) on `key`, writing `value`.
    pub fn prewrite_cas(
        &self,
        key: &CellKey,
        lock: &Lock,
        value: Option<&[u8]>,
        absent: bool,
    ) -> CheckAndMutate {
        let bytes = encode_lock(lock);
        match lock.row {
            Some(_) => actions::prewrite_row(
                &self.schema,
                key,
                lock,
                &bytes,
                &[value.map(<[u8]>::to_vec)],
                absent,
            ),
            None => actions::prewrite(&self.schema, key, lock, &bytes, value, absent),
        }
    }

    /// Whether the fixture's tables lock rows.
    pub fn rows_locked(&self) -> bool {
        self.granularity == LockGranularity::Row
    }

    /// Records a table made outside [`Env::table`] so that it is dropped with the fixture.
    pub fn created(&self, table: &str) {
        if self.is_real() {
            self.tables.lock().push(table.to_owned());
        }
    }

    /// Options for tests: short TTLs so dead clients are noticed within about a second, and
    /// synchronous secondaries so a test sees a finished commit.
    pub fn options(&self) -> TxnOptions {
        TxnOptions::builder()
            .liveness(self.liveness.clone())
            .lock_ttl(Duration::from_secs(2))
            .max_lock_wait(Duration::from_secs(6))
            .sync_secondaries(true)
            .build()
    }

    pub fn client(&self) -> Client {
        self.client_with(self.options())
    }

    pub fn client_with(&self, options: TxnOptions) -> Client {
        Client::new(Arc::new(self.hbase.clone()), self.tso.clone(), options).expect("client")
    }

    /// A client over another HBase access or timestamp source (fault-injecting wrappers).
    pub fn client_on(
        &self,
        store: Arc<dyn HBaseAccess>,
        tso: Arc<dyn TimestampSource>,
        options: TxnOptions,
    ) -> Client {
        Client::new(store, tso, options).expect("client")
    }

    pub fn key(&self, table: &str, row: &str) -> CellKey {
        CellKey::new(
            table,
            row.as_bytes().to_vec(),
            FAMILY.as_bytes().to_vec(),
            b"q".to_vec(),
        )
        .unwrap()
    }

    pub fn ts(&self) -> u64 {
        self.tso.get_timestamp().expect("timestamp")
    }

    /// The lock column of `key`, raw.
    pub fn raw_lock(&self, key: &CellKey) -> Option<Vec<u8>> {
        raw_lock_in(&self.hbase, &self.schema, self.granularity, key)
    }

    /// Every version of the write column of `key`, raw (newest first), for damaged records.
    pub fn raw_writes(&self, key: &CellKey) -> Vec<(i64, Vec<u8>)> {
        let q = self.schema.qualifier(key);
        let get = Get::new(key.row.clone())
            .column(self.schema.write_family.clone(), q.clone())
            .time_range(TimeRange::new(0, i64::MAX))
            .max_versions(i32::MAX);
        let row = self.hbase.get(&key.table, &get).expect("get writes");
        row.versions(&self.schema.write_family, &q)
            .map(|c| (c.timestamp, c.value.clone()))
            .collect()
    }

    pub fn lock_state(&self, key: &CellKey) -> LockState {
        decode_lock_state(self.raw_lock(key).as_deref()).expect("decodable lock")
    }

    /// Waits until `key` holds a lock (a commit running in another thread got that far).
    pub fn wait_until_locked(&self, key: &CellKey) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !matches!(self.lock_state(key), LockState::Locked(_)) {
            assert!(
                std::time::Instant::now() < deadline,
                "{key} never got locked"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Every write record of `key`, newest first, as (version, record).
    pub fn writes(&self, key: &CellKey) -> Vec<(i64, WriteRecord)> {
        let q = self.schema.qualifier(key);
        let get = Get::new(key.row.clone())
            .column(self.schema.write_family.clone(), q.clone())
            .time_range(TimeRange::new(0, i64::MAX))
            .max_versions(i32::MAX);
        let row = self.hbase.get(&key.table, &get).expect("get writes");
        row.versions(&self.schema.write_family, &q)
            .map(|c| {
                (
                    c.timestamp,
                    decode_write(&c.value).expect("decodable write"),
                )
            })
            .collect()
    }

    /// All stored versions of the user column, newest first.
    pub fn data_versions(&self, key: &CellKey) -> Vec<(i64, Vec<u8>)> {
        let get = Get::new(key.row.clone())
            .column(key.family.clone(), key.qualifier.clone())
            .time_range(TimeRange::new(0, i64::MAX))
            .max_versions(i32::MAX);
        let row = self.hbase.get(&key.table, &get).expect("get data");
        row.versions(&key.family, &key.qualifier)
            .map(|c| (c.timestamp, c.value.clone()))
            .collect()
    }

    /// Asserts no lock is held anywhere in `table`.
    pub fn assert_no_locks(&self, table: &str) {
        let scan = percolator::hbase::Scan::new().family(self.schema.lock_family.clone());
        for row in self.hbase.scan(table, &scan).expect("scan") {
            let row = row.expect("scan row");
            for cell in &row.cells {
                let state = decode_lock_state(Some(&cell.value)).expect("decodable lock");
                assert!(
                    !matches!(state, LockState::Locked(_)),
                    "lock left at {table} row {:?}: {state:?}",
                    String::from_utf8_lossy(&row.row)
                );
            }
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for table in self.tables.get_mut().drain(..) {
            gateway::drop_later(&self.hbase, table);
        }
    }
}

/// The lock column of `key`, raw, read straight from HBase.
pub fn raw_lock(hbase: &HBaseClient, schema: &Schema, key: &CellKey) -> Option<Vec<u8>> {
    let q = schema.qualifier(key);
    let get = Get::new(key.row.clone()).column(schema.lock_family.clone(), q.clone());
    let row = hbase.get(&key.table, &get).expect("get lock");
    row.value(&schema.lock_family, &q).map(<[u8]>::to_vec)
}

/// The lock `key` answers to in a table of `granularity`, raw: its own, or its row's.
pub fn raw_lock_in(
    hbase: &HBaseClient,
    schema: &Schema,
    granularity: LockGranularity,
    key: &CellKey,
) -> Option<Vec<u8>> {
    let q = lock_qualifier(schema, granularity, key);
    let get = Get::new(key.row.clone()).column(schema.lock_family.clone(), q.clone());
    let row = hbase.get(&key.table, &get).expect("get lock");
    row.value(&schema.lock_family, &q).map(<[u8]>::to_vec)
}

/// The lock-family qualifier `key` answers to in a table of `granularity`.
pub fn lock_qualifier(schema: &Schema, granularity: LockGranularity, key: &CellKey) -> Vec<u8> {
    granularity.lock_qualifier(&schema.qualifier(key)).to_vec()
}

/// `PERCOLATOR_TEST_LOCK_GRANULARITY`, or cell.
pub fn granularity_from_env() -> LockGranularity {
    match std::env::var("PERCOLATOR_TEST_LOCK_GRANULARITY") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("PERCOLATOR_TEST_LOCK_GRANULARITY: {e}")),
        Err(_) => LockGranularity::Cell,
    }
}

mod oracle_fixture {
    use std::sync::Arc;

    use percolator::oracle::{
        ClientConfig, MemoryStore, OracleClient, OracleHandle, OracleServer, TimestampSource,
    };

    /// A timestamp oracle server on 127.0.0.1 and a batching client of it.
    pub struct Oracle {
        source: Arc<dyn TimestampSource>,
        _server: OracleHandle,
    }

    impl Oracle {
        pub fn start() -> Oracle {
            let server = OracleServer::start_local(MemoryStore::new()).expect("start the oracle");
            let client =
                OracleClient::connect(&[server.local_addr().to_string()], ClientConfig::default())
                    .expect("connect to the oracle");
            Oracle {
                source: Arc::new(client),
                _server: server,
            }
        }

        pub fn source(&self) -> Arc<dyn TimestampSource> {
            self.source.clone()
        }
    }
}
