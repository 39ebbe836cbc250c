//! The workspace watcher: notify + notify-debouncer-full over the workspace's directories
//! (ignore-aware; never `target/`, `node_modules/` or VCS folders, so inotify watches stay few).
//!
//! An external change marks the file's ledger entry suspect; the ledger's versions are content
//! hashes, so the next write or edit re-hashes and refuses only a real content change. Running
//! language servers hear about it (`workspace/didChangeWatchedFiles`, for the patterns they
//! registered), and the events are broadcast for later consumers (live cards).

use crate::host::Host;
use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use toolhost_contract::CancellationToken;
use toolhost_lsp_host::{FileChange, FileChangeKind};

/// Folders never watched.
pub const SKIPPED_DIRS: [&str; 8] =
    ["target", "node_modules", ".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// A file changed outside toolhost (or by it; consumers compare contents when it matters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    pub path: PathBuf,
    pub removed: bool,
}

fn skipped(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| SKIPPED_DIRS.contains(&n))
}

/// The directories to watch under `root`: everything the ignore rules keep, minus skipped ones.
pub fn watched_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .filter_entry(|e| !(e.file_type().is_some_and(|t| t.is_dir()) && skipped(e.path())))
        .build();
    for entry in walker.flatten() {
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            dirs.push(entry.into_path());
        }
    }
    dirs
}

/// Starts watching the host's writable roots until `stop` fires; returns the event channel.
pub fn spawn(host: Arc<Host>, stop: CancellationToken) -> broadcast::Sender<WatchEvent> {
    let (events, _) = broadcast::channel(1024);
    let tx = events.clone();
    // Every writable root (workspace folders and `[fs] extra_roots`); session blobs are not.
    let roots: Vec<PathBuf> = host
        .workspace()
        .roots()
        .iter()
        .filter(|root| !root.is_read_only())
        .map(|root| root.path().to_path_buf())
        .collect();
    std::thread::spawn(move || {
        let (raw_tx, raw_rx) = std::sync::mpsc::channel::<DebounceEventResult>();
        let mut debouncer = match new_debouncer(Duration::from_millis(100), None, raw_tx) {
            Ok(d) => d,
            Err(err) => {
                tracing::warn!(%err, "workspace watcher unavailable");
                return;
            }
        };
        for root in &roots {
            for dir in watched_dirs(root) {
                let _ = debouncer.watch(&dir, RecursiveMode::NonRecursive);
            }
        }
        while !stop.is_cancelled() {
            let Ok(result) = raw_rx.recv_timeout(Duration::from_millis(250)) else { continue };
            let Ok(batch) = result else { continue };
            let mut changes = Vec::new();
            for event in batch {
                if matches!(event.event.kind, EventKind::Access(_)) {
                    continue;
                }
                let kind = match event.event.kind {
                    EventKind::Create(_) => FileChangeKind::Created,
                    EventKind::Remove(_) => FileChangeKind::Deleted,
                    _ => FileChangeKind::Changed,
                };
                for path in &event.event.paths {
                    if path.is_dir() {
                        if kind == FileChangeKind::Created && !skipped(path) {
                            for dir in watched_dirs(path) {
                                let _ = debouncer.watch(&dir, RecursiveMode::NonRecursive);
                            }
                        }
                        continue;
                    }
                    if path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(toolhost_workspace::TEMP_PREFIX))
                    {
                        continue;
                    }
                    let real = path.canonicalize().unwrap_or_else(|_| path.clone());
                    host.workspace().ledger().mark_suspect(&real.to_string_lossy());
                    changes.push(FileChange { path: real, kind });
                    let removed = kind == FileChangeKind::Deleted;
                    let _ = tx.send(WatchEvent { path: path.clone(), removed });
                }
            }
            // One notification per debounced batch and server.
            host.lsp().files_changed(&changes);
        }
    });
    events
}
