//! The old value that derived data needs. A secondary index must delete the entry the previous
//! value made, but a run sees only the current state. [`LastApplied`] keeps, in a column of the
//! observed row that only the observer writes, the value its last committed run processed; it
//! is written in the run's own transaction, so it moves exactly when a run commits and a run
//! that fails or loses the acknowledgment race leaves it as it was.

use crate::error::{Error, Result};
use crate::key::CellKey;
use crate::observer::model::ObservedColumn;
use crate::AsyncTransaction;

/// The observed column as the last committed run of the observer processed it (`old`) and as
/// this run sees it (`new`); `None` is an absent or deleted cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub old: Option<Vec<u8>>,
    pub new: Option<Vec<u8>>,
}

impl Change {
    /// True when the value is what the last run processed: a rewrite of the same bytes, or a
    /// change followed by its undoing before any run saw it. Derived data that only this row
    /// writes (a per-row contribution to a total) then needs nothing. Derived data other rows
    /// write too, such as an index entry another row may take over, needs its entry checked
    /// anyway: between the change and its undoing, another row's run may have removed it.
    pub fn is_unchanged(&self) -> bool {
        self.old == self.new
    }

    /// The old value, when the new one differs from it: what derived data must stop
    /// reflecting.
    pub fn replaced(&self) -> Option<&[u8]> {
        self.old.as_deref().filter(|_| !self.is_unchanged())
    }
}

/// A column beside the observed one, in the same row, where an observer keeps the value it
/// applied last. Give every observer of a column its own: two observers sharing one would
/// each see the other's value as the old one.
///
/// ```
/// use percolator::observer::{LastApplied, ObservedColumn, Observer};
/// use percolator::AsyncTransaction;
///
/// /// Maintains `by_email`: row = an email, `f:user` = the user row that has it.
/// struct EmailIndex {
///     applied: LastApplied,
/// }
///
/// #[percolator::observer::async_trait]
/// impl Observer for EmailIndex {
///     async fn process(&self, txn: &mut AsyncTransaction, row: &[u8], col: &ObservedColumn) -> percolator::Result<()> {
///         let change = self.applied.take(txn, row, col).await?;
///         if let Some(old) = change.replaced() {
///             // Another user may have taken this email since: remove only our own entry.
///             if txn.get("by_email", old, "f", "user").await?.as_deref() == Some(row) {
///                 txn.delete("by_email", old, "f", "user")?;
///             }
///         }
///         if let Some(new) = &change.new {
///             // Checked on every run, even an unchanged one: a swap and its undoing collapse
///             // into one run here, while the other user's run may have removed the entry.
///             if txn.get("by_email", new, "f", "user").await?.as_deref() != Some(row) {
///                 txn.set("by_email", new, "f", "user", row)?;
///             }
///         }
///         Ok(())
///     }
/// }
/// let index = EmailIndex { applied: LastApplied::new("f", "email_indexed") };
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastApplied {
    family: Vec<u8>,
    qualifier: Vec<u8>,
}

impl LastApplied {
    /// The column `family:qualifier` of the observed row. It must not be observed by the same
    /// observer (each run would then change what it observes, and run again forever).
    pub fn new(family: impl AsRef<[u8]>, qualifier: impl AsRef<[u8]>) -> Self {
        LastApplied {
            family: family.as_ref().to_vec(),
            qualifier: qualifier.as_ref().to_vec(),
        }
    }

    /// Reads the observed column and the value applied last, in one round trip at the run's
    /// snapshot, and records the current value as applied in `txn` (nothing is written when
    /// they are equal). Call it once per run, before deriving anything.
    pub async fn take(
        &self,
        txn: &mut AsyncTransaction,
        row: &[u8],
        column: &ObservedColumn,
    ) -> Result<Change> {
        if self.family == column.family && self.qualifier == column.qualifier {
            return Err(Error::IllegalArgument {
                message: format!(
                    "LastApplied cannot keep its value in the observed column {column} itself"
                ),
            });
        }
        let observed = column.key(row)?;
        let kept = CellKey::new(
            &column.table,
            row,
            self.family.clone(),
            self.qualifier.clone(),
        )?;
        let mut values = txn.get_many(&[observed, kept]).await?.into_iter();
        let new = values.next().flatten();
        let old = values.next().flatten();
        if old != new {
            match &new {
                Some(value) => txn.set(
                    &column.table,
                    row,
                    &self.family,
                    &self.qualifier,
                    value.clone(),
                )?,
                None => txn.delete(&column.table, row, &self.family, &self.qualifier)?,
            }
        }
        Ok(Change { old, new })
    }
}
