//! The accept loop, the registry of live connections, and shutdown.
//!
//! One thread accepts; each connection gets its own thread (no worker cap, like HBase's
//! thread-pool server with an unbounded pool), or, when calls cost a service time, goes to the
//! paced loop (`paced`). In HTTP mode every connection has its own thread (`http_conn`). Shutdown sets a flag, wakes the accept loop by connecting to it, then
//! shuts down every live socket (which ends their blocked reads), stops the paced loop and
//! joins every thread.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use parking_lot::Mutex;

use crate::conn::{serve_connection, ConnLimits};
use crate::handler::Handler;
use crate::http::HttpSettings;
use crate::http_conn::{serve_http_connection, HttpMode};
use crate::paced::PacedLoop;
use crate::EmulatorConfig;

/// How long the accept loop backs off after a failed accept (e.g. out of file descriptors).
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);
const WAKE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Connections {
    next_id: u64,
    /// A second handle on each live socket, to shut it down from outside.
    open: HashMap<u64, TcpStream>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    stopping: AtomicBool,
    connections: Mutex<Connections>,
    /// Serves every connection when calls have a service time (raw transport only).
    paced: Option<PacedLoop>,
    /// HTTP mode: each connection is served by `http_conn` instead.
    http: Option<HttpMode>,
}

/// A running emulator. Dropping it shuts it down too.
///
/// ```
/// let emu = hbase_emulator::start_local()?;
/// let addr = emu.local_addr();
/// drop(emu); // stops serving: the port no longer accepts
/// assert!(std::net::TcpStream::connect(addr).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct EmulatorHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

pub fn start(listener: TcpListener, config: EmulatorConfig) -> io::Result<EmulatorHandle> {
    if config.tls.is_some() && !config.http {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "TLS is served in HTTP mode only (set `http`), as HBase's Thrift gateway does",
        ));
    }
    if config.proxy_users.is_some() && !config.http {
        // As HBase warns when hbase.thrift.support.proxyuser is set without HTTP.
        tracing::warn!("proxy_users has no effect without HTTP mode (`http`)");
    }
    listener.set_nonblocking(false)?;
    let addr = listener.local_addr()?;
    let handler = Arc::new(Handler::new(&config, addr));
    let limits = ConnLimits {
        max_frame_bytes: config.max_frame_bytes,
        idle_timeout: config.idle_timeout,
    };
    let http = config.http.then(|| HttpMode {
        settings: HttpSettings {
            proxy_users: config.proxy_users.clone(),
        },
        tls: config.tls.clone(),
        service_time: config.service_time,
    });
    let paced = if config.service_time.is_zero() || http.is_some() {
        None
    } else {
        Some(PacedLoop::start(
            handler.clone(),
            limits,
            config.service_time,
        )?)
    };
    let shared = Arc::new(Shared {
        stopping: AtomicBool::new(false),
        connections: Mutex::new(Connections::default()),
        paced,
        http,
    });
    let accept = {
        let shared = shared.clone();
        thread::Builder::new()
            .name("hbase-emu-accept".into())
            .spawn(move || accept_loop(&listener, &handler, &shared, limits))?
    };
    tracing::info!(%addr, "HBase emulator listening (in-memory store)");
    Ok(EmulatorHandle {
        addr,
        shared,
        accept: Some(accept),
    })
}

fn accept_loop(
    listener: &TcpListener,
    handler: &Arc<Handler>,
    shared: &Arc<Shared>,
    limits: ConnLimits,
) {
    loop {
        let accepted = listener.accept();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, _)) => {
                if let Err(e) = spawn_connection(stream, handler, shared, limits) {
                    tracing::warn!(error = %e, "could not start a connection thread");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                thread::sleep(ACCEPT_ERROR_BACKOFF);
            }
        }
    }
}

fn spawn_connection(
    stream: TcpStream,
    handler: &Arc<Handler>,
    shared: &Arc<Shared>,
    limits: ConnLimits,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    if let Some(paced) = &shared.paced {
        return paced.add(stream);
    }
    stream.set_read_timeout(Some(limits.idle_timeout).filter(|t| !t.is_zero()))?;
    let control = stream.try_clone()?;
    let mut conns = shared.connections.lock();
    // Join threads that have finished, so the list does not grow with every connection.
    let (done, running): (Vec<_>, Vec<_>) = conns.threads.drain(..).partition(|t| t.is_finished());
    conns.threads = running;
    for t in done {
        let _ = t.join();
    }
    let id = conns.next_id;
    conns.next_id += 1;
    // Registered before the thread starts, so its own removal can never come first.
    conns.open.insert(id, control);
    let thread = {
        let handler = handler.clone();
        let shared = shared.clone();
        thread::Builder::new()
            .name(format!("hbase-emu-conn-{id}"))
            .spawn(move || {
                match &shared.http {
                    None => serve_connection(&handler, stream, limits),
                    Some(mode) => serve_http_connection(&handler, stream, limits, mode),
                }
                shared.connections.lock().open.remove(&id);
            })
    };
    match thread {
        Ok(t) => {
            conns.threads.push(t);
            Ok(())
        }
        Err(e) => {
            conns.open.remove(&id);
            Err(e)
        }
    }
}

impl EmulatorHandle {
    /// Where the emulator listens: the address to give a Thrift2 client.
    ///
    /// ```
    /// let emu = hbase_emulator::start_local()?;
    /// assert!(std::net::TcpStream::connect(emu.local_addr()).is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes every connection and joins all threads; all data is lost.
    ///
    /// ```
    /// use std::io::Read;
    /// let emu = hbase_emulator::start_local()?;
    /// let mut open = std::net::TcpStream::connect(emu.local_addr())?;
    /// emu.shutdown();
    /// assert_eq!(open.read(&mut [0u8; 1])?, 0, "open connections are closed");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        let wake = wake_address(self.addr);
        if let Err(e) = TcpStream::connect_timeout(&wake, WAKE_TIMEOUT) {
            tracing::error!(error = %e, %wake, "could not wake the accept loop");
        }
        if accept.join().is_err() {
            tracing::error!("accept loop panicked");
        }
        // The accept loop is gone, so every connection thread is registered by now.
        let (open, threads) = {
            let mut conns = self.shared.connections.lock();
            (
                std::mem::take(&mut conns.open),
                std::mem::take(&mut conns.threads),
            )
        };
        for stream in open.values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Replies still due are dropped with their connections.
        if let Some(paced) = &self.shared.paced {
            paced.stop();
        }
        for t in threads {
            let _ = t.join();
        }
        tracing::info!(addr = %self.addr, "HBase emulator stopped");
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A listener on the unspecified address is reached through loopback.
fn wake_address(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}
