//! The write path's pre-commit hook: [`ChangeKeeper`]s are asked to keep what they need of a
//! change *before* the file is replaced, and a refusal fails the write with nothing changed.
//!
//! Listeners ([`WriteListener`](super::WriteListener)) hear about a change after it happened,
//! which is too late for a session that must be able to undo it: if the bytes that undo a change
//! cannot be stored (the blob store is unwritable, the disk is full), the change must not happen,
//! rather than happen and be logged without them. So the host stores both sides as blobs here,
//! and records the change in its listener once the file was written.
//!
//! Keepers run on the writing thread under the path lock and the folder's lock, like listeners;
//! a keeper's panic is contained and counts as a refusal.
//!
//! A keeper may finish its part beside the write rather than before it: it returns a [`Settle`]
//! step (e.g. waiting for the blobs it started storing to be synced, or for the call's record to
//! be on disk), which the write path runs after it has written and synced the new bytes to their
//! temp file and before it replaces the file. The slow syncs of the keepers and of the write then
//! overlap, and a refusal at that point still leaves the file untouched.

use std::sync::{Arc, RwLock};

use super::{Prior, ResolvedPath, Workspace, WriteEvent, WriteOperation};
use crate::error::{FsError, Op};
use crate::ledger::content_version;

/// Why a keeper could not keep a change; its text becomes the write's error message, so it
/// should name the real cause (e.g. the blob store's path and the OS error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeepError(pub String);

/// Asked about every write and edit before the file is replaced; an `Err` fails it unchanged
/// (`FS_IO_ERROR` with the keeper's message). The event's `after` is what is about to be written.
/// `Ok(Some(step))`: the keeper's work goes on beside the write; `step` is run (on the writing
/// thread) just before the file is replaced, and its `Err` still fails the write unchanged.
pub type ChangeKeeper =
    Arc<dyn Fn(&WriteEvent<'_>) -> Result<Option<SettleStep>, KeepError> + Send + Sync>;

/// What a keeper still has to finish before the file may be replaced.
pub type SettleStep = Box<dyn FnOnce() -> Result<(), KeepError> + Send>;

/// The keepers' unfinished steps for one write (see [`ChangeKeeper`]).
#[must_use = "a write must settle its keepers before it replaces the file"]
pub(crate) struct Settle {
    steps: Vec<SettleStep>,
    op: Op,
    path: String,
}

impl Settle {
    fn none(op: Op, path: &str) -> Self {
        Settle { steps: Vec::new(), op, path: path.to_owned() }
    }

    /// Runs every step (all of them, so none is left running); the first refusal is the
    /// write's error.
    pub(crate) fn settle(self) -> Result<(), FsError> {
        let Settle { steps, op, path } = self;
        let mut refusal = None;
        for step in steps {
            let settled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(step))
                .unwrap_or_else(|_| Err(KeepError("the change keeper panicked".to_owned())));
            if let (Err(KeepError(message)), None) = (settled, &refusal) {
                refusal = Some(FsError::Io { op, path: path.clone(), message });
            }
        }
        refusal.map_or(Ok(()), Err)
    }
}

/// The keepers of one workspace (shared by every view).
#[derive(Default)]
pub(super) struct ChangeKeepers(RwLock<Vec<ChangeKeeper>>);

impl std::fmt::Debug for ChangeKeepers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.0.read().map_or(0, |k| k.len());
        write!(f, "ChangeKeepers({count})")
    }
}

impl Workspace {
    /// Adds a keeper asked before every write or edit of every view (see [`ChangeKeeper`]).
    pub fn keep_before_write(&self, keeper: ChangeKeeper) {
        if let Ok(mut keepers) = self.shared.keepers.0.write() {
            keepers.push(keeper);
        }
    }

