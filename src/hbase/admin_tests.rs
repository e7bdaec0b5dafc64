//! Changing some families keeps everything else of the table as HBase holds it. The
//! seasoned table and its checks serve the tests of what changes families (`txn::setup`).

use std::collections::BTreeMap;

use super::*;
use crate::hbase::HBaseClient;
use crate::thrift::hbase::{TBloomFilterType, TColumnFamilyDescriptor, TCompressionAlgorithm};

/// A table whose family has settings the typed descriptors here do not carry: compression,
/// a bloom filter, a block size, a replication scope, an attribute and a configuration key,
/// and a table attribute.
pub(crate) fn seasoned(hbase: &HBaseClient, table: &str) -> TTableDescriptor {
    let family = TColumnFamilyDescriptor {
        compression_type: Some(TCompressionAlgorithm::GZ),
        bloomn_filter_type: Some(TBloomFilterType::ROWCOL),
        block_size: Some(32 * 1024),
        scope: Some(1),
        attributes: Some(BTreeMap::from([(
            b"COMPRESSION_COMPACT".to_vec(),
            b"GZ".to_vec(),
        )])),
        configuration: Some(BTreeMap::from([(
            "hbase.hstore.blockingStoreFiles".to_owned(),
            "20".to_owned(),
        )])),
        max_versions: Some(3),
        ..convert::family_descriptor(&FamilyDescriptor::new("f"))
    };
    let desc = TTableDescriptor {
        table_name: convert::table_name(table),
        columns: Some(vec![family]),
        attributes: Some(BTreeMap::from([(
            b"MAX_FILESIZE".to_vec(),
            b"1073741824".to_vec(),
        )])),
        durability: None,
    };
    let admin = hbase.admin();
    let spec = change("createTable", table);
    admin
        .call::<()>(spec, &[(1, Arg::Struct(&desc)), (2, Arg::Binaries(&[]))])
        .unwrap();
    admin.raw_descriptor(table).unwrap()
}

/// An emulator and a client of it.
pub(crate) fn emulated() -> (hbase_emulator::EmulatorHandle, HBaseClient) {
    let emulator = hbase_emulator::start_local().unwrap();
    let addr = emulator.local_addr().to_string();
    (
        emulator,
        HBaseClient::connect(crate::HBaseConfig::new(addr)).unwrap(),
    )
}

/// The table's descriptor as the gateway holds it, every setting included.
pub(crate) fn raw_descriptor(hbase: &HBaseClient, table: &str) -> TTableDescriptor {
    hbase.admin().raw_descriptor(table).unwrap()
}

pub(crate) fn family<'a>(desc: &'a TTableDescriptor, name: &[u8]) -> &'a TColumnFamilyDescriptor {
    desc.columns
        .iter()
        .flatten()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no family {}", crate::Binary(name)))
}

/// What a reset would have lost: every setting of `before` but the versions.
pub(crate) fn assert_kept(before: &TColumnFamilyDescriptor, after: &TColumnFamilyDescriptor) {
    let versions_aside = |c: &TColumnFamilyDescriptor| TColumnFamilyDescriptor {
        max_versions: None,
        ..c.clone()
    };
    assert_eq!(versions_aside(after), versions_aside(before));
}

#[test]
fn a_family_change_keeps_what_it_does_not_name() {
    let (_emulator, hbase) = emulated();
    let before = seasoned(&hbase, "t");
    let admin = hbase.admin();
    admin
        .modify_family("t", &FamilyDescriptor::new("f").max_versions(7))
        .unwrap();
    let after = admin.raw_descriptor("t").unwrap();
    assert_kept(family(&before, b"f"), family(&after, b"f"));
    assert_eq!(family(&after, b"f").max_versions, Some(7));

    // Nothing to change: nothing sent.
    let calls = hbase.rpc_count();
    admin
        .change_families("t", &[FamilyDescriptor::new("f").max_versions(7)])
        .unwrap();
    assert_eq!(hbase.rpc_count() - calls, 1, "only the descriptor read");
}
