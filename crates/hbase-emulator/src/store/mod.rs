//! The in-memory data store: namespaces, tables, rows, cell versions and delete markers.
//!
//! Nothing is persisted: the store lives and dies with the emulator process.

mod mutate;
mod read;
mod row;
mod schema;
mod table;
mod versions;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

pub use crate::cell::Cell;
pub use mutate::{
    check_and_mutate, get, mutate, read_modify_write, Check, DeleteEntry, DeleteKind, Delta,
    Mutation, PutCell,
};
pub use read::{read_row, ColumnSelection, ReadSpec, TimeRange};
#[cfg(test)]
pub use schema::bare_descriptor;
pub use schema::{
    validate_namespace, FamilySchema, TableName, TableSchema, DEFAULT_NAMESPACE, SYSTEM_NAMESPACE,
    TTL_FOREVER,
};
pub use table::Table;

use crate::error::{ServerError, ServerResult};

/// Namespace configuration, as `TNamespaceDescriptor.configuration` carries it.
pub type NamespaceConfig = BTreeMap<String, String>;

/// The catalog of namespaces and tables. Its locks are taken only to look up, add or remove
/// entries; row traffic never touches them for longer than one map lookup.
#[derive(Debug)]
pub struct Store {
    namespaces: RwLock<BTreeMap<String, NamespaceConfig>>,
    tables: RwLock<BTreeMap<TableName, Arc<Table>>>,
}

impl Default for Store {
    fn default() -> Self {
        let namespaces = [DEFAULT_NAMESPACE, SYSTEM_NAMESPACE]
            .into_iter()
            .map(|n| (n.to_owned(), NamespaceConfig::new()))
            .collect();
        Store {
            namespaces: RwLock::new(namespaces),
            tables: RwLock::new(BTreeMap::new()),
        }
    }
}

impl Store {
    /// A table as the gateway's own client looks it up (data calls, descriptors, state): a
    /// missing one fails with the bare table name. Admin calls the master runs use
    /// [`Store::table_for_master`].
    pub fn table(&self, name: &TableName) -> ServerResult<Arc<Table>> {
        self.table_for_master(name).map_err(ServerError::in_gateway)
    }

    /// A table as the master looks it up for a procedure (delete, disable, truncate, schema
    /// changes): a missing one fails with the master's `TableNotFoundException`.
    pub fn table_for_master(&self, name: &TableName) -> ServerResult<Arc<Table>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| ServerError::table_not_found(name))
    }

    pub fn table_exists(&self, name: &TableName) -> bool {
        self.tables.read().contains_key(name)
    }

    /// All tables, sorted by name.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.read().values().cloned().collect()
    }

    pub fn create_table(&self, table: Table) -> ServerResult<()> {
        let namespaces = self.namespaces.read();
        if !namespaces.contains_key(table.name().namespace()) {
            return Err(ServerError::namespace_not_found(table.name().namespace()));
        }
        let mut tables = self.tables.write();
        if tables.contains_key(table.name()) {
            return Err(ServerError::table_exists(table.name()));
        }
        tables.insert(table.name().clone(), Arc::new(table));
        Ok(())
    }

    /// Deletes a table, which must be disabled first.
    pub fn delete_table(&self, name: &TableName) -> ServerResult<()> {
        let mut tables = self.tables.write();
        let table = tables
            .get(name)
            .ok_or_else(|| ServerError::table_not_found(name))?;
        if table.is_enabled() {
            return Err(ServerError::table_not_disabled_for_delete(name));
        }
        tables.remove(name);
        Ok(())
    }

    pub fn namespace(&self, name: &str) -> ServerResult<NamespaceConfig> {
        self.namespaces
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| ServerError::namespace_not_found(name))
    }

    pub fn namespaces(&self) -> Vec<(String, NamespaceConfig)> {
        self.namespaces
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn create_namespace(&self, name: &str, config: NamespaceConfig) -> ServerResult<()> {
        validate_namespace(name)?;
        let mut namespaces = self.namespaces.write();
        if namespaces.contains_key(name) {
            return Err(ServerError::namespace_exists(name));
        }
        namespaces.insert(name.to_owned(), config);
        Ok(())
    }

    pub fn modify_namespace(&self, name: &str, config: NamespaceConfig) -> ServerResult<()> {
        let mut namespaces = self.namespaces.write();
        let entry = namespaces
            .get_mut(name)
            .ok_or_else(|| ServerError::namespace_not_found(name))?;
        *entry = config;
        Ok(())
    }

    /// Only empty, non-reserved namespaces can be removed.
    pub fn delete_namespace(&self, name: &str) -> ServerResult<()> {
        if name == DEFAULT_NAMESPACE || name == SYSTEM_NAMESPACE {
            return Err(ServerError::constraint(format!(
                "Reserved namespace {name} cannot be removed."
            )));
        }
        let mut namespaces = self.namespaces.write();
        if !namespaces.contains_key(name) {
            return Err(ServerError::namespace_not_found(name));
        }
        let count = self
            .tables
            .read()
            .keys()
            .filter(|t| t.namespace() == name)
            .count();
        if count > 0 {
            return Err(ServerError::constraint(format!(
                "Only empty namespaces can be removed. Namespace {name} has {count} tables"
            )));
        }
        namespaces.remove(name);
        Ok(())
    }
}
