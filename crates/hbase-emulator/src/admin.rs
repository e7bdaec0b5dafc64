//! Admin methods of the gateway: table and column-family schema, table state, namespaces.
//!
//! Descriptors are validated as HBase's builders and the master's sanity checks do, stored
//! with HBase 2.x defaults filled in, and reported back that way.

use std::collections::BTreeMap;

use crate::error::{ServerError, ServerResult};
use crate::handler::Handler;
use crate::store::{FamilySchema, Table, TableName, TableSchema, TTL_FOREVER};
use percolator_thrift::hbase::{
    TBloomFilterType, TColumnFamilyDescriptor, TCompressionAlgorithm, TDataBlockEncoding,
    TDurability, TKeepDeletedCells, TNamespaceDescriptor, TTableDescriptor, TTableName,
};

const DEFAULT_BLOCK_SIZE: i32 = 64 * 1024;

fn sanity(message: String) -> ServerError {
    ServerError::do_not_retry(format!(
        "{message} Set hbase.table.sanity.checks to false at conf or table descriptor if you \
         want to bypass sanity checks"
    ))
}

fn family_name(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// `ColumnFamilyDescriptorBuilder.isLegalColumnFamilyName`.
fn check_family_name(name: &[u8]) -> ServerResult<()> {
    if name.is_empty() {
        return Err(ServerError::internal("Column Family name can not be empty"));
    }
    if name[0] == b'.' {
        return Err(ServerError::internal(format!(
            "Column Family names cannot start with a period: {}",
            family_name(name)
        )));
    }
    if let Some(b) = name
        .iter()
        .find(|b| b.is_ascii_control() || matches!(b, b':' | b'\\' | b'/'))
    {
        return Err(ServerError::internal(format!(
            "Illegal character <{b}>. Column Family names cannot contain control characters or \
             colons: {}",
            family_name(name)
        )));
    }
    if name == b"recovered.edits" {
        return Err(ServerError::internal(
            "Column Family name cannot be: recovered.edits",
        ));
    }
    Ok(())
}

/// A numeric setting given as a family attribute (`{"VERSIONS": "3"}`), which Java's
/// descriptor reads exactly like the typed field.
fn numeric_attribute(desc: &TColumnFamilyDescriptor, key: &str) -> ServerResult<Option<i32>> {
    let Some(raw) = desc.attributes.as_ref().and_then(|a| a.get(key.as_bytes())) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(raw);
    let parsed = if key == "TTL" && text.eq_ignore_ascii_case("FOREVER") {
        Some(TTL_FOREVER)
    } else {
        text.trim().parse().ok()
    };
    parsed
        .map(Some)
        .ok_or_else(|| ServerError::internal(format!("For input string: \"{text}\"")))
}

fn attribute_is_true(desc: &TColumnFamilyDescriptor, key: &str) -> bool {
    desc.attributes
        .as_ref()
        .and_then(|a| a.get(key.as_bytes()))
        .is_some_and(|v| !v.eq_ignore_ascii_case(b"false"))
}

/// Validates a family descriptor and fills in HBase's defaults.
pub fn family_schema(desc: &TColumnFamilyDescriptor) -> ServerResult<FamilySchema> {
    check_family_name(&desc.name)?;
    let name = family_name(&desc.name);
    let max_versions = match desc.max_versions.or(numeric_attribute(desc, "VERSIONS")?) {
        None => 1,
        Some(v) if v > 0 => v,
        Some(_) => return Err(ServerError::internal("Maximum versions must be positive")),
    };
    let min_versions = desc
        .min_versions
        .or(numeric_attribute(desc, "MIN_VERSIONS")?)
        .unwrap_or(0);
    let ttl = desc
        .time_to_live
        .or(numeric_attribute(desc, "TTL")?)
        .unwrap_or(TTL_FOREVER);
    if ttl <= 0 {
        return Err(sanity(format!(
            "TTL for column family {name} must be positive."
        )));
    }
    if min_versions < 0 {
        return Err(sanity(format!(
            "Min versions for column family {name} must be positive."
        )));
    }
    if min_versions > max_versions {
        return Err(sanity(format!(
            "Min versions for column family {name} must be less than the Max versions."
        )));
    }
    let keep_deleted = desc.keep_deleted_cells.unwrap_or(TKeepDeletedCells::FALSE);
    if keep_deleted != TKeepDeletedCells::FALSE || attribute_is_true(desc, "KEEP_DELETED_CELLS") {
        return Err(ServerError::unsupported(
            "KEEP_DELETED_CELLS other than FALSE",
        ));
    }
    if attribute_is_true(desc, "NEW_VERSION_BEHAVIOR") {
        return Err(ServerError::unsupported("NEW_VERSION_BEHAVIOR"));
    }
    let descriptor = TColumnFamilyDescriptor {
        name: desc.name.clone(),
        attributes: desc.attributes.clone().filter(|a| !a.is_empty()),
        configuration: desc.configuration.clone().filter(|c| !c.is_empty()),
        block_size: Some(desc.block_size.unwrap_or(DEFAULT_BLOCK_SIZE)),
        bloomn_filter_type: Some(desc.bloomn_filter_type.unwrap_or(TBloomFilterType::ROW)),
        compression_type: Some(desc.compression_type.unwrap_or(TCompressionAlgorithm::NONE)),
        dfs_replication: Some(desc.dfs_replication.unwrap_or(0)),
        data_block_encoding: Some(desc.data_block_encoding.unwrap_or(TDataBlockEncoding::NONE)),
        keep_deleted_cells: Some(TKeepDeletedCells::FALSE),
        max_versions: Some(max_versions),
        min_versions: Some(min_versions),
        scope: Some(desc.scope.unwrap_or(0)),
        time_to_live: Some(ttl),
        block_cache_enabled: Some(desc.block_cache_enabled.unwrap_or(true)),
        cache_blooms_on_write: Some(desc.cache_blooms_on_write.unwrap_or(false)),
        cache_data_on_write: Some(desc.cache_data_on_write.unwrap_or(false)),
        cache_indexes_on_write: Some(desc.cache_indexes_on_write.unwrap_or(false)),
        compress_tags: Some(desc.compress_tags.unwrap_or(true)),
        evict_blocks_on_close: Some(desc.evict_blocks_on_close.unwrap_or(false)),
        in_memory: Some(desc.in_memory.unwrap_or(false)),
    };
    Ok(FamilySchema {
        name: desc.name.clone(),
        max_versions: max_versions as u32,
        min_versions: min_versions as u32,
        ttl_seconds: ttl,
        descriptor,
    })
}

/// A table descriptor's name and schema; a table needs at least one family.
fn table_schema(desc: &TTableDescriptor) -> ServerResult<(TableName, TableSchema)> {
    let name = thrift_table_name(&desc.table_name)?;
    let mut families = BTreeMap::new();
    for f in desc.columns.iter().flatten() {
        let schema = family_schema(f)?;
        if families.insert(f.name.clone(), schema).is_some() {
            return Err(ServerError::internal(format!(
                "Column family '{}' already exists so cannot be added",
                family_name(&f.name)
            )));
        }
    }
    if families.is_empty() {
        return Err(sanity(
            "Table should have at least one column family.".to_owned(),
        ));
    }
    let schema = TableSchema {
        families,
        attributes: desc.attributes.clone().unwrap_or_default(),
        durability: desc.durability.unwrap_or(TDurability::USE_DEFAULT),
    };
    Ok((name, schema))
}

fn thrift_table_name(t: &TTableName) -> ServerResult<TableName> {
    TableName::from_thrift(t.ns.as_deref(), &t.qualifier)
}

fn to_thrift_name(name: &TableName) -> TTableName {
    TTableName {
        ns: Some(name.namespace().as_bytes().to_vec()),
        qualifier: name.qualifier().as_bytes().to_vec(),
    }
}

fn descriptor(table: &Table) -> TTableDescriptor {
    let schema = table.schema();
    TTableDescriptor {
        table_name: to_thrift_name(table.name()),
        columns: Some(
            schema
                .families
                .values()
                .map(|f| f.descriptor.clone())
                .collect(),
        ),
        attributes: Some(schema.attributes.clone()).filter(|a| !a.is_empty()),
        durability: Some(schema.durability),
    }
}

/// Java's `Pattern.matcher(name).matches()`: the whole name must match.
fn full_match(regex: Option<&str>) -> ServerResult<Option<regex::Regex>> {
    regex
        .map(|r| {
            regex::Regex::new(&format!("^(?:{r})$"))
                .map_err(|e| ServerError::internal(format!("PatternSyntaxException: {e}")))
        })
        .transpose()
}

impl Handler {
    pub fn table_descriptor(&self, table: &TTableName) -> ServerResult<TTableDescriptor> {
        let t = self.store.table(&thrift_table_name(table)?)?;
        Ok(descriptor(&t))
    }

    /// Descriptors of the named tables that exist (others are left out).
    pub fn table_descriptors(&self, tables: &[TTableName]) -> ServerResult<Vec<TTableDescriptor>> {
        let mut out = Vec::new();
        for t in tables {
            if let Ok(table) = self.store.table(&thrift_table_name(t)?) {
                out.push(descriptor(&table));
            }
        }
        Ok(out)
    }

    pub fn table_exists(&self, table: &TTableName) -> ServerResult<bool> {
        Ok(self.store.table_exists(&thrift_table_name(table)?))
    }

    /// The emulator has no system tables, so `include_sys_tables` changes nothing.
    fn tables_matching(&self, regex: Option<&str>) -> ServerResult<Vec<std::sync::Arc<Table>>> {
        let pattern = full_match(regex)?;
        Ok(self
            .store
            .tables()
            .into_iter()
            .filter(|t| {
                pattern
                    .as_ref()
                    .is_none_or(|p| p.is_match(&t.name().to_string()))
            })
            .collect())
    }

    pub fn table_descriptors_by_pattern(
        &self,
        regex: Option<&str>,
        _include_sys_tables: bool,
    ) -> ServerResult<Vec<TTableDescriptor>> {
        Ok(self
            .tables_matching(regex)?
            .iter()
            .map(|t| descriptor(t))
            .collect())
    }

    pub fn table_names_by_pattern(
        &self,
        regex: Option<&str>,
        _include_sys_tables: bool,
    ) -> ServerResult<Vec<TTableName>> {
        Ok(self
            .tables_matching(regex)?
            .iter()
            .map(|t| to_thrift_name(t.name()))
            .collect())
    }

    fn tables_in_namespace(&self, ns: &str) -> ServerResult<Vec<std::sync::Arc<Table>>> {
        self.store.namespace(ns)?;
        Ok(self
            .store
            .tables()
            .into_iter()
            .filter(|t| t.name().namespace() == ns)
            .collect())
    }

    pub fn table_descriptors_by_namespace(&self, ns: &str) -> ServerResult<Vec<TTableDescriptor>> {
        Ok(self
            .tables_in_namespace(ns)?
            .iter()
            .map(|t| descriptor(t))
            .collect())
    }

    pub fn table_names_by_namespace(&self, ns: &str) -> ServerResult<Vec<TTableName>> {
        Ok(self
            .tables_in_namespace(ns)?
            .iter()
            .map(|t| to_thrift_name(t.name()))
            .collect())
    }

    /// Split keys are validated like HBase's, then ignored: every table has one region.
    pub fn create_table(
        &self,
        desc: &TTableDescriptor,
        split_keys: Option<&[Vec<u8>]>,
    ) -> ServerResult<()> {
        let (name, schema) = table_schema(desc)?;
        let mut keys: Vec<&Vec<u8>> = split_keys.into_iter().flatten().collect();
        keys.sort();
        if keys.first().is_some_and(|k| k.is_empty()) {
            return Err(ServerError::internal(
                "Empty split key must not be passed in the split keys.",
            ));
        }
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            return Err(ServerError::internal(format!(
                "All split keys must be unique, found duplicate: {}",
                crate::convert::to_string_binary(w[0])
            )));
        }
        let keys = keys.into_iter().cloned().collect();
        self.store
            .create_table(Table::split(name, schema, self.now(), keys))
    }

    pub fn delete_table(&self, table: &TTableName) -> ServerResult<()> {
        self.store.delete_table(&thrift_table_name(table)?)
    }

    /// Truncate needs a disabled table and leaves it empty and enabled.
    pub fn truncate_table(&self, table: &TTableName) -> ServerResult<()> {
        let name = thrift_table_name(table)?;
        let t = self.store.table_for_master(&name)?;
        if t.is_enabled() {
            return Err(ServerError::table_not_disabled(&name));
        }
        t.clear();
        t.set_enabled(true);
        Ok(())
    }

    /// The gateway's client checks `enable`'s preconditions itself; `disable`'s are the
    /// master's, so their errors differ in form (see `error.rs`).
    pub fn set_table_enabled(&self, table: &TTableName, enabled: bool) -> ServerResult<()> {
        let name = thrift_table_name(table)?;
        let t = if enabled {
            self.store.table(&name)?
        } else {
            self.store.table_for_master(&name)?
        };
        if t.set_enabled(enabled) {
            Ok(())
        } else if enabled {
            Err(ServerError::table_already_enabled(&name))
        } else {
            Err(ServerError::table_not_enabled(&name))
        }
    }

    pub fn is_table_enabled(&self, table: &TTableName) -> ServerResult<bool> {
        Ok(self.store.table(&thrift_table_name(table)?)?.is_enabled())
    }

    /// Whether every region of the table is assigned: false for a missing table (never an
    /// error) and for a disabled one, whose regions are closed.
    pub fn is_table_available(&self, table: &TTableName) -> ServerResult<bool> {
        let name = thrift_table_name(table)?;
        Ok(self.store.table(&name).is_ok_and(|t| t.is_enabled()))
    }

    pub fn add_column_family(
        &self,
        table: &TTableName,
        column: &TColumnFamilyDescriptor,
    ) -> ServerResult<()> {
        let name = thrift_table_name(table)?;
        let family = family_schema(column)?;
        self.store.table_for_master(&name)?.update_schema(|schema| {
            if schema.families.contains_key(&family.name) {
                return Err(ServerError::invalid_family_operation(format!(
                    "Column family '{}' in table '{name}' already exists so cannot be added",
                    family_name(&family.name)
                )));
            }
            let mut new = schema.clone();
            new.families.insert(family.name.clone(), family);
            Ok(new)
        })
    }

    pub fn delete_column_family(&self, table: &TTableName, column: &[u8]) -> ServerResult<()> {
        let name = thrift_table_name(table)?;
        self.store.table_for_master(&name)?.update_schema(|schema| {
            if !schema.families.contains_key(column) {
                return Err(ServerError::invalid_family_operation(format!(
                    "Family '{}' does not exist, so it cannot be deleted",
                    family_name(column)
                )));
            }
            if schema.families.len() == 1 {
                return Err(ServerError::invalid_family_operation(format!(
                    "Family '{}' is the only column family in the table, so it cannot be deleted",
                    family_name(column)
                )));
            }
            let mut new = schema.clone();
            new.families.remove(column);
            Ok(new)
        })
    }

    pub fn modify_column_family(
        &self,
        table: &TTableName,
        column: &TColumnFamilyDescriptor,
    ) -> ServerResult<()> {
        let name = thrift_table_name(table)?;
        let family = family_schema(column)?;
        self.store.table_for_master(&name)?.update_schema(|schema| {
            if !schema.families.contains_key(&family.name) {
                return Err(ServerError::invalid_family_operation(format!(
                    "Family '{}' does not exist, so it cannot be modified",
                    family_name(&family.name)
                )));
            }
            let mut new = schema.clone();
            new.families.insert(family.name.clone(), family);
            Ok(new)
        })
    }

    pub fn modify_table(&self, desc: &TTableDescriptor) -> ServerResult<()> {
        let (name, schema) = table_schema(desc)?;
        self.store
            .table_for_master(&name)?
            .update_schema(|_| Ok(schema))
    }

    pub fn create_namespace(&self, desc: TNamespaceDescriptor) -> ServerResult<()> {
        self.store
            .create_namespace(&desc.name, desc.configuration.unwrap_or_default())
    }

    pub fn modify_namespace(&self, desc: TNamespaceDescriptor) -> ServerResult<()> {
        self.store
            .modify_namespace(&desc.name, desc.configuration.unwrap_or_default())
    }

    pub fn namespace_descriptor(&self, name: &str) -> ServerResult<TNamespaceDescriptor> {
        let config = self.store.namespace(name)?;
        Ok(TNamespaceDescriptor {
            name: name.to_owned(),
            configuration: Some(config).filter(|c| !c.is_empty()),
        })
    }

    pub fn namespace_descriptors(&self) -> Vec<TNamespaceDescriptor> {
        self.store
            .namespaces()
            .into_iter()
            .map(|(name, config)| TNamespaceDescriptor {
                name,
                configuration: Some(config).filter(|c| !c.is_empty()),
            })
            .collect()
    }
}
