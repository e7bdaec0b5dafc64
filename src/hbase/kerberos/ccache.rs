//! When an expired ticket expired: GSSAPI only says "lifetime 0", so for a `FILE:` ticket
//! cache the time is read from the file itself (MIT's ccache format, versions 3 and 4; see
//! MIT's "ccache file format" documentation). Only the principals and times are looked at;
//! keys and tickets are skipped over, never copied out.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The file a ticket cache name refers to, if it is a file cache: the configured name, else
/// `KRB5CCNAME`, else MIT's default `/tmp/krb5cc_<uid>`.
pub(super) fn file_of(ccache: Option<&str>) -> Option<std::path::PathBuf> {
    let name = match ccache {
        Some(name) => name.to_owned(),
        None => std::env::var("KRB5CCNAME")
            .unwrap_or_else(|_| format!("FILE:/tmp/krb5cc_{}", super::gss::current_uid())),
    };
    match name.split_once(':') {
        Some(("FILE", path)) => Some(path.into()),
        Some(_) => None,
        None => Some(name.into()),
    }
}

/// The cache's default principal and the end time of its ticket-granting ticket (or, with
/// none, the latest end time of any ticket). None if the file is unreadable or malformed.
pub(super) fn tgt_end_time(path: &std::path::Path) -> Option<(String, SystemTime)> {
    let bytes = std::fs::read(path).ok()?;
    let (principal, secs) = parse_tgt_end(&bytes)?;
    Some((principal, UNIX_EPOCH + Duration::from_secs(u64::from(secs))))
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn data(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()?;
        self.take(usize::try_from(n).ok()?)
    }
    /// A principal as "c1/c2@REALM".
    fn principal(&mut self) -> Option<String> {
        let _name_type = self.u32()?;
        let count = self.u32()?;
        let realm = String::from_utf8_lossy(self.data()?).into_owned();
        let mut parts = Vec::new();
        for _ in 0..count {
            parts.push(String::from_utf8_lossy(self.data()?).into_owned());
        }
        Some(format!("{}@{realm}", parts.join("/")))
    }
    fn skip_counted(&mut self) -> Option<()> {
        let count = self.u32()?;
        for _ in 0..count {
            self.u16()?;
            self.data()?;
        }
        Some(())
    }
}

fn parse_tgt_end(bytes: &[u8]) -> Option<(String, u32)> {
    let mut r = Reader { bytes };
    let version = r.u16()?;
    match version {
        0x0504 => {
            let len = r.u16()?;
            r.take(usize::from(len))?;
        }
        0x0503 => {}
        _ => return None,
    }
    let default = r.principal()?;
    let realm = default
        .rsplit_once('@')
        .map(|(_, realm)| realm.to_owned())
        .unwrap_or_default();
    let tgt = format!("krbtgt/{realm}@{realm}");
    let mut latest = None;
    while !r.bytes.is_empty() {
        let client = r.principal()?;
        let server = r.principal()?;
        r.u16()?; // enctype
        if version == 0x0503 {
            r.u16()?;
        }
        r.data()?; // key: skipped
        let _authtime = r.u32()?;
        let _starttime = r.u32()?;
        let endtime = r.u32()?;
        let _renew_till = r.u32()?;
        r.take(1)?; // is_skey
        r.u32()?; // flags
        r.skip_counted()?; // addresses
        r.skip_counted()?; // authdata
        r.data()?; // ticket: skipped
        r.data()?; // second ticket
        if server.contains("X-CACHECONF:") {
            continue;
        }
        if client == default && server == tgt {
            return Some((default, endtime));
        }
        latest = latest.max(Some(endtime));
    }
    latest.map(|end| (default, end))
}

/// A time as "2026-11-26 20:18:44 UTC".
pub(super) fn format_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(out: &mut Vec<u8>, realm: &str, parts: &[&str]) {
        out.extend_from_slice(&1u32.to_be_bytes());
        out.extend_from_slice(&(parts.len() as u32).to_be_bytes());
        for s in std::iter::once(&realm).chain(parts) {
            out.extend_from_slice(&(s.len() as u32).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }

    fn cred(out: &mut Vec<u8>, server: &[&str], end: u32) {
        principal(out, "R", &["me"]);
        principal(out, "R", server);
        out.extend_from_slice(&18u16.to_be_bytes());
        out.extend_from_slice(&4u32.to_be_bytes());
        out.extend_from_slice(b"KEY!");
        for t in [1, 2, end, 4] {
            out.extend_from_slice(&u32::to_be_bytes(t));
        }
        out.push(0);
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&3u32.to_be_bytes());
        out.extend_from_slice(b"TKT");
        out.extend_from_slice(&0u32.to_be_bytes());
    }

    #[test]
    fn finds_the_tgt_end_time() {
        let mut file = vec![5, 4, 0, 0];
        principal(&mut file, "R", &["me"]);
        cred(&mut file, &["hbase", "gw"], 50);
        cred(&mut file, &["krbtgt", "R"], 1_000);
        assert_eq!(parse_tgt_end(&file), Some(("me@R".to_owned(), 1_000)));
        // Every truncation is None or a value, never a panic.
        for n in 0..file.len() {
            let _ = parse_tgt_end(&file[..n]);
        }
        assert_eq!(parse_tgt_end(&[5, 1, 0]), None);
    }

    #[test]
    fn formats_utc() {
        assert_eq!(format_utc(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            format_utc(UNIX_EPOCH + Duration::from_secs(1_795_724_324)),
            "2026-11-26 20:18:44 UTC"
        );
    }

    #[test]
    fn file_names() {
        assert_eq!(file_of(Some("FILE:/x/y")), Some("/x/y".into()));
        assert_eq!(file_of(Some("/x/y")), Some("/x/y".into()));
        assert_eq!(file_of(Some("MEMORY:a")), None);
    }
}
