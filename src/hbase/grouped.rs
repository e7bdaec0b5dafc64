//! Requests of several callers travelling together on one connection.
//!
//! Transactions that take their timestamps from one oracle answer receive them at the same
//! moment, on one thread. The requests that carry those timestamps then travel together: first
//! reads as one getMultiple (each get with its own time range), checkAndMutates as one burst of
//! pipelined frames on one connection. The gateway wakes once for the group instead of once
//! per caller.
//!
//! The first caller of a group is its leader: it waits for the replies on its own connection
//! and hands each follower its result. Followers park until then. A member whose request
//! cannot travel with the group (the leader had no timestamp or no connection, or a combined
//! read failed) is told to go alone with its own request, so it sees its own outcome rather
//! than a copy of someone else's. A checkAndMutate that was sent is never sent again: a lost
//! reply is `OutcomeUnknown` for its member, as for a call of its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::Thread;

use parking_lot::Mutex;
use r2d2::PooledConnection;

use super::client::HBaseClient;
use super::conn::{Manager, ReceiveFailure};
use super::deferred::{Encoded, Sender};
use super::types::{CheckAndMutate, Get, RowResult};
use crate::{Error, Peer, Result};

/// Callers one group may carry; later joiners start a new group.
const MAX_MEMBERS: usize = 64;

/// What one member hands in once it has its timestamp, and how a group of them is sent.
pub(crate) trait Part: Clone + Send + Sync + Sized + 'static {
    type Out: Send + 'static;
    fn send(sender: Sender, table: &str, parts: &[Self]);
}

impl Part for Vec<Get> {
    type Out = Vec<RowResult>;
    fn send(sender: Sender, table: &str, parts: &[Self]) {
        sender.get_many(table, &parts.concat());
    }
}

impl Part for CheckAndMutate {
    type Out = bool;
    fn send(sender: Sender, table: &str, parts: &[Self]) {
        sender.check_and_mutate(table, parts);
    }
}

/// The leader's way to start its group's request once it has a connection: it hands over
/// the sender the group's request will go out through.
type Begin<'a> = Box<dyn FnOnce(Sender) + 'a>;

/// An oracle batch and a table.
type Key = (u64, String);

/// Open groups by (oracle batch, table): those still taking members.
pub(crate) struct Groups<P: Part> {
    open: Mutex<HashMap<Key, Arc<Group<P>>>>,
}

impl<P: Part> Default for Groups<P> {
    fn default() -> Self {
        Groups {
            open: Mutex::new(HashMap::new()),
        }
    }
}

struct Group<P: Part> {
    table: String,
    key: Option<Key>,
    state: Mutex<State<P>>,
}

struct State<P: Part> {
    members: Vec<Member<P>>,
    stamped: usize,
    /// No longer taking members: the request left, or the group gave up.
    sealed: bool,
    /// The leader gave up before the request left: members go alone.
    failed: bool,
    /// The leader's sender, until the request is built.
    sender: Option<Sender>,
    /// The parts that left, in order; `Member::sent` indexes them.
    sent: Option<Arc<Vec<P>>>,
}

struct Member<P: Part> {
    /// Its part once stamped, until the group leaves.
    part: Option<P>,
    /// Where its part is in `State::sent`.
    sent: Option<usize>,
    /// `None` for the leader, which reads the replies itself.
    waiter: Option<Arc<Waiter<P>>>,
}

impl<P: Part> Member<P> {
    fn new(waiter: Option<Arc<Waiter<P>>>) -> Self {
        Member {
            part: None,
            sent: None,
            waiter,
        }
    }
}

/// What a follower gets.
enum Outcome<P: Part> {
    Done(Result<P::Out>),
    Alone(P),
}

struct Waiter<P: Part> {
    outcome: Mutex<Option<Outcome<P>>>,
    thread: Thread,
}

impl<P: Part> Waiter<P> {
    fn deliver(&self, outcome: Outcome<P>) {
        *self.outcome.lock() = Some(outcome);
        self.thread.unpark();
    }

