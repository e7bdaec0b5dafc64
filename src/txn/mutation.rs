//! A buffered write made ready to prewrite: its cell, its lock and the lock's bytes.

use crate::hbase::CheckAndMutate;
use crate::key::CellKey;
use crate::txn::actions;
use crate::txn::codec::{encode_lock, Lock, MutationKind};
use crate::txn::schema::Schema;

pub(crate) struct Mutation {
    pub key: CellKey,
    pub lock: Lock,
    pub bytes: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

impl Mutation {
    /// This cell's prewrite CAS (`absent`: the variant for a never-written cell).
    pub fn prewrite_cas(&self, schema: &Schema, absent: bool) -> CheckAndMutate {
        actions::prewrite(
            schema,
            &self.key,
            &self.lock,
            &self.bytes,
            self.value.as_deref(),
            absent,
        )
    }

    pub fn is_primary(&self) -> bool {
        self.key == self.lock.primary
    }
}

/// What every lock of one commit shares.
pub(crate) struct LockTemplate {
    pub primary: CellKey,
    pub owner: String,
    pub wall_ms: u64,
    pub ttl_ms: u64,
    pub short_value_limit: usize,
}

impl LockTemplate {
    pub fn mutation(&self, start_ts: u64, key: CellKey, value: Option<Vec<u8>>) -> Mutation {
        let lock = Lock {
            start_ts,
            kind: MutationKind::of(value.as_ref()),
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
        }
    }
}
