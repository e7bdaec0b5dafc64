//! Schema helpers: create transactional tables, and the liveness table.

use crate::error::{Error, Result};
use crate::hbase::{HBaseClient, TableDescriptor};
use crate::txn::liveness::LivenessConfig;
use crate::txn::meta::meta_table_descriptor;
use crate::txn::schema::Schema;

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
    create(hbase, schema, &schema.table(name, user_families)).map(|_| ())
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
    create_meta_table(hbase, schema)?;
    let admin = hbase.admin();
    if admin.table_exists(&table.name)? {
        schema.check(&admin.table_descriptor(&table.name)?)?;
        return Ok(false);
    }
    schema.check(table)?;
    admin.create_table(table)?;
    Ok(true)
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
    create_meta_table(hbase, schema)?;
    let admin = hbase.admin();
    let desc = admin.table_descriptor(name)?;
    add_percolator_families(hbase, schema, &desc)?;
    for user in desc
        .families
        .iter()
        .filter(|f| !schema.is_percolator_family(&f.name))
    {
        if user.max_versions != Some(crate::txn::schema::ALL_VERSIONS) {
            let mut f = user.clone();
            f.max_versions = Some(crate::txn::schema::ALL_VERSIONS);
            admin.modify_family(name, &f)?;
        }
    }
    schema.check(&admin.table_descriptor(name)?)
}

/// Adds the percolator families missing from the table `desc` describes, and gives those
/// present the number of versions they need.
pub(crate) fn add_percolator_families(
    hbase: &HBaseClient,
    schema: &Schema,
    desc: &TableDescriptor,
) -> Result<()> {
    let admin = hbase.admin();
    for family in schema.families() {
        match desc.families.iter().find(|f| f.name == family.name) {
            None => admin.add_family(&desc.name, &family)?,
            Some(existing) if existing.max_versions != family.max_versions => {
                admin.modify_family(&desc.name, &family)?
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Creates the liveness table if it does not exist (its family's TTL makes rows ephemeral).
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
    create_system_table(hbase, &config.table_descriptor())
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
