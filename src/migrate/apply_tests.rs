use std::time::Duration;

use super::*;
use crate::error::{Error, MigrationIssue};
use crate::hbase::{FamilyDescriptor, HBaseConfig, TableDescriptor};
use crate::migrate::{check::status, plan::plan};

fn quiet() -> ApplyOptions {
    ApplyOptions {
        progress: ProgressMode::Off,
        settle: Duration::ZERO,
        ..ApplyOptions::default()
    }
}

#[test]
fn a_plan_made_before_another_apply_finished_is_made_again_and_refuses() {
    let emulator = hbase_emulator::start_local().unwrap();
    let hbase = HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string())).unwrap();
    let schema = Schema::default();
    hbase
        .admin()
        .create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))
        .unwrap();
    hbase
        .put("legacy", &Put::new("r1").add("f", "q", b"v".to_vec()))
        .unwrap();

    let stale = plan(&hbase, &schema, "legacy", None, ProgressMode::Off).unwrap();
    assert_eq!(stale.state, "plain");
    // Another operator's run adopts the table after this one planned it.
    apply(&hbase, &schema, "legacy", &quiet()).unwrap();
    let adopted = status(&hbase, &schema, "legacy").unwrap();
    assert_eq!(adopted.state, "adopted");

    let err = apply_planned(&hbase, &schema, "legacy", &quiet(), Some(stale)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Migration {
                kind: MigrationIssue::NothingToDo,
                ..
            }
        ),
        "{err}"
    );
    let after = status(&hbase, &schema, "legacy").unwrap();
    assert_eq!(
        (after.state, after.adopted_at_ms),
        ("adopted".to_string(), adopted.adopted_at_ms)
    );
}
