//! The set of files whose editor buffer has unsaved changes. The LSP server keeps it current from
//! `didOpen`/`didChange`/`didSave`/`didClose`; writes and edits refuse those files, because
//! replacing the file on disk would either be lost on the editor's next save or silently discard
//! the user's unsaved work.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
pub struct DirtyBuffers {
    /// Editor path → its canonical form when it could be resolved at marking time, so a buffer
    /// opened through a symlink still blocks writes addressed to the real file.
    paths: Mutex<HashMap<PathBuf, Option<PathBuf>>>,
}

impl DirtyBuffers {
    pub fn new() -> Self {
        Self::default()
    }

    fn paths(&self) -> MutexGuard<'_, HashMap<PathBuf, Option<PathBuf>>> {
        self.paths.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks (`true`) or clears (`false`) an absolute path as the editor names it.
    pub fn set(&self, path: impl Into<PathBuf>, dirty: bool) {
        let path = path.into();
        if dirty {
            let canonical = std::fs::canonicalize(&path).ok();
            self.paths().insert(path, canonical);
        } else {
            self.paths().remove(&path);
        }
    }

    /// Whether `path` (a display path or a real path) has a dirty buffer.
    pub fn is_dirty(&self, path: &Path) -> bool {
        self.paths()
            .iter()
            .any(|(editor, canonical)| editor == path || canonical.as_deref() == Some(path))
    }

    /// Forgets every buffer, e.g. when the editor disconnects.
    pub fn clear(&self) {
        self.paths().clear();
    }
}
