//! The gateway a test talks to: the in-process emulator by default, the Thrift2 gateway named
//! by `HBASE_THRIFT=host:port`, or a real HBase in a container (the `hbase_docker` binary, or
//! `PERCOLATOR_TEST_HBASE=docker` for any suite), one per test binary. Tables are created with unique names and dropped
//! (disable + delete) when the test's `TestTable` goes out of scope; [`drop_later`] drops a
//! table in the background instead (about a second per table on a real HBase).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hbase_emulator::{self as emulator, EmulatorConfig, EmulatorHandle};
use percolator::hbase::{FamilyDescriptor, TableDescriptor};
use percolator::{HBaseClient, HBaseConfig};

pub const ENV_GATEWAY: &str = "HBASE_THRIFT";

/// The real gateway this test binary uses, if any: the container's where one is wanted
/// (see [`docker_wanted`]), else the one named by `HBASE_THRIFT` (empty counts as unset).
pub fn external_addr() -> Option<String> {
    if docker_wanted() {
        return docker_gateway();
    }
    std::env::var(ENV_GATEWAY)
        .ok()
        .map(|addr| addr.trim().to_owned())
        .filter(|addr| !addr.is_empty())
}

/// Whether this binary's suites run against a containerized HBase: always in `hbase_docker`,
/// and in any binary with `PERCOLATOR_TEST_HBASE=docker`.
pub fn docker_wanted() -> bool {
    env!("CARGO_CRATE_NAME") == "hbase_docker"
        || std::env::var("PERCOLATOR_TEST_HBASE").is_ok_and(|v| v == "docker")
}

/// Whether a machine that cannot run the container fails the suites instead of skipping
/// them: `PERCOLATOR_DOCKER_TESTS=require` (CI sets it).
pub fn docker_required() -> bool {
    std::env::var("PERCOLATOR_DOCKER_TESTS").is_ok_and(|v| v == "require")
}

/// The gateway of this binary's one container, started by the first test that asks (through
/// the public `percolator-testcontainers` image, as a service's tests would). `None` where no
/// engine can run it and it is not required: the suites then say "skipped" once and run on
/// the emulator.
pub fn docker_gateway() -> Option<String> {
    match percolator_testcontainers::HBaseImage::default().start_shared() {
        Ok(hbase) => Some(hbase.gateway().to_owned()),
        Err(e) if e.is_unavailable() && !docker_required() => {
            static SAID: OnceLock<()> = OnceLock::new();
            SAID.get_or_init(|| eprintln!("skipped: the containerized HBase ({e})"));
            None
        }
        Err(e) => panic!("the containerized HBase: {e}"),
    }
}

pub struct Gateway {
    addr: String,
    emulator: Option<EmulatorHandle>,
    client: HBaseClient,
}

