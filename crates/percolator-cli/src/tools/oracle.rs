//! Whether an oracle serves.

use std::time::Duration;

use percolator::oracle::ClientConfig;
use percolator::OracleClient;

/// Whether the oracle at `addr` serves: only a serving oracle completes the hello (a standby
/// turns clients away), and a stats request proves it answers.
pub fn serving(addr: &str) -> bool {
    let config = ClientConfig {
        connect_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    };
    OracleClient::connect(&[addr.to_owned()], config)
        .and_then(|c| c.server_stats())
        .is_ok()
}
