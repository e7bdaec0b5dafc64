//! Progress of long work (migration, GC): nothing, a plain line on stderr every few seconds, or
//! reports to a [`ProgressSink`] of the caller's (the `percolator` command draws a bar with
//! one). The library itself never draws.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receives the progress of long work, phase by phase.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use percolator::progress::{Phase, ProgressMode, ProgressSink};
///
/// struct Log(Arc<Mutex<Vec<String>>>);
/// struct LogPhase(Arc<Mutex<Vec<String>>>, String);
/// impl ProgressSink for Log {
///     fn start(&self, label: &str, _total: Option<u64>) -> Box<dyn Phase> {
///         Box::new(LogPhase(self.0.clone(), label.to_string()))
///     }
/// }
/// impl Phase for LogPhase {
///     fn set(&mut self, done: u64) {
///         self.0.lock().unwrap().push(format!("{} {done}", self.1));
///     }
///     fn finish(self: Box<Self>) {}
/// }
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let mode = ProgressMode::Sink(Arc::new(Log(seen.clone())));
/// # let _ = mode;
/// ```
pub trait ProgressSink: Send + Sync {
    /// A phase starts: what it does, and how many rows it will visit when that is known.
    fn start(&self, label: &str, total: Option<u64>) -> Box<dyn Phase>;

    /// A step that visits no rows began or ended (a schema change): one line saying so.
    /// Ignored unless the sink shows it.
    fn note(&self, line: &str) {
        let _ = line;
    }
}

/// One phase of long work in progress.
pub trait Phase: Send {
    /// `done` rows visited so far, in all.
    fn set(&mut self, done: u64);
    /// The phase ended.
    fn finish(self: Box<Self>);
}

/// How long work shows its progress.
///
/// ```
/// use percolator::progress::ProgressMode;
/// assert!(matches!(ProgressMode::default(), ProgressMode::Lines));
/// ```
#[derive(Clone, Default)]
pub enum ProgressMode {
    /// A plain line on stderr every few seconds, and one at the end of each phase.
    #[default]
    Lines,
    /// Nothing (tests, output for scripts).
    Off,
    /// Reported to the caller's sink.
    Sink(Arc<dyn ProgressSink>),
}

impl fmt::Debug for ProgressMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressMode::Lines => f.write_str("Lines"),
            ProgressMode::Off => f.write_str("Off"),
            ProgressMode::Sink(_) => f.write_str("Sink(..)"),
        }
    }
}

impl ProgressMode {
    /// Says `line` of a step that visits no rows: on stderr for [`ProgressMode::Lines`], to
    /// the sink's [`ProgressSink::note`], nowhere for [`ProgressMode::Off`].
    ///
    /// ```
    /// percolator::progress::ProgressMode::Off.note("schema t: changing 4 families");
    /// ```
    pub fn note(&self, line: &str) {
        match self {
            ProgressMode::Lines => eprintln!("{line}"),
            ProgressMode::Sink(sink) => sink.note(line),
            ProgressMode::Off => {}
        }
    }
}

/// Seconds between plain lines.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// The progress of one phase, as long work reports it to its [`ProgressMode`].
///
/// ```
/// use percolator::progress::{Progress, ProgressMode};
/// let mut p = Progress::new(&ProgressMode::Off, "copy t".into(), Some(10));
/// p.inc(4);
/// p.set(10);
/// p.finish();
/// ```
pub struct Progress {
    phase: Option<Box<dyn Phase>>,
    done: u64,
}

impl Progress {
    /// The phase `label` of `total` rows (when known) starts.
    pub fn new(mode: &ProgressMode, label: String, total: Option<u64>) -> Progress {
        let phase: Option<Box<dyn Phase>> = match mode {
            ProgressMode::Off => None,
            ProgressMode::Lines => Some(Box::new(Lines::new(label, total))),
            ProgressMode::Sink(sink) => Some(sink.start(&label, total)),
        };
        Progress { phase, done: 0 }
    }

    /// `rows` more rows visited.
    pub fn inc(&mut self, rows: u64) {
        self.set(self.done + rows);
    }

    /// Moves to `done` rows in all (work that reports running totals).
    pub fn set(&mut self, done: u64) {
        self.done = done;
        if let Some(phase) = &mut self.phase {
            phase.set(done);
        }
    }

    /// The phase ended.
    pub fn finish(self) {
        if let Some(phase) = self.phase {
            phase.finish();
        }
    }
}

/// Plain lines on stderr: rows, rate and, with a total, the time left.
///
/// ```
/// use percolator::progress::{Lines, Phase};
/// let mut lines = Lines::new("adopt t".into(), Some(100));
/// lines.set(40);
/// let line = lines.line();
/// assert!(line.starts_with("adopt t: 40/100 rows, "), "{line}");
/// assert!(line.contains("rows/s, ETA "), "{line}");
/// ```
pub struct Lines {
    label: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    last_line: Instant,
}

impl Lines {
    /// Lines for the phase `label` of `total` rows, when known.
    pub fn new(label: String, total: Option<u64>) -> Lines {
        Lines {
            label,
            total,
            done: 0,
            started: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// The line printed now.
    pub fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        match self.total {
            Some(total) if rate > 0.0 => format!(
                "{}: {}/{} rows, {:.0} rows/s, ETA {:.0}s",
                self.label,
                self.done,
                total,
                rate,
                total.saturating_sub(self.done) as f64 / rate
            ),
            _ => format!("{}: {} rows, {:.0} rows/s", self.label, self.done, rate),
        }
    }
}

impl Phase for Lines {
    fn set(&mut self, done: u64) {
        self.done = done;
        if self.last_line.elapsed() >= LINE_EVERY {
            self.last_line = Instant::now();
            eprintln!("{}", self.line());
        }
    }

    fn finish(self: Box<Self>) {
        eprintln!("{} (done)", self.line());
    }
}
