//! Undo support over the session log: every change a call makes through the workspace is
//! recorded as an `fs/change` event with blobs of the exact bytes before and after
//! ([`record_changes`]); the `ChangeHistory` capability the `revert` tool uses reads them back
//! ([`SessionHistory`]); and a multi-file revert that a crash interrupted is rolled back from its
//! journal before the session runs anything else ([`recover_journal`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use toolhost_contract::{
    BoxFuture, ChangeHistory, History, HistoryCall, HistoryError, HistoryTurn,
};
use toolhost_protocol::session_log::{FsChangeEvent, RevertJournal};
use toolhost_session::{BlobStore, SessionLog};
use toolhost_workspace::{KeepError, Workspace, content_version};

/// The journal's name in the session folder.
pub const JOURNAL_FILE: &str = "revert-journal.json";

/// Records every change made on behalf of a call as `fs/change` in `log`: the bytes before go
/// to the blob store (content-addressed, so an unchanged file costs nothing twice) *before* the
/// file is replaced — a write or edit whose old bytes cannot be stored fails with nothing
/// changed, naming the cause — the bytes after while it is replaced, and the event, written
/// once the file was and both sides are stored, rides with the call's `tool/result`. A restore
/// stores its sides again after the fact (they are the blobs it was made from); if one still
/// cannot be stored the change is marked not revertible rather than pretending the file was new.
pub fn record_changes(workspace: &Workspace, log: &Arc<SessionLog>) {
    let log: Weak<SessionLog> = Arc::downgrade(log);
    let keeper_log = log.clone();
    let storing_after = Arc::new(StoringAfter::default());
    let awaiting_after = Arc::clone(&storing_after);
    workspace.keep_before_write(Arc::new(move |event| {
        let (Some(_), Some(log)) = (event.call_id, keeper_log.upgrade()) else { return Ok(None) };
        // Each new side is stored (written and synced) on a thread of its own while the write
        // syncs the new bytes. The bytes before are the only copy once the file is replaced:
        // the replace waits for them. The bytes after are the file's own until something
        // changes it again: they need to be kept by the time the change is recorded (the
        // listener below waits), not before the replace, so their syncs overlap the replace's.
        let blobs = log.blobs();
        let mut storing = Vec::new();
        // A blob is named by its content's sha256, which the workspace already computed as
        // the side's version.
        let sides = [
            (event.before, event.before_version, Side::Before),
            (event.after, event.after_version, Side::After),
        ];
        for (bytes, version, side) in
            sides.into_iter().filter_map(|(b, v, side)| Some((b?, v, side)))
        {
            let hash = side_hash(bytes, version);
            if blobs.has(&hash) {
                continue;
            }
            let (blobs, bytes, name) = (blobs.clone(), bytes.to_vec(), hash.clone());
            let thread = std::thread::Builder::new()
                .name("toolhost-keep".to_owned())
                .spawn(move || keep_side(&blobs, &name, &bytes))
                .map_err(|err| KeepError(format!("nothing was changed: {err}")))?;
            match side {
                Side::Before => storing.push(thread),
                Side::After => storing_after.started(hash, thread),
            }
        }
        if storing.is_empty() {
            return Ok(None);
        }
        Ok(Some(Box::new(move || {
            let mut kept = Ok(());
            for thread in storing {
                let side = thread.join().unwrap_or_else(|_| {
                    Err(KeepError("nothing was changed: storing its bytes panicked".to_owned()))
                });
                kept = kept.and(side);
            }
            kept
        })))
    }));
    workspace.on_write(Arc::new(move |event| {
        let (Some(call_id), Some(log)) = (event.call_id, log.upgrade()) else { return };
        let blobs = log.blobs();
        let mut before_not_kept = false;
        let before = match (event.before, event.before_version) {
            (Some(bytes), version) => match put_side(blobs, bytes, version) {
                Ok(hash) => Some(hash),
                Err(err) => {
                    tracing::warn!("cannot keep the earlier content of a change: {err}");
                    before_not_kept = true;
                    event.before_version.map(str::to_owned)
                }
            },
            (None, Some(version)) => {
                before_not_kept = true;
                Some(version.to_owned())
            }
            (None, None) => None,
        };
        let after = event.after.map(|bytes| {
            let hash = side_hash(bytes, event.after_version);
            match awaiting_after.finish(blobs, &hash, bytes) {
                Ok(()) => hash,
                Err(err) => {
                    // The hash still says what the file holds; a merge needing these bytes
                    // fails with a missing-content error.
                    tracing::warn!("cannot keep the new content of a change: {err}");
                    hash
                }
            }
        });
        let change = FsChangeEvent {
            call_id: call_id.to_owned(),
            path: event.real_path.to_string_lossy().into_owned(),
            before,
            after,
            before_not_kept,
        };
        if let Err(err) = log.enqueue_fs_change(&change) {
            tracing::warn!("cannot record a file change: {err}");
        }
    }));
}

