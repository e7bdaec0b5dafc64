//! A buffered write made ready to prewrite: its cell, its lock and the lock's bytes.

use crate::format::observer::notification_qualifier;
use crate::format::{encode_lock, Lock, MutationKind, RowColumn};
use crate::hbase::{CheckAndMutate, Put};
use crate::key::CellKey;
use crate::txn::actions;
use crate::txn::primaries::Prewritten;
use crate::txn::schema::Schema;

/// What a transaction buffered for one cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    Put(Vec<u8>),
    Delete,
    /// Only locked (write-skew protection): the committed value stays as it is.
    Lock,
}

impl Write {
    fn kind(&self) -> MutationKind {
        match self {
            Write::Put(_) => MutationKind::Put,
            Write::Delete => MutationKind::Delete,
            Write::Lock => MutationKind::Lock,
        }
    }
}

pub struct Mutation {
    pub key: CellKey,
    pub lock: Lock,
    pub bytes: Vec<u8>,
    pub value: Option<Vec<u8>>,
    /// Leave an observer notification in the same checkAndMutate as the lock (before the
    /// commit point, so a commit never lacks its notification).
    pub notify: bool,
    /// A row lock's columns (docs/design.md invariant 14), in the order the lock lists them:
    /// each one's value and whether it leaves a notification. Empty for a cell lock, which
    /// uses `value` and `notify`.
    pub row_values: Vec<Option<Vec<u8>>>,
    pub row_notify: Vec<bool>,
}

impl Prewritten for Mutation {
    fn parts(&self) -> (&CellKey, &Lock, &[u8]) {
        (&self.key, &self.lock, &self.bytes)
    }
}

impl Mutation {
    /// This cell's prewrite CAS (`absent`: the variant for a never-written cell).
    pub fn prewrite_cas(&self, schema: &Schema, absent: bool) -> CheckAndMutate {
        let notification = |key: &CellKey| notification_put(schema, key, self.lock.start_ts);
        let Some(columns) = &self.lock.row else {
            let cam = actions::prewrite(
                schema,
                &self.key,
                &self.lock,
                &self.bytes,
                self.value.as_deref(),
                absent,
            );
            return if self.notify {
                cam.put(notification(&self.key))
            } else {
                cam
            };
        };
        let mut cam = actions::prewrite_row(
            schema,
            &self.key,
            &self.lock,
            &self.bytes,
            &self.row_values,
            absent,
        );
        for (column, _) in columns.iter().zip(&self.row_notify).filter(|(_, n)| **n) {
            let key = CellKey {
                family: column.family.clone(),
                qualifier: column.qualifier.clone(),
                ..self.key.clone()
            };
            cam = cam.put(notification(&key));
        }
        cam
    }

    pub fn is_primary(&self) -> bool {
        self.lock.is_primary_lock(&self.key)
    }
}

/// The most value bytes one row lock carries for its columns' write records. Each phase sends
/// the lock whole (the prewrite writes it, the commit compares it), so a row of many columns
/// would otherwise send its values three times over, and could pass HBase's size limit for
/// one cell (`hbase.server.keyvalue.maxsize`, 10 MB by default).
pub const ROW_LOCK_INLINE_BUDGET: usize = 64 * 1024;

/// What every lock of one commit shares.
pub struct LockTemplate {
    pub primary: CellKey,
    pub owner: String,
    pub wall_ms: u64,
    pub ttl_ms: u64,
    pub short_value_limit: usize,
    /// The primary's table locks rows.
    pub primary_row: bool,
}

impl LockTemplate {
    pub fn mutation(&self, start_ts: u64, key: CellKey, write: Write, notify: bool) -> Mutation {
        let kind = write.kind();
        let value = match write {
            Write::Put(v) => Some(v),
            Write::Delete | Write::Lock => None,
        };
        let lock = Lock {
            kind,
            short_value: self.short(value.as_ref()),
            ..self.lock(start_ts, None)
        };
        let bytes = encode_lock(&lock);
        Mutation {
            key,
            lock,
            bytes,
            value,
            notify,
            row_values: Vec::new(),
            row_notify: Vec::new(),
        }
    }

