//! Builders for the generated Thrift structs that have no `Default`, for unit tests, and an
//! emulator with a connected client.

use percolator_thrift::hbase::{TGet, TScan};

pub fn tget(row: &[u8]) -> TGet {
    TGet {
        row: row.to_vec(),
        columns: None,
        timestamp: None,
        time_range: None,
        max_versions: None,
        filter_string: None,
        attributes: None,
        authorizations: None,
        consistency: None,
        target_replica_id: None,
        cache_blocks: None,
        store_limit: None,
        store_offset: None,
        existence_only: None,
        filter_bytes: None,
    }
}

/// A TScan with every field unset (the generated `Default` sets most of them).
pub fn tscan() -> TScan {
    TScan {
        start_row: None,
        stop_row: None,
        columns: None,
        caching: None,
        max_versions: None,
        time_range: None,
        filter_string: None,
        batch_size: None,
        attributes: None,
        authorizations: None,
        reversed: None,
        cache_blocks: None,
        col_fam_time_range_map: None,
        read_type: None,
        limit: None,
        consistency: None,
        target_replica_id: None,
        filter_bytes: None,
    }
}

use std::sync::Arc;

use crate::clock::testing::ManualClock;
use crate::handler::Handler;
use crate::store::bare_descriptor;
use crate::EmulatorConfig;
use percolator_thrift::hbase::{
    TColumn, TColumnValue, TDelete, TDeleteType, TPut, TResult, TTableDescriptor, TTableName,
};

/// Wall-clock start of every test clock (an arbitrary ms timestamp).
pub const T0: i64 = 1_700_000_000_000;

/// A handler with a hand-driven clock, and shorthands for building requests.
pub struct Env {
    pub h: Arc<Handler>,
    pub clock: ManualClock,
}

pub fn env() -> Env {
    let clock = ManualClock::at(T0);
    let config = EmulatorConfig {
        clock: clock.clock(),
        ..EmulatorConfig::default()
    };
    Env {
        h: Arc::new(Handler::new(&config, "127.0.0.1:9090".parse().unwrap())),
        clock,
    }
}

pub fn table_name(name: &str) -> TTableName {
    match name.split_once(':') {
        Some((ns, q)) => TTableName {
            ns: Some(ns.into()),
            qualifier: q.into(),
        },
        None => TTableName {
            ns: None,
            qualifier: name.into(),
        },
    }
}

/// Families given as (name, VERSIONS).
pub fn table_desc(name: &str, families: &[(&str, i32)]) -> TTableDescriptor {
    TTableDescriptor {
        table_name: table_name(name),
        columns: Some(
            families
                .iter()
                .map(|(f, versions)| {
                    let mut d = bare_descriptor(f.as_bytes());
                    d.max_versions = Some(*versions);
                    d
                })
                .collect(),
        ),
        attributes: None,
        durability: None,
    }
}

pub fn cv(family: &str, qualifier: &str, ts: Option<i64>, value: &str) -> TColumnValue {
    TColumnValue {
        family: family.into(),
        qualifier: qualifier.into(),
        value: value.into(),
        timestamp: ts,
        tags: None,
        type_: None,
    }
}

pub fn tput(row: &str, cells: Vec<TColumnValue>) -> TPut {
    TPut {
        row: row.into(),
        column_values: cells,
        timestamp: None,
        attributes: None,
        durability: None,
        cell_visibility: None,
    }
}

pub fn col(family: &str, qualifier: Option<&str>, ts: Option<i64>) -> TColumn {
    TColumn {
        family: family.into(),
        qualifier: qualifier.map(Into::into),
        timestamp: ts,
    }
}

pub fn tdelete(row: &str, columns: Option<Vec<TColumn>>, kind: Option<TDeleteType>) -> TDelete {
    TDelete {
        row: row.into(),
        columns,
        timestamp: None,
        delete_type: kind,
        attributes: None,
        durability: None,
    }
}

/// A result as `family:qualifier@ts=value` strings.
pub fn cells(r: &TResult) -> Vec<String> {
    r.column_values
        .iter()
        .map(|c| {
            format!(
                "{}:{}@{}={}",
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(&c.qualifier),
                c.timestamp.unwrap_or(-1),
                String::from_utf8_lossy(&c.value)
            )
        })
        .collect()
}

impl Env {
    pub fn create(&self, name: &str, families: &[(&str, i32)]) {
        self.h
            .create_table(&table_desc(name, families), None)
            .unwrap();
    }

    pub fn put(&self, table: &str, row: &str, cells: Vec<TColumnValue>) {
        self.h.put(table.as_bytes(), &tput(row, cells)).unwrap();
    }

    pub fn get(&self, table: &str, tget: &percolator_thrift::hbase::TGet) -> Vec<String> {
        cells(&self.h.get(table.as_bytes(), tget).unwrap())
    }

    /// Every version of a row.
    pub fn all_versions(&self, table: &str, row: &str) -> Vec<String> {
        let mut g = tget(row.as_bytes());
        g.max_versions = Some(i32::MAX);
        self.get(table, &g)
    }
}
