//! Where the gateways are: the address list of [`HBaseConfig::addr`](super::HBaseConfig), parsed.
//!
//! An address is `host:port` (a raw Thrift socket), `http://host:port[/path]` (the gateway in
//! HTTP mode) or `https://host:port[/path]` (HTTP mode over TLS). Several gateways are given as
//! a comma-separated list; an entry without a scheme takes the one before it, so
//! `https://gw1:9090,gw2:9090` is two HTTPS gateways. IPv6 hosts are written in brackets.

use std::fmt;

use crate::Error;

/// How a gateway is spoken to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Thrift on a raw TCP socket (the gateway's default).
    Tcp,
    /// Thrift messages as HTTP POST bodies (`hbase.regionserver.thrift.http=true`).
    Http,
    /// HTTP mode over TLS (`hbase.thrift.ssl.enabled=true`).
    Https,
}

/// One gateway of the list.
///
/// ```
/// use percolator::hbase::{Endpoint, Scheme};
/// let all = Endpoint::parse_list("https://gw1:9090,gw2:9443/thrift").unwrap();
/// assert_eq!(all[1].scheme, Scheme::Https);
/// assert_eq!((all[1].host.as_str(), all[1].port, all[1].path.as_str()), ("gw2", 9443, "/thrift"));
/// assert_eq!(all[0].to_string(), "https://gw1:9090/");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub scheme: Scheme,
    /// The host name or address, without brackets.
    pub host: String,
    pub port: u16,
    /// The HTTP path requests are posted to (`/` unless given); unused on a raw socket.
    pub path: String,
}

impl Endpoint {
    /// Parses a comma-separated list of gateway addresses (see the module docs).
    ///
    /// ```
    /// use percolator::hbase::Endpoint;
    /// let err = Endpoint::parse_list("http://gw").unwrap_err();
    /// assert!(err.to_string().contains("gateway address `http://gw` has no port"), "{err}");
    /// ```
    pub fn parse_list(list: &str) -> Result<Vec<Endpoint>, Error> {
        let mut scheme = Scheme::Tcp;
        let mut all = Vec::new();
        for entry in list.split(',').map(str::trim) {
            if entry.is_empty() {
                return Err(invalid(list, "an empty entry"));
            }
            let endpoint = Endpoint::parse(entry, scheme)?;
            scheme = endpoint.scheme;
            all.push(endpoint);
        }
        Ok(all)
    }

    /// One address; `inherited` is the scheme when it names none.
    fn parse(entry: &str, inherited: Scheme) -> Result<Endpoint, Error> {
        let (scheme, rest) = match entry.split_once("://") {
            Some((name, rest)) => {
                let scheme = match name.to_ascii_lowercase().as_str() {
                    "http" => Scheme::Http,
                    "https" => Scheme::Https,
                    "tcp" | "thrift" => Scheme::Tcp,
                    _ => {
                        return Err(invalid(
                            entry,
                            &format!("unknown scheme `{name}` (http, https, or none for TCP)"),
                        ))
                    }
                };
                (scheme, rest)
            }
            None => (inherited, entry),
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        if scheme == Scheme::Tcp && path != "/" {
            return Err(invalid(entry, "a path, which only HTTP gateways take"));
        }
        if let Some((_, host)) = authority.rsplit_once('@') {
            // Credentials in an address would end up in logs and error messages: not even
            // this one repeats them.
            let shown = format!("{}…@{host}", &entry[..entry.len() - rest.len()]);
            return Err(invalid(
                &shown,
                "credentials; give them as Kerberos settings, never in the address",
            ));
        }
        let (host, port) = split_port(authority).ok_or_else(|| invalid(entry, "no port"))?;
        if host.is_empty() {
            return Err(invalid(entry, "no host"));
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| invalid(entry, &format!("port `{port}`, which is not 1-65535")))?;
        Ok(Endpoint {
            scheme,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    /// `host:port`, as a socket address is looked up (IPv6 hosts in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Whether the gateway is spoken to over HTTP (with or without TLS).
    pub fn is_http(&self) -> bool {
        self.scheme != Scheme::Tcp
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scheme {
            Scheme::Tcp => f.write_str(&self.authority()),
            Scheme::Http => write!(f, "http://{}{}", self.authority(), self.path),
            Scheme::Https => write!(f, "https://{}{}", self.authority(), self.path),
        }
    }
}

/// `host` and `port` of `host:port` or `[v6]:port`.
fn split_port(authority: &str) -> Option<(&str, &str)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return Some((host, after.strip_prefix(':')?));
    }
    authority.rsplit_once(':')
}

fn invalid(entry: &str, what: &str) -> Error {
    Error::IllegalArgument {
        message: format!("gateway address `{entry}` has {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(entry: &str) -> Endpoint {
        let mut all = Endpoint::parse_list(entry).unwrap();
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn a_bare_address_is_a_raw_socket() {
        let e = one("gw.example.com:9090");
        assert_eq!(e.scheme, Scheme::Tcp);
        assert_eq!(e.authority(), "gw.example.com:9090");
        assert_eq!(e.to_string(), "gw.example.com:9090");
    }

    #[test]
    fn urls_name_http_and_https_with_a_path() {
        let e = one("HTTP://127.0.0.1:9090");
        assert_eq!((e.scheme, e.path.as_str()), (Scheme::Http, "/"));
        let e = one("https://[::1]:9443/thrift");
        assert_eq!((e.scheme, e.host.as_str()), (Scheme::Https, "::1"));
        assert_eq!(e.authority(), "[::1]:9443");
        assert_eq!(e.to_string(), "https://[::1]:9443/thrift");
    }

    #[test]
    fn a_list_inherits_the_scheme_before_each_entry() {
        let all = Endpoint::parse_list("h1:1, https://h2:2,h3:3").unwrap();
        let schemes: Vec<_> = all.iter().map(|e| e.scheme).collect();
        assert_eq!(schemes, [Scheme::Tcp, Scheme::Https, Scheme::Https]);
    }

    #[test]
    fn bad_addresses_are_refused_with_what_is_wrong() {
        for (list, says) in [
            ("gw", "no port"),
            ("gw:0", "not 1-65535"),
            ("gw:99999", "not 1-65535"),
            ("gw:x", "not 1-65535"),
            (":9090", "no host"),
            ("ftp://gw:1", "unknown scheme"),
            ("gw:1/path", "only HTTP gateways"),
            ("h1:1,,h2:2", "an empty entry"),
            ("http://user:secret@gw:1", "credentials"),
            ("[::1:9090", "no port"),
        ] {
            let err = Endpoint::parse_list(list).unwrap_err().to_string();
            assert!(err.contains(says), "{list}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }
}