/// Which side of a change a blob holds.
#[derive(Clone, Copy)]
enum Side {
    Before,
    After,
}

/// A blob being stored on a thread of its own, and what that thread says.
type Storing = std::thread::JoinHandle<Result<(), KeepError>>;

/// The new sides of changes being stored beside their writes (see [`record_changes`]).
#[derive(Default)]
struct StoringAfter(std::sync::Mutex<Vec<(String, Storing)>>);

impl StoringAfter {
    /// Tracks the store of the blob `hash`. Stores that ended are forgotten here: a write that
    /// failed after its keepers never asks for its own, and one that asks later finds the blob
    /// stored (or stores it itself).
    fn started(&self, hash: String, thread: Storing) {
        let mut storing = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        storing.retain(|(_, thread)| !thread.is_finished());
        storing.push((hash, thread));
    }

    /// Returns once `bytes` (whose blob hash is `hash`) are in the blob store: waits for their
    /// store if one is under way, else stores them (a no-op when they are already there).
    fn finish(&self, blobs: &BlobStore, hash: &str, bytes: &[u8]) -> Result<(), String> {
        let thread = {
            let mut storing = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            storing.iter().position(|(h, _)| h == hash).map(|at| storing.swap_remove(at).1)
        };
        let stored = thread.map(|t| t.join());
        match stored {
            Some(Ok(Ok(()))) => Ok(()),
            // The thread's error is not final: storing again says why, or succeeds.
            _ => blobs.put_hashed(hash, bytes).map_err(|e| e.to_string()),
        }
    }
}

/// The blob hash of one side of a change: the version the workspace computed for it (the same
/// sha256 hex), hashed here only when none was given.
fn side_hash(bytes: &[u8], version: Option<&str>) -> String {
    version.map_or_else(|| toolhost_session::blob_hash(bytes), str::to_owned)
}

/// Stores one side of a change and returns its blob's hash.
fn put_side(
    blobs: &BlobStore,
    bytes: &[u8],
    version: Option<&str>,
) -> Result<String, toolhost_session::SessionError> {
    let hash = side_hash(bytes, version);
    blobs.put_hashed(&hash, bytes).map(|()| hash)
}

/// Stores one side of a change, or says — naming the blob store and the error —
/// why the change cannot be made.
fn keep_side(blobs: &BlobStore, hash: &str, bytes: &[u8]) -> Result<(), KeepError> {
    blobs.put_hashed(hash, bytes).map_err(|err| {
        KeepError(format!(
            "nothing was changed: the session cannot store the bytes revert would need in its \
             blob store {} ({err})",
            blobs.blob_dir().display()
        ))
    })
}

/// The `ChangeHistory` of one open session.
pub struct SessionHistory {
    log: Arc<SessionLog>,
}

impl SessionHistory {
    pub fn new(log: Arc<SessionLog>) -> Self {
        SessionHistory { log }
    }
}

fn io(err: impl std::fmt::Display) -> HistoryError {
    HistoryError::Io(err.to_string())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
) -> Result<T, HistoryError> {
    tokio::task::spawn_blocking(work).await.map_err(io)?
}

