//! The gateway a test talks to: the in-process emulator by default, or the Thrift2 gateway
//! named by `HBASE_THRIFT=host:port`. Tables are created with unique names and dropped
//! (disable + delete) when the test's `TestTable` goes out of scope.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use percolator::emulator::{self, EmulatorConfig, EmulatorHandle};
use percolator::hbase::{FamilyDescriptor, TableDescriptor};
use percolator::{HBaseClient, HBaseConfig};

pub const ENV_GATEWAY: &str = "HBASE_THRIFT";

pub struct Gateway {
    addr: String,
    emulator: Option<EmulatorHandle>,
    client: HBaseClient,
}

impl Gateway {
    /// `HBASE_THRIFT` if set, else a fresh emulator on 127.0.0.1:0.
    pub fn from_env() -> Gateway {
        match std::env::var(ENV_GATEWAY) {
            Ok(addr) if !addr.trim().is_empty() => Gateway::external(addr.trim()),
            _ => Gateway::emulator(EmulatorConfig::default()),
        }
    }

    pub fn emulator(config: EmulatorConfig) -> Gateway {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let handle = emulator::start(listener, config).expect("start the emulator");
        let addr = handle.local_addr().to_string();
        Gateway {
            client: connect(&addr),
            addr,
            emulator: Some(handle),
        }
    }

    pub fn external(addr: &str) -> Gateway {
        Gateway {
            client: connect(addr),
            addr: addr.to_owned(),
            emulator: None,
        }
    }

    pub fn is_emulator(&self) -> bool {
        self.emulator.is_some()
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The shared client of this gateway.
    pub fn client(&self) -> &HBaseClient {
        &self.client
    }

    /// A table with the given families, dropped at the end of the test.
    pub fn table(&self, families: Vec<FamilyDescriptor>) -> TestTable {
        let name = unique_name("t");
        let mut desc = TableDescriptor::new(name.clone());
        desc.families = families;
        self.client
            .admin()
            .create_table(&desc)
            .unwrap_or_else(|e| panic!("create table {name}: {e}"));
        TestTable {
            client: self.client.clone(),
            name,
        }
    }

    /// A table with one family `f` keeping `versions` versions.
    pub fn table_f(&self, versions: i32) -> TestTable {
        self.table(vec![FamilyDescriptor::new("f").max_versions(versions)])
    }
}

fn connect(addr: &str) -> HBaseClient {
    let config = HBaseConfig::new(addr).read_timeout(Duration::from_secs(60));
    HBaseClient::connect(config).unwrap_or_else(|e| panic!("connect to {addr}: {e}"))
}

/// Unique across tests, processes and runs, so suites can share one real cluster.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}_{}_{nanos}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .expect("clock after 1970")
}

pub struct TestTable {
    client: HBaseClient,
    pub name: String,
}

impl TestTable {
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestTable {
    fn drop(&mut self) {
        let admin = self.client.admin();
        // Cleanup must not mask the test's own failure, so problems are only reported.
        let dropped = match admin.disable_table(&self.name) {
            Ok(()) => admin.delete_table(&self.name),
            Err(e) => Err(e),
        };
        if let Err(e) = dropped {
            eprintln!("cleanup of table {} failed: {e}", self.name);
        }
    }
}
