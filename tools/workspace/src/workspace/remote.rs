//! The primary root's files in an execution world (`toolhost_contract::ExecutionWorld`): every
//! public operation of [`Workspace`] on a path beneath the primary root comes here instead of
//! the disk once a world is set.
//!
//! Only the I/O moves. The lexical checks, the write policy (protected paths), the editor's
//! dirty buffers, the per-path locks, the observation ledger, the change keepers (the record
//! gate, history blobs) and the write listeners run here exactly as for the disk, so a call's
//! record, review, cards and revert do not know where the file was. The world confines every
//! path again on its side and replaces a file only if it still has the version this side
//! checked (compare and swap), so a change made there meanwhile is stale, never overwritten.
//! Read-only roots (session blobs, spills) stay on this machine.

use std::sync::Arc;

use toolhost_contract::{ExecutionWorld, WorldEntry, WorldFailure};

use super::*;

/// Largest file fetched from a world whole (the world's own read cap is the same).
pub const WORLD_READ_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// A path a world serves: the world, the display path and the path relative to the root.
pub(super) type WorldSpot = (Arc<dyn ExecutionWorld>, String, PathBuf);

/// A world's refusal as the error the same refusal on this machine gives, about `display`.
pub fn world_fs_error(op: Op, display: &str, failure: &WorldFailure) -> FsError {
    let path = display.to_owned();
    match failure.code.as_str() {
        "FS_NOT_FOUND" => FsError::NotFound { op, path },
        "FS_NOT_DIRECTORY" => FsError::NotDirectory { op, path },
        "FS_NOT_REGULAR_FILE" => FsError::NotRegularFile { op, path },
        "FS_NOT_TEXT" if failure.message.ends_with("binary file") => FsError::Binary { op, path },
        "FS_NOT_TEXT" => FsError::InvalidUtf8 { op, path },
        "FS_PERMISSION_DENIED" => FsError::PermissionDenied { op, path },
        // The lexical checks ran here; what the world refuses is where a link leads.
        "FS_SANDBOX_DENIED" => FsError::denied(&path, SandboxReason::SymlinkEscape),
        "FS_STALE_VERSION" => FsError::Changed { op, path },
        _ => FsError::Io { op, path, message: format!("{} ({})", failure.message, failure.code) },
    }
}

impl Workspace {
    /// Sets (or, with `None`, removes) the world the primary root's files live in, for every
    /// view of this workspace. Meant to be set once, before calls run.
    pub fn set_world(&self, world: Option<Arc<dyn ExecutionWorld>>) {
        *self.shared.world.write().unwrap_or_else(PoisonError::into_inner) = world;
    }