    /// Asks every keeper to keep the change of `target` from `prior` to `content`; the first
    /// refusal is the write's error. Called by the write path after its checks and before it
    /// changes anything; what the keepers left to finish is settled before the replace.
    pub(super) fn keep_change(
        &self,
        target: &ResolvedPath,
        op: Op,
        prior: Option<&Prior>,
        content: &[u8],
        version: &str,
    ) -> Result<Settle, FsError> {
        let mut settle = Settle::none(op, &target.display);
        let Ok(keepers) = self.shared.keepers.0.read() else { return Ok(settle) };
        if keepers.is_empty() {
            return Ok(settle);
        }
        let event = WriteEvent {
            real_path: &target.real_path,
            operation: if prior.is_some() {
                WriteOperation::Update
            } else {
                WriteOperation::Create
            },
            call_id: self.call_id.as_deref(),
            before: prior.and_then(|p| p.basis.as_deref()),
            before_version: prior.map(|p| p.version.as_str()),
            after: Some(content),
            after_version: Some(version),
        };
        for keeper in keepers.iter() {
            let kept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| keeper(&event)))
                .unwrap_or_else(|_| Err(KeepError("the change keeper panicked".to_owned())));
            match kept {
                Ok(step) => settle.steps.extend(step),
                Err(KeepError(message)) => {
                    // Steps already started are finished (their errors no longer matter).
                    let _ = settle.settle();
                    return Err(FsError::Io { op, path: target.display.clone(), message });
                }
            }
        }
        Ok(settle)
    }

    /// [`Workspace::keep_change`] off the async threads (keepers store files), for the
    /// text-backend path, which holds what it writes by value.
    pub(super) async fn keep_change_async(
        &self,
        target: ResolvedPath,
        op: Op,
        prior: Option<Prior>,
        content: Vec<u8>,
    ) -> Result<(ResolvedPath, Option<Prior>, Vec<u8>), FsError> {
        if self.shared.keepers.0.read().map_or(true, |k| k.is_empty()) {
            return Ok((target, prior, content));
        }
        let path = target.display.clone();
        // An editor's buffer is changed in one step: the keepers finish before it.
        self.blocking(op, &path, move |ws| {
            let version = content_version(&content);
            ws.keep_change(&target, op, prior.as_ref(), &content, &version)?.settle()?;
            Ok((target, prior, content))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::WorkspaceConfig;
    use std::sync::Mutex;

    type Seen = Arc<Mutex<Vec<(Option<String>, Option<Vec<u8>>, Option<Vec<u8>>)>>>;

    fn workspace(dir: &std::path::Path, refuse: bool) -> (Workspace, Seen) {
        let ws = Workspace::new(WorkspaceConfig::new(dir)).unwrap();
        let seen: Seen = Arc::default();
        let log = Arc::clone(&seen);
        ws.keep_before_write(Arc::new(move |event| {
            let (before, after) =
                (event.before.map(<[u8]>::to_vec), event.after.map(<[u8]>::to_vec));
            log.lock().unwrap().push((event.call_id.map(str::to_owned), before, after));
            if refuse { Err(KeepError("the blob store is read-only".to_owned())) } else { Ok(None) }
        }));
        (ws, seen)
    }

    #[tokio::test]
    async fn a_refused_keep_fails_the_write_and_the_edit_with_nothing_changed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
        let (ws, seen) = workspace(tmp.path(), true);
        let ws = ws.for_call("c1");
        ws.read_file("a.txt").await.unwrap();

        let err = ws.write_file("a.txt", b"two\n").await.unwrap_err();
        assert_eq!(err.code(), "FS_IO_ERROR");
        assert!(err.to_string().contains("the blob store is read-only"), "{err}");
        let txn = ws.begin_edit("a.txt").await.unwrap();
        let err = txn.commit("three\n").await.unwrap_err();
        assert!(err.to_string().starts_with("cannot edit"), "{err}");
        assert_eq!(std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(), "one\n");
        // A new file is not created either.
        assert!(ws.write_file("new/b.txt", b"x").await.is_err());
        assert!(!tmp.path().join("new/b.txt").exists());

        let seen = seen.lock().unwrap();
        assert_eq!(seen[0], (Some("c1".into()), Some(b"one\n".to_vec()), Some(b"two\n".to_vec())));
        assert_eq!(seen[2], (Some("c1".into()), None, Some(b"x".to_vec())));
    }

    #[tokio::test]
    async fn a_kept_change_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, seen) = workspace(tmp.path(), false);
        ws.write_file("a.txt", b"new\n").await.unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(), "new\n");
        assert_eq!(seen.lock().unwrap().as_slice(), [(None, None, Some(b"new\n".to_vec()))]);
    }
}
