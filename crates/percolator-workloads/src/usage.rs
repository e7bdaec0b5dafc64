//! What a bench turn cost this process: CPU time and context switches, and the part of the CPU
//! the in-process gateway's threads spent; and what it cost the gateway's process when that is
//! another one on this machine (a real HBase, or the cluster profile's emulator).
//!
//! The gateway's share answers a question the whole-process figure cannot: how much of an
//! operation's cost is the emulated HBase's, which no client can remove. The emulator names its
//! threads `hbase-emu-*`; their time on the CPU is read from `/proc/self/task/*/schedstat`
//! (nanoseconds). Where that file does not exist (not Linux) the share is unknown.

use std::collections::HashMap;
use std::path::Path;

/// The prefix of every thread the in-process emulator starts.
const GATEWAY_THREADS: &str = "hbase-emu";

/// CPU time and context switches of this process so far, and the CPU time of each gateway
/// thread (by thread id).
#[derive(Clone)]
pub(crate) struct Usage {
    pub cpu_us: f64,
    pub switches: f64,
    gateway_ns: Option<HashMap<u32, u64>>,
}

impl Usage {
    pub fn now() -> Usage {
        // SAFETY: getrusage only writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
        Usage {
            cpu_us: us(ru.ru_utime) + us(ru.ru_stime),
            switches: (ru.ru_nvcsw + ru.ru_nivcsw) as f64,
            gateway_ns: threads_cpu_ns(Path::new("/proc/self/task"), GATEWAY_THREADS),
        }
    }

    /// CPU time the gateway's threads spent since `before`, in microseconds; `None` when it
    /// could not be read, or when no gateway thread runs in this process (a gateway elsewhere).
    /// A thread that ended in between loses its last moments, one that started counts whole.
    pub fn gateway_us_since(&self, before: &Usage) -> Option<f64> {
        threads_us_since(self.gateway_ns.as_ref()?, before.gateway_ns.as_ref()?)
    }
}

/// The gateway's process, when it is another one on this machine: its pid, and the prefix of
/// the names of the threads that serve the Thrift gateway in it (HBase's `thrift-worker-N` and
/// `thrift2-gateway`; the emulator's `hbase-emu-*`).
#[derive(Clone, Debug)]
pub struct ServerProcess {
    pub pid: u32,
    pub gateway_threads: &'static str,
}

/// The Thrift threads of a real HBase's gateway.
pub const HBASE_GATEWAY_THREADS: &str = "thrift";
/// The threads of an emulator in a process of its own.
pub const EMULATOR_THREADS: &str = GATEWAY_THREADS;

/// The CPU time of a server process so far, and of each of its gateway threads.
#[derive(Clone)]
pub(crate) struct ServerUsage {
    cpu_us: Option<f64>,
    gateway_ns: Option<HashMap<u32, u64>>,
}

impl ServerUsage {
    pub fn now(server: &ServerProcess) -> ServerUsage {
        let task_dir = format!("/proc/{}/task", server.pid);
        ServerUsage {
            cpu_us: process_cpu_us(server.pid),
            gateway_ns: threads_cpu_ns(Path::new(&task_dir), server.gateway_threads),
        }
    }

    /// The process's CPU time since `before`, in microseconds, and its gateway threads' part.
    pub fn since(&self, before: &ServerUsage) -> (Option<f64>, Option<f64>) {
        let cpu = self.cpu_us.zip(before.cpu_us).map(|(now, then)| now - then);
        let gateway = self
            .gateway_ns
            .as_ref()
            .zip(before.gateway_ns.as_ref())
            .and_then(|(now, then)| threads_us_since(now, then));
        (cpu, gateway)
    }
}

/// The CPU time of process `pid` so far (user and system, of every thread it ever ran), from
/// `/proc/PID/stat`; `None` when it cannot be read.
fn process_cpu_us(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields count from after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let (utime, stime) = (ticks(11)?, ticks(12)?);
    // SAFETY: sysconf reads a constant of the system.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_s > 0).then(|| (utime + stime) * 1e6 / per_s as f64)
}

/// The CPU time the threads of `now` spent since `then` (by thread id), in microseconds;
/// `None` when there is no such thread. A thread that ended in between loses its last
/// moments, one that started counts whole.
fn threads_us_since(now: &HashMap<u32, u64>, then: &HashMap<u32, u64>) -> Option<f64> {
    if now.is_empty() {
        return None;
    }
    let ns: u64 = now
        .iter()
        .map(|(tid, ns)| ns.saturating_sub(then.get(tid).copied().unwrap_or(0)))
        .sum();
    Some(ns as f64 / 1e3)
}

