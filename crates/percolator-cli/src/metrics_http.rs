//! `--metrics-listen ADDR`: the library's metrics (`percolator::metrics`) as Prometheus text
//! over HTTP, for a command that runs long (the oracle, `gc`, the demos, the bench).
//!
//! The endpoint is a small blocking HTTP/1.1 server on a thread of its own: a scrape every few
//! seconds needs nothing more, and it keeps the exporter out of the runtime the work runs on.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use percolator::{Error, Result};

/// Latency buckets for every `_seconds` histogram: 100 us to 30 s, about three per decade.
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
    10.0, 30.0,
];

/// A scraper gets this long to send its request and read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs the Prometheus recorder for this process and serves it on `addr` (port 0: any);
/// returns the bound address. Call it once, before the work starts.
pub fn serve(addr: &str) -> Result<SocketAddr> {
    let handle = install()?;
    let listener = TcpListener::bind(addr)
        .map_err(|e| Error::io(format!("binding --metrics-listen {addr}"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::io("reading the metrics address", e))?;
    std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(stream) => {
                        if let Err(e) = answer(stream, &handle) {
                            tracing::debug!(error = %e, "metrics scrape failed");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "metrics accept failed"),
                }
            }
        })
        .map_err(|e| Error::io("spawning the metrics thread", e))?;
    eprintln!("metrics on http://{local}/metrics");
    Ok(local)
}

/// Installs the recorder and describes the library's metrics.
pub fn install() -> Result<PrometheusHandle> {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .map_err(|e| Error::IllegalArgument {
            message: format!("metrics buckets: {e}"),
        })?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|e| Error::IllegalArgument {
        message: format!("a metrics recorder is installed already: {e}"),
    })?;
    percolator::metrics::describe();
    Ok(handle)
}

/// Reads one request's head and answers it: the text at `/metrics` (and `/`), 404 elsewhere.
fn answer(stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The rest of the head is not needed, but is read so the peer sees an orderly close.
    let mut line = String::new();
    for _ in 0..100 {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path {
        "/metrics" | "/" => {
            handle.run_upkeep();
            ("200 OK", handle.render())
        }
        _ => ("404 Not Found", "not found; try /metrics\n".to_string()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
