//! The second phase after the commit point: the secondaries' commits (docs/design.md
//! invariant 3).

use std::time::Instant;

use crate::metrics;
use crate::txn::actions;
use crate::txn::options::Seam;
use crate::txn::session::Session;

use super::batches::{windowed, CommitBatch, Flow};
use super::log_failure;

/// A committed transaction's secondaries, of a commit of two locks or more (docs/design.md
/// invariant 3). Their failures are harmless: a reader that meets a left-over lock rolls it
/// forward through the committed primary. The first goes in one round and the rest in the
/// next; the seam between them is where a client can die with some committed and some not.
pub(super) struct Secondaries {
    pub session: Session,
    /// Every cell of the commit; the secondaries are those after the primary.
    pub muts: std::sync::Arc<CommitBatch>,
    pub commit_ts: u64,
}

impl Secondaries {
    /// False when the client died at the seam between the rounds.
    pub async fn commit(&self) -> bool {
        let started = Instant::now();
        let ctx = self.session.ctx();
        self.round(1..2).await;
        if ctx.opts().crashes_at(Seam::BetweenSecondaryCommits) {
            ctx.die();
        }
        if ctx.is_dead() {
            return false;
        }
        self.round(2..self.muts.len()).await;
        metrics::seconds(
            metrics::key!(metrics::COMMIT_PHASE, "phase" => "secondaries"),
            started.elapsed(),
        );
        true
    }

    /// The cells `cells`, a window at a time; a client that dies meanwhile starts no more.
    async fn round(&self, cells: std::ops::Range<usize>) {
        let ctx = self.session.ctx();
        let commit = |i| async move {
            let m = self.muts.mutation(i);
            let cam = actions::commit(ctx.schema(), &m.key, &m.lock, &m.bytes, self.commit_ts);
            let outcome = self.session.cas(&m.key.table, &cam).await;
            log_failure(&m, outcome, "secondary commit");
        };
        let alive = cells.take_while(|_| !ctx.is_dead());
        windowed(alive, commit, |_, ()| Flow::Go).await;
    }
}
