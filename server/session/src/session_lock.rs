//! The session's exclusive lock (`flock` on its log), taken by whoever appends to or rewrites a
//! session.
//!
//! A lock can be held for a moment by someone who does not use the session at all: a child
//! process another thread of this process is starting inherits every descriptor between its fork
//! and its exec, and with them the lock, until the exec closes them. So a refusal is retried for a
//! short while before the session is reported `Locked`; a process that really has the session open
//! holds the lock far longer than that.

use crate::error::SessionError;
use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a refused lock is retried: far beyond a fork-to-exec window even under load, and
/// short enough that `--session last` skipping a session another toolhost holds is not noticed.
const PATIENCE: Duration = Duration::from_millis(500);

/// Takes the exclusive lock of `file` (the log at `path`), or `Locked`.
pub(crate) fn lock_session(file: &File, path: &Path) -> Result<(), SessionError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if started.elapsed() < PATIENCE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(TryLockError::WouldBlock) => return Err(SessionError::Locked(path.to_owned())),
            Err(TryLockError::Error(e)) => return Err(SessionError::io_at(path, "lock")(e)),
        }
    }
}
