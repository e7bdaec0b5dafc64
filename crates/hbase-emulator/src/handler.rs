//! The gateway's request handler: one shared instance serves every connection.
//!
//! The generated `THBaseServiceSyncHandler` impl is a thin layer that turns each method's
//! `ServerResult` into the Thrift error the generated processor sends. The methods themselves
//! live in `data.rs` (tables' rows and scanners) and `admin.rs` (schema and namespaces).

use std::net::SocketAddr;

use crate::clock::Clock;
use crate::error::ServerResult;
use crate::scanner::Scanners;
use crate::store::Store;
use crate::EmulatorConfig;
use percolator_thrift::hbase::{
    TAppend, TColumnFamilyDescriptor, TCompareOp, TDelete, TGet, THBaseServiceSyncHandler,
    THRegionLocation, TIncrement, TNamespaceDescriptor, TPut, TResult, TRowMutations, TScan,
    TTableDescriptor, TTableName, TThriftServerType,
};

/// What the gateway reports about itself (region locations, cluster id).
#[derive(Clone, Debug)]
pub struct ServerIdentity {
    pub host: String,
    pub port: i32,
    pub start_code: i64,
    pub cluster_id: String,
}

pub struct Handler {
    pub(crate) store: Store,
    pub(crate) scanners: Scanners,
    pub(crate) clock: Clock,
    pub(crate) identity: ServerIdentity,
}

