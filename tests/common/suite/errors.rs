//! `TIOError`s naming a missing table or family arrive as typed errors.

use percolator::hbase::{Get, Put};
use percolator::{Error, RetryClass};

use crate::common::gateway::unique_name;
use crate::common::Gateway;

pub fn missing_table_is_table_not_found(gw: &Gateway) {
    let name = unique_name("missing");
    let c = gw.client();
    for err in [
        c.get(&name, &Get::new("r")).unwrap_err(),
        c.put(&name, &Put::new("r").add("f", "q", "v")).unwrap_err(),
        c.admin().table_descriptor(&name).unwrap_err(),
    ] {
        match &err {
            Error::TableNotFound { table, .. } => {
                assert!(table.ends_with(&name), "{table} vs {name}")
            }
            other => panic!("expected TableNotFound, got {other:?}"),
        }
        assert_eq!(err.retry_class(), RetryClass::Fatal);
    }
}

pub fn missing_family_is_family_not_found(gw: &Gateway) {
    let t = gw.table_f(1);
    let c = gw.client();
    for err in [
        c.put(t.name(), &Put::new("r").add("nope", "q", "v"))
            .unwrap_err(),
        c.get(t.name(), &Get::new("r").family("nope")).unwrap_err(),
    ] {
        match &err {
            Error::FamilyNotFound { family, .. } => assert_eq!(family, "nope"),
            other => panic!("expected FamilyNotFound, got {other:?}"),
        }
        assert_eq!(err.retry_class(), RetryClass::Fatal);
    }
}
