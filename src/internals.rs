//! What percolator-workloads' bench and demo drive below the public API: the runtime helpers
//! its workloads share with the client, and the snapshot reader's calls that the bench times
//! as floors. Feature `testing` only, hidden from the docs, and not a stable API.

pub use crate::runtime::{ambient_or_io, prefer_io_threads, wait};
pub use crate::txn::snapshot::{fetched_column, row_gets, FIRST_VERSIONS};

/// The runtime a client's work runs on.
pub fn client_runtime(client: &crate::AsyncClient) -> &tokio::runtime::Handle {
    client.runtime()
}