impl ChangeHistory for SessionHistory {
    fn history(&self) -> BoxFuture<'_, Result<History, HistoryError>> {
        Box::pin(async move {
            // Changes ride unsynced until the next awaited append: make them readable first.
            self.log.flush().await.map_err(io)?;
            let path = self.log.log_path().to_path_buf();
            blocking(move || {
                let view = toolhost_session::read_session(&path).map_err(io)?;
                let calls = view
                    .calls
                    .iter()
                    .map(|call| HistoryCall {
                        call_id: call.call_id.clone(),
                        name: call.name.clone(),
                        completed: call.result.as_ref().is_some_and(|r| !r.is_error),
                        seq: call.seq,
                        arguments: call.arguments.clone(),
                    })
                    .collect();
                let mut turns: Vec<HistoryTurn> = Vec::new();
                for (seq, kind, data) in &view.conversation {
                    let run_id = data.get("runId").and_then(|r| r.as_str());
                    match (kind.as_str(), run_id) {
                        ("agent/run", Some(run_id)) => turns.push(HistoryTurn {
                            run_id: run_id.to_owned(),
                            seq: *seq,
                            prompt: None,
                        }),
                        ("agent/message", Some(run_id)) if data["role"] == "user" => {
                            if let Some(turn) = turns
                                .iter_mut()
                                .rev()
                                .find(|t| t.run_id == run_id && t.prompt.is_none())
                            {
                                turn.prompt =
                                    data.get("content").and_then(|c| c.as_str()).map(str::to_owned);
                            }
                        }
                        _ => {}
                    }
                }
                Ok(History { calls, changes: view.changes, turns })
            })
            .await
        })
    }

    fn load(&self, hash: String) -> BoxFuture<'_, Result<Vec<u8>, HistoryError>> {
        let blobs = self.log.blobs().clone();
        Box::pin(blocking(move || {
            blobs.get_bytes(&hash).map_err(|e| HistoryError::MissingBlob {
                hash: hash.clone(),
                detail: e.to_string(),
            })
        }))
    }

    fn keep(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<String, HistoryError>> {
        let blobs = self.log.blobs().clone();
        Box::pin(blocking(move || blobs.put_bytes(&bytes).map_err(io)))
    }

    fn begin_journal(&self, journal: RevertJournal) -> BoxFuture<'_, Result<(), HistoryError>> {
        let path = self.log.dir().join(JOURNAL_FILE);
        Box::pin(blocking(move || write_journal(&path, &journal).map_err(io)))
    }

    fn end_journal(&self) -> BoxFuture<'_, Result<(), HistoryError>> {
        let path = self.log.dir().join(JOURNAL_FILE);
        Box::pin(blocking(move || remove_durably(&path).map_err(io)))
    }
}

/// Temp file, fsync, rename, fsync of the folder: the journal is whole or absent.
fn write_journal(path: &Path, journal: &RevertJournal) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = serde_json::to_vec(journal).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    sync_parent(path)
}

