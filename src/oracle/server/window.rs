//! The window keeper: one background task that persists new window tops ahead of need, so
//! requests never wait on storage in steady state, and renews the lease of shared stores.
//!
//! Store calls block, so they run on tokio's blocking pool; only this task ever touches the
//! store after the claim, so the mutex around it is never contended.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

use super::core::Core;
use super::ServerConfig;
use crate::oracle::store::WindowStore;
use crate::{Error, Result};

const MIN_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

pub(crate) struct Keeper<S> {
    pub core: Arc<Core>,
    pub store: Arc<Mutex<S>>,
    pub config: Arc<ServerConfig>,
    /// How long to wait before the first extension: a displaced owner's lease.
    pub initial_wait: Duration,
    pub stop: watch::Receiver<bool>,
}

impl<S: WindowStore> Keeper<S> {
    /// Runs until `stop` is raised (then releases the store) or the store fences us.
    pub async fn run(mut self) -> Result<()> {
        if !self.initial_wait.is_zero() {
            tracing::info!(
                wait_ms = self.initial_wait.as_millis() as u64,
                "waiting out the previous owner's lease before serving"
            );
            if self.stopped_within(self.initial_wait).await {
                return self.release().await;
            }
        }
        let lease = self.store.lock().lease();
        let mut backoff = MIN_BACKOFF;
        loop {
            let due_in = self.core.extension_due_in(self.config.extend_below, lease);
            if !due_in.is_zero() {
                let stopped = tokio::select! {
                    _ = tokio::time::sleep(due_in) => false,
                    _ = self.core.window_wanted() => false,
                    _ = self.stop.wait_for(|s| *s) => true,
                };
                if stopped {
                    return self.release().await;
                }
            }
            match self.extend(lease).await {
                Ok(()) => backoff = MIN_BACKOFF,
                Err(e @ Error::OracleFenced { .. }) => {
                    tracing::error!(error = %e, "fenced by another oracle: no longer serving");
                    self.core.fence();
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "window extension failed");
                    if self.stopped_within(backoff).await {
                        return self.release().await;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    async fn extend(&self, lease: Option<Duration>) -> Result<()> {
        let top = self.core.next_top(self.config.window)?;
        // The lease counts from before the write: the store may apply it at any point after.
        let started = Instant::now();
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || store.lock().advance(top))
            .await
            .map_err(|e| Error::OracleStore {
                message: format!("window store task failed: {e}"),
            })??;
        self.core.install(top, lease.map(|l| started + l));
        tracing::debug!(top, "window extended");
        Ok(())
    }

    /// Sleeps for `d`; true if stop was raised meanwhile.
    async fn stopped_within(&mut self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => false,
            _ = self.stop.wait_for(|s| *s) => true,
        }
    }

    async fn release(self) -> Result<()> {
        let store = Arc::clone(&self.store);
        let released = tokio::task::spawn_blocking(move || store.lock().release()).await;
        match released {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                // The next owner will wait out our lease instead; nothing is at risk.
                tracing::warn!(error = %e, "could not release the window store");
                Ok(())
            }
            Err(e) => Err(Error::OracleStore {
                message: format!("window store task failed: {e}"),
            }),
        }
    }
}
