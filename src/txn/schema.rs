//! Where the percolator columns live, and the helper that adds them to a table.

use crate::error::{Error, Result};
use crate::format::column_qualifier;
use crate::hbase::{FamilyDescriptor, TableDescriptor};
use crate::key::CellKey;

/// HBase's largest VERSIONS setting: percolator families must keep every version, because
/// versions are transaction timestamps (HBase 2.x defaults to 1).
///
/// ```
/// assert_eq!(percolator::txn::ALL_VERSIONS, i32::MAX);
/// ```
pub const ALL_VERSIONS: i32 = i32::MAX;

/// Names of the percolator column families added beside a table's user families.
///
/// ```
/// let s = percolator::txn::Schema::default();
/// assert_eq!((s.lock_family.as_slice(), s.write_family.as_slice()), (&b"_pl"[..], &b"_pw"[..]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// One cell per user column: its lock state (VERSIONS 1, in memory).
    pub lock_family: Vec<u8>,
    /// Write records: version commit_ts -> {kind, start_ts, short value}.
    pub write_family: Vec<u8>,
    /// Observer notifications, version = the writer's start_ts (see `docs/observers.md`).
    /// Nothing else lives there, so a scan for notifications reads only rows that have one.
    pub notify_family: Vec<u8>,
    /// Observer acknowledgments: transactional cells (version = start_ts), one per observer,
    /// column and row.
    pub ack_family: Vec<u8>,
    /// The system table of transactional state every client shares (migration markers,
    /// observed columns, the GC safe point), one row per user table.
    pub meta_table: String,
}

impl Default for Schema {
    fn default() -> Self {
        Schema {
            lock_family: b"_pl".to_vec(),
            write_family: b"_pw".to_vec(),
            notify_family: b"_pn".to_vec(),
            ack_family: b"_pa".to_vec(),
            meta_table: "percolator_meta".into(),
        }
    }
}

impl Schema {
    /// ```
    /// let s = percolator::txn::Schema::default();
    /// assert!(s.is_percolator_family(b"_pw") && !s.is_percolator_family(b"f"));
    /// assert!(s.is_percolator_family(b"_pn") && s.is_percolator_family(b"_pa"));
    /// ```
    pub fn is_percolator_family(&self, family: &[u8]) -> bool {
        family == self.lock_family.as_slice()
            || family == self.write_family.as_slice()
            || family == self.notify_family.as_slice()
            || family == self.ack_family.as_slice()
    }

    /// Refuses `family` when it is a percolator family: user reads and writes never name one
    /// (transactions write them, and what they hold is not a user value). `what` names what
    /// was asked for (a cell, a scan) in the error. The one check behind `set`/`delete` and the
    /// command line's `get`, `put`, `delete` and `scan --family`.
    ///
    /// ```
    /// let s = percolator::txn::Schema::default();
    /// assert!(s.refuse_percolator_family(b"f", "t/r/f:q").is_ok());
    /// let err = s.refuse_percolator_family(b"_pl", "t/r/_pl:q").unwrap_err();
    /// assert!(err.to_string().contains("t/r/_pl:q: _pl is a percolator family"), "{err}");
    /// ```
    pub fn refuse_percolator_family(
        &self,
        family: &[u8],
        what: impl std::fmt::Display,
    ) -> Result<()> {
        if self.is_percolator_family(family) {
            return Err(Error::IllegalArgument {
                message: format!(
                    "{what}: {} is a percolator family, which user reads and writes cannot name",
                    String::from_utf8_lossy(family)
                ),
            });
        }
        Ok(())
    }

    /// The qualifier used for `key` in the lock and write families.
    ///
    /// ```
    /// let s = percolator::txn::Schema::default();
    /// let a = percolator::CellKey::new("t", "r", "f", "q")?;
    /// let b = percolator::CellKey::new("t", "r", "fq", "")?;
    /// assert_ne!(s.qualifier(&a), s.qualifier(&b), "family and qualifier never run together");
    /// # Ok::<(), percolator::Error>(())
    /// ```
    pub fn qualifier(&self, key: &CellKey) -> Vec<u8> {
        column_qualifier(&key.family, &key.qualifier)
    }

