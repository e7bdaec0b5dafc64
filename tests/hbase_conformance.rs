//! HBase 2.x conformance suite, one test per case of `common::suite`.
//!
//! Runs against a fresh in-process emulator per test, or unchanged against any Thrift2 gateway:
//! `HBASE_THRIFT=127.0.0.1:9090 cargo test --test hbase_conformance` (see docker/README.md).

mod common;

use common::suite;
use common::Gateway;

macro_rules! conformance {
    ($($module:ident::$case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let gateway = Gateway::from_env();
                suite::$module::$case(&gateway);
            }
        )*
    };
}

suite::with_cases!(conformance);
