//! Schema helpers: create transactional tables, and the liveness table. Each waits out a
//! region in transition (the meta table's, the liveness table's) for up to a minute, as a
//! service's start-up must: every step is safe to run again.

use crate::error::{Error, Result};
use crate::format::meta::{meta_row, META_FAMILY};
use crate::hbase::{FamilyDescriptor, Get, HBaseClient, Put, TableDescriptor};
use crate::txn::granularity::LockGranularity;
use crate::txn::liveness::LivenessConfig;
use crate::txn::meta::meta_table_descriptor;
use crate::txn::schema::Schema;
use crate::txn::{until_settled_blocking, TRANSITION_TIMEOUT};

/// Creates `name` with the given user families plus the percolator families. An existing
/// table is left as it is if it already passes `Schema::check`.
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = percolator::txn::Schema::default();
/// percolator::txn::setup::create_table(&hbase, &schema, "accounts", &["f"])?;
/// percolator::txn::setup::create_table(&hbase, &schema, "accounts", &["f"])?; // already there: checked
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_table(
    hbase: &HBaseClient,
    schema: &Schema,
    name: &str,
    user_families: &[&str],
) -> Result<()> {
    create_table_with(hbase, schema, name, user_families, LockGranularity::Cell)
}

/// [`create_table`], with the table's lock granularity (see [`create_with`]).
///
/// ```
/// use percolator::txn::LockGranularity;
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = percolator::txn::Schema::default();
/// percolator::txn::setup::create_table_with(&hbase, &schema, "users", &["f"], LockGranularity::Row)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_table_with(
    hbase: &HBaseClient,
    schema: &Schema,
    name: &str,
    user_families: &[&str],
    granularity: LockGranularity,
) -> Result<()> {
    let table = schema.table(name, user_families);
    create_with(hbase, schema, &table, granularity).map(|_| ())
}

/// Creates the table `table` describes, which must hold the percolator families
/// ([`Schema::table`] makes one; a caller may tune its user families first). An existing
/// table is left as it is if it already passes `Schema::check`. Returns whether it was
/// created.
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = percolator::txn::Schema::default();
/// let table = schema.table("accounts", &["f"]);
/// assert!(percolator::txn::setup::create(&hbase, &schema, &table)?);
/// assert!(!percolator::txn::setup::create(&hbase, &schema, &table)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create(hbase: &HBaseClient, schema: &Schema, table: &TableDescriptor) -> Result<bool> {
    create_with(hbase, schema, table, LockGranularity::Cell)
}

/// [`create`], with the table's lock granularity (docs/design.md invariant 14), which is
/// fixed from then on. An existing table must already have that granularity.
///
/// ```
/// use percolator::txn::LockGranularity;
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = percolator::txn::Schema::default();
/// let table = schema.table("users", &["f"]);
/// assert!(percolator::txn::setup::create_with(&hbase, &schema, &table, LockGranularity::Row)?);
/// assert!(percolator::txn::setup::create_with(&hbase, &schema, &table, LockGranularity::Cell).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_with(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &TableDescriptor,
    granularity: LockGranularity,
) -> Result<bool> {
    create_split(hbase, schema, table, granularity, &[])
}

/// [`create_with`], the new table pre-split at `split_keys` (each key starts a region), so
/// that its load spreads over the region servers from the first write. An existing table is
/// checked as by [`create_with`] and keeps its regions.
///
/// ```
/// use percolator::txn::LockGranularity;
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = percolator::txn::Schema::default();
/// let table = schema.table("orders", &["f"]);
/// let splits = [b"h".to_vec(), b"p".to_vec()];
/// assert!(percolator::txn::setup::create_split(&hbase, &schema, &table, LockGranularity::Cell, &splits)?);
/// assert_eq!(hbase.admin().region_locations("orders")?.len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_split(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &TableDescriptor,
    granularity: LockGranularity,
    split_keys: &[Vec<u8>],
) -> Result<bool> {
    // A try that met a transition after asking for the table may have created it.
    let mut asked = false;
    until_settled_blocking(TRANSITION_TIMEOUT, || {
        create_meta_table_once(hbase, schema)?;
        let admin = hbase.admin();
        if admin.table_exists(&table.name)? {
            schema.check(&admin.table_descriptor(&table.name)?)?;
            check_granularity(hbase, schema, &table.name, granularity)?;
            return Ok(asked);
        }
        schema.check(table)?;
        // Before the families exist: a client that sees them reads this (see `granularity`).
        write_granularity(hbase, schema, &table.name, granularity)?;
        asked = true;
        admin.create_table_with_splits(table, split_keys)?;
        Ok(true)
    })
}

/// Adds the percolator families to an existing table and makes its user families keep every
/// version (each version is a transaction's start_ts).
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// hbase.admin().create_table(&TableDescriptor::new("legacy").family(FamilyDescriptor::new("f")))?;
/// let schema = percolator::txn::Schema::default();
/// percolator::txn::setup::enable_transactions(&hbase, &schema, "legacy")?;
/// schema.check(&hbase.admin().table_descriptor("legacy")?)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn enable_transactions(hbase: &HBaseClient, schema: &Schema, name: &str) -> Result<()> {
    enable_transactions_with(hbase, schema, name, LockGranularity::Cell)
}

/// [`enable_transactions`], with the table's lock granularity (docs/design.md invariant 14),
/// fixed from then on: a table that already has the percolator families must already have it.
/// Existing data is not adopted (`percolator migrate apply` does that).
pub fn enable_transactions_with(
    hbase: &HBaseClient,
    schema: &Schema,
    name: &str,
    granularity: LockGranularity,
) -> Result<()> {
    until_settled_blocking(TRANSITION_TIMEOUT, || {
        enable_transactions_once(hbase, schema, name, granularity)
    })
}

