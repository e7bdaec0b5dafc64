//! Prometheus text as a scraper reads it: a sample's value, and a command's `/metrics`
//! scraped over HTTP while it runs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

/// The value of the sample `series` (a name, with its labels as rendered) in `text`.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

pub fn at_least(text: &str, series: &str, min: f64) {
    let value = sample(text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"));
    assert!(value >= min, "{series} is {value}, expected at least {min}");
}

/// A free port on the loopback (bound and released: the child binds it next).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GETs `path` and returns the status line and the body.
pub fn scrape(port: u16, path: &str) -> Option<(String, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// Scrapes until `done` holds of the text, for at most a minute.
pub fn scrape_until(port: u16, child: &mut Child, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((_, body)) = scrape(port, "/metrics")
            && done(&body)
        {
            return body;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the command exited before its metrics showed"
        );
        assert!(Instant::now() < deadline, "metrics never showed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process, killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