    /// The world the primary root's files and the session's processes live in, if not here.
    pub fn world(&self) -> Option<Arc<dyn ExecutionWorld>> {
        self.shared.world.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The world serving `input`, when there is one and `input` lies beneath the primary root
    /// (after the lexical checks, which fail here as on the disk).
    pub(super) fn world_for(&self, input: &str) -> Result<Option<WorldSpot>, FsError> {
        let Some(world) = self.world() else { return Ok(None) };
        let (display, index, rel) = self.locate(input)?;
        Ok((index == 0).then_some((world, display, rel)))
    }

    /// Resolution beneath the world's root, as [`Workspace::resolve_blocking`] does beneath a
    /// root handle: the real path is the world's, mapped onto the primary root here.
    pub(super) async fn world_resolve(
        &self,
        world: &dyn ExecutionWorld,
        display: String,
        rel: PathBuf,
        op: Op,
    ) -> Result<ResolvedPath, FsError> {
        let asked = rel.to_string_lossy().into_owned();
        let found = world.resolve(&asked).await.map_err(|f| world_fs_error(op, &display, &f))?;
        let real_rel = PathBuf::from(&found.real_rel);
        let state = match found.entry {
            WorldEntry::File => EntryState::Present(EntryKind::File),
            WorldEntry::Dir => EntryState::Present(EntryKind::Dir),
            WorldEntry::Other => EntryState::Present(EntryKind::Other),
            WorldEntry::Missing => EntryState::Missing,
        };
        let canonical = self.primary_root().canonical();
        let real_path = if found.real_rel.is_empty() {
            canonical.to_path_buf()
        } else {
            canonical.join(&real_rel)
        };
        Ok(ResolvedPath { display, root: 0, rel, real_rel, real_path, state })
    }

    /// Resolves `input` through the world when one serves it (`Ok(None)`: resolve here).
    pub(super) async fn resolve_in_world(
        &self,
        input: &str,
        op: Op,
    ) -> Result<Option<(Arc<dyn ExecutionWorld>, ResolvedPath)>, FsError> {
        let Some((world, display, rel)) = self.world_for(input)? else { return Ok(None) };
        let target = self.world_resolve(world.as_ref(), display, rel, op).await?;
        Ok(Some((world, target)))
    }

    /// The bytes of `target` in the world now (`None`: no regular file there), refused over
    /// `limit` as the disk refuses them.
    pub(super) async fn world_bytes(
        &self,
        world: &dyn ExecutionWorld,
        target: &ResolvedPath,
        op: Op,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, FsError> {
        match target.state {
            EntryState::Missing | EntryState::ParentNotDir => return Ok(None),
            EntryState::Present(EntryKind::File) => {}
            EntryState::Present(_) => {
                return Err(FsError::NotRegularFile { op, path: target.display.clone() });
            }
        }
        let rel = target.real_rel.to_string_lossy();
        match world.read(&rel, limit.min(WORLD_READ_MAX_BYTES)).await {
            Ok(bytes) => Ok(bytes),
            Err(failure) if failure.code == "FS_TOO_LARGE" => Err(FsError::TooLarge {
                op,
                path: target.display.clone(),
                size: failure.size.unwrap_or(limit.saturating_add(1)),
                limit,
            }),
            Err(failure) => Err(world_fs_error(op, &target.display, &failure)),
        }
    }

    /// [`Workspace::read_blocking`] over the world: the same checks, in the same order, and the
    /// same record. The caller holds the path lock.
    pub(super) async fn world_read(
        &self,
        world: &dyn ExecutionWorld,
        target: ResolvedPath,
        limit: Option<u64>,
    ) -> Result<ReadFile, FsError> {
        let cap = limit.unwrap_or(WORLD_READ_MAX_BYTES);
        let Some(bytes) = self.world_bytes(world, &target, Op::Read, cap).await? else {
            self.ledger.record(&target.key(), Observation::Absent);
            return Err(FsError::NotFound { op: Op::Read, path: target.display });
        };
        self.text_file_read(&target, bytes)
    }

    /// A whole read of `input` when it lies in a world (`None`: it does not), for the streamed
    /// and windowed reads: the path lock is awaited unless `cancel` fires first (`FS_ABORTED`).
    pub(super) async fn world_whole_read(
        &self,
        input: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<ReadFile>, FsError> {
        let Some((world, target)) = self.resolve_in_world(input, Op::Read).await? else {
            return Ok(None);
        };
        let key = target.key();
        let _lock = tokio::select! {
            lock = self.shared.locks.lock(&key) => lock,
            () = cancel.cancelled() => {
                return Err(FsError::Aborted { op: Op::Read, path: target.display });
            }
        };
        self.world_or_editor_read(world.as_ref(), target, None).await.map(Some)
    }

    /// A read of a file in the world, unless the editor serves its text (its unsaved buffer
    /// wins there as it does over the disk). The caller holds the path lock.
    pub(super) async fn world_or_editor_read(
        &self,
        world: &dyn ExecutionWorld,
        target: ResolvedPath,
        limit: Option<u64>,
    ) -> Result<ReadFile, FsError> {
        match self.backend_for(&target) {
            Some(backend) => self.read_via_backend(backend.as_ref(), target, limit).await,
            None => self.world_read(world, target, limit).await,
        }
    }

    /// [`Workspace::edit_load_blocking`] over the world. The caller holds the path lock.
    pub(super) async fn world_edit_load(
        &self,
        world: &dyn ExecutionWorld,
        target: &ResolvedPath,
        expected: &str,
    ) -> Result<String, FsError> {
        let bytes = self.world_bytes(world, target, Op::Edit, WORLD_READ_MAX_BYTES).await?;
        edit_text(&target.display, bytes, expected)
    }

    /// Write, edit commit and restore in the world: the expectation checked against the file
    /// there now, the keepers asked (and finished) before anything changes, then a replace
    /// that the world carries out only if the file still has the version checked here, and the
    /// same record and notification as on the disk. The caller holds the path lock.
    pub(super) async fn world_write(
        &self,
        world: &dyn ExecutionWorld,
        target: ResolvedPath,
        op: Op,
        expected: Expected<'_>,
        content: Option<Vec<u8>>,
    ) -> Result<WriteOutcome, FsError> {
        let path = target.display.clone();
        if target.real_rel.file_name().is_none() {
            return Err(FsError::NotRegularFile { op, path });
        }
        if target.state == EntryState::ParentNotDir {
            return Err(FsError::NotDirectory { op, path });
        }
        let prior =
            self.world_bytes(world, &target, op, WORLD_READ_MAX_BYTES).await?.map(Prior::of_bytes);
        expected.check(op, &path, prior.as_ref())?;
        let restored = matches!(expected, Expected::Restored(_));
        let Some(content) = content else {
            // Undoing a create: remove the file, when it is there.
            if let Some(prior) = &prior {
                let rel = target.real_rel.to_string_lossy();
                world
                    .replace(&rel, Some(&prior.version), None)
                    .await
                    .map_err(|f| world_fs_error(op, &path, &f))?;
            }
            return self
                .blocking(op, &path, move |ws| {
                    Ok(ws.finish_restore(&target, WriteOperation::Remove, prior, None))
                })
                .await;
        };
        // As on the disk, a restore (a revert) is not a change the keepers are asked about: it
        // puts back bytes the history already has.
        let (target, prior, content) = if restored {
            (target, prior, content)
        } else {
            self.keep_change_async(target, op, prior, content).await?
        };
        let rel = target.real_rel.to_string_lossy().into_owned();
        let version = prior.as_ref().map(|p| p.version.as_str());
        world
            .replace(&rel, version, Some(&content))
            .await
            .map_err(|f| world_fs_error(op, &path, &f))?;
        self.finish_elsewhere(target, op, prior, content, restored).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worlds_refusals_read_as_the_same_refusals_here() {
        let cases = [
            ("FS_NOT_FOUND", "x", "FS_NOT_FOUND"),
            ("FS_SANDBOX_DENIED", "x", "FS_SANDBOX_DENIED"),
            ("FS_STALE_VERSION", "x", "FS_STALE_VERSION"),
            ("FS_NOT_TEXT", "cannot read \"/r/a\": binary file", "FS_NOT_TEXT"),
            ("WORLD_DISCONNECTED", "the connection was lost", "FS_IO_ERROR"),
        ];
        for (code, message, expected) in cases {
            let err = world_fs_error(Op::Read, "/w/a", &WorldFailure::new(code, message));
            assert_eq!(err.code(), expected, "{code}");
            assert_eq!(err.path(), "/w/a");
        }
        let lost = WorldFailure::new("WORLD_DISCONNECTED", "the connection was lost");
        assert_eq!(
            world_fs_error(Op::Write, "/w/a", &lost).to_string(),
            "cannot write \"/w/a\": the connection was lost (WORLD_DISCONNECTED)"
        );
    }
}
