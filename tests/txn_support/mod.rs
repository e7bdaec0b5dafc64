//! Shared fixture for the transaction tests: an in-process emulator and timestamp oracle on
//! 127.0.0.1, transactional tables, and helpers that read the raw percolator columns.
#![allow(dead_code)]

pub mod crash;
pub mod faulty;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use percolator::emulator::{self, EmulatorHandle};
use percolator::hbase::{Get, TimeRange};
use percolator::oracle::TimestampSource;
use percolator::txn::codec::{decode_lock_state, decode_write, LockState, WriteRecord};
use percolator::txn::{self, CellKey, Client, HBaseAccess, LivenessConfig, Schema, TxnOptions};
use percolator::{HBaseClient, HBaseConfig};

pub const FAMILY: &str = "f";

pub struct Env {
    pub emulator: EmulatorHandle,
    pub hbase: HBaseClient,
    pub tso: Arc<dyn TimestampSource>,
    pub liveness: LivenessConfig,
    pub schema: Schema,
    _oracle: oracle_fixture::Oracle,
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// Begins a transaction whose snapshot is taken now. A snapshot is otherwise taken by the
/// transaction's first operation; scripts in which others commit between a `begin` and the
/// first read pin it here.
#[allow(dead_code)]
pub fn begin_now(client: &percolator::txn::Client) -> percolator::txn::Transaction {
    let txn = client.begin().unwrap();
    txn.start_ts().unwrap();
    txn
}

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

impl Env {
    pub fn start() -> Env {
        let emulator = emulator::start_local().expect("start the emulator");
        let hbase = HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string()))
            .expect("connect to the emulator");
        let liveness = LivenessConfig {
            table: unique("liveness"),
            ttl_secs: 1,
        };
        txn::setup::create_liveness_table(&hbase, &liveness).expect("liveness table");
        let oracle = oracle_fixture::Oracle::start();
        Env {
            tso: oracle.source(),
            emulator,
            hbase,
            liveness,
            schema: Schema::default(),
            _oracle: oracle,
        }
    }

    /// A new transactional table with user family `f`.
    pub fn table(&self, prefix: &str) -> String {
        let name = unique(prefix);
        txn::setup::create_table(&self.hbase, &self.schema, &name, &[FAMILY])
            .expect("create table");
        name
    }

    /// Options for tests: short TTLs so dead clients are noticed within about a second, and
    /// synchronous secondaries so a test sees a finished commit.
    pub fn options(&self) -> TxnOptions {
        TxnOptions {
            liveness: self.liveness.clone(),
            lock_ttl: Duration::from_secs(2),
            max_lock_wait: Duration::from_secs(6),
            sync_secondaries: true,
            ..TxnOptions::default()
        }
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
        raw_lock(&self.hbase, &self.schema, key)
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

/// The lock column of `key`, raw, read straight from HBase.
pub fn raw_lock(hbase: &HBaseClient, schema: &Schema, key: &CellKey) -> Option<Vec<u8>> {
    let q = schema.qualifier(key);
    let get = Get::new(key.row.clone()).column(schema.lock_family.clone(), q.clone());
    let row = hbase.get(&key.table, &get).expect("get lock");
    row.value(&schema.lock_family, &q).map(<[u8]>::to_vec)
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
