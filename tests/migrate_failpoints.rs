//! `migrate apply` and `migrate disable` through a region in transition, with the
//! `migrate::flush_region_away` and `migrate::disable_row_region_away` failpoints (build with
//! `--features failpoints`): the gateway's HBase client gives up on the region of a flush of
//! write records, or of a row made plain, after or before applying it. Failpoints are
//! process-global: each test holds a `FailScenario`, which makes them take turns.
#![cfg(feature = "failpoints")]

mod txn_support;

use std::time::Duration;

use percolator::hbase::{FamilyDescriptor, Put, TableDescriptor};
use percolator::migrate::{self, ApplyOptions, DisableOptions, ProgressMode};
use percolator::{Error, RetryClass};
use txn_support::{unique, Env};

const ROWS: usize = 50;

fn options(transition_timeout: Duration) -> ApplyOptions {
    ApplyOptions {
        progress: ProgressMode::Off,
        settle: Duration::ZERO,
        checkpoint_rows: 10,
        transition_timeout,
        ..ApplyOptions::default()
    }
}

/// A plain table of `ROWS` rows, one cell each.
fn plain_table(env: &Env, prefix: &str) -> String {
    let table = unique(prefix);
    env.hbase
        .admin()
        .create_table(&TableDescriptor::new(&table).family(FamilyDescriptor::new("f")))
        .unwrap();
    env.created(&table);
    let puts: Vec<Put> = (0..ROWS)
        .map(|i| Put::new(format!("r{i:03}")).add("f", "q", format!("v{i}").into_bytes()))
        .collect();
    env.hbase.put_many(&table, &puts).unwrap();
    table
}

/// Every plain cell reads transactionally as the value it had.
fn assert_adopted(env: &Env, table: &str) {
    let verified = migrate::verify(&env.hbase, &env.schema, table, ProgressMode::Off).unwrap();
    assert!(verified.ok(), "{verified:?}");
    assert_eq!(verified.cells_checked, ROWS as u64);
    let client = env.client();
    let txn = client.begin().unwrap();
    for i in 0..ROWS {
        let row = format!("r{i:03}");
        assert_eq!(
            txn.get(table, &row, "f", "q").unwrap(),
            Some(format!("v{i}").into_bytes()),
            "{table}/{row}"
        );
    }
    client.shutdown();
}

fn apply(
    env: &Env,
    table: &str,
    transition_timeout: Duration,
) -> percolator::Result<migrate::ApplyReport> {
    migrate::apply(&env.hbase, &env.schema, table, &options(transition_timeout))
}

#[test]
fn an_apply_meeting_a_region_in_transition_resumes_from_its_checkpoint() {
    let scenario = fail::FailScenario::setup();
    let env = Env::start();

    // The third flush is applied and answered "not online", and so are the next two tries'
    // first flushes. Each try moves on a checkpoint (its first rows were written by the
    // unanswered flush before it), so the run keeps going and finishes.
    let table = plain_table(&env, "mig_applied");
    fail::cfg(
        "migrate::flush_region_away",
        "2*off->3*return(applied)->off",
    )
    .unwrap();
    let report = apply(&env, &table, Duration::from_secs(30)).expect("waited out");
    assert!(report.resumed, "{report:?}");
    // The first pass (rows 0-29, 20-39, 30-49, 40-49 over its four tries) and a catch-up.
    assert_eq!(
        report.rows_scanned,
        30 + 20 + 20 + 10 + ROWS as u64,
        "{report:?}"
    );
    assert_adopted(&env, &table);

    // Three tries in a row meet the region away before anything is applied: the run waits
    // 50, 100 and 200 ms, resuming from the same checkpoint, and finishes.
    let table = plain_table(&env, "mig_moving");
    fail::cfg("migrate::flush_region_away", "2*off->3*return->off").unwrap();
    let report = apply(&env, &table, Duration::from_secs(30)).expect("waited out");
    assert!(report.resumed, "{report:?}");
    assert_adopted(&env, &table);
    let waited = percolator::metrics::longest_waits().region_in_transition;
    assert!(waited >= Duration::from_millis(350), "{waited:?}");

    // A region that stays away past the budget fails the run with the gateway's error, as
    // retryable; the next run resumes from its checkpoint and finishes.
    let table = plain_table(&env, "mig_away");
    fail::cfg("migrate::flush_region_away", "1*off->return").unwrap();
    let err = apply(&env, &table, Duration::from_millis(500)).unwrap_err();
    assert!(
        matches!(err, Error::ServerIo { .. }) && err.retry_class() == RetryClass::Retry,
        "{err}"
    );
    fail::cfg("migrate::flush_region_away", "off").unwrap();
    let report = apply(&env, &table, Duration::from_secs(30)).unwrap();
    assert!(report.resumed, "{report:?}");
    assert_eq!(
        report.rows_scanned,
        40 + ROWS as u64,
        "from the checkpoint at row 10"
    );
    assert_adopted(&env, &table);

    scenario.teardown();
}

