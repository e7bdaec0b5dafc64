//! One observer run against an embedded emulator and oracle, for the rule that needs a change the
//! run's snapshot cannot show: such a change is written step by step (prewrite, commit) at a
//! commit timestamp far above anything the oracle has issued, as a client whose commit lands
//! just after the run's start would leave it.

use crate::hbase::Scan;
use crate::observer::model::notification_qualifier;
use crate::observer::run::{run_once, Observer, Outcome};
use crate::observer::{register, ObservedColumn};
use crate::test_stack::Stack;
use crate::txn::actions;
use crate::txn::{LivenessConfig, Schema};
use crate::{AsyncTransaction, Client, Result};

const TABLE: &str = "obs_run_rules";

/// Copies `f:q` to `f:copy`.
struct Copy;

#[async_trait::async_trait]
impl Observer for Copy {
    async fn process(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        col: &ObservedColumn,
    ) -> Result<()> {
        let v = txn
            .get(&col.table, row, "f", "q")
            .await?
            .unwrap_or_default();
        txn.set(&col.table, row, "f", "copy", v)
    }
}

pub(super) fn stack_and_client() -> (Stack, Client) {
    let stack = Stack::start().expect("embedded stack");
    let liveness = LivenessConfig {
        table: "obs_run_liveness".into(),
        ttl_secs: 10,
        ..LivenessConfig::default()
    };
    let client = stack
        .client(stack.txn_options(liveness).expect("liveness table"))
        .expect("client");
    crate::txn::setup::create_table(&stack.hbase, &Schema::default(), TABLE, &["f"])
        .expect("table");
    (stack, client)
}

/// The notification versions of `column` in `row`, as a worker's scan would see them.
fn notifications(stack: &Stack, column: &ObservedColumn, row: &str) -> Vec<u64> {
    let schema = Schema::default();
    let stop = format!("{row}\0");
    let scan = Scan::range(row.as_bytes().to_vec(), stop.into_bytes())
        .column(
            schema.notify_family.clone(),
            notification_qualifier(&column.family, &column.qualifier),
        )
        .max_versions(crate::txn::ALL_VERSIONS);
    let rows: Vec<_> = stack
        .hbase
        .scan(TABLE, &scan)
        .expect("scan")
        .collect::<Result<_>>()
        .expect("rows");
    rows.iter()
        .flat_map(|r| &r.cells)
        .map(|c| c.timestamp as u64)
        .collect()
}

/// Commits `value` to `column` of row `r` at `commit_ts`, one protocol step at a time.
fn commit_by_hand(
    stack: &Stack,
    column: &ObservedColumn,
    value: &[u8],
    start_ts: u64,
    commit_ts: u64,
) {
    let schema = Schema::default();
    let key = column.key(b"r").expect("key");
    let put = actions::HandPut::new(start_ts, &key, "by-hand", (0, 60_000), value);
    let prewrite = put.prewrite(&schema, &key, false);
    assert!(stack
        .hbase
        .check_and_mutate(TABLE, &prewrite)
        .expect("prewrite"));
    let commit = put.commit(&schema, &key, commit_ts);
    assert!(stack
        .hbase
        .check_and_mutate(TABLE, &commit)
        .expect("commit"));
}

#[test]
fn a_change_above_the_runs_snapshot_makes_it_stale_and_leaves_the_notifications() {
    let _failpoints_off = crate::txn::failpoints_off();
    let (stack, client) = stack_and_client();
    let runtime = client.asynchronous().runtime().clone();
    let async_client = client.asynchronous();
    let column = ObservedColumn::new(TABLE, "f", "q");
    crate::runtime::wait(&runtime, register(&async_client, &column, "copy")).expect("register");
    for row in ["r", "s"] {
        client
            .run(|txn| txn.set(TABLE, row, "f", "q", "v1"))
            .expect("a change");
    }
    let run = |row: &str, seen: &[u64]| {
        let run = run_once(
            &async_client,
            "copy",
            &Copy,
            &column,
            row.as_bytes(),
            seen,
            &|_| false,
        );
        crate::runtime::wait(&runtime, run).expect("run")
    };
    let copy = |row: &str| {
        let txn = client.begin().expect("begin");
        txn.get(TABLE, row, "f", "copy").expect("read")
    };

    // Row s, as a control: the run processes v1 and clears its notification.
    let seen = notifications(&stack, &column, "s");
    assert_eq!(seen.len(), 1, "the change left its notification");
    assert!(matches!(run("s", &seen), Outcome::Processed));
    assert_eq!(copy("s").as_deref(), Some(&b"v1"[..]));
    assert!(notifications(&stack, &column, "s").is_empty());

    // Row r: a second change commits above any snapshot the oracle gives now.
    let seen = notifications(&stack, &column, "r");
    assert_eq!(seen.len(), 1);
    let now = crate::runtime::wait(&runtime, stack.tso.timestamp()).expect("timestamp");
    commit_by_hand(&stack, &column, b"v2", now, now + (1 << 40));
    assert_eq!(run("r", &seen), Outcome::Stale);
    assert_eq!(notifications(&stack, &column, "r"), seen, "nothing cleared");
    assert_eq!(copy("r"), None, "nothing committed");
    client.shutdown();
}