    /// The families a transactional table needs, with the settings correctness depends on.
    ///
    /// ```
    /// let [lock, write, notify, ack] = percolator::txn::Schema::default().families();
    /// assert_eq!((lock.name, write.name), (b"_pl".to_vec(), b"_pw".to_vec()));
    /// assert_eq!((notify.name, ack.name), (b"_pn".to_vec(), b"_pa".to_vec()));
    /// ```
    pub fn families(&self) -> [FamilyDescriptor; 4] {
        [
            FamilyDescriptor::new(self.lock_family.clone())
                .max_versions(1)
                .in_memory(true),
            FamilyDescriptor::new(self.write_family.clone()).max_versions(ALL_VERSIONS),
            // Every version: notifications of several writers coexist, each cleared by its
            // exact version.
            FamilyDescriptor::new(self.notify_family.clone()).max_versions(ALL_VERSIONS),
            // Transactional data: every version is some transaction's start_ts.
            FamilyDescriptor::new(self.ack_family.clone()).max_versions(ALL_VERSIONS),
        ]
    }

    /// A user family as transactions need it: every version kept (each is a start_ts).
    ///
    /// ```
    /// let f = percolator::txn::Schema::user_family("f");
    /// assert_eq!(f.max_versions, Some(percolator::txn::ALL_VERSIONS));
    /// ```
    pub fn user_family(name: impl Into<Vec<u8>>) -> FamilyDescriptor {
        FamilyDescriptor::new(name).max_versions(ALL_VERSIONS)
    }

    /// A descriptor for a new transactional table with the given user families.
    ///
    /// ```
    /// let d = percolator::txn::Schema::default().table("accounts", &["f"]);
    /// assert_eq!(d.families.len(), 5);
    /// ```
    pub fn table(&self, name: &str, user_families: &[&str]) -> TableDescriptor {
        let mut desc = TableDescriptor::new(name);
        for f in user_families {
            desc = desc.family(Self::user_family(f.as_bytes()));
        }
        for f in self.families() {
            desc = desc.family(f);
        }
        desc
    }

    /// Checks a table's descriptor: the percolator families exist and keep enough versions.
    ///
    /// ```
    /// let s = percolator::txn::Schema::default();
    /// assert!(s.check(&s.table("accounts", &["f"])).is_ok());
    /// let plain = percolator::hbase::TableDescriptor::new("plain");
    /// assert!(matches!(s.check(&plain), Err(percolator::Error::NotTransactional { .. })));
    /// ```
    pub fn check(&self, desc: &TableDescriptor) -> Result<()> {
        let find = |name: &[u8]| desc.families.iter().find(|f| f.name == name);
        let not_ready = |reason: String| Error::NotTransactional {
            table: desc.name.clone(),
            reason,
        };
        let Some(_) = find(&self.lock_family) else {
            return Err(not_ready(format!(
                "lock family {} is missing (create it with the schema helper or `percolator migrate`)",
                String::from_utf8_lossy(&self.lock_family)
            )));
        };
        let Some(write) = find(&self.write_family) else {
            return Err(not_ready(format!(
                "write family {} is missing",
                String::from_utf8_lossy(&self.write_family)
            )));
        };
        if write.max_versions.unwrap_or(1) < ALL_VERSIONS {
            return Err(not_ready(format!(
                "write family keeps {} versions; it must keep all ({ALL_VERSIONS})",
                write.max_versions.unwrap_or(1)
            )));
        }
        if write.expiring_ttl().is_some() {
            return Err(not_ready("write family must not have a TTL".into()));
        }
        Ok(())
    }
}