/// An adopted table whose every row then got a transactional value `t{i}`.
fn transactional_table(env: &Env, prefix: &str) -> String {
    let table = plain_table(env, prefix);
    apply(env, &table, Duration::from_secs(30)).unwrap();
    let client = env.client();
    client
        .run(|t| {
            for i in 0..ROWS {
                t.set(&table, format!("r{i:03}"), "f", "q", format!("t{i}"))?;
            }
            Ok(())
        })
        .unwrap();
    client.shutdown();
    table
}

fn disable(
    env: &Env,
    table: &str,
    transition_timeout: Duration,
) -> percolator::Result<migrate::DisableReport> {
    let opts = DisableOptions {
        progress: ProgressMode::Off,
        settle: Duration::ZERO,
        transition_timeout,
        ..DisableOptions::default()
    };
    migrate::disable(&env.hbase, &env.schema, table, None, &opts)
}

/// Plain again: every row's newest plain version is its last committed value, and the
/// project's families are gone.
fn assert_plain(env: &Env, table: &str) {
    for i in 0..ROWS {
        let row = format!("r{i:03}");
        let got = env
            .hbase
            .get(
                table,
                &percolator::hbase::Get::new(row.clone()).column("f", "q"),
            )
            .unwrap();
        assert_eq!(
            got.value(b"f", b"q"),
            Some(format!("t{i}").as_bytes()),
            "{table}/{row}"
        );
    }
    let families = env.hbase.admin().table_descriptor(table).unwrap().families;
    assert_eq!(families.len(), 1, "{families:?}");
}

#[test]
fn a_disable_meeting_a_region_in_transition_resumes_where_it_stopped() {
    let scenario = fail::FailScenario::setup();
    let env = Env::start();

    // Rows 3 and 4 are made plain and answered "not online", then row 5 is not made plain:
    // the run waits three times, each try going on from the rows still transactional.
    let table = transactional_table(&env, "dis_moving");
    fail::cfg(
        "migrate::disable_row_region_away",
        "2*off->2*return(applied)->1*return->off",
    )
    .unwrap();
    let report = disable(&env, &table, Duration::from_secs(30)).expect("waited out");
    // Rows 3 and 4 were made plain by tries that never heard back: no try counts them.
    assert_eq!(report.rows_scanned, ROWS as u64 - 2, "{report:?}");
    assert_eq!(report.values_rewritten, ROWS as u64 - 2, "{report:?}");
    assert_eq!(
        report.families_dropped,
        ["_pl", "_pw", "_pn", "_pa"],
        "{report:?}"
    );
    assert_plain(&env, &table);

    // A region that stays away past the budget fails the run as retryable; a rerun finishes.
    let table = transactional_table(&env, "dis_away");
    fail::cfg("migrate::disable_row_region_away", "1*off->return").unwrap();
    let err = disable(&env, &table, Duration::from_millis(500)).unwrap_err();
    assert!(
        matches!(err, Error::ServerIo { .. }) && err.retry_class() == RetryClass::Retry,
        "{err}"
    );
    fail::cfg("migrate::disable_row_region_away", "off").unwrap();
    let report = disable(&env, &table, Duration::from_secs(30)).unwrap();
    assert_eq!(
        report.rows_scanned,
        ROWS as u64 - 1,
        "the rerun resumed: {report:?}"
    );
    assert_plain(&env, &table);

    scenario.teardown();
}
