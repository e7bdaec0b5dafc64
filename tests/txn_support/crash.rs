//! The crash scenario shared by the failpoint suite and the runtime crash-injector suite: a
//! client dies at one protocol seam in the middle of a 3-cell, 2-table transaction, and other
//! clients must then see all of it or none of it, decided by the commit point.

use percolator::format::{LockState, WriteKind};
use percolator::txn::{CellKey, Client, Seam, TxnOptions};
use percolator::Error;

use super::Env;

/// Whether a transaction that died at `seam` had passed its commit point (the primary commit).
pub fn commits_despite_crash(seam: Seam) -> bool {
    matches!(
        seam,
        Seam::AfterPrimaryCommit | Seam::BetweenSecondaryCommits
    )
}

/// Runs the scenario. `crashing` builds the client that dies at `seam` from the fixture's
/// options; it is called after the initial values are committed, so a process-global
/// failpoint configured inside it hits only the transaction under test.
pub fn crash_scenario(env: &Env, seam: Seam, crashing: impl FnOnce(TxnOptions) -> Client) {
    let (t1, t2) = (env.table("crash_a"), env.table("crash_b"));
    // The first key written is the primary: a, then a secondary beside it and one elsewhere.
    let cells = [env.key(&t1, "a"), env.key(&t1, "b"), env.key(&t2, "c")];
    write_all(&env.client(), &cells, b"old");

    let client = crashing(env.options());
    let mut txn = client.begin().unwrap();
    let start_ts = txn.start_ts().unwrap();
    for k in &cells {
        txn.set(&k.table, &k.row, &k.family, &k.qualifier, "new")
            .unwrap();
    }
    match txn.commit() {
        Err(Error::ClientCrashed {
            start_ts: s,
            seam: at,
        }) => {
            assert_eq!((s, at), (start_ts, seam.name()), "crash report")
        }
        other => panic!(
            "{}: the commit must report the crash, got {other:?}",
            seam.name()
        ),
    }
    assert!(
        client.is_dead(),
        "{}: the client marks itself dead",
        seam.name()
    );
    assert!(matches!(client.begin(), Err(Error::Shutdown)));
    let left = locked_by(env, &cells, start_ts);
    let committed = commits_despite_crash(seam);
    match seam {
        Seam::AfterPrimaryCommit => assert_eq!(left, 2, "both secondaries still locked"),
        Seam::BetweenSecondaryCommits => assert!(left <= 1, "a secondary was committed"),
        _ => assert_eq!(left, 3, "{}: every prewrite landed and stays", seam.name()),
    }

    let expected: &[u8] = if committed { b"new" } else { b"old" };
    // Two readers resolve concurrently, from different ends of the transaction; each sees all
    // or nothing of it.
    let reversed: Vec<CellKey> = cells.iter().rev().cloned().collect();
    std::thread::scope(|s| {
        for order in [cells.to_vec(), reversed] {
            s.spawn(move || {
                let reader = env.client();
                let values = reader.begin().unwrap().get_many(&order).unwrap();
                for (k, v) in order.iter().zip(values) {
                    assert_eq!(v.as_deref(), Some(expected), "{}: {k}", seam.name());
                }
                reader.shutdown();
            });
        }
    });

    for k in &cells {
        let has_put = env
            .writes(k)
            .iter()
            .any(|(_, r)| r.start_ts == start_ts && r.kind == WriteKind::Put);
        assert_eq!(has_put, committed, "{}: write record of {k}", seam.name());
        if !committed {
            assert!(
                env.data_versions(k)
                    .iter()
                    .all(|(v, _)| *v != start_ts as i64),
                "{}: the rolled-back data version of {k} is removed",
                seam.name()
            );
        }
    }
    env.assert_no_locks(&t1);
    env.assert_no_locks(&t2);
}

fn write_all(client: &Client, cells: &[CellKey], value: &[u8]) {
    client
        .run(|txn| {
            for k in cells {
                txn.set(&k.table, &k.row, &k.family, &k.qualifier, value)?;
            }
            Ok(())
        })
        .unwrap();
    client.shutdown();
}

fn locked_by(env: &Env, cells: &[CellKey], start_ts: u64) -> usize {
    cells
        .iter()
        .filter(|k| matches!(env.lock_state(k), LockState::Locked(l) if l.start_ts == start_ts))
        .count()
}