fn remove_durably(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => sync_parent(path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

/// What [`recover_journal`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Recovery {
    /// No revert was interrupted.
    Nothing,
    /// The interrupted revert `call_id` was rolled back: `files` were put back.
    RolledBack { call_id: String, files: usize },
}

/// Rolls back a multi-file revert a crash interrupted: every file of the journal gets its original
/// bytes back (through the workspace on behalf of the interrupted call, so the log records the
/// roll-back as that call's changes), then the journal goes. A file that was never touched is
/// left alone. Fails — keeping the journal for the next try — when a file cannot be put back,
/// e.g. because someone changed it since to something that is neither side.
pub async fn recover_journal(
    workspace: &Workspace,
    log: &Arc<SessionLog>,
) -> Result<Recovery, HistoryError> {
    let path: PathBuf = log.dir().join(JOURNAL_FILE);
    let journal = {
        let path = path.clone();
        blocking(move || match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<RevertJournal>(&bytes).map(Some).map_err(io),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(io(err)),
        })
        .await?
    };
    let Some(journal) = journal else { return Ok(Recovery::Nothing) };
    let history = SessionHistory::new(Arc::clone(log));
    let workspace = workspace.for_call(&journal.call_id);
    let mut files = 0;
    for file in &journal.files {
        let current = workspace.peek(&file.path).await.map_err(io)?;
        let current = current.as_deref().map(content_version);
        if current == file.original {
            continue;
        }
        if current != file.target {
            return Err(HistoryError::Io(format!(
                "cannot roll back the interrupted revert {}: {} holds neither its earlier nor its reverted content",
                journal.call_id, file.path
            )));
        }
        let original = match &file.original {
            Some(hash) => Some(history.load(hash.clone()).await?),
            None => None,
        };
        workspace.restore(&file.path, current.as_deref(), original.as_deref()).await.map_err(io)?;
        files += 1;
    }
    log.flush().await.map_err(io)?;
    blocking(move || remove_durably(&path).map_err(io)).await?;
    Ok(Recovery::RolledBack { call_id: journal.call_id, files })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolhost_workspace::WorkspaceConfig;

    /// The new side of a change is stored beside the replace, not before it: it must still be
    /// in the blob store by the time the change is recorded.
    #[tokio::test]
    async fn every_recorded_change_has_both_sides_stored_though_the_new_side_was_not_awaited() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, sessions) = (tmp.path().join("w"), tmp.path().join("s"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.txt"), "v0\n").unwrap();
        let (log, _) = SessionLog::open(&sessions, &root, "s1", true).unwrap();
        let log = Arc::new(log);
        let workspace = Workspace::new(WorkspaceConfig::new(&root)).unwrap();
        record_changes(&workspace, &log);
        // Heard after the history's own listener, which records the change: the new side must
        // be stored by then (its store, begun before the replace, is waited for).
        let (blobs, missing) = (log.blobs().clone(), Arc::new(std::sync::Mutex::new(Vec::new())));
        let seen = Arc::clone(&missing);
        workspace.on_write(Arc::new(move |event| {
            let after = toolhost_session::blob_hash(event.after.unwrap_or_default());
            if !blobs.has(&after) {
                seen.lock().unwrap().push(after);
            }
        }));
        let call = workspace.for_call("c1");
        call.read_file("a.txt").await.unwrap();
        for n in 1..=12 {
            let edit = call.begin_edit("a.txt").await.unwrap();
            edit.commit(format!("v{n}\n")).await.unwrap();
        }
        call.write_file("b.txt", b"new file\n").await.unwrap();
        log.flush().await.unwrap();
        assert_eq!(missing.lock().unwrap().as_slice(), [] as [String; 0]);

        let text = std::fs::read_to_string(log.log_path()).unwrap();
        let changes: Vec<FsChangeEvent> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["type"] == "fs/change")
            .map(|event| serde_json::from_value(event["data"].clone()).unwrap())
            .collect();
        assert_eq!(changes.len(), 13, "{text}");
        for change in &changes {
            assert!(!change.before_not_kept);
            for hash in change.before.iter().chain(change.after.iter()) {
                assert!(log.blobs().has(hash), "{hash} of {change:?} is not stored");
            }
        }
        assert_eq!(changes[12].before, None);
        // The hashes the workspace handed over are the blobs' own names: each side's bytes.
        for (n, change) in changes.iter().take(12).enumerate() {
            let (before, after) = (format!("v{n}\n"), format!("v{}\n", n + 1));
            assert_eq!(
                change.before.as_deref(),
                Some(toolhost_session::blob_hash(before.as_bytes()).as_str())
            );
            assert_eq!(
                change.after.as_deref(),
                Some(toolhost_session::blob_hash(after.as_bytes()).as_str())
            );
            assert_eq!(
                log.blobs().get_bytes(change.after.as_ref().unwrap()).unwrap(),
                after.as_bytes()
            );
        }
    }
}
