//! Standby oracles: a standby never displaces a live owner and turns clients away meanwhile;
//! it takes a released store at once; a store only one process may use cannot be stood by
//! for. (The bank against a standby group whose serving oracle is killed again and again is
//! percolator-workloads' `oracle_failover`.)

mod oracle_common;

use std::time::{Duration, Instant};

use oracle_common::{impatient_client, wait_until};
use percolator::oracle::{ClientConfig, FileStore, MemoryStore, OracleServer, ServerConfig};
use percolator::{Error, OracleClient};
use percolator_cli::tools::serving;

fn standby() -> ServerConfig {
    ServerConfig {
        standby: true,
        ..ServerConfig::default()
    }
}

#[test]
fn a_standby_never_displaces_a_live_owner_and_turns_clients_away() {
    let lease = Duration::from_millis(200);
    let store = MemoryStore::with_lease(lease);
    let owner = OracleServer::start("127.0.0.1:0", store.clone(), ServerConfig::default()).unwrap();
    let waiting = OracleServer::start("127.0.0.1:0", store, standby()).unwrap();
    let owner_client = impatient_client(&owner.local_addr().to_string());
    let mut last = owner_client.get_timestamp().unwrap();
    // Ten leases: every one renewed by the owner, so the standby must keep waiting.
    let until = Instant::now() + lease * 10;
    while Instant::now() < until {
        let ts = owner_client.get_timestamp().unwrap();
        assert!(ts > last);
        last = ts;
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!owner.is_finished(), "the owner was displaced");
    let err = OracleClient::connect(&[waiting.local_addr().to_string()], ClientConfig::default())
        .and_then(|c| c.get_timestamp())
        .unwrap_err();
    assert!(
        matches!(&err, Error::OracleUnavailable { reason, .. } if reason.contains("standby")),
        "{err}"
    );
    // A client listing both moves past the standby to the owner.
    let both = OracleClient::connect(
        &[
            waiting.local_addr().to_string(),
            owner.local_addr().to_string(),
        ],
        ClientConfig::default(),
    )
    .unwrap();
    assert!(both.get_timestamp().unwrap() > last);
    waiting.shutdown().unwrap();
    owner.shutdown().unwrap();
}

#[test]
fn a_released_store_is_taken_over_at_once_and_continues_above() {
    // A lease far longer than the test: only the release can let the standby in.
    let store = MemoryStore::with_lease(Duration::from_secs(600));
    let owner = OracleServer::start("127.0.0.1:0", store.clone(), ServerConfig::default()).unwrap();
    let before = impatient_client(&owner.local_addr().to_string())
        .get_timestamp()
        .unwrap();
    let waiting = OracleServer::start("127.0.0.1:0", store, standby()).unwrap();
    let addr = waiting.local_addr().to_string();
    assert!(!serving(&addr), "it stands by while the owner serves");
    owner.shutdown().unwrap();
    wait_until("the standby to take over", || serving(&addr));
    assert!(impatient_client(&addr).get_timestamp().unwrap() > before);
    waiting.shutdown().unwrap();
}

#[test]
fn an_exclusive_store_cannot_be_stood_by_for() {
    let dir = tempfile::tempdir().unwrap();
    let waiting = OracleServer::start(
        "127.0.0.1:0",
        FileStore::new(dir.path().join("w")),
        standby(),
    )
    .unwrap();
    wait_until("the standby to give up", || waiting.is_finished());
    let err = waiting.shutdown().unwrap_err();
    assert!(
        matches!(&err, Error::IllegalArgument { message } if message.contains("shared")),
        "{err}"
    );
}
