//! Progress of long work (migration, GC) on the command line: a bar (rows, rate, ETA) when
//! stderr is a terminal, the library's plain line every few seconds when it is not (logs, CI),
//! or nothing when the output is JSON for a script.

use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use percolator::progress::{Lines, Phase, ProgressSink};

pub use percolator::progress::{Progress, ProgressMode};

/// The bar when the total is known, and the spinner when it is not (a resumed pass).
const BAR: &str = "{msg} [{bar:30}] {pos}/{len} rows {per_sec} ETA {eta}";
const SPINNER: &str = "{msg} {spinner} {pos} rows {per_sec}";

/// `Off` for a command that prints JSON (its output is for scripts), else bars on a terminal
/// and plain lines elsewhere.
///
/// ```
/// use percolator_cli::tools::progress::{unless_json, ProgressMode};
/// assert!(matches!(unless_json(true), ProgressMode::Off));
/// assert!(matches!(unless_json(false), ProgressMode::Sink(_)));
/// ```
pub fn unless_json(json: bool) -> ProgressMode {
    if json {
        ProgressMode::Off
    } else {
        ProgressMode::Sink(Arc::new(Bars))
    }
}

/// Draws a bar per phase on a terminal; plain lines otherwise.
pub struct Bars;

impl ProgressSink for Bars {
    fn start(&self, label: &str, total: Option<u64>) -> Box<dyn Phase> {
        if !std::io::stderr().is_terminal() {
            return Box::new(Lines::new(label.to_string(), total));
        }
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        let template = if total.is_some() { BAR } else { SPINNER };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_string());
        Box::new(Bar(bar))
    }

    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
}

struct Bar(ProgressBar);

impl Phase for Bar {
    fn set(&mut self, done: u64) {
        self.0.set_position(done);
    }

    fn finish(self: Box<Self>) {
        self.0.finish_and_clear();
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
}
