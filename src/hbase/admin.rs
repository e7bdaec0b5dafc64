//! Table, family and namespace administration (HBase 2.2+ gateways).
//!
//! Reads are replayed once after a connection failure; schema changes are not replayed once
//! sent (a replayed create would fail with "table exists" and hide whether the first one ran).

use super::client::{bytes, CallSpec, HBaseClient, Replay};
use super::convert;
use super::types::{FamilyDescriptor, TableDescriptor};
use crate::thrift::hbase::{
    THRegionLocation, TNamespaceDescriptor, TTHBaseServiceSyncClient, TThriftServerType,
};
use crate::Result;

/// Which Thrift gateway answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerType {
    /// The old Thrift1 gateway (`hbase thrift start`).
    One,
    /// THBaseService (`hbase thrift2 start`), the one this client speaks.
    Two,
    Other(i32),
}

/// Where a region lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionLocation {
    pub host: String,
    pub port: Option<i32>,
    pub start_code: Option<i64>,
    pub region_id: i64,
    pub table: String,
    /// Inclusive; empty = first region.
    pub start_key: Vec<u8>,
    /// Exclusive; empty = last region.
    pub end_key: Vec<u8>,
}

/// Administrative calls, borrowed from an [`HBaseClient`] (shares its pool and RPC count).
pub struct Admin<'a> {
    client: &'a HBaseClient,
}

fn read<'a>(method: &'static str, table: &'a str) -> CallSpec<'a> {
    CallSpec::safe(method, table, &[])
}

fn change<'a>(method: &'static str, table: &'a str) -> CallSpec<'a> {
    CallSpec {
        method,
        table,
        row: &[],
        replay: Replay::NotAfterSend,
    }
}

impl<'a> Admin<'a> {
    pub(crate) fn new(client: &'a HBaseClient) -> Self {
        Admin { client }
    }

    pub fn create_table(&self, table: &TableDescriptor) -> Result<()> {
        self.create_table_with_splits(table, &[])
    }

    /// Creates the table pre-split at `split_keys` (each key starts a region).
    pub fn create_table_with_splits(
        &self,
        table: &TableDescriptor,
        split_keys: &[Vec<u8>],
    ) -> Result<()> {
        self.client.call(change("createTable", &table.name), |c| {
            c.create_table(convert::table_descriptor(table), split_keys.to_vec())
        })
    }

    /// The table must be disabled first, as in HBase.
    pub fn delete_table(&self, table: &str) -> Result<()> {
        self.client.call(change("deleteTable", table), |c| {
            c.delete_table(convert::table_name(table))
        })
    }

    pub fn enable_table(&self, table: &str) -> Result<()> {
        self.client.call(change("enableTable", table), |c| {
            c.enable_table(convert::table_name(table))
        })
    }

    pub fn disable_table(&self, table: &str) -> Result<()> {
        self.client.call(change("disableTable", table), |c| {
            c.disable_table(convert::table_name(table))
        })
    }

    /// Removes every row; the table must be disabled first, as in HBase.
    pub fn truncate_table(&self, table: &str, preserve_splits: bool) -> Result<()> {
        self.client.call(change("truncateTable", table), |c| {
            c.truncate_table(convert::table_name(table), preserve_splits)
        })
    }

    pub fn table_exists(&self, table: &str) -> Result<bool> {
        self.client.call(read("tableExists", table), |c| {
            c.table_exists(convert::table_name(table))
        })
    }

    pub fn is_table_enabled(&self, table: &str) -> Result<bool> {
        self.client.call(read("isTableEnabled", table), |c| {
            c.is_table_enabled(convert::table_name(table))
        })
    }

    pub fn is_table_disabled(&self, table: &str) -> Result<bool> {
        self.client.call(read("isTableDisabled", table), |c| {
            c.is_table_disabled(convert::table_name(table))
        })
    }

    pub fn is_table_available(&self, table: &str) -> Result<bool> {
        self.client.call(read("isTableAvailable", table), |c| {
            c.is_table_available(convert::table_name(table))
        })
    }