impl Gateway {
    /// `HBASE_THRIFT` if set, else a fresh emulator on 127.0.0.1:0.
    pub fn from_env() -> Gateway {
        match external_addr() {
            Some(addr) => Gateway::external(&addr),
            None => Gateway::emulator(EmulatorConfig::default()),
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
            client: HBaseClient::connect(external_config(addr))
                .unwrap_or_else(|e| panic!("connect to {addr}: {e}")),
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
        self.table_via(&self.client, families)
    }

    /// A table with the given families created through `client` (a client behind a proxy,
    /// say), dropped at the end of the test through this gateway's own client.
    pub fn table_via(&self, client: &HBaseClient, families: Vec<FamilyDescriptor>) -> TestTable {
        let name = unique_name("t");
        let mut desc = TableDescriptor::new(name.clone());
        desc.families = families;
        client
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

/// The configuration for the real gateway at `addr`: what the environment says of it (the
/// TLS, Kerberos and framing settings `scripts/real-hbase start` prints), and a read timeout
/// long enough for admin calls, which take about a second on a real HBase.
pub fn external_config(addr: &str) -> HBaseConfig {
    HBaseConfig::new(addr)
        .with_env()
        .unwrap_or_else(|e| panic!("the gateway settings in the environment: {e}"))
        .read_timeout(Duration::from_secs(60))
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

    /// Takes charge of `name`, a table the test created itself: dropped at the end.
    pub fn adopt(gw: &Gateway, name: String) -> TestTable {
        TestTable {
            client: gw.client().clone(),
            name,
        }
    }
}

impl Drop for TestTable {
    fn drop(&mut self) {
        // Cleanup must not mask the test's own failure, so problems are only reported.
        if let Err(e) = drop_table(&self.client, &self.name) {
            eprintln!("cleanup of table {} failed: {e}", self.name);
        }
    }
}

/// Disables (unless a test left it disabled) and deletes `table`.
fn drop_table(client: &HBaseClient, table: &str) -> percolator::Result<()> {
    let admin = client.admin();
    if admin.is_table_enabled(table)? {
        admin.disable_table(table)?;
    }
    admin.delete_table(table)
}

/// Disables and deletes `table` on a background thread, so that a test on a real HBase does not
/// wait the second or so that takes. The process waits (at most a minute) for the tables still
/// queued when it exits, so a run leaves nothing behind; problems are only reported.
pub fn drop_later(client: &HBaseClient, table: String) {
    let janitor = Janitor::get();
    let mut queue = janitor.lock();
    queue.pending.push_back((client.clone(), table));
    queue.unfinished += 1;
    janitor.changed.notify_all();
}

/// Tables queued for [`drop_later`], dropped by `JANITORS` threads.
struct Janitor {
    queue: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<(HBaseClient, String)>,
    /// Queued or being dropped.
    unfinished: usize,
}

const JANITORS: usize = 2;
const EXIT_WAIT: Duration = Duration::from_secs(60);

impl Janitor {
    fn get() -> &'static Janitor {
        static JANITOR: OnceLock<Janitor> = OnceLock::new();
        JANITOR.get_or_init(|| {
            for i in 0..JANITORS {
                std::thread::Builder::new()
                    .name(format!("table-janitor-{i}"))
                    .spawn(|| Janitor::get().work())
                    .expect("spawn the table janitor");
            }
            // SAFETY: registers a plain function with no captured state; it runs once, from
            // exit(), after the test harness finished.
            unsafe { libc::atexit(wait_for_janitor) };
            Janitor {
                queue: Mutex::new(Queue::default()),
                changed: Condvar::new(),
            }
        })
    }

    /// The queue; a panic elsewhere while holding it must not stop the cleanup.
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn work(&self) {
        loop {
            let (client, table) = {
                let mut queue = self.lock();
                loop {
                    if let Some(next) = queue.pending.pop_front() {
                        break next;
                    }
                    queue = self.changed.wait(queue).unwrap_or_else(|e| e.into_inner());
                }
            };
            if let Err(e) = drop_table(&client, &table) {
                // Straight to stderr: `eprintln!` here would land in the output a test thread
                // captures (this thread inherits it), which nobody reads after the test.
                let _ = writeln!(std::io::stderr(), "cleanup of table {table} failed: {e}");
            }
            self.lock().unfinished -= 1;
            self.changed.notify_all();
        }
    }
}

extern "C" fn wait_for_janitor() {
    // No unwrap here: a panic cannot unwind out of an atexit handler.
    let janitor = Janitor::get();
    let deadline = Instant::now() + EXIT_WAIT;
    let mut queue = janitor.lock();
    while queue.unfinished > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let left = queue.unfinished;
            let _ = writeln!(
                std::io::stderr(),
                "{left} test tables left undropped at exit"
            );
            return;
        }
        queue = match janitor.changed.wait_timeout(queue, left) {
            Ok((queue, _)) => queue,
            Err(e) => e.into_inner().0,
        };
    }
}