    fn wait(&self) -> Outcome<P> {
        loop {
            if let Some(outcome) = self.outcome.lock().take() {
                return outcome;
            }
            // Spurious unparks only cost a look.
            std::thread::park();
        }
    }
}

/// A member's right to hand in its part, once its timestamp is known. Dropping it unused
/// counts as handing in `Error::Shutdown`, so the group never waits for it forever.
pub(crate) struct Stamp<P: Part> {
    group: Arc<Group<P>>,
    index: usize,
    done: bool,
}

impl<P: Part> Stamp<P> {
    /// Hands in this member's part, or the reason it has none (its waiting caller gets it).
    pub fn send(mut self, part: Result<P>) {
        self.done = true;
        self.group.stamp(self.index, part);
    }
}

impl<P: Part> Drop for Stamp<P> {
    fn drop(&mut self) {
        if !self.done {
            self.group.stamp(self.index, Err(Error::Shutdown));
        }
    }
}

/// How the leader's call went, for [`Group::hand_out`].
pub(crate) enum Replies<O> {
    /// One result per sent part, in order.
    Each(Vec<Result<O>>),
    /// Nothing usable came back, and nothing was applied: followers go alone.
    Failed(Error),
}

impl<P: Part> Groups<P> {
    /// Joins the open group of `key` for `table`, or opens one led by the caller.
    fn join(&self, table: &str, key: Option<u64>) -> (Arc<Group<P>>, usize) {
        let Some(batch) = key else {
            return (Group::led(table, None), 0);
        };
        let key = (batch, table.to_string());
        let mut open = self.open.lock();
        if let Some(group) = open.get(&key) {
            let mut state = group.state.lock();
            if !state.sealed && state.members.len() < MAX_MEMBERS {
                state.members.push(Member::new(Some(Arc::new(Waiter {
                    outcome: Mutex::new(None),
                    thread: std::thread::current(),
                }))));
                return (Arc::clone(group), state.members.len() - 1);
            }
        }
        let group = Group::led(table, Some(key.clone()));
        open.insert(key, Arc::clone(&group));
        (group, 0)
    }

    fn close(&self, group: &Arc<Group<P>>) {
        if let Some(key) = &group.key {
            let mut open = self.open.lock();
            if open.get(key).is_some_and(|g| Arc::ptr_eq(g, group)) {
                open.remove(key);
            }
        }
    }

    /// Runs one member's call: `lead` is the leader's part (it returns the replies to every
    /// sent part), `alone` a member's own call when it cannot go with the group.
    fn run(
        &self,
        table: &str,
        batch: Option<u64>,
        start: impl FnOnce(Stamp<P>),
        lead: impl FnOnce(Begin<'_>, &dyn Fn() -> Option<Arc<Vec<P>>>) -> Replies<P::Out>,
        alone: impl FnOnce(P) -> Result<P::Out>,
    ) -> Result<P::Out> {
        let (group, index) = self.join(table, batch);
        let stamp = Stamp {
            group: Arc::clone(&group),
            index,
            done: false,
        };
        let waiter = group.state.lock().members[index].waiter.clone();
        if let Some(waiter) = waiter {
            start(stamp);
            return match waiter.wait() {
                Outcome::Done(result) => result,
                Outcome::Alone(part) => alone(part),
            };
        }
        // A leader that never starts (no connection) drops `begin`, and with it the stamp,
        // which gives the group up.
        let begin: Box<dyn FnOnce(Sender) + '_> = Box::new(|sender| {
            group.state.lock().sender = Some(sender);
            start(stamp);
        });
        let replies = lead(begin, &|| group.state.lock().sent.clone());
        self.close(&group);
        group.hand_out(replies)
    }
}

impl<P: Part> Group<P> {
    fn led(table: &str, key: Option<Key>) -> Arc<Group<P>> {
        Arc::new(Group {
            table: table.to_string(),
            key,
            state: Mutex::new(State {
                members: vec![Member::new(None)],
                stamped: 0,
                sealed: false,
                failed: false,
                sender: None,
                sent: None,
            }),
        })
    }

