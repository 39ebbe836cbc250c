//! Opening the session of a workspace: the log (locked, repaired), the ledger restored from its
//! `fs/observed` events and wired to append new ones, and the blob store used for spills.

use crate::config::Config;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_contract::spill::SpillHandle;
use toolhost_session::{BlobStore, OpenReport, SessionError, SessionLog};
use toolhost_workspace::Ledger;

/// A session opened for appending.
pub struct OpenedSession {
    pub log: Arc<SessionLog>,
    pub report: OpenReport,
    pub ledger: Arc<Ledger>,
    pub blobs: BlobStore,
}

impl OpenedSession {
    /// The spill capability (the session's blob store).
    pub fn spill(&self) -> SpillHandle {
        Arc::new(self.blobs.clone())
    }

    /// The blob folder, a read-only root of the confined filesystem.
    pub fn blob_dir(&self) -> PathBuf {
        self.blobs.blob_dir().to_path_buf()
    }
}

/// Where sessions live: the flag, else `[session] dir`, else the state dir.
pub fn sessions_dir(config: &Config, flag: Option<&Path>) -> Result<PathBuf, SessionError> {
    if let Some(dir) = flag.or(config.session_dir.as_deref()) {
        return Ok(dir.to_path_buf());
    }
    toolhost_session::state_dir().ok_or_else(|| SessionError::Io {
        context: "cannot locate the state directory".to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "neither XDG_STATE_HOME nor HOME is set",
        ),
    })
}

/// Opens (or creates) session `id` of the workspace at `root`.
pub fn open_session(
    sessions_dir: &Path,
    root: &Path,
    id: &str,
) -> Result<OpenedSession, SessionError> {
    let (log, report) = SessionLog::open(sessions_dir, root, id, true)?;
    let log = Arc::new(log);
    let ledger = Arc::new(Ledger::with_observer(log.observer()));
    // Restoring must not re-append what the log already holds, so it bypasses the observer.
    ledger.restore(report.observed.iter().map(|(p, v)| (p.clone(), v.clone())));
    let blobs = log.blobs().clone();
    // The blob folder is a read-only workspace root, so it must exist before the first spill.
    {
        use std::os::unix::fs::DirBuilderExt;
        let dir = blobs.blob_dir();
        if !dir.is_dir() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(
                |source| SessionError::Io {
                    context: format!("cannot create {}", dir.display()),
                    source,
                },
            )?;
        }
    }
    Ok(OpenedSession { log, report, ledger, blobs })
}
