//! Table and column family descriptors for the admin calls.

/// Column family settings; `None` leaves HBase's default (note: VERSIONS defaults to 1).
///
/// ```
/// use percolator::hbase::FamilyDescriptor;
/// let family = FamilyDescriptor::new("f").max_versions(3).min_versions(1).ttl_secs(60).in_memory(true);
/// assert_eq!(family.name, b"f");
/// assert_eq!((family.max_versions, family.min_versions), (Some(3), Some(1)));
/// assert_eq!((family.ttl_secs, family.in_memory), (Some(60), Some(true)));
/// assert_eq!(family.keep_deleted_cells, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyDescriptor {
    pub name: Vec<u8>,
    pub max_versions: Option<i32>,
    pub min_versions: Option<i32>,
    /// Seconds, measured against cell timestamps read as epoch milliseconds.
    pub ttl_secs: Option<i32>,
    pub in_memory: Option<bool>,
    pub keep_deleted_cells: Option<bool>,
}

impl FamilyDescriptor {
    /// A family with every setting left to HBase.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").max_versions, None);
    /// ```
    pub fn new(name: impl Into<Vec<u8>>) -> Self {
        FamilyDescriptor {
            name: name.into(),
            ..FamilyDescriptor::default()
        }
    }

    /// Versions kept per column.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").max_versions(5).max_versions, Some(5));
    /// ```
    pub fn max_versions(mut self, n: i32) -> Self {
        self.max_versions = Some(n);
        self
    }

    /// Versions kept even past the TTL.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").min_versions(1).min_versions, Some(1));
    /// ```
    pub fn min_versions(mut self, n: i32) -> Self {
        self.min_versions = Some(n);
        self
    }

    /// Cells older than `secs` expire.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").ttl_secs(3600).ttl_secs, Some(3600));
    /// ```
    pub fn ttl_secs(mut self, secs: i32) -> Self {
        self.ttl_secs = Some(secs);
        self
    }

    /// The TTL after which the family's cells expire, if they do: unset, 0 and HBase's
    /// FOREVER (`i32::MAX`) do not expire them.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").ttl_secs(60).expiring_ttl(), Some(60));
    /// assert_eq!(FamilyDescriptor::new("f").ttl_secs(i32::MAX).expiring_ttl(), None);
    /// assert_eq!(FamilyDescriptor::new("f").expiring_ttl(), None);
    /// ```
    pub fn expiring_ttl(&self) -> Option<i32> {
        self.ttl_secs
            .filter(|t| *t > 0 && *t < crate::hbase::TTL_FOREVER)
    }

    /// Whether the region server favours this family in its block cache.
    ///
    /// ```
    /// use percolator::hbase::FamilyDescriptor;
    /// assert_eq!(FamilyDescriptor::new("f").in_memory(true).in_memory, Some(true));
    /// ```
    pub fn in_memory(mut self, yes: bool) -> Self {
        self.in_memory = Some(yes);
        self
    }
}

/// A table: `name` is `"ns:qualifier"` or a bare qualifier in the `default` namespace.
///
/// ```
/// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
/// let table = TableDescriptor::new("ns:t").family(FamilyDescriptor::new("f"));
/// assert_eq!(table.name, "ns:t");
/// assert_eq!(table.families, [FamilyDescriptor::new("f")]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableDescriptor {
    pub name: String,
    pub families: Vec<FamilyDescriptor>,
}

impl TableDescriptor {
    /// A table with no families yet (HBase needs at least one).
    ///
    /// ```
    /// use percolator::hbase::TableDescriptor;
    /// assert!(TableDescriptor::new("t").families.is_empty());
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        TableDescriptor {
            name: name.into(),
            families: Vec::new(),
        }
    }

    /// Adds a column family.
    ///
    /// ```
    /// use percolator::hbase::{FamilyDescriptor, TableDescriptor};
    /// let table = TableDescriptor::new("t").family(FamilyDescriptor::new("a")).family(FamilyDescriptor::new("b"));
    /// assert_eq!(table.families.len(), 2);
    /// ```
    pub fn family(mut self, family: FamilyDescriptor) -> Self {
        self.families.push(family);
        self
    }
}
