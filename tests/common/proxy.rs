//! A TCP proxy in front of a gateway that can lose replies, stall them, or cut every
//! connection, to test the client's handling of failures it cannot cause on a healthy server.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};

struct Shared {
    upstream: SocketAddr,
    stopping: AtomicBool,
    /// Replies to relay before one is lost; negative: none is.
    lose_in: AtomicIsize,
    /// Replies lost so far.
    lost: AtomicUsize,
    paused: Mutex<bool>,
    resumed: Condvar,
    accepted: AtomicUsize,
    /// Bytes forwarded from clients to the gateway.
    request_bytes: AtomicUsize,
    sockets: Mutex<Vec<TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    /// A proxy in front of the gateway at `upstream`: `host:port`, or a URL (`https://h:p/`),
    /// whose host and port it forwards to (TLS and HTTP pass through it untouched).
    pub fn start(upstream: &str) -> Proxy {
        let upstream = &percolator::hbase::Endpoint::parse_list(upstream)
            .unwrap_or_else(|e| panic!("upstream {upstream}: {e}"))[0]
            .authority();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let shared = Arc::new(Shared {
            upstream: upstream
                .to_socket_addrs()
                .ok()
                .and_then(|mut addrs| addrs.next())
                .unwrap_or_else(|| panic!("upstream {upstream} is not host:port")),
            stopping: AtomicBool::new(false),
            lose_in: AtomicIsize::new(-1),
            lost: AtomicUsize::new(0),
            paused: Mutex::new(false),
            resumed: Condvar::new(),
            accepted: AtomicUsize::new(0),
            request_bytes: AtomicUsize::new(0),
            sockets: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
        });
        let accept = {
            let shared = shared.clone();
            thread::spawn(move || accept_loop(&listener, &shared))
        };
        Proxy {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// The proxy's address in the form of `gateway` (the address it stands in front of): the
    /// same scheme, so a client speaks to it as to the gateway.
    pub fn addr_like(&self, gateway: &str) -> String {
        match gateway.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://{}/", self.addr),
            None => self.addr(),
        }
    }

    /// The next reply from the gateway is swallowed and its connection closed: the request
    /// was served, the client never hears back.
    pub fn lose_next_reply(&self) {
        self.lose_reply_after(0);
    }

    /// Relays `n` more replies (counted across connections, as they are read from the
    /// gateway: replies that arrive together count once), then loses the next one the way
    /// [`Proxy::lose_next_reply`] does.
    pub fn lose_reply_after(&self, n: usize) {
        let n = isize::try_from(n).expect("a sane count");
        self.shared.lose_in.store(n, Ordering::SeqCst);
    }

    /// Disarms [`Proxy::lose_reply_after`] if it has not fired yet.
    pub fn lose_no_reply(&self) {
        self.shared.lose_in.store(-1, Ordering::SeqCst);
    }

    /// Replies lost so far.
    pub fn lost(&self) -> usize {
        self.shared.lost.load(Ordering::SeqCst)
    }

    /// Holds every reply until [`Proxy::resume`].
    pub fn pause(&self) {
        *self.shared.paused.lock().unwrap() = true;
    }

    pub fn resume(&self) {
        *self.shared.paused.lock().unwrap() = false;
        self.shared.resumed.notify_all();
    }

    /// Closes every proxied connection, as a gateway dropping idle connections does.
    pub fn sever_all(&self) {
        for socket in self.shared.sockets.lock().unwrap().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }

    /// Client connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Bytes of requests forwarded to the gateway so far, once they stopped growing for 50 ms
    /// (what a client wrote may still be on its way through the proxy).
    pub fn request_bytes(&self) -> usize {
        let mut seen = self.shared.request_bytes.load(Ordering::SeqCst);
        loop {
            thread::sleep(std::time::Duration::from_millis(50));
            let now = self.shared.request_bytes.load(Ordering::SeqCst);
            if now == seen {
                return now;
            }
            seen = now;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.resume();
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        self.sever_all();
        for t in self.shared.threads.lock().unwrap().drain(..) {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(shared.upstream) else {
            continue;
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let clones = (client.try_clone(), server.try_clone());
        let (Ok(client2), Ok(server2)) = clones else {
            continue;
        };
        shared.sockets.lock().unwrap().extend(
            [client.try_clone(), server.try_clone()]
                .into_iter()
                .flatten(),
        );
        let requests = {
            let shared = shared.clone();
            thread::spawn(move || pump_requests(client, server, &shared))
        };
        let replies = {
            let shared = shared.clone();
            thread::spawn(move || pump_replies(server2, client2, &shared))
        };
        shared.threads.lock().unwrap().extend([requests, replies]);
    }
}

fn pump_requests(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
        shared.request_bytes.fetch_add(n, Ordering::SeqCst);
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn pump_replies(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        {
            let mut paused = shared.paused.lock().unwrap();
            while *paused {
                paused = shared.resumed.wait(paused).unwrap();
            }
        }
        // Counts this reply down; the one that finds the count at zero is lost.
        let armed = shared
            .lose_in
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n >= 0).then_some(n - 1)
            });
        if armed == Ok(0) {
            shared.lost.fetch_add(1, Ordering::SeqCst);
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}
