//! Making a table transactional changes its families and nothing else of it.

use crate::hbase::admin_fixture::{assert_kept, emulated, family, raw_descriptor, seasoned};
use crate::txn::{setup::enable_transactions, Schema, ALL_VERSIONS};

#[test]
fn enabling_transactions_keeps_every_other_setting_of_the_user_family() {
    let (_emulator, hbase) = emulated();
    let before = seasoned(&hbase, "legacy");
    enable_transactions(&hbase, &Schema::default(), "legacy").unwrap();
    let after = raw_descriptor(&hbase, "legacy");
    assert_kept(family(&before, b"f"), family(&after, b"f"));
    assert_eq!(family(&after, b"f").max_versions, Some(ALL_VERSIONS));
    assert_eq!(after.attributes, before.attributes);
    assert_eq!(after.columns.iter().flatten().count(), 5);
}
