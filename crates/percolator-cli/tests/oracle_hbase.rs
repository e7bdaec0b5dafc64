//! The HBase window store: claim, advance, fence and release on the cell; lost checkAndMutate
//! replies; corrupt cells; and oracle processes on it killed with SIGKILL twenty times, or
//! displaced by a second process. Against the project's emulator, or the real gateway named by
//! `HBASE_THRIFT=host:port` (each test then uses a table of its own, dropped afterwards).

#[path = "../../../tests/common/gateway.rs"]
#[allow(dead_code)] // shared with the HBase client tests; only part of it is used here
mod gateway;
mod oracle_common;
#[path = "../../../tests/common/proxy.rs"]
#[allow(dead_code)] // shared with the HBase client tests; only part of it is used here
mod proxy;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hbase_emulator::{self as emulator, EmulatorHandle};
use oracle_common::{
    assert_unique_and_increasing, impatient_client, patient_client, wait_until, OracleProcess,
    Requesters,
};
use percolator::hbase::{Get, Put};
use percolator::oracle::{HBaseStore, WindowRecord, WindowStore};
use percolator::{Error, HBaseClient, HBaseConfig};

const LEASE: Duration = Duration::from_millis(300);

/// Where one test keeps its window cell: a gateway, and a table of its own (created by the
/// store itself).
struct WindowTable {
    addr: String,
    table: String,
    client: HBaseClient,
    emulator: Option<EmulatorHandle>,
}

/// `HBASE_THRIFT` if set, else a fresh emulator; either way a table name no one else uses.
fn window_table() -> WindowTable {
    let (addr, emu) = match gateway::external_addr() {
        Some(addr) => (addr, None),
        None => {
            let emu = emulator::start_local().expect("start the emulator");
            (emu.local_addr().to_string(), Some(emu))
        }
    };
    let config = HBaseConfig::new(&addr).read_timeout(Duration::from_secs(60));
    WindowTable {
        client: HBaseClient::connect(config).expect("connect to the gateway"),
        table: gateway::unique_name("oracle"),
        addr,
        emulator: emu,
    }
}

impl WindowTable {
    fn store(&self) -> HBaseStore {
        self.store_at(&self.addr)
    }

    /// A store reaching the gateway through `addr` (a proxy).
    fn store_at(&self, addr: &str) -> HBaseStore {
        HBaseStore::connect(addr, &self.table, LEASE).unwrap()
    }

    fn cell(&self) -> Option<WindowRecord> {
        HBaseStore::read(&self.client, &self.table).unwrap()
    }

    /// The `--store` argument of the server binary.
    fn store_spec(&self) -> String {
        format!("hbase:{}/{}", self.addr, self.table)
    }
}

impl Drop for WindowTable {
    fn drop(&mut self) {
        if self.emulator.is_none() {
            gateway::drop_later(&self.client, self.table.clone());
        }
    }
}

#[test]
fn claims_advances_fences_and_releases_through_the_cell() {
    let gw = window_table();
    let mut first = gw.store();
    let claim = first.claim().unwrap();
    assert_eq!((claim.top, claim.wait), (0, Duration::ZERO), "fresh table");
    first.advance(1000).unwrap();
    first.advance(2000).unwrap();
    assert_eq!(gw.cell().unwrap().top, 2000);

    // A second owner takes over: it must wait out the first one's lease, and the first can
    // no longer write.
    let mut second = gw.store();
    let claim = second.claim().unwrap();
    assert_eq!((claim.top, claim.wait), (2000, LEASE));
    let err = first.advance(3000).unwrap_err();
    assert!(matches!(err, Error::OracleFenced { .. }), "{err}");
    first.release().unwrap();
    assert!(
        !gw.cell().unwrap().released,
        "a fenced owner cannot release"
    );
    assert_eq!(gw.cell().unwrap().top, 2000);

    // After a clean release the next owner starts at once.
    second.advance(4000).unwrap();
    second.release().unwrap();
    let claim = gw.store().claim().unwrap();
    assert_eq!((claim.top, claim.wait), (4000, Duration::ZERO));
}

