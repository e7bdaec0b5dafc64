//! Calls whose request is written later, possibly by another thread, while the caller already
//! waits for the reply on its connection.
//!
//! A transaction's first read carries its start timestamp, and the commit point carries the
//! commit timestamp. Waiting for a timestamp and then for the reply would put the caller to
//! sleep twice per call; instead whoever receives the timestamp (the oracle client's lane)
//! writes the request at once, and the caller sleeps once, on its socket. If the request is
//! never built (the oracle failed), the socket is shut down so the waiting read returns, and the
//! caller gets the error it was given.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use parking_lot::Mutex;

use super::client;
use super::config::{Protocol, Transport};
use super::hot::{self, Request};
use super::types::{CheckAndMutate, Get};
use crate::Error;

/// What became of the request.
pub(crate) enum State {
    Waiting,
    /// Fully written: the server may have applied it.
    Sent(Encoded),
    /// The write failed part-way: the server cannot have applied it.
    WriteFailed(Encoded, io::Error),
    /// Never built: the reason, handed to the caller as its error.
    Abandoned(Error),
    /// The caller stopped waiting before anything was written: nothing will be.
    Cancelled,
}

/// An encoded request, kept so it can be replayed on a fresh connection.
#[derive(Clone)]
pub(crate) struct Encoded {
    pub bytes: Vec<u8>,
    pub method: &'static str,
    pub seq: i32,
}

impl Encoded {
    /// `requests` (of one method) back to back under sequence id `seq`: a server answers them
    /// in order, so they can be pipelined in one write.
    pub fn new(requests: &[Request], protocol: Protocol, transport: Transport, seq: i32) -> Self {
        let mut bytes = Vec::with_capacity(256 * requests.len());
        for request in requests {
            request.encode_into(&mut bytes, protocol, transport, seq);
        }
        Encoded {
            bytes,
            method: requests.first().map_or("", Request::method),
            seq,
        }
    }
}

/// Shared by the waiting caller and the [`Sender`].
pub(crate) struct Outbox {
    stream: Arc<TcpStream>,
    protocol: Protocol,
    transport: Transport,
    seq: i32,
    pub state: Mutex<State>,
}

impl Outbox {
    pub fn new(stream: Arc<TcpStream>, protocol: Protocol, transport: Transport, seq: i32) -> Self {
        Outbox {
            stream,
            protocol,
            transport,
            seq,
            state: Mutex::new(State::Waiting),
        }
    }

    pub fn seq(&self) -> i32 {
        self.seq
    }

    /// Gives up on the call if nothing was written yet: the waiting caller gets `error`.
    fn abandon(&self, error: Error) {
        let mut state = self.state.lock();
        if matches!(*state, State::Waiting) {
            *state = State::Abandoned(error);
            // Wakes the caller's read; the connection is discarded afterwards.
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }

    /// Called by the caller when its wait ended without a reply: a request not yet written is
    /// never written. Returns the state as it is now.
    pub fn cancel(&self) -> parking_lot::MutexGuard<'_, State> {
        let mut state = self.state.lock();
        if matches!(*state, State::Waiting) {
            *state = State::Cancelled;
        }
        state
    }
}

/// The right to write one deferred request. Dropping it unused abandons the call.
pub struct Sender {
    outbox: Option<Arc<Outbox>>,
}

impl Sender {
    pub(crate) fn new(outbox: Arc<Outbox>) -> Sender {
        Sender {
            outbox: Some(outbox),
        }
    }

    /// Sends the gets (a get, or a getMultiple for several).
    pub fn get_many(self, table: &str, gets: &[Get]) {
        let request = match gets {
            [one] => client::get_request(table, one),
            _ => client::get_multiple_request(table, gets),
        };
        self.send(&[request])
    }

    /// Sends the checkAndMutates pipelined in one write, all under this call's sequence id:
    /// the replies come back in order (see `grouped`).
    pub fn check_and_mutate(self, table: &str, cams: &[CheckAndMutate]) {
        let requests: Vec<Request> = cams.iter().map(|c| client::cam_request(table, c)).collect();
        self.send(&requests)
    }

