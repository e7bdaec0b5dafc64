//! `percolator migrate`: makes an existing HBase table transactional while it stays online, and
//! adopts the data plain clients wrote into it (see `docs/migration.md`).
//!
//! Adoption backfills one write record per cell (docs/design.md invariant 11): for the newest
//! version a plain read returns, at epoch-ms timestamp `t`, a `Put` record at version `t`
//! pointing at start_ts `t`. Every snapshot (oracle timestamps are `ms << 18`, far above) sees
//! it, and any transactional write wins over it. The hot read path is unchanged.
//!
//! - `state`: the per-table marker in the meta table and the family settings.
//! - `plan`: what `apply` would do, read-only; `apply`: the resumable adoption;
//!   `check`: `verify` and `status`; `disable`: back to plain use.

mod apply;
mod check;
mod disable;
mod plan;
mod state;

pub use crate::progress::{Phase, ProgressMode, ProgressSink};
pub use apply::apply_planned;
pub use apply::{apply, check_before_apply, ApplyOptions, ApplyReport};
pub use check::{status, verify, TableStatus, Verification};
pub use disable::{disable, DisableOptions, DisableReport};
pub use plan::{plan, user_family_changes, Plan, SettingChange};
#[cfg(feature = "testing")]
pub use state::CrashHook;
pub use state::{plausible_ms, Step, LEGACY_TS_LIMIT};
