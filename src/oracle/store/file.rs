//! Window top kept in a local file.
//!
//! Format (20 bytes): magic `PTSOWIN1`, the top as a big-endian u64, then a big-endian CRC-32
//! (IEEE) of the first 16 bytes. Each advance writes `PATH.tmp`, fsyncs it, renames it over
//! `PATH` and fsyncs the directory, so `PATH` always holds a complete, durable top: a crash at
//! any point leaves either the old or the new one. A file that is torn or corrupt anyway (disk
//! trouble, someone's editor) stops the oracle with an error naming the file: restarting from 0
//! could hand out timestamps already used. A missing file starts a new sequence.
//!
//! Exclusivity: an advisory `flock` on `PATH.lock`, held for the life of the store. The kernel
//! drops it when the process dies, so a restart after kill -9 claims at once.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Claim, WindowStore};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"PTSOWIN1";
const FILE_LEN: usize = 20;

/// The window top in a local file, held exclusively by one process: the store for a single
/// oracle (with no fail-over partner).
///
/// ```
/// use percolator::oracle::{FileStore, MemoryStore, OracleClient, OracleServer};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("window");
/// let oracle = OracleServer::start_local(FileStore::new(&path))?;
/// let client = OracleClient::connect(&[oracle.local_addr().to_string()], Default::default())?;
/// let ts = client.get_timestamp()?;
/// // A second oracle on the same file cannot claim it while the first holds it.
/// assert!(OracleServer::start_local(FileStore::new(&path)).is_err());
/// oracle.shutdown()?;
/// assert!(FileStore::read_top(&path)?.unwrap() >= ts);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    lock: Option<File>,
}

impl FileStore {
    /// A store at `path` (created on the first advance; its directory must exist). Nothing is
    /// opened until the oracle claims it.
    ///
    /// ```
    /// use percolator::oracle::{FileStore, WindowStore};
    /// let dir = tempfile::tempdir()?;
    /// let mut store = FileStore::new(dir.path().join("window"));
    /// assert_eq!(store.claim()?.top, 0, "a missing file starts a new sequence");
    /// store.advance(5)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore {
            path: path.into(),
            lock: None,
        }
    }

    /// Reads the persisted top without claiming: `None` if the file does not exist.
    ///
    /// ```
    /// use percolator::oracle::{FileStore, WindowStore};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("window");
    /// assert_eq!(FileStore::read_top(&path)?, None);
    /// let mut store = FileStore::new(&path);
    /// store.claim()?;
    /// store.advance(1_234)?;
    /// assert_eq!(FileStore::read_top(&path)?, Some(1_234));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_top(path: &Path) -> Result<Option<u64>> {
        match fs::read(path) {
            Ok(bytes) => decode(&bytes)
                .map(Some)
                .map_err(|reason| Error::OracleStore {
                    message: format!(
                        "window file {} is corrupt ({reason}); refusing to start, since \
                     starting over could repeat timestamps: restore the file or write a top \
                     above every timestamp ever served",
                        path.display()
                    ),
                }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(
                format!("reading window file {}", path.display()),
                e,
            )),
        }
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(suffix);
        PathBuf::from(name)
    }

    fn lock_exclusively(&self) -> Result<File> {
        let lock_path = self.sibling(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(format!("opening lock file {}", lock_path.display()), e))?;
        // SAFETY: flock on a descriptor we own; it touches no memory.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::WouldBlock {
                return Err(Error::OracleStore {
                    message: format!(
                        "window file {} is in use by another oracle process (it holds {})",
                        self.path.display(),
                        lock_path.display()
                    ),
                });
            }
            return Err(Error::io(format!("locking {}", lock_path.display()), err));
        }
        Ok(file)
    }
}

impl WindowStore for FileStore {
    fn claim(&mut self) -> Result<Claim> {
        let lock = self.lock_exclusively()?;
        let top = match Self::read_top(&self.path)? {
            Some(top) => top,
            None => {
                tracing::warn!(path = %self.path.display(), "no window file: starting a new timestamp sequence");
                0
            }
        };
        self.lock = Some(lock);
        Ok(Claim {
            top,
            wait: Duration::ZERO,
        })
    }

    fn advance(&mut self, top: u64) -> Result<()> {
        if self.lock.is_none() {
            return Err(Error::OracleStore {
                message: format!("window file {} advanced before claim", self.path.display()),
            });
        }
        let tmp = self.sibling(".tmp");
        let ctx = |what: &str| format!("{what} {}", tmp.display());
        let mut f = File::create(&tmp).map_err(|e| Error::io(ctx("creating"), e))?;
        f.write_all(&encode(top))
            .map_err(|e| Error::io(ctx("writing"), e))?;
        f.sync_all().map_err(|e| Error::io(ctx("syncing"), e))?;
        drop(f);
        fs::rename(&tmp, &self.path).map_err(|e| {
            Error::io(
                format!("renaming {} over {}", tmp.display(), self.path.display()),
                e,
            )
        })?;
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(format!("syncing directory {}", dir.display()), e))
    }

    fn release(&mut self) -> Result<()> {
        self.lock = None;
        Ok(())
    }

    fn lease(&self) -> Option<Duration> {
        None
    }

    fn describe(&self) -> String {
        format!("file:{}", self.path.display())
    }
}

fn encode(top: u64) -> [u8; FILE_LEN] {
    let mut b = [0u8; FILE_LEN];
    b[..8].copy_from_slice(MAGIC);
    b[8..16].copy_from_slice(&top.to_be_bytes());
    let crc = crc32(&b[..16]);
    b[16..].copy_from_slice(&crc.to_be_bytes());
    b
}

fn decode(b: &[u8]) -> std::result::Result<u64, String> {
    if b.len() != FILE_LEN {
        return Err(format!(
            "{} bytes, expected {FILE_LEN}: torn write?",
            b.len()
        ));
    }
    if &b[..8] != MAGIC {
        return Err(format!("bad magic {:02x?}", &b[..8]));
    }
    let stored = u32::from_be_bytes(b[16..20].try_into().expect("4 bytes"));
    if stored != crc32(&b[..16]) {
        return Err("checksum mismatch".into());
    }
    Ok(u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")))
}

/// CRC-32 (IEEE 802.3, reflected). Bitwise: it runs once per window extension.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn top_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("window");
        let mut s = FileStore::new(&path);
        assert_eq!(s.claim().unwrap().top, 0);
        s.advance(12345).unwrap();
        s.advance(67890).unwrap();
        drop(s);
        let mut again = FileStore::new(&path);
        assert_eq!(again.claim().unwrap().top, 67890);
    }

    #[test]
    fn a_second_process_cannot_claim_a_held_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("window");
        let mut first = FileStore::new(&path);
        first.claim().unwrap();
        let err = FileStore::new(&path).claim().unwrap_err();
        assert!(matches!(err, Error::OracleStore { .. }), "{err}");
        first.release().unwrap();
        FileStore::new(&path).claim().unwrap();
    }

    #[test]
    fn torn_or_corrupt_files_are_refused_and_left_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("window");
        let good = encode(42);
        let mut flipped = good;
        flipped[10] ^= 1;
        for bad in [&good[..7], &[][..], &flipped[..], b"PTSOWIN1-garbage-xx"] {
            fs::write(&path, bad).unwrap();
            let err = FileStore::new(&path).claim().unwrap_err();
            assert!(matches!(err, Error::OracleStore { .. }), "{err}");
            assert!(err.to_string().contains("corrupt"), "{err}");
            assert_eq!(
                fs::read(&path).unwrap(),
                bad,
                "the file must not be rewritten"
            );
        }
    }
}
