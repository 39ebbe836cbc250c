//! The set of files whose editor buffer has unsaved changes. The LSP server keeps it current from
//! `didOpen`/`didChange`/`didSave`/`didClose`; writes and edits refuse those files, because
//! replacing the file on disk would either be lost on the editor's next save or silently discard
//! the user's unsaved work.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
pub struct DirtyBuffers {
    paths: Mutex<HashSet<PathBuf>>,
}

impl DirtyBuffers {
    pub fn new() -> Self {
        Self::default()
    }

    fn paths(&self) -> MutexGuard<'_, HashSet<PathBuf>> {
        self.paths.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks (`true`) or clears (`false`) an absolute path. The workspace compares both the
    /// display path and the symlink-resolved path, so either spelling works.
    pub fn set(&self, path: impl Into<PathBuf>, dirty: bool) {
        let path = path.into();
        if dirty {
            self.paths().insert(path);
        } else {
            self.paths().remove(&path);
        }
    }

    pub fn is_dirty(&self, path: &Path) -> bool {
        self.paths().contains(path)
    }

    /// Forgets every buffer, e.g. when the editor disconnects.
    pub fn clear(&self) {
        self.paths().clear();
    }
}