    /// Records member `index`'s part; the last member to hand in sends the whole group.
    fn stamp(&self, index: usize, part: Result<P>) {
        let mut state = self.state.lock();
        state.stamped += 1;
        let waiter = state.members[index].waiter.clone();
        let part = match (part, waiter) {
            (Err(e), Some(waiter)) => {
                // Out of the group; the others may still go.
                let ready = self.ready(&mut state);
                drop(state);
                waiter.deliver(Outcome::Done(Err(e)));
                return self.send(ready);
            }
            (Err(e), None) => {
                // The leader has no timestamp: it gets the error, followers go alone.
                let sender = state.sender.take();
                drop(state);
                self.give_up();
                if let Some(sender) = sender {
                    sender.abandon(e);
                }
                return;
            }
            (Ok(part), Some(waiter)) if state.failed => {
                drop(state);
                return waiter.deliver(Outcome::Alone(part));
            }
            (Ok(part), _) => part,
        };
        state.members[index].part = Some(part);
        let ready = self.ready(&mut state);
        drop(state);
        self.send(ready);
    }

    /// Once every member has handed in: seals the group and gathers the parts to send.
    fn ready(&self, state: &mut State<P>) -> Option<(Sender, Arc<Vec<P>>)> {
        if state.stamped < state.members.len() || state.sealed {
            return None;
        }
        state.sealed = true;
        // Set before the leader's `start` runs, so present once the leader has stamped.
        let sender = state.sender.take()?;
        let mut parts = Vec::new();
        for member in &mut state.members {
            if let Some(part) = member.part.take() {
                member.sent = Some(parts.len());
                parts.push(part);
            }
        }
        // Kept so followers can go alone if a combined read fails.
        let parts = Arc::new(parts);
        state.sent = Some(Arc::clone(&parts));
        Some((sender, parts))
    }

    fn send(&self, ready: Option<(Sender, Arc<Vec<P>>)>) {
        if let Some((sender, parts)) = ready {
            P::send(sender, &self.table, &parts);
        }
    }

    /// The request will not leave: members go alone, now or when they stamp.
    fn give_up(&self) {
        let mut state = self.state.lock();
        state.sealed = true;
        state.failed = true;
        let alone: Vec<_> = state
            .members
            .iter_mut()
            .filter_map(|m| Some((m.waiter.clone()?, m.part.take()?)))
            .collect();
        drop(state);
        for (waiter, part) in alone {
            waiter.deliver(Outcome::Alone(part));
        }
    }

    /// The leader's part once its call is over: each follower's result, or word to go alone;
    /// returns the leader's own result.
    fn hand_out(&self, replies: Replies<P::Out>) -> Result<P::Out> {
        let mut state = self.state.lock();
        let sent = match state.sent.take() {
            Some(sent) if !state.failed => sent,
            // Nothing left with our sender (no connection, or we had no timestamp).
            _ => {
                drop(state);
                self.give_up();
                return Err(match replies {
                    Replies::Failed(e) => e,
                    Replies::Each(_) => unsent(),
                });
            }
        };
        // Where each member's result is, and whom to hand it to.
        let members: Vec<_> = state
            .members
            .iter()
            .map(|m| (m.sent, m.waiter.clone()))
            .collect();
        drop(state);
        match replies {
            Replies::Each(each) => {
                let mut each: Vec<Option<Result<P::Out>>> = each.into_iter().map(Some).collect();
                let mut own = Err(unsent());
                for (at, waiter) in members {
                    let Some(result) = at.and_then(|at| each.get_mut(at)?.take()) else {
                        continue;
                    };
                    match waiter {
                        None => own = result,
                        Some(waiter) => waiter.deliver(Outcome::Done(result)),
                    }
                }
                own
            }
            Replies::Failed(e) => {
                for (at, waiter) in members {
                    if let (Some(at), Some(waiter)) = (at, waiter) {
                        waiter.deliver(Outcome::Alone(sent[at].clone()));
                    }
                }
                Err(e)
            }
        }
    }
}

