//! `percolator doctor` end to end, against an emulator and an oracle started here: a healthy
//! stack passes every check, and each check fails when its part is broken on purpose (the
//! exit status 1, and the check named in the `--json` report).

mod command_line;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use percolator::hbase::{FamilyDescriptor, TableDescriptor};
use percolator::observer::{ObservedColumn, Observer, ObserverSet, ObserverWorker, WorkerConfig};
use percolator::oracle::{MemoryStore, OffsetClock, OracleHandle, OracleServer, ServerConfig};
use percolator::txn::{setup, Schema, Seam};
use percolator::{AsyncTransaction, Client, HBaseClient, HBaseConfig, TxnOptions};
use serde_json::Value;

/// An emulator and an oracle for one test.
struct Stack {
    _emulator: hbase_emulator::EmulatorHandle,
    _oracle: OracleHandle,
    hbase: String,
    oracle: String,
    admin: HBaseClient,
}

impl Stack {
    fn start() -> Stack {
        Stack::with_clocks(0, 0)
    }

    /// A stack whose HBase clock runs `hbase_ms` ahead of this host's, and the oracle's
    /// `oracle_ms` ahead.
    fn with_clocks(hbase_ms: i64, oracle_ms: i64) -> Stack {
        let config = hbase_emulator::EmulatorConfig {
            clock: hbase_emulator::Clock::from_fn(move || {
                hbase_emulator::Clock::system().now_ms() + hbase_ms
            }),
            ..hbase_emulator::EmulatorConfig::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let emulator = hbase_emulator::start(listener, config).unwrap();
        let oracle_config = ServerConfig {
            clock: Arc::new(OffsetClock {
                offset_ms: oracle_ms,
            }),
            ..ServerConfig::default()
        };
        let oracle = OracleServer::start("127.0.0.1:0", MemoryStore::new(), oracle_config).unwrap();
        let hbase = emulator.local_addr().to_string();
        let admin = HBaseClient::connect(HBaseConfig::new(hbase.clone())).unwrap();
        Stack {
            oracle: oracle.local_addr().to_string(),
            _emulator: emulator,
            _oracle: oracle,
            hbase,
            admin,
        }
    }

    /// A transactional table `name` with family `f`, and the liveness table every client
    /// creates when it connects.
    fn table(&self, name: &str) -> String {
        setup::create_table(&self.admin, &Schema::default(), name, &["f"]).unwrap();
        setup::create_liveness_table(&self.admin, &Default::default()).unwrap();
        name.to_string()
    }

    fn client(&self, options: TxnOptions) -> Client {
        let config = HBaseConfig::new(self.hbase.clone());
        Client::connect(config, std::slice::from_ref(&self.oracle), options).unwrap()
    }

    /// One GC round of `tables`, its safe point `life_time` behind the oracle.
    fn gc(&self, life_time: &str, tables: &[&str]) {
        let mut args = vec!["gc", "--hbase", &self.hbase, "--oracle", &self.oracle];
        args.extend(["--once", "--life-time", life_time]);
        args.extend(tables);
        let (code, out, err) = percolator(&args);
        assert_eq!(code, 0, "{out} {err}");
    }

    /// `percolator doctor --json` of `tables` with `extra` arguments: the exit status and
    /// the report.
    fn doctor(&self, extra: &[&str], tables: &[&str]) -> (i32, Value) {
        doctor_at(&self.hbase, &self.oracle, extra, tables)
    }
}

fn doctor_at(hbase: &str, oracle: &str, extra: &[&str], tables: &[&str]) -> (i32, Value) {
    let mut args = vec!["doctor", "--json", "--hbase", hbase, "--oracle", oracle];
    if !extra.contains(&"--timeout") {
        args.extend(["--timeout", "5"]);
    }
    args.extend(extra);
    args.extend(tables);
    let (code, out, err) = percolator(&args);
    let report = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, report)
}

/// Runs `percolator args`: (exit code, stdout, stderr).
fn percolator(args: &[&str]) -> (i32, String, String) {
    command_line::run(env!("CARGO_BIN_EXE_percolator"), args)
}

