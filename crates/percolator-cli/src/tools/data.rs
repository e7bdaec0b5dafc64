//! How the data commands name columns and show values. A value is shown as text when it is
//! valid UTF-8; other bytes as `0x` and lowercase hex in text output, and as
//! `{"hex": "..."}` in JSON, so that a script can tell them apart from a string.

/// Splits `FAMILY:QUALIFIER` at its first colon (the qualifier may contain colons).
///
/// ```
/// assert_eq!(percolator_cli::tools::parse_column("f:a:b")?, (b"f".to_vec(), b"a:b".to_vec()));
/// assert!(percolator_cli::tools::parse_column("f").is_err());
/// # Ok::<(), percolator::Error>(())
/// ```
pub fn parse_column(column: &str) -> percolator::Result<(Vec<u8>, Vec<u8>)> {
    match column.split_once(':') {
        Some((family, qualifier)) if !family.is_empty() => {
            Ok((family.as_bytes().to_vec(), qualifier.as_bytes().to_vec()))
        }
        _ => Err(percolator::Error::IllegalArgument {
            message: format!("column {column:?} must be FAMILY:QUALIFIER"),
        }),
    }
}

/// A value in JSON: a string when valid UTF-8, else `{"hex": "..."}`.
///
/// ```
/// use percolator_cli::tools::value_json;
/// assert_eq!(value_json(b"10"), serde_json::json!("10"));
/// assert_eq!(value_json(&[0xff, 0x00]), serde_json::json!({"hex": "ff00"}));
/// ```
pub fn value_json(value: &[u8]) -> serde_json::Value {
    match std::str::from_utf8(value) {
        Ok(s) => serde_json::Value::String(s.to_string()),
        Err(_) => serde_json::json!({ "hex": hex(value) }),
    }
}

/// A value as text: itself when valid UTF-8, else `0x` and hex.
///
/// ```
/// assert_eq!(percolator_cli::tools::render_value(&[0xff]), "0xff");
/// assert_eq!(percolator_cli::tools::render_value(b"ok"), "ok");
/// ```
pub fn render_value(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(s) => s.to_string(),
        Err(_) => format!("0x{}", hex(value)),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The row range `[start, stop)` of a scan given a prefix or bounds (a prefix wins).
///
/// ```
/// use percolator_cli::tools::scan_range;
/// assert_eq!(scan_range(Some("ab"), None, None), (b"ab".to_vec(), b"ac".to_vec()));
/// assert_eq!(scan_range(None, Some("a"), None), (b"a".to_vec(), Vec::new()));
/// ```
pub fn scan_range(
    prefix: Option<&str>,
    start: Option<&str>,
    stop: Option<&str>,
) -> (Vec<u8>, Vec<u8>) {
    if let Some(p) = prefix {
        let scan = percolator::hbase::Scan::prefix(p);
        return (scan.start_row, scan.stop_row);
    }
    (
        start.unwrap_or_default().as_bytes().to_vec(),
        stop.unwrap_or_default().as_bytes().to_vec(),
    )
}