fn unsent() -> Error {
    Error::Protocol {
        peer: Peer::HBase,
        message: "a grouped request left without the leader's part".into(),
    }
}

impl HBaseClient {
    /// Reads the gets handed in later through the [`Stamp`] given to `start`, together with
    /// other callers of the same oracle `batch`: see the module doc. `batch` `None` reads
    /// alone, as [`get_many_deferred`](Self::get_many_deferred) does.
    pub(crate) fn get_many_grouped(
        &self,
        table: &str,
        batch: Option<u64>,
        start: impl FnOnce(Stamp<Vec<Get>>),
    ) -> Result<Vec<RowResult>> {
        self.read_groups().run(
            table,
            batch,
            start,
            |begin, sent| {
                let rows = match self.get_many_deferred(table, begin) {
                    Ok(rows) => rows,
                    Err(e) => return Replies::Failed(e),
                };
                let parts = sent().unwrap_or_default();
                let expected: usize = parts.iter().map(Vec::len).sum();
                if rows.len() != expected {
                    return Replies::Failed(Error::Protocol {
                        peer: Peer::HBase,
                        message: format!(
                            "getMultiple of {expected} gets on {table} answered {} rows",
                            rows.len()
                        ),
                    });
                }
                let mut rows = rows.into_iter();
                Replies::Each(
                    parts
                        .iter()
                        .map(|gets| Ok(rows.by_ref().take(gets.len()).collect()))
                        .collect(),
                )
            },
            |gets| self.get_many(table, &gets),
        )
    }

    /// The checkAndMutate handed in later through the [`Stamp`] given to `start`, pipelined
    /// with those of other callers of the same oracle `batch` on one connection.
    pub(crate) fn check_and_mutate_grouped(
        &self,
        table: &str,
        batch: Option<u64>,
        start: impl FnOnce(Stamp<CheckAndMutate>),
    ) -> Result<bool> {
        self.cam_groups().run(
            table,
            batch,
            start,
            |begin, sent| self.lead_cams(table, begin, sent),
            |cam| self.check_and_mutate(table, &cam),
        )
    }

