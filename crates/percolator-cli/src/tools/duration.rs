//! The one grammar of every duration flag (`--timeout`, `--life-time`, `--interval`,
//! `--max-skew`, ...): a number, whole or decimal, with an optional unit `ms`, `s`, `m` or `h`
//! (a bare number is seconds): `5`, `5s`, `0.5`, `500ms`, `10m`, `1h`.

use std::time::Duration;

use percolator::{Error, Result};

/// The forms, for help texts and errors.
pub const FORMS: &str = "5, 5s, 0.5, 500ms, 10m, 1h";

/// `text` as a duration, or an error naming the forms it takes.
pub fn parse(text: &str) -> Result<Duration> {
    parse_flag(text).map_err(|message| Error::IllegalArgument { message })
}

/// As clap's value parser: the same grammar, its error as clap shows it.
pub fn parse_flag(text: &str) -> std::result::Result<Duration, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let bad = || format!("cannot read {text:?} as a duration (e.g. {FORMS})");
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(bad());
    }
    let n: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// As clap's value parser for flags kept in seconds (`--timeout`): the same grammar.
pub fn seconds(text: &str) -> std::result::Result<f64, String> {
    parse_flag(text).map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_the_same_way() {
        for (text, ms) in [
            ("5", 5_000),
            ("5s", 5_000),
            ("0.5", 500),
            ("1.5s", 1_500),
            ("500ms", 500),
            ("10m", 600_000),
            ("1h", 3_600_000),
            (" 30s ", 30_000),
        ] {
            assert_eq!(parse(text).unwrap(), Duration::from_millis(ms), "{text}");
        }
        assert_eq!(seconds("500ms").unwrap(), 0.5);
    }

    #[test]
    fn anything_else_is_refused_naming_the_forms() {
        for text in [
            "",
            "ten",
            "5d",
            "s",
            "-5",
            "1.",
            ".5",
            "5 5",
            "1e3",
            "99999999999999999999h",
        ] {
            let err = parse_flag(text).unwrap_err();
            assert!(
                err.contains("as a duration (e.g. 5, 5s, 0.5, 500ms, 10m, 1h)"),
                "{text}: {err}"
            );
        }
    }
}
