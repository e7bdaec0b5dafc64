//! One trace per transaction: a `transaction` span carrying start_ts, commit_ts and the
//! primary, with `begin`, `read` and `commit` beneath it, the commit's phases (`prewrite`,
//! `commit_point`, `secondaries`) beneath that, and the resolution of a dead client's lock
//! (`resolve_lock`) beneath the read that met it. An OpenTelemetry layer sees the same tree.

#[path = "txn_support/mod.rs"]
mod txn_support;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use percolator::txn::Seam;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;
use txn_support::Env;

#[derive(Clone, Debug, Default)]
struct Recorded {
    name: &'static str,
    parent: Option<usize>,
    fields: HashMap<String, String>,
}

/// Every span created in this process, in order; a span's parent is its index here.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Recorded>>>);

struct Index(usize);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is registered");
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut rec = Recorded {
            name: attrs.metadata().name(),
            parent,
            ..Recorded::default()
        };
        attrs.record(&mut Fields(&mut rec.fields));
        let mut all = self.0.lock();
        span.extensions_mut().insert(Index(all.len()));
        all.push(rec);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let index = span.extensions().get::<Index>().map(|i| i.0);
        if let Some(i) = index {
            values.record(&mut Fields(&mut self.0.lock()[i].fields));
        }
    }
}

fn spans() -> &'static Spans {
    static SPANS: OnceLock<Spans> = OnceLock::new();
    SPANS.get_or_init(|| {
        let spans = Spans::default();
        let subscriber = tracing_subscriber::registry().with(spans.clone());
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        spans
    })
}

/// The transaction span whose start_ts is `start_ts`, and every span beneath it.
fn trace_of(spans: &Spans, start_ts: u64) -> (usize, Vec<(usize, Recorded)>) {
    let all = spans.0.lock().clone();
    let root = all
        .iter()
        .position(|s| {
            s.name == "transaction" && s.fields.get("start_ts") == Some(&start_ts.to_string())
        })
        .unwrap_or_else(|| panic!("no transaction span with start_ts {start_ts}"));
    let under = |mut i: usize| loop {
        match all[i].parent {
            Some(p) if p == root => return true,
            Some(p) => i = p,
            None => return false,
        }
    };
    let beneath = (0..all.len())
        .filter(|&i| under(i))
        .map(|i| (i, all[i].clone()))
        .collect();
    (root, beneath)
}

fn child<'a>(trace: &'a [(usize, Recorded)], parent: usize, name: &str) -> &'a (usize, Recorded) {
    trace
        .iter()
        .find(|(_, s)| s.parent == Some(parent) && s.name == name)
        .unwrap_or_else(|| panic!("no {name} span under span {parent}: {trace:#?}"))
}

#[test]
fn a_transaction_is_one_trace_with_its_phases_and_the_locks_it_resolved() {
    let spans = spans();
    let env = Env::start();
    let table = env.table("traced");
    let (a, b) = (env.key(&table, "a"), env.key(&table, "b"));
    let client = env.client_with(env.options().to_builder().sync_secondaries(true).build());

    let mut txn = client.begin().unwrap();
    txn.get(&a.table, &a.row, &a.family, &a.qualifier).unwrap();
    txn.set(&a.table, &a.row, &a.family, &a.qualifier, "1")
        .unwrap();
    txn.set(&b.table, &b.row, &b.family, &b.qualifier, "2")
        .unwrap();
    let start_ts = txn.start_ts().unwrap();
    let commit_ts = txn.commit().unwrap();

    let (root, trace) = trace_of(spans, start_ts);
    let fields = spans.0.lock()[root].fields.clone();
    assert_eq!(fields.get("commit_ts"), Some(&commit_ts.to_string()));
    assert!(
        fields.get("primary").is_some_and(|p| p.contains(&table)),
        "{fields:?}"
    );
    child(&trace, root, "begin");
    child(&trace, root, "read");
    let (commit, _) = child(&trace, root, "commit");
    child(&trace, *commit, "prewrite");
    let (_, point) = child(&trace, *commit, "commit_point");
    assert_eq!(point.fields.get("commit_ts"), Some(&commit_ts.to_string()));
    child(&trace, *commit, "secondaries");

    // A client dies before its commit point; the next reader resolves its lock in its read.
    let dying = env.client_with(
        env.options()
            .to_builder()
            .lock_ttl(Duration::from_millis(1))
            .crash_injector(Arc::new(|seam| seam == Seam::BeforePrimaryCommit))
            .build(),
    );
    let mut doomed = dying.begin().unwrap();
    doomed
        .set(&a.table, &a.row, &a.family, &a.qualifier, "3")
        .unwrap();
    let doomed_start = doomed.start_ts().unwrap();
    assert!(doomed.commit().is_err());
    std::thread::sleep(Duration::from_millis(20));
    let reader = client.begin().unwrap();
    let read_start = reader.start_ts().unwrap();
    assert_eq!(
        reader
            .get(&a.table, &a.row, &a.family, &a.qualifier)
            .unwrap(),
        Some(b"1".to_vec())
    );
    let (root, trace) = trace_of(spans, read_start);
    let (read, _) = child(&trace, root, "read");
    let (_, resolve) = trace
        .iter()
        .find(|(_, s)| s.name == "resolve_lock")
        .unwrap_or_else(|| panic!("no resolve_lock span: {trace:#?}"));
    assert_eq!(
        resolve.fields.get("lock_start_ts"),
        Some(&doomed_start.to_string())
    );
    let mut at = resolve.parent;
    while at != Some(*read) {
        at = spans.0.lock()[at.expect("resolve_lock is beneath the read")].parent;
    }
}