    /// Gives up on the call: the waiting caller gets `error`.
    pub fn abandon(mut self, error: Error) {
        if let Some(outbox) = self.outbox.take() {
            outbox.abandon(error);
        }
    }

    fn send(mut self, requests: &[Request]) {
        let Some(outbox) = self.outbox.take() else {
            return;
        };
        let encoded = Encoded::new(requests, outbox.protocol, outbox.transport, outbox.seq);
        // Written under the lock: a caller that gives up either sees the request sent or
        // stops it from being sent, never neither.
        let mut state = outbox.state.lock();
        if !matches!(*state, State::Waiting) {
            return;
        }
        *state = match hot::send(&outbox.stream, &encoded.bytes) {
            Ok(()) => State::Sent(encoded),
            Err(e) => {
                let _ = outbox.stream.shutdown(Shutdown::Both);
                State::WriteFailed(encoded, e)
            }
        };
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if let Some(outbox) = self.outbox.take() {
            outbox.abandon(Error::Shutdown);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::hbase::{HBaseClient, Put};

    fn setup() -> (crate::emulator::EmulatorHandle, HBaseClient) {
        let (emulator, client) = crate::emulator::testutil::emulated_table();
        client.put("t", &Put::new("r").add("f", "q", "v")).unwrap();
        (emulator, client)
    }

    #[test]
    fn a_request_sent_later_from_another_thread_is_answered() {
        let (_emulator, client) = setup();
        let rows = client
            .get_many_deferred("t", |sender| {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    sender.get_many("t", &[Get::new("r"), Get::new("nope")]);
                });
            })
            .unwrap();
        assert_eq!(rows[0].value(b"f", b"q"), Some(&b"v"[..]));
        assert!(rows[1].cells.is_empty());
        let applied = client
            .check_and_mutate_grouped("t", None, |stamp| {
                let cam = CheckAndMutate::new("r", "f", "q", crate::hbase::CompareOp::Equal, "v")
                    .put(Put::new("r").add("f", "q", "w"));
                std::thread::spawn(move || stamp.send(Ok(cam)));
            })
            .unwrap();
        assert!(applied);
        assert_eq!(
            client.get("t", &Get::new("r")).unwrap().value(b"f", b"q"),
            Some(&b"w"[..])
        );
    }

    #[test]
    fn an_abandoned_request_wakes_the_waiting_caller_with_its_error() {
        let (_emulator, client) = setup();
        let started = Instant::now();
        let err = client
            .get_many_deferred("t", |sender| {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    sender.abandon(Error::OracleUnavailable {
                        addrs: vec!["x".into()],
                        reason: "test".into(),
                    });
                });
            })
            .unwrap_err();
        assert!(matches!(err, Error::OracleUnavailable { .. }), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "woken, not timed out"
        );
        // Dropping the sender unused abandons too; the pool still serves afterwards.
        let err = client.get_many_deferred("t", drop).unwrap_err();
        assert!(matches!(err, Error::Shutdown), "{err}");
        let rpcs = client.rpc_count();
        assert!(client.get("t", &Get::new("r")).is_ok());
        assert_eq!(client.rpc_count(), rpcs + 1);
    }

    #[test]
    fn a_pipelined_batch_answers_each_call_in_order() {
        let (_emulator, client) = setup();
        let cams: Vec<CheckAndMutate> = (0..40)
            .map(|i| {
                let row = format!("p{i}");
                CheckAndMutate::new(row.clone(), "f", "q", crate::hbase::CompareOp::Equal, "")
                    .put(Put::new(row).add("f", "q", "x"))
            })
            .collect();
        let calls: Vec<(&str, &CheckAndMutate)> = cams.iter().map(|c| ("t", c)).collect();
        let first = client.check_and_mutate_all(&calls);
        assert!(first.iter().all(|r| matches!(r, Ok(true))), "{first:?}");
        // The cells are set now: the same conditions fail, each on its own.
        let again = client.check_and_mutate_all(&calls);
        assert!(again.iter().all(|r| matches!(r, Ok(false))), "{again:?}");
        let missing = [("no_such_table", &cams[0])];
        assert!(client.check_and_mutate_all(&missing)[0].is_err());
    }
}