fn enable_transactions_once(
    hbase: &HBaseClient,
    schema: &Schema,
    name: &str,
    granularity: LockGranularity,
) -> Result<()> {
    create_meta_table_once(hbase, schema)?;
    let admin = hbase.admin();
    let desc = admin.table_descriptor(name)?;
    if desc.families.iter().any(|f| f.name == schema.lock_family) {
        check_granularity(hbase, schema, name, granularity)?;
    } else {
        write_granularity(hbase, schema, name, granularity)?;
    }
    let mut changes = percolator_family_changes(schema, &desc);
    changes.extend(
        desc.families
            .iter()
            .filter(|f| !schema.is_percolator_family(&f.name))
            .filter(|f| f.max_versions != Some(crate::txn::schema::ALL_VERSIONS))
            .map(|f| {
                FamilyDescriptor::new(f.name.clone()).max_versions(crate::txn::schema::ALL_VERSIONS)
            }),
    );
    admin.change_families(name, &changes)?;
    schema.check(&admin.table_descriptor(name)?)
}

/// Records `granularity` in `table`'s meta row.
pub(crate) fn write_granularity(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    granularity: LockGranularity,
) -> Result<()> {
    let put = granularity.put_into(Put::new(meta_row(table)));
    hbase.put(&schema.meta_table, &put)
}

/// `IllegalArgument` unless the transactional table `table` already has `wanted`.
pub(crate) fn check_granularity(
    hbase: &HBaseClient,
    schema: &Schema,
    table: &str,
    wanted: LockGranularity,
) -> Result<()> {
    let row = hbase.get(
        &schema.meta_table,
        &Get::new(meta_row(table)).family(META_FAMILY),
    )?;
    let stored = LockGranularity::of_meta_row(table, &row)?;
    if stored == wanted {
        return Ok(());
    }
    Err(Error::IllegalArgument {
        message: format!(
            "table {table} locks by {stored}, not {wanted}: a table's lock granularity is fixed once transactions are enabled (`percolator migrate disable`, then apply again, changes it)"
        ),
    })
}

/// What the table `desc` describes needs of the percolator families: those it lacks, whole,
/// and the number of versions for those it has with another (for one table modification,
/// `Admin::change_families`, with whatever else the caller changes).
pub(crate) fn percolator_family_changes(
    schema: &Schema,
    desc: &TableDescriptor,
) -> Vec<FamilyDescriptor> {
    schema
        .families()
        .into_iter()
        .filter_map(
            |family| match desc.families.iter().find(|f| f.name == family.name) {
                None => Some(family),
                Some(existing) if existing.max_versions != family.max_versions => Some(
                    FamilyDescriptor::new(family.name.clone()).max_versions(family.max_versions?),
                ),
                Some(_) => None,
            },
        )
        .collect()
}

/// Creates the liveness table if it does not exist (its families' TTLs make rows ephemeral),
/// and adds the publication family to one made before that family existed (an online schema
/// change; docs/design.md, "Liveness").
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let config = percolator::txn::LivenessConfig::default();
/// percolator::txn::setup::create_liveness_table(&hbase, &config)?;
/// assert!(hbase.admin().table_exists(&config.table)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_liveness_table(hbase: &HBaseClient, config: &LivenessConfig) -> Result<()> {
    until_settled_blocking(TRANSITION_TIMEOUT, || {
        create_liveness_table_once(hbase, config)
    })
}

/// One try of [`create_liveness_table`], for callers that wait out transitions themselves.
pub(crate) fn create_liveness_table_once(
    hbase: &HBaseClient,
    config: &LivenessConfig,
) -> Result<()> {
    create_system_table(hbase, &config.table_descriptor())?;
    let admin = hbase.admin();
    let wanted = config.publication_family();
    if admin
        .table_descriptor(&config.table)?
        .families
        .iter()
        .any(|f| f.name == wanted.name)
    {
        return Ok(());
    }
    tracing::info!(table = %config.table, "adding the publication family `p` to the liveness table");
    match admin.add_family(&config.table, &wanted) {
        Ok(()) => Ok(()),
        // Another client added it first.
        Err(Error::ServerIo { message, .. }) if message.contains("already exists") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the meta table (`schema.meta_table`) if it does not exist: the transactional state
/// every client shares. `create_table` and `enable_transactions` call it.
///
/// ```
/// let emulator = hbase_emulator::start_local()?;
/// let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// let schema = percolator::txn::Schema::default();
/// percolator::txn::setup::create_meta_table(&hbase, &schema)?;
/// assert!(hbase.admin().table_exists(&schema.meta_table)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_meta_table(hbase: &HBaseClient, schema: &Schema) -> Result<()> {
    until_settled_blocking(TRANSITION_TIMEOUT, || create_meta_table_once(hbase, schema))
}

/// One try of [`create_meta_table`], for callers that wait out transitions themselves.
pub(crate) fn create_meta_table_once(hbase: &HBaseClient, schema: &Schema) -> Result<()> {
    create_system_table(hbase, &meta_table_descriptor(&schema.meta_table))
}

fn create_system_table(hbase: &HBaseClient, desc: &TableDescriptor) -> Result<()> {
    let admin = hbase.admin();
    if admin.table_exists(&desc.name)? {
        return Ok(());
    }
    match admin.create_table(desc) {
        Ok(()) => Ok(()),
        // Another client created it first.
        Err(Error::ServerIo { message, .. }) if message.contains("TableExistsException") => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "setup_tests.rs"]
mod tests;