    pub fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        let desc = self.client.call(read("getTableDescriptor", table), |c| {
            c.get_table_descriptor(convert::table_name(table))
        })?;
        Ok(convert::table_from_thrift(desc))
    }

    /// User tables in every namespace, as `"ns:name"` (bare names for `default`).
    pub fn list_tables(&self) -> Result<Vec<String>> {
        let names = self.client.call(read("getTableNamesByPattern", ""), |c| {
            c.get_table_names_by_pattern(".*".to_owned(), false)
        })?;
        Ok(names.iter().map(convert::table_name_string).collect())
    }

    pub fn list_tables_in_namespace(&self, namespace: &str) -> Result<Vec<String>> {
        let names = self
            .client
            .call(read("getTableNamesByNamespace", ""), |c| {
                c.get_table_names_by_namespace(namespace.to_owned())
            })?;
        Ok(names.iter().map(convert::table_name_string).collect())
    }

    pub fn add_family(&self, table: &str, family: &FamilyDescriptor) -> Result<()> {
        self.client.call(change("addColumnFamily", table), |c| {
            c.add_column_family(
                convert::table_name(table),
                convert::family_descriptor(family),
            )
        })
    }

    pub fn modify_family(&self, table: &str, family: &FamilyDescriptor) -> Result<()> {
        self.client.call(change("modifyColumnFamily", table), |c| {
            c.modify_column_family(
                convert::table_name(table),
                convert::family_descriptor(family),
            )
        })
    }

    pub fn delete_family(&self, table: &str, family: &[u8]) -> Result<()> {
        self.client.call(change("deleteColumnFamily", table), |c| {
            c.delete_column_family(convert::table_name(table), family.to_vec())
        })
    }

    pub fn create_namespace(&self, namespace: &str) -> Result<()> {
        self.client.call(change("createNamespace", ""), |c| {
            c.create_namespace(TNamespaceDescriptor::new(namespace.to_owned(), None))
        })
    }

    pub fn list_namespaces(&self) -> Result<Vec<String>> {
        self.client
            .call(read("listNamespaces", ""), |c| c.list_namespaces())
    }

    /// The namespace must be empty, as in HBase.
    pub fn delete_namespace(&self, namespace: &str) -> Result<()> {
        self.client.call(change("deleteNamespace", ""), |c| {
            c.delete_namespace(namespace.to_owned())
        })
    }

    pub fn server_type(&self) -> Result<ServerType> {
        let kind = self.client.call(read("getThriftServerType", ""), |c| {
            c.get_thrift_server_type()
        })?;
        Ok(match kind {
            TThriftServerType::ONE => ServerType::One,
            TThriftServerType::TWO => ServerType::Two,
            TThriftServerType(other) => ServerType::Other(other),
        })
    }

    pub fn cluster_id(&self) -> Result<String> {
        self.client
            .call(read("getClusterId", ""), |c| c.get_cluster_id())
    }

    pub fn region_location(&self, table: &str, row: &[u8], reload: bool) -> Result<RegionLocation> {
        let spec = CallSpec::safe("getRegionLocation", table, row);
        let location = self.client.call(spec, |c| {
            c.get_region_location(bytes(table), row.to_vec(), reload)
        })?;
        Ok(region_location(location))
    }

    pub fn region_locations(&self, table: &str) -> Result<Vec<RegionLocation>> {
        let locations = self
            .client
            .call(read("getAllRegionLocations", table), |c| {
                c.get_all_region_locations(bytes(table))
            })?;
        Ok(locations.into_iter().map(region_location).collect())
    }
}

fn region_location(l: THRegionLocation) -> RegionLocation {
    RegionLocation {
        host: l.server_name.host_name,
        port: l.server_name.port,
        start_code: l.server_name.start_code,
        region_id: l.region_info.region_id,
        table: String::from_utf8_lossy(&l.region_info.table_name).into_owned(),
        start_key: l.region_info.start_key.unwrap_or_default(),
        end_key: l.region_info.end_key.unwrap_or_default(),
    }
}
