//! The paced loop's one timer, for the earliest reply due. A poll's own timeout counts in whole
//! milliseconds, too coarse for a service time of one; on Linux a timerfd, which the poll
//! watches beside the sockets, wakes the loop to the microsecond. Elsewhere the poll's timeout
//! is used, so replies there may leave up to a millisecond late.

use std::io;
use std::time::{Duration, Instant};

use mio::{Registry, Token};

pub(crate) struct Timer {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// When the timerfd is set to fire, if it is.
    #[cfg(target_os = "linux")]
    armed: Option<Instant>,
}

#[cfg(target_os = "linux")]
impl Timer {
    pub fn new(registry: &Registry, token: Token) -> io::Result<Timer> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: timerfd_create takes no pointers; a valid descriptor is owned from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` was just created and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        registry.register(
            &mut mio::unix::SourceFd(&fd.as_raw_fd()),
            token,
            mio::Interest::READABLE,
        )?;
        Ok(Timer { fd, armed: None })
    }

    /// Sets the timer to fire at `at` (or not at all); returns how long the poll may wait at
    /// most: zero when `at` has passed, otherwise no limit (the timerfd wakes it).
    pub fn arm(&mut self, at: Option<Instant>) -> Option<Duration> {
        if at == self.armed {
            return None;
        }
        let wait = match at {
            Some(at) => {
                let wait = at.saturating_duration_since(Instant::now());
                if wait.is_zero() {
                    return Some(Duration::ZERO);
                }
                wait
            }
            None => Duration::ZERO,
        };
        // A zero it_value disarms the timer.
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: wait.subsec_nanos() as libc::c_long,
            },
        };
        if let Err(e) = self.settime(&spec) {
            // Without the timer the poll's own (coarser) timeout still wakes the loop.
            tracing::warn!(error = %e, "timerfd_settime failed");
            self.armed = None;
            return at.map(|_| wait);
        }
        self.armed = at;
        None
    }

    fn settime(&self, spec: &libc::itimerspec) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: both pointers are valid for the call; the old value is not asked for.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Takes note that the timer fired.
    pub fn clear(&mut self) {
        use std::os::fd::AsRawFd;
        let mut ticks = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a buffer of 8. A nonblocking read of a timer
        // that has not fired fails with EAGAIN, which is harmless.
        unsafe {
            libc::read(self.fd.as_raw_fd(), ticks.as_mut_ptr().cast(), ticks.len());
        }
        self.armed = None;
    }
}

#[cfg(not(target_os = "linux"))]
impl Timer {
    pub fn new(_registry: &Registry, _token: Token) -> io::Result<Timer> {
        Ok(Timer {})
    }

    /// Returns how long the poll may wait for `at`.
    pub fn arm(&mut self, at: Option<Instant>) -> Option<Duration> {
        at.map(|at| at.saturating_duration_since(Instant::now()))
    }

    pub fn clear(&mut self) {}
}
