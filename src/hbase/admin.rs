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
///
/// ```
/// use percolator::hbase::ServerType;
/// # let emulator = hbase_emulator::start_local()?;
/// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
/// assert_eq!(hbase.admin().server_type()?, ServerType::Two);
/// assert_ne!(ServerType::One, ServerType::Other(3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerType {
    /// The old Thrift1 gateway (`hbase thrift start`).
    One,
    /// THBaseService (`hbase thrift2 start`), the one this client speaks.
    Two,
    Other(i32),
}

/// Where a region lives.
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
/// let region = hbase.admin().region_location("t", b"row", false)?;
/// assert!(!region.host.is_empty());
/// assert_eq!(region.table, "t");
/// assert!(region.start_key.is_empty() && region.end_key.is_empty());
/// println!("{:?} {:?} {}", region.port, region.start_code, region.region_id);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
/// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
/// let admin = hbase.admin();
/// assert!(admin.table_exists("t")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// The table's families and their settings.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// # let config = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    /// let hbase = percolator::AsyncHBaseClient::connect(config).await?;
    /// # hbase.blocking().admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let table = hbase.table_descriptor("t").await?;
    /// assert_eq!(table.families[0].name, b"f");
    /// # Ok::<(), percolator::Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        Ok(convert::table_from_thrift(
            self.raw_table_descriptor(table).await?,
        ))
    }

    /// The table's descriptor as the gateway sends it: every setting HBase holds, attributes
    /// included, which a change of some families must send back as it found them.
    pub(crate) async fn raw_table_descriptor(&self, table: &str) -> Result<TTableDescriptor> {
        let name = convert::table_name(table);
        let spec = read("getTableDescriptor", table);
        self.call(spec, &[(1, Arg::Struct(&name))]).await
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

    /// Creates the table as one region.
    ///
    /// ```
    /// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().create_table(&TableDescriptor::new("t2").family(FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().table_exists("t2")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_table(&self, table: &TableDescriptor) -> Result<()> {
        self.create_table_with_splits(table, &[])
    }

    /// Creates the table pre-split at `split_keys` (each key starts a region).
    ///
    /// ```
    /// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let table = TableDescriptor::new("split").family(FamilyDescriptor::new("f"));
    /// hbase.admin().create_table_with_splits(&table, &[b"m".to_vec()])?;
    /// assert!(hbase.admin().is_table_available("split")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().disable_table("t")?;
    /// hbase.admin().delete_table("t")?;
    /// assert!(!hbase.admin().table_exists("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_table(&self, table: &str) -> Result<()> {
        self.on_table(change("deleteTable", table))
    }

    /// Brings a disabled table back online.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().disable_table("t")?;
    /// hbase.admin().enable_table("t")?;
    /// assert!(hbase.admin().is_table_enabled("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enable_table(&self, table: &str) -> Result<()> {
        self.on_table(change("enableTable", table))
    }

    /// Takes the table offline, as deleting or truncating it requires.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().disable_table("t")?;
    /// assert!(hbase.admin().is_table_disabled("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn disable_table(&self, table: &str) -> Result<()> {
        self.on_table(change("disableTable", table))
    }

    /// Removes every row; the table must be disabled first, as in HBase.
    ///
    /// ```
    /// use percolator::hbase::{Get, Put};
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.put("t", &Put::new("r").add("f", "q", "v"))?;
    /// hbase.admin().disable_table("t")?;
    /// hbase.admin().truncate_table("t", false)?;
    /// # if !hbase.admin().is_table_enabled("t")? { hbase.admin().enable_table("t")?; }
    /// assert!(!hbase.exists("t", &Get::new("r"))?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn truncate_table(&self, table: &str, preserve_splits: bool) -> Result<()> {
        let name = convert::table_name(table);
        let args = [(1, Arg::Struct(&name)), (2, Arg::Bool(preserve_splits))];
        self.call(change("truncateTable", table), &args)
    }

    /// Whether a table of that name exists, enabled or not.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().table_exists("t")?);
    /// assert!(!hbase.admin().table_exists("missing")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn table_exists(&self, table: &str) -> Result<bool> {
        self.on_table(read("tableExists", table))
    }

    /// Whether the table is online.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().is_table_enabled("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_table_enabled(&self, table: &str) -> Result<bool> {
        self.on_table(read("isTableEnabled", table))
    }

    /// Whether the table is offline.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(!hbase.admin().is_table_disabled("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_table_disabled(&self, table: &str) -> Result<bool> {
        self.on_table(read("isTableDisabled", table))
    }

    /// Whether every region of the table is assigned and serving.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().is_table_available("t")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_table_available(&self, table: &str) -> Result<bool> {
        self.on_table(read("isTableAvailable", table))
    }

    /// The table's families and their settings.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let table = hbase.admin().table_descriptor("t")?;
    /// assert_eq!(table.families[0].name, b"f");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn table_descriptor(&self, table: &str) -> Result<TableDescriptor> {
        runtime::wait(self.client.handle(), self.client.table_descriptor(table))
    }

    /// User tables in every namespace, as `"ns:name"` (bare names for `default`).
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().list_tables()?.contains(&"t".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list_tables(&self) -> Result<Vec<String>> {
        let args = [(1, Arg::Text(".*")), (2, Arg::Bool(false))];
        let names: Vec<TTableName> = self.call(read("getTableNamesByPattern", ""), &args)?;
        Ok(names.iter().map(convert::table_name_string).collect())
    }

    /// The tables of one namespace.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let tables = hbase.admin().list_tables_in_namespace("default")?;
    /// assert!(tables.iter().any(|t| t.ends_with("t")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list_tables_in_namespace(&self, namespace: &str) -> Result<Vec<String>> {
        let args = [(1, Arg::Text(namespace))];
        let names: Vec<TTableName> = self.call(read("getTableNamesByNamespace", ""), &args)?;
        Ok(names.iter().map(convert::table_name_string).collect())
    }

    /// Adds a column family to an existing table.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().add_family("t", &FamilyDescriptor::new("g"))?;
    /// assert_eq!(hbase.admin().table_descriptor("t")?.families.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_family(&self, table: &str, family: &FamilyDescriptor) -> Result<()> {
        self.family_change(change("addColumnFamily", table), family)
    }

    /// Changes the settings `family` gives (its `Some` fields) of an existing column family,
    /// and keeps every other one as HBase holds it: compression, bloom filter, block size,
    /// replication scope, and the attributes (MOB's, for one) that the descriptor types here
    /// do not name.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().modify_family("t", &FamilyDescriptor::new("f").max_versions(5))?;
    /// assert_eq!(hbase.admin().table_descriptor("t")?.families[0].max_versions, Some(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn modify_family(&self, table: &str, family: &FamilyDescriptor) -> Result<()> {
        let found = match self.raw_descriptor(table) {
            Ok(desc) => desc
                .columns
                .into_iter()
                .flatten()
                .find(|c| c.name == family.name),
            // HBase's own refusal of the change names the table, as it names the family below.
            Err(crate::Error::TableNotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let column = match found {
            Some(mut column) => {
                convert::merge_family(&mut column, family);
                if self.client.frames_requests() {
                    // Framed, HBase would store the whole request frame as each attribute's
                    // key; the typed fields carry the settings that attributes repeat.
                    column.attributes = None;
                }
                column
            }
            // HBase's own refusal names the family (or the table).
            None => convert::family_descriptor(family),
        };
        let name = convert::table_name(table);
        let spec = change("modifyColumnFamily", table);
        self.call(spec, &[(1, Arg::Struct(&name)), (2, Arg::Struct(&column))])
    }

    /// Adds the families of `families` that the table lacks, and changes the settings they
    /// give of those it has (as [`modify_family`](Self::modify_family) does), in one table
    /// modification: HBase reopens the table's regions once for all of them, where a call
    /// per family reopens them once per family. The table's other families and settings are
    /// sent back as HBase holds them. Nothing to change sends nothing. Over the framed
    /// transport, where HBase 2.6's gateway garbles the attributes of a table sent to it, each
    /// family is changed by a call of its own instead.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// let changes = [FamilyDescriptor::new("f").max_versions(3), FamilyDescriptor::new("g")];
    /// hbase.admin().change_families("t", &changes)?;
    /// let families = hbase.admin().table_descriptor("t")?.families;
    /// assert_eq!((families.len(), families[0].max_versions), (2, Some(3)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn change_families(&self, table: &str, families: &[FamilyDescriptor]) -> Result<()> {
        if families.is_empty() {
            return Ok(());
        }
        let mut desc = self.raw_descriptor(table)?;
        if self.client.frames_requests() {
            // Framed, HBase would store the whole request frame as the key of every table
            // attribute sent back (its coprocessors, its store file tracker): one call per
            // family instead, each touching only its family.
            for family in families {
                let present = desc.columns.iter().flatten().any(|c| c.name == family.name);
                if present {
                    self.modify_family(table, family)?;
                } else {
                    self.add_family(table, family)?;
                }
            }
            return Ok(());
        }
        let columns = desc.columns.get_or_insert_with(Vec::new);
        let mut changed = false;
        for family in families {
            match columns.iter_mut().find(|c| c.name == family.name) {
                Some(column) => changed |= convert::merge_family(column, family),
                None => {
                    columns.push(convert::family_descriptor(family));
                    changed = true;
                }
            }
        }
        if !changed {
            return Ok(());
        }
        self.call(change("modifyTable", table), &[(1, Arg::Struct(&desc))])
    }

    fn raw_descriptor(&self, table: &str) -> Result<TTableDescriptor> {
        runtime::wait(
            self.client.handle(),
            self.client.raw_table_descriptor(table),
        )
    }

    fn family_change(&self, spec: CallSpec<'_>, family: &FamilyDescriptor) -> Result<()> {
        let name = convert::table_name(spec.table);
        let column = convert::family_descriptor(family);
        self.call(spec, &[(1, Arg::Struct(&name)), (2, Arg::Struct(&column))])
    }

    /// Drops a column family and its data.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().add_family("t", &FamilyDescriptor::new("g"))?;
    /// hbase.admin().delete_family("t", b"g")?;
    /// assert_eq!(hbase.admin().table_descriptor("t")?.families.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_family(&self, table: &str, family: &[u8]) -> Result<()> {
        let name = convert::table_name(table);
        let args = [(1, Arg::Struct(&name)), (2, Arg::Binary(family))];
        self.call(change("deleteColumnFamily", table), &args)
    }

    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().create_namespace("ns")?;
    /// assert!(hbase.admin().list_namespaces()?.contains(&"ns".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_namespace(&self, namespace: &str) -> Result<()> {
        let desc = TNamespaceDescriptor::new(namespace.to_owned(), None);
        self.call(change("createNamespace", ""), &[(1, Arg::Struct(&desc))])
    }

    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(hbase.admin().list_namespaces()?.contains(&"default".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list_namespaces(&self) -> Result<Vec<String>> {
        self.call(read("listNamespaces", ""), &[])
    }

    /// The namespace must be empty, as in HBase.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// hbase.admin().create_namespace("ns")?;
    /// hbase.admin().delete_namespace("ns")?;
    /// assert!(!hbase.admin().list_namespaces()?.contains(&"ns".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_namespace(&self, namespace: &str) -> Result<()> {
        let args = [(1, Arg::Text(namespace))];
        self.call(change("deleteNamespace", ""), &args)
    }

    /// Which kind of Thrift gateway this client is talking to.
    ///
    /// ```
    /// use percolator::hbase::ServerType;
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert_eq!(hbase.admin().server_type()?, ServerType::Two);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn server_type(&self) -> Result<ServerType> {
        let kind: TThriftServerType = self.call(read("getThriftServerType", ""), &[])?;
        Ok(match kind {
            TThriftServerType::ONE => ServerType::One,
            TThriftServerType::TWO => ServerType::Two,
            TThriftServerType(other) => ServerType::Other(other),
        })
    }

    /// The HBase cluster's id.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert!(!hbase.admin().cluster_id()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cluster_id(&self) -> Result<String> {
        self.call(read("getClusterId", ""), &[])
    }

    /// The region holding `row`; `reload` bypasses the gateway's location cache.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert_eq!(hbase.admin().region_location("t", b"r", true)?.table, "t");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// Every region of the table, in key order.
    ///
    /// ```
    /// # let emulator = hbase_emulator::start_local()?;
    /// # let hbase = percolator::HBaseClient::connect(percolator::HBaseConfig::new(emulator.local_addr().to_string()))?;
    /// # hbase.admin().create_table(&percolator::hbase::TableDescriptor::new("t").family(percolator::hbase::FamilyDescriptor::new("f")))?;
    /// assert_eq!(hbase.admin().region_locations("t")?.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

#[cfg(test)]
#[path = "admin_tests.rs"]
pub(crate) mod tests;
