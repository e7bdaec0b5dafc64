//! Table, family and namespace administration (HBase 2.2+ gateways), blocking.
//!
//! Reads are replayed once after a connection failure; schema changes are not replayed once
//! sent (a replayed create would fail with "table exists" and hide whether the first one ran).

use super::client::{AsyncHBaseClient, CallSpec};
use super::convert;
use super::types::{FamilyDescriptor, TableDescriptor};
use super::wire::{Arg, Success};
use crate::runtime;
use crate::thrift::hbase::{
    THRegionLocation, TNamespaceDescriptor, TTableDescriptor, TTableName, TThriftServerType,
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

/// Administrative calls, borrowed from an [`HBaseClient`](super::HBaseClient) (shares its
/// pool and RPC count).
pub struct Admin<'a> {
    client: &'a AsyncHBaseClient,
}

fn read<'a>(method: &'static str, table: &'a str) -> CallSpec<'a> {
    CallSpec::safe(method, table, &[])
}

fn change<'a>(method: &'static str, table: &'a str) -> CallSpec<'a> {
    CallSpec::not_after_send(method, table)
}

impl AsyncHBaseClient {
    pub async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        let name = convert::table_name(table);
        let spec = read("getTableDescriptor", table);
        let request = self.request(spec.method, &[(1, Arg::Struct(&name))])?;
        let desc: TTableDescriptor = self.send(&spec, &request).await?;
        Ok(convert::table_from_thrift(desc))
    }
}

impl<'a> Admin<'a> {
    pub(crate) fn new(client: &'a AsyncHBaseClient) -> Self {
        Admin { client }
    }

    /// Runs one call and waits for it.
    fn call<T: Success>(&self, spec: CallSpec<'_>, args: &[(i16, Arg<'_>)]) -> Result<T> {
        runtime::wait(self.client.handle(), self.client.call(spec, args))
    }

    /// A call whose only argument is the table's name.
    fn on_table<T: Success>(&self, spec: CallSpec<'_>) -> Result<T> {
        let name = convert::table_name(spec.table);
        self.call(spec, &[(1, Arg::Struct(&name))])
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
        let desc = convert::table_descriptor(table);
        let args = [(1, Arg::Struct(&desc)), (2, Arg::Binaries(split_keys))];
        self.call(change("createTable", &table.name), &args)
    }

    /// The table must be disabled first, as in HBase.
    pub fn delete_table(&self, table: &str) -> Result<()> {
        self.on_table(change("deleteTable", table))
    }

    pub fn enable_table(&self, table: &str) -> Result<()> {
        self.on_table(change("enableTable", table))
    }

    pub fn disable_table(&self, table: &str) -> Result<()> {
        self.on_table(change("disableTable", table))
    }

    /// Removes every row; the table must be disabled first, as in HBase.
    pub fn truncate_table(&self, table: &str, preserve_splits: bool) -> Result<()> {
        let name = convert::table_name(table);
        let args = [(1, Arg::Struct(&name)), (2, Arg::Bool(preserve_splits))];
        self.call(change("truncateTable", table), &args)
    }

    pub fn table_exists(&self, table: &str) -> Result<bool> {
        self.on_table(read("tableExists", table))
    }

    pub fn is_table_enabled(&self, table: &str) -> Result<bool> {
        self.on_table(read("isTableEnabled", table))
    }

    pub fn is_table_disabled(&self, table: &str) -> Result<bool> {
        self.on_table(read("isTableDisabled", table))
    }

    pub fn is_table_available(&self, table: &str) -> Result<bool> {
        self.on_table(read("isTableAvailable", table))
    }

    pub fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        runtime::wait(self.client.handle(), self.client.table_descriptor(table))
    }

    /// User tables in every namespace, as `"ns:name"` (bare names for `default`).
    pub fn list_tables(&self) -> Result<Vec<String>> {
        let args = [(1, Arg::Text(".*")), (2, Arg::Bool(false))];
        let names: Vec<TTableName> = self.call(read("getTableNamesByPattern", ""), &args)?;
        Ok(names.iter().map(convert::table_name_string).collect())
    }

    pub fn list_tables_in_namespace(&self, namespace: &str) -> Result<Vec<String>> {
        let args = [(1, Arg::Text(namespace))];
        let names: Vec<TTableName> = self.call(read("getTableNamesByNamespace", ""), &args)?;
        Ok(names.iter().map(convert::table_name_string).collect())
    }

    pub fn add_family(&self, table: &str, family: &FamilyDescriptor) -> Result<()> {
        self.family_change(change("addColumnFamily", table), family)
    }

    pub fn modify_family(&self, table: &str, family: &FamilyDescriptor) -> Result<()> {
        self.family_change(change("modifyColumnFamily", table), family)
    }

    fn family_change(&self, spec: CallSpec<'_>, family: &FamilyDescriptor) -> Result<()> {
        let name = convert::table_name(spec.table);
        let column = convert::family_descriptor(family);
        self.call(spec, &[(1, Arg::Struct(&name)), (2, Arg::Struct(&column))])
    }

    pub fn delete_family(&self, table: &str, family: &[u8]) -> Result<()> {
        let name = convert::table_name(table);
        let args = [(1, Arg::Struct(&name)), (2, Arg::Binary(family))];
        self.call(change("deleteColumnFamily", table), &args)
    }

    pub fn create_namespace(&self, namespace: &str) -> Result<()> {
        let desc = TNamespaceDescriptor::new(namespace.to_owned(), None);
        self.call(change("createNamespace", ""), &[(1, Arg::Struct(&desc))])
    }

    pub fn list_namespaces(&self) -> Result<Vec<String>> {
        self.call(read("listNamespaces", ""), &[])
    }

    /// The namespace must be empty, as in HBase.
    pub fn delete_namespace(&self, namespace: &str) -> Result<()> {
        let args = [(1, Arg::Text(namespace))];
        self.call(change("deleteNamespace", ""), &args)
    }

    pub fn server_type(&self) -> Result<ServerType> {
        let kind: TThriftServerType = self.call(read("getThriftServerType", ""), &[])?;
        Ok(match kind {
            TThriftServerType::ONE => ServerType::One,
            TThriftServerType::TWO => ServerType::Two,
            TThriftServerType(other) => ServerType::Other(other),
        })
    }

    pub fn cluster_id(&self) -> Result<String> {
        self.call(read("getClusterId", ""), &[])
    }

    pub fn region_location(&self, table: &str, row: &[u8], reload: bool) -> Result<RegionLocation> {
        let spec = CallSpec::safe("getRegionLocation", table, row);
        let args = [
            (1, Arg::Binary(table.as_bytes())),
            (2, Arg::Binary(row)),
            (3, Arg::Bool(reload)),
        ];
        let location: THRegionLocation = self.call(spec, &args)?;
        Ok(region_location(location))
    }

    pub fn region_locations(&self, table: &str) -> Result<Vec<RegionLocation>> {
        let args = [(1, Arg::Binary(table.as_bytes()))];
        let locations: Vec<THRegionLocation> =
            self.call(read("getAllRegionLocations", table), &args)?;
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
