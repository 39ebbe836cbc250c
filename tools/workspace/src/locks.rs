//! Per-path async locks, so two operations on one file never interleave their
//! read-check-write sequences (the ledger check and the rename must be atomic as a pair).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
}