    /// The leader's call for a group of checkAndMutates: one result per part sent.
    fn lead_cams(
        &self,
        table: &str,
        begin: Begin<'_>,
        sent: &dyn Fn() -> Option<Arc<Vec<CheckAndMutate>>>,
    ) -> Replies<bool> {
        let mut conn: PooledConnection<Manager> = match self.checkout() {
            Ok(conn) => conn,
            Err(e) => return Replies::Failed(e),
        };
        let outbox = conn.outbox();
        begin(Sender::new(Arc::clone(&outbox)));
        let first = conn.receive(true, &outbox);
        let Some(cams) = sent() else {
            return Replies::Failed(match first {
                Err(ReceiveFailure::Abandoned(e)) => e,
                _ => unsent(),
            });
        };
        self.count_rpcs(cams.len());
        let encoded = Encoded {
            bytes: Vec::new(),
            method: "checkAndMutate",
            seq: outbox.seq(),
        };
        let first = match first {
            Ok(reply) => Ok(reply),
            Err(ReceiveFailure::Call(failure, _)) => Err(failure),
            // Abandoned requests are never sent, and these were.
            Err(ReceiveFailure::Abandoned(e)) => return Replies::Failed(e),
        };
        let calls: Vec<(&str, &CheckAndMutate)> = cams.iter().map(|cam| (table, cam)).collect();
        Replies::Each(self.cam_replies(&mut conn, &encoded, &calls, Some(first)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::emulator::{self, EmulatorHandle};
    use crate::hbase::{CompareOp, Put};

    const BATCH: Option<u64> = Some(u64::MAX - 7);

    type Start<'a, P> = Box<dyn FnOnce(Stamp<P>) + 'a>;

    fn setup() -> (EmulatorHandle, HBaseClient) {
        let (emulator, client) = emulator::testutil::emulated_table();
        for i in 0..8 {
            client
                .put(
                    "t",
                    &Put::new(format!("r{i}")).add("f", "q", format!("v{i}")),
                )
                .unwrap();
        }
        (emulator, client)
    }

    fn value(rows: &[RowResult]) -> Vec<String> {
        rows.iter()
            .map(|r| {
                let v = r.value(b"f", b"q").unwrap_or_default();
                String::from_utf8(v.to_vec()).unwrap()
            })
            .collect()
    }

    /// Runs `members` grouped calls under one batch key, member `i` handing in `part(i)`. The
    /// stamps are held until every member joined (one at a time, so member 0 leads), then
    /// handed to `stamp` in joining order, which sends them or not.
    fn together<P: Part>(
        client: &HBaseClient,
        members: usize,
        call: impl Fn(&HBaseClient, Start<'_, P>) -> Result<P::Out> + Sync,
        part: impl Fn(usize) -> P,
        stamp: impl Fn(usize, Stamp<P>, P),
    ) -> Vec<Result<P::Out>> {
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            let mut stamps = Vec::new();
            for _ in 0..members {
                let tx = tx.clone();
                let call = &call;
                handles.push(
                    s.spawn(move || call(client, Box::new(move |member| tx.send(member).unwrap()))),
                );
                stamps.push(rx.recv().unwrap());
            }
            for (i, member) in stamps.into_iter().enumerate() {
                stamp(i, member, part(i));
            }
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    fn read(
        table: &'static str,
    ) -> impl Fn(&HBaseClient, Start<'_, Vec<Get>>) -> Result<Vec<RowResult>> + Sync {
        move |client, start| client.get_many_grouped(table, BATCH, start)
    }

    fn two_rows(i: usize) -> Vec<Get> {
        vec![Get::new(format!("r{i}")), Get::new(format!("r{}", i + 4))]
    }

    fn cas(client: &HBaseClient, start: Start<'_, CheckAndMutate>) -> Result<bool> {
        client.check_and_mutate_grouped("t", BATCH, start)
    }

    /// Sets `f:c` of row `r{i}` to "x" if it is empty; member 3's condition never holds.
    fn claim(i: usize) -> CheckAndMutate {
        let expect = if i == 3 { "never" } else { "" };
        CheckAndMutate::new(format!("r{i}"), "f", "c", CompareOp::Equal, expect)
            .put(Put::new(format!("r{i}")).add("f", "c", "x"))
    }

    fn claimed(client: &HBaseClient, i: usize) -> bool {
        let row = client.get("t", &Get::new(format!("r{i}"))).unwrap();
        row.value(b"f", b"c").is_some()
    }

    #[test]
    fn readers_of_one_batch_share_one_get_multiple_and_each_sees_its_rows() {
        let (_emulator, client) = setup();
        let before = client.rpc_count();
        let results = together(&client, 4, read("t"), two_rows, |_, m, gets| {
            m.send(Ok(gets))
        });
        assert_eq!(client.rpc_count(), before + 1, "one call for the group");
        for (i, result) in results.into_iter().enumerate() {
            assert_eq!(
                value(&result.unwrap()),
                [format!("v{i}"), format!("v{}", i + 4)]
            );
        }
    }

    #[test]
    fn a_member_without_a_timestamp_gets_its_error_and_the_others_still_read() {
        let (_emulator, client) = setup();
        let results = together(&client, 3, read("t"), two_rows, |i, member, gets| match i {
            1 => member.send(Err(Error::Shutdown)),
            2 => drop(member),
            _ => member.send(Ok(gets)),
        });
        assert_eq!(value(results[0].as_ref().unwrap()), ["v0", "v4"]);
        assert!(matches!(results[1], Err(Error::Shutdown)));
        assert!(
            matches!(results[2], Err(Error::Shutdown)),
            "an unused stamp counts as shutdown"
        );
    }

    fn oracle_down() -> Error {
        Error::OracleUnavailable {
            addrs: vec!["o".into()],
            reason: "test".into(),
        }
    }

    #[test]
    fn a_leader_without_a_timestamp_fails_alone_and_followers_read_alone() {
        let (_emulator, client) = setup();
        let before = client.rpc_count();
        let results = together(&client, 3, read("t"), two_rows, |i, member, gets| {
            member.send(if i == 0 { Err(oracle_down()) } else { Ok(gets) })
        });
        assert!(matches!(results[0], Err(Error::OracleUnavailable { .. })));
        assert_eq!(value(results[1].as_ref().unwrap()), ["v1", "v5"]);
        assert_eq!(value(results[2].as_ref().unwrap()), ["v2", "v6"]);
        assert_eq!(
            client.rpc_count(),
            before + 3,
            "the leader's call + 2 alone"
        );
    }

    #[test]
    fn when_the_group_read_fails_each_follower_sees_its_own_failure() {
        let (_emulator, client) = setup();
        let results = together(&client, 3, read("missing"), two_rows, |_, m, gets| {
            m.send(Ok(gets))
        });
        for result in results {
            let err = result.unwrap_err();
            assert!(err.to_string().contains("missing"), "{err}");
        }
    }

    #[test]
    fn a_reader_arriving_after_the_group_left_starts_a_new_one() {
        let (_emulator, client) = setup();
        let first = client
            .get_many_grouped("t", BATCH, |m| m.send(Ok(vec![Get::new("r0")])))
            .unwrap();
        let second = client
            .get_many_grouped("t", BATCH, |m| m.send(Ok(vec![Get::new("r1")])))
            .unwrap();
        assert_eq!(value(&first), ["v0"]);
        assert_eq!(value(&second), ["v1"]);
        assert!(
            client.read_groups().open.lock().is_empty(),
            "nothing left open"
        );
    }

    #[test]
    fn check_and_mutates_of_one_batch_are_pipelined_and_each_gets_its_own_answer() {
        let (_emulator, client) = setup();
        let before = client.rpc_count();
        let results = together(&client, 5, cas, claim, |_, m, cam| m.send(Ok(cam)));
        let applied: Vec<bool> = results.into_iter().map(Result::unwrap).collect();
        assert_eq!(applied, [true, true, true, false, true]);
        assert_eq!(
            client.rpc_count(),
            before + 5,
            "one call per checkAndMutate"
        );
        assert_eq!(
            (0..5).map(|i| claimed(&client, i)).collect::<Vec<_>>(),
            [true, true, true, false, true]
        );
        // The same conditions again: now none holds.
        let again = together(&client, 5, cas, claim, |_, m, cam| m.send(Ok(cam)));
        assert!(again.iter().all(|r| matches!(r, Ok(false))), "{again:?}");
    }

    #[test]
    fn a_failing_check_and_mutate_fails_alone_in_its_group() {
        let (_emulator, client) = setup();
        let results = together(&client, 3, cas, claim, |i, m, cam| {
            if i == 1 {
                let bad = CheckAndMutate::new("r1", "nofamily", "c", CompareOp::Equal, "")
                    .put(Put::new("r1").add("nofamily", "c", "x"));
                m.send(Ok(bad));
            } else {
                m.send(Ok(cam));
            }
        });
        assert!(matches!(results[0], Ok(true)));
        let err = results[1].as_ref().unwrap_err();
        assert!(err.to_string().contains("nofamily"), "{err}");
        assert!(
            matches!(results[2], Ok(true)),
            "the next reply is still read"
        );
    }

    #[test]
    fn without_the_leaders_timestamp_followers_check_and_mutate_alone() {
        let (_emulator, client) = setup();
        let results = together(&client, 3, cas, claim, |i, m, cam| {
            m.send(if i == 0 { Err(oracle_down()) } else { Ok(cam) })
        });
        assert!(matches!(results[0], Err(Error::OracleUnavailable { .. })));
        assert!(matches!(results[1], Ok(true)) && matches!(results[2], Ok(true)));
        assert!(!claimed(&client, 0) && claimed(&client, 1) && claimed(&client, 2));
    }
}