#[test]
fn a_lost_reply_is_settled_by_reading_the_cell_back() {
    let gw = window_table();
    let proxy = proxy::Proxy::start(&gw.addr);
    let mut s = gw.store_at(&proxy.addr());
    s.claim().unwrap();
    s.advance(10).unwrap();
    proxy.lose_next_reply();
    s.advance(20)
        .expect("the write was applied; only its reply was lost");
    assert_eq!(gw.cell().unwrap().top, 20);
    s.advance(30)
        .expect("and the next write expects the bytes actually stored");
    assert_eq!(gw.cell().unwrap().top, 30);
}

#[test]
fn a_corrupt_cell_is_refused_and_left_alone() {
    let gw = window_table();
    gw.store().claim().unwrap();
    let client = &gw.client;
    let garbage = b"PTSW\x01 torn".to_vec();
    let put = Put::new(b"timestamp-oracle".to_vec()).add(
        b"w".to_vec(),
        b"window".to_vec(),
        garbage.clone(),
    );
    client.put(&gw.table, &put).unwrap();
    let err = gw.store().claim().unwrap_err();
    assert!(matches!(err, Error::OracleStore { .. }), "{err}");
    assert!(err.to_string().contains("corrupt"), "{err}");
    let get = Get::new(b"timestamp-oracle".to_vec());
    assert_eq!(
        client.get(&gw.table, &get).unwrap().value(b"w", b"window"),
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
    let gw = window_table();
    let store_spec = gw.store_spec();
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
        let top = gw.cell().expect("window cell exists").top;
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
    assert!(gw.cell().unwrap().released, "SIGTERM releases the cell");
}

/// Two oracle processes on one cell: the second displaces the first, which finds itself fenced
/// at its next extension and exits saying so. Meanwhile the lease keeps them from ever serving
/// at the same time: every timestamp the first handed out was asked for before the second
/// answered its first request, and is below it.
#[test]
fn a_second_process_fences_the_first_which_exits_with_a_reason() {
    let gw = window_table();
    let store_spec = gw.store_spec();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut first = OracleProcess::start_with_stderr(
        &serve_args("127.0.0.1:0", &store_spec, 0),
        log.reopen().unwrap(),
    );
    let old_client = Arc::new(impatient_client(&first.addr));
    assert!(
        old_client.get_timestamp().is_ok(),
        "the first oracle serves"
    );
    // Ask the first oracle without pause, noting when each ask started and how it ended.
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let (client, stop) = (Arc::clone(&old_client), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut log = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                log.push((started, client.get_timestamp()));
            }
            log
        })
    };
    std::thread::sleep(Duration::from_millis(200));

    let mut second = OracleProcess::start(&serve_args("127.0.0.1:0", &store_spec, 0));
    let new_client = impatient_client(&second.addr);
    let mut first_new = None;
    wait_until("the second oracle to serve", || {
        first_new = new_client
            .get_timestamp()
            .ok()
            .map(|ts| (Instant::now(), ts));
        first_new.is_some()
    });
    let (answered, first_new) = first_new.unwrap();
    let status = first.child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let old_log = hammer.join().unwrap();
    assert!(!status.success(), "a fenced oracle exits with an error");
    let stderr = std::fs::read_to_string(log.path()).unwrap();
    assert!(stderr.contains("fenced"), "{stderr}");

    let old_seq: Vec<u64> = old_log
        .iter()
        .filter_map(|(started, r)| r.as_ref().ok().map(|ts| (started, *ts)))
        .inspect(|(started, ts)| {
            assert!(
                **started < answered,
                "the first oracle served {ts} after the second served {first_new}"
            )
        })
        .map(|(_, ts)| ts)
        .collect();
    assert!(
        !old_seq.is_empty(),
        "the first oracle served while hammered"
    );
    assert!(old_log.iter().any(|(_, r)| r.is_err()), "and then stopped");
    let mut new_seq = vec![first_new];
    new_seq.extend(new_client.get_timestamps(100).unwrap());
    assert!(old_seq.last().unwrap() < &first_new);
    assert_unique_and_increasing(&[old_seq, new_seq]);
    assert!(second.terminate());
}
