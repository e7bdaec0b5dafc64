//! Standing by: an oracle configured with [`ServerConfig::standby`](super::ServerConfig) claims
//! its shared store only once no live oracle holds it, and until then turns every connection
//! away with hello status 3, so clients listing it move straight on to the next address.
//!
//! The owner rewrites the record at least every half lease, and serves only until a lease
//! after its last write began. A standby that sees one version of the record for a whole lease
//! of the owner's, timed on its own monotonic clock from when it first read that version,
//! knows the owner has stopped serving: the write began before the read returned. It then
//! takes over with a write conditional on exactly that version, so it neither waits a second
//! lease nor ever displaces an owner that renewed meanwhile (the renewal changed the version).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::auth::{skip_hello, Opened, Security};

use crate::oracle::protocol::{self, HelloStatus};
use crate::oracle::store::{Claim, Holder, WindowStore};
use crate::RetryClass;
use crate::{Error, Result};

const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long a standby spends on one TLS client it turns away.
const TLS_TURN_AWAY_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a standby reads the record: often enough that taking over adds little to the
/// lease, rarely enough to cost the store nothing.
pub(crate) fn poll_interval(lease: Duration) -> Duration {
    (lease / 10).clamp(Duration::from_millis(20), Duration::from_millis(250))
}

/// Waits until the store is free (never claimed, released, or its owner's lease lapsed), then
/// claims it. Store errors worth retrying (the gateway restarting) are waited out; others end
/// the wait.
pub(crate) async fn claim_when_free<S: WindowStore>(store: &Arc<Mutex<S>>) -> Result<Claim> {
    let mut watched: Option<(Holder, Instant)> = None;
    let mut backoff = MIN_BACKOFF;
    loop {
        let seen = match on_store(store, |s| s.holder()).await {
            Ok(seen) => seen,
            Err(e) => {
                backoff = wait_out(e, backoff).await?;
                continue;
            }
        };
        let lapsed = |h: &Holder| {
            watched
                .as_ref()
                .is_some_and(|(w, since)| w.version == h.version && since.elapsed() >= h.lease)
        };
        let free = seen.as_ref().is_none_or(|h| h.released || lapsed(h));
        if free {
            let offered = seen.clone();
            match on_store(store, move |s| s.take_over(offered.as_ref())).await {
                Ok(Some(claim)) => {
                    tracing::info!(
                        top = claim.top,
                        previous = describe(seen.as_ref()),
                        "took over the window store"
                    );
                    return Ok(claim);
                }
                // Someone wrote meanwhile: look again.
                Ok(None) => watched = None,
                Err(e) => backoff = wait_out(e, backoff).await?,
            }
            continue;
        }
        backoff = MIN_BACKOFF;
        let holder = seen.expect("a store that is not free has a holder");
        let lease = holder.lease;
        if watched
            .as_ref()
            .is_none_or(|(w, _)| w.version != holder.version)
        {
            if watched.is_none() {
                tracing::info!(
                    lease_ms = lease.as_millis() as u64,
                    "standing by: another oracle owns the window store"
                );
            }
            watched = Some((holder, Instant::now()));
        }
        tokio::time::sleep(poll_interval(lease)).await;
    }
}

fn describe(seen: Option<&Holder>) -> &'static str {
    match seen {
        None => "never claimed",
        Some(h) if h.released => "released",
        Some(_) => "lease lapsed",
    }
}

async fn on_store<S: WindowStore, T: Send + 'static>(
    store: &Arc<Mutex<S>>,
    call: impl FnOnce(&mut S) -> Result<T> + Send + 'static,
) -> Result<T> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || call(&mut store.lock()))
        .await
        .map_err(|e| Error::OracleStore {
            message: format!("window store task failed: {e}"),
        })?
}

/// Sleeps `backoff` after a store error worth retrying and returns the next backoff; returns
/// the error itself if it is not.
async fn wait_out(error: Error, backoff: Duration) -> Result<Duration> {
    if error.retry_class() == RetryClass::Fatal {
        return Err(error);
    }
    tracing::warn!(error = %error, retry_in_ms = backoff.as_millis() as u64, "standby cannot read the window store");
    tokio::time::sleep(backoff).await;
    Ok((backoff * 2).min(MAX_BACKOFF))
}

/// Answers every connection with hello status 3 and closes it; never returns. Over TLS the
/// status is sent once the handshake is done, each connection on a task of its own.
pub(crate) async fn turn_away(listener: &TcpListener, security: &Arc<Security>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) if security.is_tls() => {
                let security = Arc::clone(security);
                tokio::spawn(async move {
                    if let Ok(Opened::Tls(mut tls, _)) =
                        security.open(stream, TLS_TURN_AWAY_TIMEOUT).await
                    {
                        let hello = protocol::server_hello(HelloStatus::Standby);
                        let _ = tokio::time::timeout(TLS_TURN_AWAY_TIMEOUT, async {
                            skip_hello(&mut tls).await?;
                            tls.write_all(&hello).await?;
                            tls.shutdown().await
                        })
                        .await;
                    }
                });
            }
            // Best effort, never blocks: a peer that cannot take 8 bytes learns by the close.
            Ok((stream, _)) => {
                let _ = stream.try_write(&protocol::server_hello(HelloStatus::Standby));
            }
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