/// Time on the CPU of each thread under `task_dir` whose name starts with `prefix`, by thread
/// id; `None` if the directory cannot be read. Threads that end while it is read are skipped.
fn threads_cpu_ns(task_dir: &Path, prefix: &str) -> Option<HashMap<u32, u64>> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir(task_dir).ok()?.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let path = entry.path();
        let Ok(name) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        if !name.starts_with(prefix) {
            continue;
        }
        let Ok(schedstat) = std::fs::read_to_string(path.join("schedstat")) else {
            continue;
        };
        // "<ns on the cpu> <ns waiting to run> <timeslices>"
        if let Some(ns) = schedstat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse().ok())
        {
            out.insert(tid, ns);
        }
    }
    Some(out)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Starts a thread named `name` that keeps a core busy until the returned flag is cleared.
    fn spin(name: &str) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
        let running = Arc::new(AtomicBool::new(true));
        let flag = running.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while flag.load(Ordering::Relaxed) {
                    std::hint::black_box(0u64);
                }
            })
            .unwrap();
        (running, handle)
    }

    #[test]
    fn a_server_process_is_measured_whole_and_by_its_gateway_threads() {
        let server = ServerProcess {
            pid: std::process::id(),
            gateway_threads: "gw-server-test",
        };
        let before = ServerUsage::now(&server);
        let gateway = spin("gw-server-test");
        std::thread::sleep(Duration::from_millis(300));
        let after = ServerUsage::now(&server);
        gateway.0.store(false, Ordering::Relaxed);
        gateway.1.join().unwrap();
        let (cpu, gateway) = after.since(&before);
        let (cpu, gateway) = (cpu.expect("process cpu"), gateway.expect("gateway threads"));
        assert!(
            gateway > 100_000.0,
            "the spinning thread ran most of 300 ms: {gateway} us"
        );
        // The process's figure counts in clock ticks (10 ms): it holds the thread's time.
        assert!(
            cpu + 20_000.0 >= gateway,
            "the process {cpu} us holds its thread's {gateway} us"
        );
    }

    #[test]
    fn counts_the_cpu_of_gateway_threads_only() {
        let task_dir = Path::new("/proc/self/task");
        let gateway = spin("hbase-emu-test");
        let other = spin("other-test");
        let before = threads_cpu_ns(task_dir, "hbase-emu-test").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let after = threads_cpu_ns(task_dir, "hbase-emu-test").unwrap();
        for (running, handle) in [gateway, other] {
            running.store(false, Ordering::Relaxed);
            handle.join().unwrap();
        }
        assert_eq!(after.len(), 1, "exactly the one gateway thread: {after:?}");
        let (tid, ns) = after.iter().next().unwrap();
        assert!(ns > before.get(tid).unwrap_or(&0), "its CPU time grew");
    }

    /// The emulator's threads carry the prefix, so its work is what the share counts.
    #[test]
    fn the_emulators_work_is_counted_as_the_gateways() {
        let emulator = hbase_emulator::start_local().unwrap();
        let config = percolator::hbase::HBaseConfig::new(emulator.local_addr().to_string());
        let client = percolator::hbase::HBaseClient::connect(config).unwrap();
        let before = Usage::now();
        for _ in 0..200 {
            client.admin().list_namespaces().unwrap();
        }
        let after = Usage::now();
        let gateway = after.gateway_us_since(&before).expect("gateway threads");
        assert!(gateway > 0.0, "the emulator served 200 calls");
        assert!(
            gateway < after.cpu_us - before.cpu_us,
            "part of the process's CPU: {gateway} us"
        );
    }

    #[test]
    fn the_share_is_unknown_without_gateway_threads() {
        let before = Usage {
            cpu_us: 0.0,
            switches: 0.0,
            gateway_ns: Some(HashMap::new()),
        };
        assert_eq!(before.clone().gateway_us_since(&before), None);
        let unreadable = Usage {
            gateway_ns: None,
            ..before.clone()
        };
        assert_eq!(unreadable.gateway_us_since(&before), None);
    }

    #[test]
    fn a_thread_started_in_between_counts_whole_and_an_ended_one_is_dropped() {
        let usage = |threads: &[(u32, u64)]| Usage {
            cpu_us: 0.0,
            switches: 0.0,
            gateway_ns: Some(threads.iter().copied().collect()),
        };
        let before = usage(&[(1, 1_000), (2, 5_000)]);
        let after = usage(&[(1, 4_000), (3, 2_000)]);
        assert_eq!(after.gateway_us_since(&before), Some(5.0));
    }
}