    /// The one mutation of a row in a table that locks rows: `writes` (with their notification
    /// flags) are every write of the transaction to that row; the first one's key names the
    /// lock.
    pub fn row_mutation(&self, start_ts: u64, writes: Vec<(CellKey, Write, bool)>) -> Mutation {
        let mut columns = Vec::with_capacity(writes.len());
        let mut row_values = Vec::with_capacity(writes.len());
        let mut row_notify = Vec::with_capacity(writes.len());
        let mut key = None;
        let mut inlined = 0;
        for (k, write, notify) in writes {
            let kind = write.kind();
            let value = match write {
                Write::Put(v) => Some(v),
                Write::Delete | Write::Lock => None,
            };
            // The lock travels whole in both phases' CAS: past the budget, values stay in the
            // data column only and their records point there.
            let short_value = self
                .short(value.as_ref())
                .filter(|v| inlined + v.len() <= ROW_LOCK_INLINE_BUDGET);
            inlined += short_value.as_ref().map_or(0, Vec::len);
            columns.push(RowColumn {
                family: k.family.clone(),
                qualifier: k.qualifier.clone(),
                kind,
                short_value,
            });
            row_values.push(value);
            row_notify.push(notify);
            key.get_or_insert(k);
        }
        let lock = self.lock(start_ts, Some(columns));
        let bytes = encode_lock(&lock);
        Mutation {
            key: key.expect("a row mutation has at least one write"),
            lock,
            bytes,
            value: None,
            notify: false,
            row_values,
            row_notify,
        }
    }

    fn short(&self, value: Option<&Vec<u8>>) -> Option<Vec<u8>> {
        value.filter(|v| v.len() <= self.short_value_limit).cloned()
    }

    fn lock(&self, start_ts: u64, row: Option<Vec<RowColumn>>) -> Lock {
        Lock {
            start_ts,
            kind: MutationKind::Lock,
            primary: self.primary.clone(),
            owner: self.owner.clone(),
            wall_ms: self.wall_ms,
            ttl_ms: self.ttl_ms,
            short_value: None,
            row,
            primary_row: self.primary_row,
        }
    }
}

/// The notification cell a write to `key` leaves, at version `start_ts` (its writer's).
fn notification_put(schema: &Schema, key: &CellKey, start_ts: u64) -> Put {
    Put::new(key.row.clone()).add_at(
        schema.notify_family.clone(),
        notification_qualifier(&key.family, &key.qualifier),
        actions::ts(start_ts),
        Vec::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> LockTemplate {
        LockTemplate {
            primary: CellKey::new("t", "r", "f", "c0").unwrap(),
            owner: "o".into(),
            wall_ms: 1,
            ttl_ms: 1,
            short_value_limit: 1024,
            primary_row: true,
        }
    }

    #[test]
    fn a_row_lock_inlines_values_up_to_its_budget_and_keeps_every_value_for_the_data() {
        let writes: Vec<_> = (0..100)
            .map(|i| {
                let key = CellKey::new("t", "r", "f", format!("c{i}")).unwrap();
                (key, Write::Put(vec![i as u8; 1000]), false)
            })
            .collect();
        let m = template().row_mutation(100, writes);
        let columns = m.lock.row.as_ref().unwrap();
        let inlined: usize = columns
            .iter()
            .filter_map(|c| c.short_value.as_ref())
            .map(Vec::len)
            .sum();
        assert_eq!(inlined, 65_000, "65 values of 1000 bytes fit 64 KiB");
        assert!(columns[..65].iter().all(|c| c.short_value.is_some()));
        assert!(columns[65..].iter().all(|c| c.short_value.is_none()));
        assert!(m.bytes.len() < ROW_LOCK_INLINE_BUDGET + 100 * 32);
        assert!(m
            .row_values
            .iter()
            .all(|v| v.as_ref().is_some_and(|v| v.len() == 1000)));
    }
}
