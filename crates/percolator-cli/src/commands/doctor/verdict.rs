//! What one check of `percolator doctor` found, and how the whole report is shown.

use serde::Serialize;

/// A check's outcome. `Skip` is for a check that could not look because another one failed
/// first (no gateway, no oracle): that failure is the one reported, and the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Skip,
    Warn,
    Fail,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Skip => "skip",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One check: its name, what it looked at (a table, for per-table checks), the verdict, one
/// line of detail and, when not ok, what to do about it.
///
/// ```
/// use percolator_cli::commands::doctor::{Check, Verdict};
/// let c = Check::ok("gateway", "answers").warn_if(true, "slow", "look at it");
/// assert_eq!((c.verdict, c.fix.as_deref()), (Verdict::Warn, Some("look at it")));
/// ```
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub check: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    pub verdict: Verdict,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check {
            check,
            table: None,
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn fail(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            verdict: Verdict::Fail,
            fix: Some(fix.into()),
            ..Check::ok(check, detail)
        }
    }

    pub fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            verdict: Verdict::Warn,
            ..Check::fail(check, detail, fix)
        }
    }

    pub fn skip(check: &'static str, why: impl Into<String>) -> Check {
        Check {
            verdict: Verdict::Skip,
            ..Check::ok(check, why)
        }
    }

    /// This check, about `table`.
    pub fn on(mut self, table: &str) -> Check {
        self.table = Some(table.to_string());
        self
    }

    /// This check turned into a warning when `cond` holds (a fail stays a fail).
    pub fn warn_if(self, cond: bool, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        if cond && self.verdict < Verdict::Warn {
            Check {
                table: self.table,
                ..Check::warn(self.check, detail, fix)
            }
        } else {
            self
        }
    }
}

/// Every check's outcome, in the order run.
///
/// ```
/// use percolator_cli::commands::doctor::{Check, Report, Verdict};
/// let report = Report { checks: vec![Check::ok("a", "fine"), Check::warn("b", "hm", "x")] };
/// assert_eq!(report.verdict(), Verdict::Warn);
/// assert!(report.passed(), "warnings do not fail the run");
/// ```
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// The worst verdict of all.
    pub fn verdict(&self) -> Verdict {
        self.checks
            .iter()
            .map(|c| c.verdict)
            .max()
            .unwrap_or(Verdict::Ok)
    }

    /// Whether no check failed (the exit status is 0 then, 1 otherwise).
    pub fn passed(&self) -> bool {
        self.verdict() < Verdict::Fail
    }

    /// The report as one JSON value: the overall verdict and every check.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "verdict": self.verdict(), "checks": self.checks })
    }

    /// The report as text: a line per check, and what to do under those that are not ok.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let name = match &c.table {
                Some(t) => format!("{} {t}", c.check),
                None => c.check.to_string(),
            };
            out.push_str(&format!("{:<5} {name}: {}\n", c.verdict.label(), c.detail));
            if let Some(fix) = &c.fix {
                out.push_str(&format!("      fix: {fix}\n"));
            }
        }
        let (fails, warns) = (self.count(Verdict::Fail), self.count(Verdict::Warn));
        out.push_str(&match (fails, warns) {
            (0, 0) => "every check passed".to_string(),
            (0, w) => format!("no check failed; {w} warning(s)"),
            (f, w) => format!("{f} check(s) failed, {w} warning(s)"),
        });
        out
    }

    fn count(&self, verdict: Verdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == verdict).count()
    }
}
