//! Locks that make a write's "unchanged since it was read" check and its rename one step.
//!
//! Two layers. [`PathLocks`] are per-path async locks inside one process, so two operations on
//! one file never interleave their read-check-write sequences and an edit can hold its file while
//! the tool works out the new text. [`DirLock`] is the cross-process half: an exclusive advisory
//! `flock` on the folder the file lies in, held only across the final re-check of the file's
//! version and the rename, so a second `toolhost` process (another agent's CLI call or MCP server,
//! an editor's server) replacing the same file either sees the first one's change or is seen by
//! it.
//!
//! Why the folder and not the file or a lock file: every write replaces the file's inode (the
//! rename), so a lock on the file would be a lock on an inode the next writer no longer finds;
//! the folder's inode stays put, exists for a file still to be created, and needs no lock file —
//! nothing is ever left behind in the workspace. The price is that writes to different files of
//! one folder also take turns for the few milliseconds of their replace. `flock` locks belong to
//! the open descriptor, so a process that dies (even by `kill -9`) releases its lock with it.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use rustix::fs::FlockOperation;
use rustix::io::Errno;
use tokio::sync::OwnedMutexGuard;

/// Entries are purged only once the map has grown past this, so the common case is one map
/// lookup and no bookkeeping.
const PURGE_THRESHOLD: usize = 1024;

/// The lock table, keyed by canonical absolute path.
#[derive(Debug, Default)]
pub(crate) struct PathLocks {
    table: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl PathLocks {
    pub(crate) async fn lock(&self, key: &str) -> PathLock {
        let mutex = {
            let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if table.len() >= PURGE_THRESHOLD {
                // Only the table holds an unlocked, unwaited entry.
                table.retain(|_, mutex| Arc::strong_count(mutex) > 1);
            }
            table.entry(key.to_owned()).or_default().clone()
        };
        PathLock { key: key.to_owned(), _guard: mutex.lock_owned().await }
    }

    /// The lock of `key` if nobody holds it now (no waiting; usable off the async threads).
    pub(crate) fn try_lock(&self, key: &str) -> Option<PathLock> {
        let mutex = {
            let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            table.entry(key.to_owned()).or_default().clone()
        };
        let guard = mutex.try_lock_owned().ok()?;
        Some(PathLock { key: key.to_owned(), _guard: guard })
    }
}

/// Holds one path's lock until dropped.
#[derive(Debug)]
pub struct PathLock {
    key: String,
    _guard: OwnedMutexGuard<()>,
}

impl PathLock {
    /// The canonical absolute path this lock covers.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// How long a writer waits for other writers of the same folder (in this process or another)
/// before giving up. A replace holds the lock for one file's write, fsync and rename, so a wait
/// this long means the holder is stuck (a hung network filesystem, a stopped process).
pub(crate) const DIR_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Longest pause between two tries. Waiting is a poll rather than a blocking `flock`: a blocking
/// call could not be given up after [`DIR_LOCK_WAIT`], and a replace is short, so polling costs
/// a waiter at most this much latency.
const MAX_PAUSE: Duration = Duration::from_millis(4);

/// Why [`DirLock::acquire`] failed.
#[derive(Debug)]
pub(crate) enum DirLockError {
    /// The folder could not be opened for reading.
    Io(io::Error),
    /// Someone held the lock for longer than the wait allowed.
    TimedOut(Duration),
}

/// An exclusive `flock` on one folder, released when dropped. It also holds the folder opened
/// for reading, which is what fsyncing the folder after a rename needs.
#[derive(Debug)]
pub(crate) struct DirLock {
    fd: OwnedFd,
    /// False where the filesystem has no advisory locks (some network filesystems): the write
    /// goes ahead as it did before cross-process locking, in-process locks still apply.
    held: bool,
}

impl DirLock {
    /// Locks `dir`, waiting up to `wait` for other holders.
    pub(crate) fn acquire(dir: &Dir, wait: Duration) -> Result<DirLock, DirLockError> {
        use rustix::fs::{Mode, OFlags};
        // cap-std holds folders as O_PATH descriptors, which flock and fsync reject; "." names
        // the same folder and cannot leave it.
        let fd = rustix::fs::openat(
            dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| DirLockError::Io(err.into()))?;
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_micros(50);
        loop {
            match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(DirLock { fd, held: true }),
                Err(Errno::WOULDBLOCK) => {}
                Err(Errno::INTR) => continue,
                Err(Errno::NOLCK | Errno::OPNOTSUPP | Errno::BADF | Errno::INVAL) => {
                    tracing::debug!("no advisory locks on this filesystem; writing unlocked");
                    return Ok(DirLock { fd, held: false });
                }
                Err(err) => return Err(DirLockError::Io(err.into())),
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(DirLockError::TimedOut(wait));
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// The folder, opened for reading (for fsync).
    pub(crate) fn dir_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Unlocked explicitly rather than by closing: a child forked meanwhile shares the
        // descriptor until it execs, and closing ours alone would leave the lock held until then.
        if self.held {
            let _ = rustix::fs::flock(&self.fd, FlockOperation::Unlock);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn one_path_serializes_other_paths_do_not() {
        let locks = Arc::new(PathLocks::default());
        let held = locks.lock("/w/a").await;
        let other = tokio::time::timeout(Duration::from_millis(200), locks.lock("/w/b")).await;
        assert!(other.is_ok(), "a different path must not wait");
        let same = tokio::time::timeout(Duration::from_millis(100), locks.lock("/w/a")).await;
        assert!(same.is_err(), "the same path must wait");
        drop(held);
        let again = tokio::time::timeout(Duration::from_millis(200), locks.lock("/w/a")).await;
        assert!(again.is_ok());
    }

    fn open(path: &std::path::Path) -> Dir {
        Dir::open_ambient_dir(path, cap_std::ambient_authority()).unwrap()
    }

    /// Two descriptors of one folder stand for two processes: flock locks belong to the open
    /// descriptor, not the process.
    #[test]
    fn a_folder_lock_excludes_other_descriptors_until_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let (one, two) = (open(tmp.path()), open(tmp.path()));
        let held = DirLock::acquire(&one, DIR_LOCK_WAIT).unwrap();
        assert!(held.held, "tmpfs and ext4 have advisory locks");
        let started = Instant::now();
        match DirLock::acquire(&two, Duration::from_millis(50)) {
            Err(DirLockError::TimedOut(_)) => {}
            other => panic!("a second holder got the lock: {other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(50));
        drop(held);
        let again = DirLock::acquire(&two, Duration::ZERO).unwrap();
        assert!(again.held, "the lock is free once dropped");
    }
}
