//! A buffered write made ready to prewrite: its cell, its lock and the lock's bytes.

use crate::hbase::CheckAndMutate;
use crate::key::CellKey;
use crate::txn::actions;
use crate::txn::codec::{encode_lock, Lock, MutationKind};
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
}

impl Mutation {
    /// This cell's prewrite CAS (`absent`: the variant for a never-written cell).
    pub fn prewrite_cas(&self, schema: &Schema, absent: bool) -> CheckAndMutate {
        let cam = actions::prewrite(
            schema,
            &self.key,
            &self.lock,
            &self.bytes,
            self.value.as_deref(),
            absent,
        );
        if self.notify {
            cam.put(crate::txn::notify_cells::notification_put(
                schema,
                &self.key,
                self.lock.start_ts,
            ))
        } else {
            cam
        }
    }

    pub fn is_primary(&self) -> bool {
        self.key == self.lock.primary
    }
}

/// What every lock of one commit shares.
pub struct LockTemplate {
    pub primary: CellKey,
    pub owner: String,
    pub wall_ms: u64,
    pub ttl_ms: u64,
    pub short_value_limit: usize,
}

impl LockTemplate {
    pub fn mutation(&self, start_ts: u64, key: CellKey, write: Write, notify: bool) -> Mutation {
        let kind = write.kind();
        let value = match write {
            Write::Put(v) => Some(v),
            Write::Delete | Write::Lock => None,
        };
        let lock = Lock {
            start_ts,
            kind,
            primary: self.primary.clone(),
            owner: self.owner.clone(),
            wall_ms: self.wall_ms,
            ttl_ms: self.ttl_ms,
            short_value: value
                .as_ref()
                .filter(|v| v.len() <= self.short_value_limit)
                .cloned(),
        };
        let bytes = encode_lock(&lock);
        Mutation {
            key,
            lock,
            bytes,
            value,
            notify,
        }
    }
}
