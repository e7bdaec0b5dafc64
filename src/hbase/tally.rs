//! What a client wrote, by family: the cells and bytes of every mutation HBase applied (a put,
//! a delete, a row mutation, a checkAndMutate, checkAndPut or checkAndDelete that matched), as
//! the client saw it applied. A call whose outcome is unknown is not counted, nor are
//! increments. It is what a workload costs the cluster's
//! write path (WAL, memstore, compactions, versions to collect later), measured from the
//! client so that it reads the same against any gateway. Off unless
//! [`HBaseConfig::tally_writes`](super::HBaseConfig::tally_writes) turns it on.

use parking_lot::Mutex;
use serde::Serialize;

use crate::hbase::{Delete, Mutation, Put, RowMutations};

/// The bytes HBase stores for a cell besides its key parts and value: its version.
const VERSION_BYTES: u64 = 8;

/// Cells written to one family, and their bytes: row, family, qualifier, value and version of
/// each (a delete marker has no value).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FamilyWrites {
    /// The family's name (lossy UTF-8); `*` for a whole-row delete, whose markers cover every
    /// family.
    pub family: String,
    pub cells: u64,
    pub bytes: u64,
}

/// The counts, by family in the order the families were first written.
#[derive(Default)]
pub(crate) struct WriteTally(Mutex<Vec<FamilyWrites>>);

impl WriteTally {
    pub fn put(&self, put: &Put) {
        let mut families = self.0.lock();
        for cell in &put.cells {
            let bytes = put.row.len() + cell.family.len() + cell.qualifier.len() + cell.value.len();
            add(&mut families, &cell.family, bytes as u64 + VERSION_BYTES);
        }
    }

    pub fn delete(&self, delete: &Delete) {
        let mut families = self.0.lock();
        if delete.columns.is_empty() {
            add(&mut families, b"*", delete.row.len() as u64 + VERSION_BYTES);
        }
        for column in &delete.columns {
            let qualifier = column.qualifier.as_deref().unwrap_or_default();
            let bytes = delete.row.len() + column.family.len() + qualifier.len();
            add(&mut families, &column.family, bytes as u64 + VERSION_BYTES);
        }
    }

    pub fn row(&self, mutations: &RowMutations) {
        for m in &mutations.mutations {
            match m {
                Mutation::Put(put) => self.put(put),
                Mutation::Delete(delete) => self.delete(delete),
            }
        }
    }

    pub fn snapshot(&self) -> Vec<FamilyWrites> {
        self.0.lock().clone()
    }
}

fn add(families: &mut Vec<FamilyWrites>, family: &[u8], bytes: u64) {
    let entry = match families.iter().position(|f| f.family.as_bytes() == family) {
        Some(i) => &mut families[i],
        None => {
            families.push(FamilyWrites {
                family: String::from_utf8_lossy(family).into_owned(),
                ..FamilyWrites::default()
            });
            families.last_mut().expect("just pushed")
        }
    };
    entry.cells += 1;
    entry.bytes += bytes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hbase::CheckAndMutate;

    #[test]
    fn cells_and_bytes_are_counted_by_family() {
        let tally = WriteTally::default();
        tally.put(&Put::new("r").add("f", "q", "vv").add("_pl", "l", ""));
        tally.delete(&Delete::new("r").column("f", "q"));
        tally.delete(&Delete::new("row"));
        let cam = CheckAndMutate::new("r", "_pl", "l", crate::hbase::CompareOp::Equal, "")
            .put(Put::new("r").add("_pl", "l", "x"));
        tally.row(&cam.mutations);
        let by = |family: &str| {
            let all = tally.snapshot();
            all.into_iter().find(|f| f.family == family).expect(family)
        };
        // "r" "f" "q" "vv" and a version; then the marker of f:q, without a value.
        assert_eq!(
            (by("f").cells, by("f").bytes),
            (2, (1 + 1 + 1 + 2 + 8) + (1 + 1 + 1 + 8))
        );
        assert_eq!(
            (by("_pl").cells, by("_pl").bytes),
            (2, (1 + 3 + 1 + 8) + (1 + 3 + 1 + 1 + 8))
        );
        assert_eq!((by("*").cells, by("*").bytes), (1, 3 + 8));
    }
}