/// The check `name` (of `table`, for per-table checks) in `report`.
fn check<'r>(report: &'r Value, name: &str, table: Option<&str>) -> &'r Value {
    let checks = report["checks"].as_array().unwrap();
    checks
        .iter()
        .find(|c| c["check"] == name && c["table"].as_str() == table)
        .unwrap_or_else(|| panic!("no check {name} {table:?} in {report:#}"))
}

fn verdict(report: &Value, name: &str, table: Option<&str>) -> String {
    check(report, name, table)["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Asserts that `name` has `expected`, and that every other check is ok (or skipped, where
/// `skipped` says so): the broken part fails its own check, not another's.
fn only(report: &Value, name: &str, table: Option<&str>, expected: &str, others: &[&str]) {
    assert_eq!(verdict(report, name, table), expected, "{report:#}");
    let fix = check(report, name, table)["fix"]
        .as_str()
        .unwrap_or_default();
    assert!(!fix.is_empty(), "a {expected} says what to do: {report:#}");
    for c in report["checks"].as_array().unwrap() {
        if c["check"] == name && c["table"].as_str() == table {
            continue;
        }
        let v = c["verdict"].as_str().unwrap();
        assert!(v == "ok" || others.contains(&v), "{c} in {report:#}");
    }
}

/// A port nothing listens on.
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    addr
}

#[test]
fn a_healthy_stack_passes_every_check_in_json_and_in_text() {
    let s = Stack::start();
    let t = s.table("accounts");
    s.gc("5s", &[&t]);
    let (code, report) = s.doctor(&[], &[&t]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verdict"], "ok", "{report:#}");
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "gateway",
            "oracle",
            "families",
            "meta_table",
            "liveness_table",
            "clock_skew",
            "stale_locks",
            "gc_safe_point",
            "observer_workers"
        ]
    );
    let args = ["doctor", "--hbase", &s.hbase, "--oracle", &s.oracle, &t];
    let (code, text, err) = percolator(&args);
    assert_eq!(code, 0, "{text} {err}");
    assert!(text.contains("ok    families accounts:"), "{text}");
    assert!(text.trim_end().ends_with("every check passed"), "{text}");
}

#[test]
fn a_missing_family_or_too_few_versions_fails_families() {
    let s = Stack::start();
    let good = s.table("good");
    // No percolator family at all.
    let plain = TableDescriptor::new("plain").family(FamilyDescriptor::new("f"));
    s.admin.admin().create_table(&plain).unwrap();
    // The write family keeping one version, a user family keeping three.
    let few = s.table("few");
    let write = FamilyDescriptor::new("_pw").max_versions(1);
    s.admin.admin().modify_family(&few, &write).unwrap();
    let user = FamilyDescriptor::new("f").max_versions(3);
    s.admin.admin().modify_family(&few, &user).unwrap();
    s.gc("5s", &[&good]);

    let (code, report) = s.doctor(&[], &[&good, "plain", &few]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["verdict"], "fail");
    assert_eq!(verdict(&report, "families", Some(&good)), "ok");
    let plain = check(&report, "families", Some("plain"));
    assert_eq!(plain["verdict"], "fail", "{report:#}");
    assert!(
        plain["fix"].as_str().unwrap().contains("migrate"),
        "{plain}"
    );
    let few = check(&report, "families", Some(&few));
    let detail = few["detail"].as_str().unwrap();
    assert_eq!(few["verdict"], "fail", "{report:#}");
    assert!(detail.contains("family _pw: VERSIONS is 1"), "{detail}");
    assert!(detail.contains("family f: VERSIONS is 3"), "{detail}");

    let (code, report) = s.doctor(&[], &["nope"]);
    assert_eq!(code, 1);
    let missing = check(&report, "families", Some("nope"));
    assert!(missing["detail"]
        .as_str()
        .unwrap()
        .contains("does not exist"));
}

#[test]
fn a_missing_meta_table_fails_meta_table() {
    let s = Stack::start();
    // The table as `create` makes it, but without the meta table `create` makes first.
    let schema = Schema::default();
    s.admin
        .admin()
        .create_table(&schema.table("t", &["f"]))
        .unwrap();
    setup::create_liveness_table(&s.admin, &Default::default()).unwrap();
    let (code, report) = s.doctor(&[], &["t"]);
    assert_eq!(code, 1, "{report:#}");
    // Without the meta table, HBase's clock cannot be read and no GC has stored a safe
    // point: those two warn.
    only(&report, "meta_table", None, "fail", &["warn"]);
    assert_eq!(verdict(&report, "clock_skew", None), "warn");
    assert_eq!(verdict(&report, "gc_safe_point", None), "warn");
}

/// A liveness table made before the publication family existed still works, so doctor warns
/// rather than fails, names the family, and says what adds it; a client connecting adds it.
#[test]
fn a_liveness_table_without_its_publication_family_warns_until_a_client_connects() {
    let s = Stack::start();
    setup::create_table(&s.admin, &Schema::default(), "t", &["f"]).unwrap();
    let liveness = percolator::txn::LivenessConfig::default();
    let mut old = liveness.table_descriptor();
    old.families
        .retain(|f| f.name != liveness.publication_family().name);
    s.admin.admin().create_table(&old).unwrap();
    // No GC round before the first look: `percolator gc` connects a client, which upgrades.
    let (_, report) = s.doctor(&[], &["t"]);
    let warned = check(&report, "liveness_table", None);
    assert_eq!(warned["verdict"], "warn", "{report:#}");
    assert!(
        warned["detail"]
            .as_str()
            .unwrap()
            .contains("publication family p"),
        "{warned}"
    );
    assert!(
        warned["fix"].as_str().unwrap().contains("connect"),
        "{warned}"
    );

    s.client(TxnOptions::default()).shutdown();
    let (_, report) = s.doctor(&[], &["t"]);
    assert_eq!(verdict(&report, "liveness_table", None), "ok", "{report:#}");
}

#[test]
fn an_unreachable_gateway_fails_gateway_and_skips_what_needs_it() {
    let s = Stack::start();
    let (code, report) = doctor_at(&closed_port(), &s.oracle, &[], &["t"]);
    assert_eq!(code, 1, "{report:#}");
    only(&report, "gateway", None, "fail", &["skip"]);
    assert_eq!(verdict(&report, "families", Some("t")), "skip");
    assert_eq!(verdict(&report, "stale_locks", Some("t")), "skip");
    // The oracle's clock is still compared with this host's.
    assert_eq!(verdict(&report, "clock_skew", None), "ok", "{report:#}");
}

#[test]
fn an_unreachable_oracle_fails_oracle() {
    let s = Stack::start();
    let t = s.table("t");
    s.gc("5s", &[&t]);
    let (code, report) = doctor_at(&s.hbase, &closed_port(), &[], &[&t]);
    assert_eq!(code, 1, "{report:#}");
    only(&report, "oracle", None, "fail", &[]);
    let oracle = check(&report, "oracle", None);
    assert!(
        oracle["detail"].as_str().unwrap().contains("127.0.0.1"),
        "{oracle}"
    );
}

#[test]
fn a_lock_past_its_ttl_fails_stale_locks() {
    let s = Stack::start();
    let t = s.table("t");
    s.gc("5s", &[&t]);
    // A client that dies before its commit point, leaving its locks with a TTL of 200 ms.
    let crashing = s.client(
        TxnOptions::builder()
            .lock_ttl(Duration::from_millis(200))
            .crash_injector(Arc::new(|at| at == Seam::BeforePrimaryCommit))
            .build(),
    );
    let crashed = crashing.run(|txn| {
        txn.set(&t, "a", "f", "q", "1")?;
        txn.set(&t, "b", "f", "q", "2")
    });
    assert!(crashed.is_err());
    std::thread::sleep(Duration::from_millis(400));
    let (code, report) = s.doctor(&[], &[&t]);
    assert_eq!(code, 1, "{report:#}");
    only(&report, "stale_locks", Some(&t), "fail", &[]);
    let stale = check(&report, "stale_locks", Some(&t));
    assert!(
        stale["detail"]
            .as_str()
            .unwrap()
            .starts_with("2 of 2 locks"),
        "{stale}"
    );
    assert!(
        stale["fix"].as_str().unwrap().contains("locks --resolve"),
        "{stale}"
    );
    crashing.shutdown();
}

#[test]
fn a_safe_point_far_behind_fails_gc_safe_point_unless_the_limit_allows_it() {
    let s = Stack::start();
    let t = s.table("t");
    s.gc("2h", &[&t]);
    let (code, report) = s.doctor(&[], &[&t]);
    assert_eq!(code, 1, "{report:#}");
    only(&report, "gc_safe_point", None, "fail", &[]);
    let (code, report) = s.doctor(&["--max-gc-lag", "3h"], &[&t]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(verdict(&report, "gc_safe_point", None), "ok");
}

struct Nothing;

#[percolator::observer::async_trait]
impl Observer for Nothing {
    async fn process(
        &self,
        _txn: &mut AsyncTransaction,
        _row: &[u8],
        _column: &ObservedColumn,
    ) -> percolator::Result<()> {
        Ok(())
    }
}

#[test]
fn an_expired_observer_worker_fails_observer_workers() {
    let s = Stack::start();
    let t = s.table("docs");
    s.gc("5s", &[&t]);
    let client = s.client(TxnOptions::default());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let set = ObserverSet::new()
        .observe(ObservedColumn::new(&t, "f", "text"), "nothing", Nothing)
        .unwrap();
    let config = WorkerConfig::default().with_worker_ttl(Duration::from_millis(300));
    let worker = runtime
        .block_on(ObserverWorker::start(client.asynchronous(), set, config))
        .unwrap();
    let (code, report) = s.doctor(&[], &[&t]);
    assert_eq!(code, 0, "{report:#}");
    let live = check(&report, "observer_workers", Some(&t));
    assert_eq!(live["detail"], "1 live", "{report:#}");

    worker.kill();
    runtime.block_on(worker.shutdown());
    std::thread::sleep(Duration::from_millis(600));
    let (code, report) = s.doctor(&[], &[&t]);
    assert_eq!(code, 1, "{report:#}");
    only(&report, "observer_workers", Some(&t), "fail", &[]);
    client.shutdown();
}

#[test]
fn a_skewed_oracle_or_hbase_clock_fails_clock_skew() {
    for (hbase_ms, oracle_ms, who) in [(0, 5_000, "the oracle"), (-5_000, 0, "HBase")] {
        let s = Stack::with_clocks(hbase_ms, oracle_ms);
        let t = s.table("t");
        let (code, report) = s.doctor(&[], &[&t]);
        assert_eq!(code, 1, "{report:#}");
        // No GC ran (a skewed clock moves the safe point too): that one only warns.
        only(&report, "clock_skew", None, "fail", &["warn"]);
        let detail = check(&report, "clock_skew", None)["detail"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(detail.contains(who), "{detail}");
        // A limit wider than the skew lets it pass.
        let (code, report) = s.doctor(&["--max-skew", "30s"], &[&t]);
        assert_eq!(code, 0, "{report:#}");
        assert_eq!(verdict(&report, "clock_skew", None), "ok", "{report:#}");
    }
}

#[test]
fn arguments_that_cannot_be_used_exit_2() {
    let s = Stack::start();
    let args = [
        "doctor",
        "--hbase",
        &s.hbase,
        "--oracle",
        &s.oracle,
        "--max-skew",
        "soon",
        "t",
    ];
    let (code, out, err) = percolator(&args);
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("soon"), "{err}");
    let (code, _, _) = percolator(&["doctor", "--hbase", &s.hbase, "--oracle", &s.oracle]);
    assert_eq!(code, 2, "a table is required");
    let args = ["doctor", "--hbase", "http://gw", "--oracle", &s.oracle, "t"];
    let (code, _, err) = percolator(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has no port"), "{err}");
}

#[test]
fn a_silent_gateway_and_oracle_fail_their_checks_within_the_timeout() {
    // Connections are accepted (the backlog) and never answered.
    let gateway = TcpListener::bind("127.0.0.1:0").unwrap();
    let oracle = TcpListener::bind("127.0.0.1:0").unwrap();
    let (hbase, tso) = (gateway.local_addr().unwrap(), oracle.local_addr().unwrap());
    let started = std::time::Instant::now();
    let (code, report) = doctor_at(
        &hbase.to_string(),
        &tso.to_string(),
        &["--timeout", "1"],
        &["t"],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(verdict(&report, "gateway", None), "fail", "{report:#}");
    assert_eq!(verdict(&report, "oracle", None), "fail", "{report:#}");
    assert_eq!(verdict(&report, "clock_skew", None), "skip", "{report:#}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
