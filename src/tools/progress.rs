//! Progress of long work (migration, GC): a bar (rows, rate, ETA) when stderr is a terminal, a
//! plain line every few seconds when it is not (logs, CI), or nothing.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How progress is shown.
///
/// ```
/// assert_eq!(percolator::tools::ProgressMode::default(), percolator::migrate::ProgressMode::Auto);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// Plain lines on stderr.
    Lines,
    /// Nothing (tests, `--json`).
    Off,
}

impl ProgressMode {
    /// `Off` for a command that prints JSON (its output is for scripts), else `Auto`.
    ///
    /// ```
    /// use percolator::tools::ProgressMode;
    /// assert_eq!(ProgressMode::unless_json(true), ProgressMode::Off);
    /// assert_eq!(ProgressMode::unless_json(false), ProgressMode::Auto);
    /// ```
    pub fn unless_json(json: bool) -> ProgressMode {
        if json {
            ProgressMode::Off
        } else {
            ProgressMode::Auto
        }
    }
}

/// The bar when the total is known, and the spinner when it is not (a resumed pass).
const BAR: &str = "{msg} [{bar:30}] {pos}/{len} rows {per_sec} ETA {eta}";
const SPINNER: &str = "{msg} {spinner} {pos} rows {per_sec}";

/// Seconds between plain lines.
const LINE_EVERY: Duration = Duration::from_secs(5);

pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    label: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    last_line: Instant,
}

impl Progress {
    pub fn new(mode: ProgressMode, label: String, total: Option<u64>) -> Progress {
        let terminal = mode == ProgressMode::Auto && std::io::stderr().is_terminal();
        let bar = terminal.then(|| {
            let bar = match total {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            let template = if total.is_some() { BAR } else { SPINNER };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.clone());
            bar
        });
        Progress {
            bar,
            lines: mode != ProgressMode::Off && !terminal,
            label,
            total,
            done: 0,
            started: Instant::now(),
            last_line: Instant::now(),
        }
    }

    pub fn inc(&mut self, rows: u64) {
        self.set(self.done + rows);
    }

    /// Moves to `done` rows in all (work that reports running totals).
    pub fn set(&mut self, done: u64) {
        self.done = done;
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        } else if self.lines && self.last_line.elapsed() >= LINE_EVERY {
            self.last_line = Instant::now();
            eprintln!("{}", self.line());
        }
    }

    fn line(&self) -> String {
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

    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.lines {
            eprintln!("{} (done)", self.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_templates_parse() {
        assert!(ProgressStyle::with_template(BAR).is_ok());
        assert!(ProgressStyle::with_template(SPINNER).is_ok());
    }

    #[test]
    fn plain_lines_give_rows_rate_and_eta() {
        let mut p = Progress::new(ProgressMode::Lines, "adopt t".into(), Some(100));
        p.inc(40);
        let line = p.line();
        assert!(line.starts_with("adopt t: 40/100 rows, "), "{line}");
        assert!(line.contains("rows/s, ETA "), "{line}");
    }
}