impl Handler {
    pub fn new(config: &EmulatorConfig, addr: SocketAddr) -> Self {
        let start_code = config.clock.now_ms();
        let idle_ms = i64::try_from(config.scanner_idle_timeout.as_millis()).unwrap_or(i64::MAX);
        Handler {
            store: Store::default(),
            scanners: Scanners::new(idle_ms),
            clock: config.clock.clone(),
            identity: ServerIdentity {
                host: addr.ip().to_string(),
                port: i32::from(addr.port()),
                start_code,
                cluster_id: cluster_id(start_code, addr),
            },
        }
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// A UUID-shaped id, unique per emulator instance.
fn cluster_id(start_code: i64, addr: SocketAddr) -> String {
    let a: u64 = rand::random::<u64>() ^ start_code as u64;
    let b: u64 = rand::random::<u64>() ^ u64::from(addr.port());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// `method` is the Thrift name, which the real gateway puts in its INTERNAL_ERROR message.
fn wire<T>(method: &str, result: ServerResult<T>) -> thrift::Result<T> {
    result.map_err(|e| e.into_thrift(method))
}

impl THBaseServiceSyncHandler for Handler {
    fn handle_exists(&self, table: Vec<u8>, tget: TGet) -> thrift::Result<bool> {
        wire("exists", self.exists(&table, &tget))
    }
    fn handle_exists_all(&self, table: Vec<u8>, tgets: Vec<TGet>) -> thrift::Result<Vec<bool>> {
        wire("existsAll", self.exists_all(&table, &tgets))
    }
    fn handle_get(&self, table: Vec<u8>, tget: TGet) -> thrift::Result<TResult> {
        wire("get", self.get(&table, &tget))
    }
    fn handle_get_multiple(
        &self,
        table: Vec<u8>,
        tgets: Vec<TGet>,
    ) -> thrift::Result<Vec<TResult>> {
        wire("getMultiple", self.get_multiple(&table, &tgets))
    }
    fn handle_put(&self, table: Vec<u8>, tput: TPut) -> thrift::Result<()> {
        wire("put", self.put(&table, &tput))
    }
    fn handle_check_and_put(
        &self,
        table: Vec<u8>,
        row: Vec<u8>,
        family: Vec<u8>,
        qualifier: Vec<u8>,
        value: Vec<u8>,
        tput: TPut,
    ) -> thrift::Result<bool> {
        wire(
            "checkAndPut",
            self.check_and_put(&table, &row, family, qualifier, Some(value), &tput),
        )
    }
    fn handle_put_multiple(&self, table: Vec<u8>, tputs: Vec<TPut>) -> thrift::Result<()> {
        wire("putMultiple", self.put_multiple(&table, &tputs))
    }
    fn handle_delete_single(&self, table: Vec<u8>, tdelete: TDelete) -> thrift::Result<()> {
        wire("deleteSingle", self.delete_single(&table, &tdelete))
    }
    fn handle_delete_multiple(
        &self,
        table: Vec<u8>,
        tdeletes: Vec<TDelete>,
    ) -> thrift::Result<Vec<TDelete>> {
        wire("deleteMultiple", self.delete_multiple(&table, &tdeletes))
    }
    fn handle_check_and_delete(
        &self,
        table: Vec<u8>,
        row: Vec<u8>,
        family: Vec<u8>,
        qualifier: Vec<u8>,
        value: Vec<u8>,
        tdelete: TDelete,
    ) -> thrift::Result<bool> {
        wire(
            "checkAndDelete",
            self.check_and_delete(&table, &row, family, qualifier, Some(value), &tdelete),
        )
    }
    fn handle_increment(&self, table: Vec<u8>, tincrement: TIncrement) -> thrift::Result<TResult> {
        wire("increment", self.increment(&table, &tincrement))
    }
    fn handle_append(&self, table: Vec<u8>, tappend: TAppend) -> thrift::Result<TResult> {
        wire("append", self.append(&table, &tappend))
    }
    fn handle_open_scanner(&self, table: Vec<u8>, tscan: TScan) -> thrift::Result<i32> {
        wire("openScanner", self.open_scanner(&table, &tscan))
    }
    fn handle_get_scanner_rows(
        &self,
        scanner_id: i32,
        num_rows: i32,
    ) -> thrift::Result<Vec<TResult>> {
        wire(
            "getScannerRows",
            self.get_scanner_rows(scanner_id, num_rows),
        )
    }
    fn handle_close_scanner(&self, scanner_id: i32) -> thrift::Result<()> {
        self.scanners.close(scanner_id);
        Ok(())
    }
    fn handle_mutate_row(
        &self,
        table: Vec<u8>,
        trow_mutations: TRowMutations,
    ) -> thrift::Result<()> {
        wire("mutateRow", self.mutate_row(&table, &trow_mutations))
    }
    fn handle_get_scanner_results(
        &self,
        table: Vec<u8>,
        tscan: TScan,
        num_rows: i32,
    ) -> thrift::Result<Vec<TResult>> {
        wire(
            "getScannerResults",
            self.get_scanner_results(&table, &tscan, num_rows),
        )
    }
    fn handle_get_region_location(
        &self,
        table: Vec<u8>,
        row: Vec<u8>,
        _reload: bool,
    ) -> thrift::Result<THRegionLocation> {
        wire("getRegionLocation", self.region_location(&table, &row))
    }
    fn handle_get_all_region_locations(
        &self,
        table: Vec<u8>,
    ) -> thrift::Result<Vec<THRegionLocation>> {
        wire("getAllRegionLocations", self.region_locations(&table))
    }
    fn handle_check_and_mutate(
        &self,
        table: Vec<u8>,
        row: Vec<u8>,
        family: Vec<u8>,
        qualifier: Vec<u8>,
        compare_operator: TCompareOp,
        value: Vec<u8>,
        row_mutations: TRowMutations,
    ) -> thrift::Result<bool> {
        wire(
            "checkAndMutate",
            self.check_and_mutate(
                &table,
                &row,
                family,
                qualifier,
                compare_operator,
                Some(value),
                &row_mutations,
            ),
        )
    }
    fn handle_get_table_descriptor(&self, table: TTableName) -> thrift::Result<TTableDescriptor> {
        wire("getTableDescriptor", self.table_descriptor(&table))
    }
    fn handle_get_table_descriptors(
        &self,
        tables: Vec<TTableName>,
    ) -> thrift::Result<Vec<TTableDescriptor>> {
        wire("getTableDescriptors", self.table_descriptors(&tables))
    }
    fn handle_table_exists(&self, table_name: TTableName) -> thrift::Result<bool> {
        wire("tableExists", self.table_exists(&table_name))
    }
    fn handle_get_table_descriptors_by_pattern(
        &self,
        regex: String,
        include_sys_tables: bool,
    ) -> thrift::Result<Vec<TTableDescriptor>> {
        wire(
            "getTableDescriptorsByPattern",
            self.table_descriptors_by_pattern(Some(&regex), include_sys_tables),
        )
    }
    fn handle_get_table_descriptors_by_namespace(
        &self,
        name: String,
    ) -> thrift::Result<Vec<TTableDescriptor>> {
        wire(
            "getTableDescriptorsByNamespace",
            self.table_descriptors_by_namespace(&name),
        )
    }
    fn handle_get_table_names_by_pattern(
        &self,
        regex: String,
        include_sys_tables: bool,
    ) -> thrift::Result<Vec<TTableName>> {
        wire(
            "getTableNamesByPattern",
            self.table_names_by_pattern(Some(&regex), include_sys_tables),
        )
    }
    fn handle_get_table_names_by_namespace(&self, name: String) -> thrift::Result<Vec<TTableName>> {
        wire(
            "getTableNamesByNamespace",
            self.table_names_by_namespace(&name),
        )
    }
    fn handle_create_table(
        &self,
        desc: TTableDescriptor,
        split_keys: Vec<Vec<u8>>,
    ) -> thrift::Result<()> {
        wire("createTable", self.create_table(&desc, Some(&split_keys)))
    }
    fn handle_delete_table(&self, table_name: TTableName) -> thrift::Result<()> {
        wire("deleteTable", self.delete_table(&table_name))
    }
    fn handle_truncate_table(
        &self,
        table_name: TTableName,
        _preserve_splits: bool,
    ) -> thrift::Result<()> {
        wire("truncateTable", self.truncate_table(&table_name))
    }
    fn handle_enable_table(&self, table_name: TTableName) -> thrift::Result<()> {
        wire("enableTable", self.set_table_enabled(&table_name, true))
    }
    fn handle_disable_table(&self, table_name: TTableName) -> thrift::Result<()> {
        wire("disableTable", self.set_table_enabled(&table_name, false))
    }
    fn handle_is_table_enabled(&self, table_name: TTableName) -> thrift::Result<bool> {
        wire("isTableEnabled", self.is_table_enabled(&table_name))
    }
    fn handle_is_table_disabled(&self, table_name: TTableName) -> thrift::Result<bool> {
        wire(
            "isTableDisabled",
            self.is_table_enabled(&table_name).map(|enabled| !enabled),
        )
    }
    fn handle_is_table_available(&self, table_name: TTableName) -> thrift::Result<bool> {
        wire("isTableAvailable", self.is_table_available(&table_name))
    }
    fn handle_add_column_family(
        &self,
        table_name: TTableName,
        column: TColumnFamilyDescriptor,
    ) -> thrift::Result<()> {
        wire(
            "addColumnFamily",
            self.add_column_family(&table_name, &column),
        )
    }
    fn handle_delete_column_family(
        &self,
        table_name: TTableName,
        column: Vec<u8>,
    ) -> thrift::Result<()> {
        wire(
            "deleteColumnFamily",
            self.delete_column_family(&table_name, &column),
        )
    }
    fn handle_modify_column_family(
        &self,
        table_name: TTableName,
        column: TColumnFamilyDescriptor,
    ) -> thrift::Result<()> {
        wire(
            "modifyColumnFamily",
            self.modify_column_family(&table_name, &column),
        )
    }
    fn handle_modify_table(&self, desc: TTableDescriptor) -> thrift::Result<()> {
        wire("modifyTable", self.modify_table(&desc))
    }
    fn handle_create_namespace(&self, namespace_desc: TNamespaceDescriptor) -> thrift::Result<()> {
        wire("createNamespace", self.create_namespace(namespace_desc))
    }
    fn handle_modify_namespace(&self, namespace_desc: TNamespaceDescriptor) -> thrift::Result<()> {
        wire("modifyNamespace", self.modify_namespace(namespace_desc))
    }
    fn handle_delete_namespace(&self, name: String) -> thrift::Result<()> {
        wire("deleteNamespace", self.store.delete_namespace(&name))
    }
    fn handle_get_namespace_descriptor(
        &self,
        name: String,
    ) -> thrift::Result<TNamespaceDescriptor> {
        wire("getNamespaceDescriptor", self.namespace_descriptor(&name))
    }
    fn handle_list_namespace_descriptors(&self) -> thrift::Result<Vec<TNamespaceDescriptor>> {
        Ok(self.namespace_descriptors())
    }
    fn handle_list_namespaces(&self) -> thrift::Result<Vec<String>> {
        Ok(self
            .store
            .namespaces()
            .into_iter()
            .map(|(n, _)| n)
            .collect())
    }
    fn handle_get_thrift_server_type(&self) -> thrift::Result<TThriftServerType> {
        Ok(TThriftServerType::TWO)
    }
    fn handle_get_cluster_id(&self) -> thrift::Result<String> {
        Ok(self.identity.cluster_id.clone())
    }
}
