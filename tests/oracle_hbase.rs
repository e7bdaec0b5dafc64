//! The HBase window store against the project's emulator: claim, advance, fence and release
//! on the cell; lost checkAndMutate replies; corrupt cells; and oracle processes on it killed
//! with SIGKILL twenty times, or displaced by a second process.

mod oracle_common;
#[path = "common/proxy.rs"]
#[allow(dead_code)] // shared with the HBase client tests; only part of it is used here
mod proxy;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use oracle_common::{assert_unique_and_increasing, patient_client, OracleProcess, Requesters};
use percolator::emulator::{self, EmulatorHandle};
use percolator::hbase::{Get, Put};
use percolator::oracle::store::{HBaseStore, WindowRecord};
use percolator::oracle::WindowStore;
use percolator::{Error, HBaseClient, HBaseConfig};

const TABLE: &str = "oracle_test";
const LEASE: Duration = Duration::from_millis(300);

fn emulator() -> (EmulatorHandle, String) {
    let emu = emulator::start_local().expect("start the emulator");
    let addr = emu.local_addr().to_string();
    (emu, addr)
}

fn store(addr: &str) -> HBaseStore {
    HBaseStore::connect(addr, TABLE, LEASE).unwrap()
}

fn cell(addr: &str) -> Option<WindowRecord> {
    let client = HBaseClient::connect(HBaseConfig::new(addr)).unwrap();
    HBaseStore::read(&client, TABLE).unwrap()
}

#[test]
fn claims_advances_fences_and_releases_through_the_cell() {
    let (_emu, addr) = emulator();
    let mut first = store(&addr);
    let claim = first.claim().unwrap();
    assert_eq!((claim.top, claim.wait), (0, Duration::ZERO), "fresh table");
    first.advance(1000).unwrap();
    first.advance(2000).unwrap();
    assert_eq!(cell(&addr).unwrap().top, 2000);

    // A second owner takes over: it must wait out the first one's lease, and the first can
    // no longer write.
    let mut second = store(&addr);
    let claim = second.claim().unwrap();
    assert_eq!((claim.top, claim.wait), (2000, LEASE));
    let err = first.advance(3000).unwrap_err();
    assert!(matches!(err, Error::OracleFenced { .. }), "{err}");
    first.release().unwrap();
    assert!(
        !cell(&addr).unwrap().released,
        "a fenced owner cannot release"
    );
    assert_eq!(cell(&addr).unwrap().top, 2000);

    // After a clean release the next owner starts at once.
    second.advance(4000).unwrap();
    second.release().unwrap();
    let claim = store(&addr).claim().unwrap();
    assert_eq!((claim.top, claim.wait), (4000, Duration::ZERO));
}

#[test]
fn a_lost_reply_is_settled_by_reading_the_cell_back() {
    let (_emu, addr) = emulator();
    let proxy = proxy::Proxy::start(&addr);
    let mut s = store(&proxy.addr());
    s.claim().unwrap();
    s.advance(10).unwrap();
    proxy.lose_next_reply();
    s.advance(20)
        .expect("the write was applied; only its reply was lost");
    assert_eq!(cell(&addr).unwrap().top, 20);
    s.advance(30)
        .expect("and the next write expects the bytes actually stored");
    assert_eq!(cell(&addr).unwrap().top, 30);
}

#[test]
fn a_corrupt_cell_is_refused_and_left_alone() {
    let (_emu, addr) = emulator();
    store(&addr).claim().unwrap();
    let client = HBaseClient::connect(HBaseConfig::new(&addr)).unwrap();
    let garbage = b"PTSW\x01 torn".to_vec();
    let put = Put::new(b"timestamp-oracle".to_vec()).add(
        b"w".to_vec(),
        b"window".to_vec(),
        garbage.clone(),
    );
    client.put(TABLE, &put).unwrap();
    let err = store(&addr).claim().unwrap_err();
    assert!(matches!(err, Error::OracleStore { .. }), "{err}");
    assert!(err.to_string().contains("corrupt"), "{err}");
    let get = Get::new(b"timestamp-oracle".to_vec());
    assert_eq!(
        client.get(TABLE, &get).unwrap().value(b"w", b"window"),
        Some(garbage.as_slice())
    );
}

fn serve_args(listen: &str, store: &str, clock_offset_ms: i64) -> [String; 10] {
    [
        "--listen",
        listen,
        "--store",
        store,
        "--lease-ms",
        "300",
        "--window-ms",
        "100",
        &format!("--clock-offset-ms={clock_offset_ms}"),
        "--stats-interval-s=60",
    ]
    .map(String::from)
}

#[test]
fn kill_9_twenty_times_on_the_hbase_store_never_repeats_or_reorders_timestamps() {
    let (_emu, emu_addr) = emulator();
    let store_spec = format!("hbase:{emu_addr}/{TABLE}");
    let mut server = OracleProcess::start(&serve_args("127.0.0.1:0", &store_spec, 0));
    let addr = server.addr.clone();
    let clients: Vec<_> = (0..3)
        .map(|_| Arc::new(patient_client(std::slice::from_ref(&addr))))
        .collect();
    let requesters = Requesters::start(&clients, 3);
    for round in 0..20i64 {
        requesters.wait_for_more(200);
        server.kill9();
        let served = requesters.max_seen.load(Ordering::SeqCst);
        let top = cell(&emu_addr).expect("window cell exists").top;
        assert!(
            served <= top,
            "round {round}: served {served} above persisted top {top}"
        );
        // Each incarnation also sees the wall clock a second further back.
        server = OracleProcess::start(&serve_args(&addr, &store_spec, -1000 * (round + 1)));
    }
    requesters.wait_for_more(500);
    let (sequences, errors) = requesters.finish();
    assert!(errors.is_empty(), "patient clients saw errors: {errors:?}");
    let total = assert_unique_and_increasing(&sequences);
    println!("{total} unique timestamps over 20 kill -9 restarts on the HBase store");
    assert!(server.terminate());
    assert!(
        cell(&emu_addr).unwrap().released,
        "SIGTERM releases the cell"
    );
}

#[test]
fn a_second_process_fences_the_first_which_exits_with_a_reason() {
    let (_emu, emu_addr) = emulator();
    let store_spec = format!("hbase:{emu_addr}/{TABLE}");
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut first = OracleProcess::start_with_stderr(
        &serve_args("127.0.0.1:0", &store_spec, 0),
        log.reopen().unwrap(),
    );
    let client = patient_client(&[first.addr.clone()]);
    let before = client.get_timestamps(100).unwrap();
    let mut second = OracleProcess::start(&serve_args("127.0.0.1:0", &store_spec, 0));
    let status = first.child.wait().unwrap();
    assert!(!status.success(), "a fenced oracle exits with an error");
    let stderr = std::fs::read_to_string(log.path()).unwrap();
    assert!(stderr.contains("fenced"), "{stderr}");
    let after = patient_client(&[second.addr.clone()])
        .get_timestamp()
        .unwrap();
    assert!(after > *before.last().unwrap());
    assert!(second.terminate());
}
