//! What the public operations of [`Workspace`] do underneath: resolution and the write policy,
//! the blocking disk I/O, the text-backend paths, and telling listeners about a change.

use super::*;

/// What [`Workspace::in_one_trip`] did: the work's result, or the target and what the checks
/// returned, for the path that awaits the lock.
pub(super) enum Trip<T, C> {
    Done(T),
    Wait(ResolvedPath, C),
}

impl Workspace {
    /// The disk half of [`Workspace::peek`].
    pub(super) fn peek_blocking(&self, target: ResolvedPath) -> Result<Option<Vec<u8>>, FsError> {
        self.peek_within_blocking(target, u64::MAX)
    }

    /// As [`Self::peek_blocking`]; a file over `limit` bytes is refused before it is read.
    pub(super) fn peek_within_blocking(
        &self,
        target: ResolvedPath,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, FsError> {
        match target.state {
            EntryState::Missing | EntryState::ParentNotDir => return Ok(None),
            EntryState::Present(EntryKind::File) => {}
            EntryState::Present(_) => {
                return Err(FsError::NotRegularFile { op: Op::Read, path: target.display });
            }
        }
        let root = &self.shared.roots[target.root];
        let io_err = |err: io::Error| FsError::from_io(Op::Read, &target.display, &err);
        match open_regular(root.dir(), &target.real_rel) {
            Ok(Some(mut file)) => {
                let size = file.metadata().map_err(io_err)?.len();
                if size > limit {
                    return Err(FsError::TooLarge {
                        op: Op::Read,
                        path: target.display,
                        size,
                        limit,
                    });
                }
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).map_err(io_err)?;
                Ok(Some(bytes))
            }
            Ok(None) => Err(FsError::NotRegularFile { op: Op::Read, path: target.display }),
            Err(err) if matches!(classify(&err), IoClass::NotFound) => Ok(None),
            Err(err) => Err(io_err(err)),
        }
    }

    /// Tells every write listener about a change (a listener's panic is contained: the file is
    /// written, and that must not turn into a failure).
    pub(super) fn notify_change(
        &self,
        target: &ResolvedPath,
        operation: WriteOperation,
        prior: Option<&Prior>,
        after: Option<(&[u8], &str)>,
    ) {
        let event = WriteEvent {
            real_path: &target.real_path,
            operation,
            call_id: self.call_id.as_deref(),
            before: prior.and_then(|p| p.basis.as_deref()),
            before_version: prior.map(|p| p.version.as_str()),
            after: after.map(|(bytes, _)| bytes),
            after_version: after.map(|(_, version)| version),
        };
        if let Ok(listeners) = self.shared.listeners.0.read() {
            for listener in listeners.iter() {
                let notify = || listener(&event);
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(notify));
            }
        }
    }

    /// Where a write or restore of `target` lands, looked at under the path lock: the file's
    /// name, its folder (`None` while the folder does not exist) and the file there now. An
    /// existing folder is locked against other processes first (see [`DirLock`]), so the file
    /// seen here is the file the replace replaces; the lock is held until the slot is dropped.
    pub(super) fn slot<'t>(&self, target: &'t ResolvedPath, op: Op) -> Result<Slot<'t>, FsError> {
        let path = &target.display;
        let io_err = |err: io::Error| FsError::from_io(op, path, &err);
        let (Some(name), parent_rel) = (target.real_rel.file_name(), target.real_rel.parent())
        else {
            // The root itself.
            return Err(FsError::NotRegularFile { op, path: path.clone() });
        };
        let parent_rel = parent_rel.unwrap_or(Path::new(""));
        if target.state == EntryState::ParentNotDir {
            return Err(FsError::NotDirectory { op, path: path.clone() });
        }
        let root = &self.shared.roots[target.root];
        let mut slot = Slot { target, op, name, parent_rel, parent: None, prior: None };
        match open_dir(root.dir(), parent_rel) {
            Ok(dir) => self.settle(&mut slot, dir)?,
            Err(err) if classify(&err) == IoClass::NotFound => {}
            Err(err) => return Err(io_err(err)),
        }
        Ok(slot)
    }

    /// Locks the slot's folder `dir`, then looks at the file in it.
    fn settle(&self, slot: &mut Slot<'_>, dir: Dir) -> Result<(), FsError> {
        let (op, path) = (slot.op, &slot.target.display);
        let lock = DirLock::acquire(&dir, DIR_LOCK_WAIT).map_err(|err| match err {
            DirLockError::Io(err) => FsError::from_io(op, path, &err),
            DirLockError::TimedOut(waited) => FsError::Io {
                op,
                path: path.clone(),
                message: format!(
                    "another writer kept the file's folder locked for over {} s; try again",
                    waited.as_secs()
                ),
            },
        })?;
        slot.prior = load_prior(&dir, slot.name).map_err(|e| match e {
            PriorError::NotRegular => FsError::NotRegularFile { op, path: path.clone() },
            PriorError::Io(err) => FsError::from_io(op, path, &err),
        })?;
        slot.parent = Some((dir, lock));
        Ok(())
    }

    /// Makes sure the slot's folder exists, creating it (with its parents) when it does not yet.
    /// A created folder is locked and the file looked at again, since another process may have
    /// created the same file meanwhile: the caller checks its expectation once more.
    pub(super) fn slot_dir(&self, slot: &mut Slot<'_>) -> Result<(), FsError> {
        if slot.parent.is_some() {
            return Ok(());
        }
        let (op, path) = (slot.op, &slot.target.display);
        let root = &self.shared.roots[slot.target.root];
        root.dir().create_dir_all(slot.parent_rel).map_err(|err| {
            if matches!(classify(&err), IoClass::NotDirectory)
                || err.kind() == io::ErrorKind::AlreadyExists
            {
                FsError::NotDirectory { op, path: path.clone() }
            } else {
                FsError::from_io(op, path, &err)
            }
        })?;
        let dir = open_dir(root.dir(), slot.parent_rel)
            .map_err(|err| FsError::from_io(op, path, &err))?;
        self.settle(slot, dir)
    }

    pub(super) fn restore_blocking(
        &self,
        target: &ResolvedPath,
        expected: Option<&str>,
        content: Option<&[u8]>,
    ) -> Result<WriteOutcome, FsError> {
        let op = Op::Write;
        let path = &target.display;
        let io_err = |err: io::Error| FsError::from_io(op, path, &err);
        let expected = Expected::Restored(expected);
        let mut slot = self.slot(target, op)?;
        expected.check(op, path, slot.prior.as_ref())?;
        let operation = match content {
            Some(content) => {
                if slot.parent.is_none() {
                    self.slot_dir(&mut slot)?;
                    expected.check(op, path, slot.prior.as_ref())?;
                }
                let Some((parent, lock)) = &slot.parent else {
                    return Err(FsError::NotDirectory { op, path: path.clone() });
                };
                let metadata = slot.prior.as_ref().and_then(|p| p.metadata.as_ref());
                atomic::replace(parent, lock.dir_fd(), slot.name, content, metadata, || Ok(()))
                    .map_err(io_err)?;
                if slot.prior.is_some() { WriteOperation::Update } else { WriteOperation::Create }
            }
            None => {
                if let (Some((parent, lock)), Some(_)) = (&slot.parent, &slot.prior) {
                    parent.remove_file(slot.name).map_err(io_err)?;
                    atomic::sync_dir_fd(lock.dir_fd()).map_err(io_err)?;
                }
                // Asked to remove a file that is not there: nothing to do.
                WriteOperation::Remove
            }
        };
        // Other processes may go on once the file is replaced; this one's path lock still
        // orders the record and the listeners.
        let Slot { prior, parent, .. } = slot;
        drop(parent);
        Ok(self.finish_restore(target, operation, prior, content))
    }

    /// After restore put the file back: invalidates the observation, tells the listeners and
    /// says what happened. Runs under the path lock.
    pub(super) fn finish_restore(
        &self,
        target: &ResolvedPath,
        operation: WriteOperation,
        prior: Option<Prior>,
        content: Option<&[u8]>,
    ) -> WriteOutcome {
        let version = content.map(content_version).unwrap_or_default();
        // A file that is gone may simply be created again; one with restored bytes must be read.
        let observation = match content {
            Some(_) => Observation::Present(format!("{INVALIDATED_PREFIX}{version}")),
            None => Observation::Absent,
        };
        self.ledger.record(&target.key(), observation);
        if prior.is_some() || content.is_some() {
            let after = content.map(|bytes| (bytes, version.as_str()));
            self.notify_change(target, operation, prior.as_ref(), after);
        }
        let before = prior.and_then(Prior::diff_basis);
        WriteOutcome {
            display: target.display.clone(),
            real_path: target.real_path.clone(),
            operation,
            before,
            version,
        }
    }

    pub(super) async fn resolve_for(&self, input: &str, op: Op) -> Result<ResolvedPath, FsError> {
        if let Some((_, target)) = self.resolve_in_world(input, op).await? {
            return Ok(target);
        }
        let owned = input.to_owned();
        self.blocking(op, input, move |ws| ws.resolve_blocking(&owned, op)).await
    }

    /// One trip off the async threads for the common case of read, write and edit: resolves
    /// `input` and runs `checks` (whose failures are reported as they are); then, when the disk
    /// serves the file here and its path lock is free, runs `work` holding that lock. Otherwise
    /// hands back the target and what `checks` returned, for the caller to await the lock
    /// like any other. What must be captured before the lock (an edit's or write's expected
    /// version) belongs in `checks`.
    pub(super) async fn in_one_trip<C, T>(
        &self,
        op: Op,
        input: &str,
        checks: impl FnOnce(&Workspace, &ResolvedPath) -> Result<C, FsError> + Send + 'static,
        work: impl FnOnce(&Workspace, ResolvedPath, C, PathLock) -> Result<T, FsError> + Send + 'static,
    ) -> Result<Trip<T, C>, FsError>
    where
        C: Send + 'static,
        T: Send + 'static,
    {
        let owned = input.to_owned();
        self.blocking(op, input, move |ws| {
            let target = ws.resolve_blocking(&owned, op)?;
            let checked = checks(ws, &target)?;
            if ws.backend_for(&target).is_some() || ws.world_of(&target).is_some() {
                return Ok(Trip::Wait(target, checked));
            }
            match ws.shared.locks.try_lock(&target.key()) {
                Some(lock) => work(ws, target, checked, lock).map(Trip::Done),
                None => Ok(Trip::Wait(target, checked)),
            }
        })
        .await
    }

    /// Runs filesystem work off the async threads. A panic inside becomes `FS_IO_ERROR`.
    pub(super) async fn blocking<T, F>(&self, op: Op, input: &str, work: F) -> Result<T, FsError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T, FsError> + Send + 'static,
    {
        let ws = self.clone();
        tokio::task::spawn_blocking(move || work(&ws)).await.map_err(|err| FsError::Io {
            op,
            path: lexical::printable(input),
            message: format!("internal error: {err}"),
        })?
    }

    /// Lexical stage: validates the string and picks the root the display path lies under (the
    /// deepest one, so a read-only root nested in a writable one keeps its protection).
    pub(super) fn locate(&self, input: &str) -> Result<(String, usize, PathBuf), FsError> {
        if let Err(why) = lexical::validate_input(input) {
            return Err(FsError::denied(&lexical::printable(input), SandboxReason::Invalid(why)));
        }
        let absolute = lexical::resolve_lexical(self.primary_root().path(), input);
        let display = absolute.to_string_lossy().into_owned();
        let mut best: Option<(usize, PathBuf)> = None;
        for (index, root) in self.shared.roots.iter().enumerate() {
            if let Some(rel) = root.relative(&absolute) {
                let deeper = best
                    .as_ref()
                    .is_none_or(|(_, b)| rel.components().count() <= b.components().count());
                if deeper {
                    best = Some((index, rel.to_path_buf()));
                }
            }
        }
        match best {
            Some((index, rel)) => Ok((display, index, rel)),
            None => Err(FsError::denied(&display, SandboxReason::Outside)),
        }
    }

    pub(super) fn resolve_blocking(&self, input: &str, op: Op) -> Result<ResolvedPath, FsError> {
        let (display, index, rel) = self.locate(input)?;
        let root = &self.shared.roots[index];
        match resolve_beneath(root, &rel) {
            Ok(resolution) => {
                let real_path = if resolution.real_rel.as_os_str().is_empty() {
                    root.canonical().to_path_buf()
                } else {
                    root.canonical().join(&resolution.real_rel)
                };
                Ok(ResolvedPath {
                    display,
                    root: index,
                    rel,
                    real_rel: resolution.real_rel,
                    real_path,
                    state: resolution.state,
                })
            }
            Err(ResolveError::Escape) => {
                Err(FsError::denied(&display, SandboxReason::SymlinkEscape))
            }
            Err(ResolveError::Loop) => Err(FsError::Io {
                op,
                path: display,
                message: "too many levels of symbolic links".to_owned(),
            }),
            Err(ResolveError::Io(err)) => Err(FsError::from_io(op, &display, &err)),
        }
    }

    /// Write policy: read-only roots and protected patterns, checked on the path as given and
    /// on the path after symlinks, so `link-to-git/config` is as protected as `.git/config`.
    pub(super) fn check_writable(&self, target: &ResolvedPath) -> Result<(), FsError> {
        if self.in_read_only_root(target) {
            return Err(FsError::denied(&target.display, SandboxReason::ReadOnlyRoot));
        }
        for pattern in &self.shared.protected {
            if pattern.matches(&target.rel) || pattern.matches(&target.real_rel) {
                let reason = SandboxReason::Protected(pattern.source.clone());
                return Err(FsError::denied(&target.display, reason));
            }
        }
        Ok(())
    }

    /// Whether the path lies in a read-only root, as given or after symlinks.
    pub(super) fn in_read_only_root(&self, target: &ResolvedPath) -> bool {
        self.shared.roots[target.root].is_read_only()
            || self
                .shared
                .roots
                .iter()
                .any(|r| r.is_read_only() && target.real_path.starts_with(r.canonical()))
    }

    pub(super) fn check_dirty(&self, target: &ResolvedPath) -> Result<(), FsError> {
        let dirty = &self.shared.dirty;
        if dirty.is_dirty(Path::new(&target.display)) || dirty.is_dirty(&target.real_path) {
            return Err(FsError::DirtyBuffer { path: target.display.clone() });
        }
        Ok(())
    }

    pub(super) fn read_blocking(
        &self,
        target: &ResolvedPath,
        limit: Option<u64>,
    ) -> Result<ReadFile, FsError> {
        let path = &target.display;
        let not_found = || {
            self.ledger.record(&target.key(), Observation::Absent);
            FsError::NotFound { op: Op::Read, path: path.clone() }
        };
        let Some(file) = self.open_existing(target, Op::Read)? else {
            return Err(not_found());
        };
        let io_err = |err: io::Error| FsError::from_io(Op::Read, path, &err);
        let size = file.metadata().map_err(io_err)?.len();
        if let Some(limit) = limit
            && size > limit
        {
            return Err(FsError::TooLarge { op: Op::Read, path: path.clone(), size, limit });
        }
        let mut bytes = Vec::new();
        let cap = limit.map_or(u64::MAX, |l| l.saturating_add(1));
        file.take(cap).read_to_end(&mut bytes).map_err(io_err)?;
        if let Some(limit) = limit
            && bytes.len() as u64 > limit
        {
            let size = bytes.len() as u64;
            return Err(FsError::TooLarge { op: Op::Read, path: path.clone(), size, limit });
        }
        self.text_file_read(target, bytes)
    }

    /// The end of every whole read, wherever the bytes came from: binary and encoding checks
    /// (binary first), then the version recorded.
    pub(super) fn text_file_read(
        &self,
        target: &ResolvedPath,
        bytes: Vec<u8>,
    ) -> Result<ReadFile, FsError> {
        let path = &target.display;
        let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
        if sniff.contains(&0) {
            return Err(FsError::Binary { op: Op::Read, path: path.clone() });
        }
        let version = content_version(&bytes);
        let text = String::from_utf8(bytes)
            .map_err(|_| FsError::InvalidUtf8 { op: Op::Read, path: path.clone() })?;
        self.ledger.record(&target.key(), Observation::Present(version.clone()));
        Ok(ReadFile { display: path.clone(), real_path: target.real_path.clone(), text, version })
    }

    pub(super) fn edit_load_blocking(
        &self,
        target: &ResolvedPath,
        expected: &str,
    ) -> Result<String, FsError> {
        let path = &target.display;
        let bytes = match self.open_existing(target, Op::Edit)? {
            Some(mut file) => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)
                    .map_err(|err| FsError::from_io(Op::Edit, path, &err))?;
                Some(bytes)
            }
            None => None,
        };
        edit_text(path, bytes, expected)
    }

    /// [`Workspace::edit_load_blocking`] with the text from the backend. Runs under the path lock.
    pub(super) async fn edit_load_via_backend(
        &self,
        backend: &dyn TextBackend,
        target: ResolvedPath,
        expected: &str,
    ) -> Result<(ResolvedPath, String), FsError> {
        let path = target.display.clone();
        let (target, exists) = self
            .blocking(Op::Edit, &path, move |ws| {
                let exists = ws.exists_for_backend(&target, Op::Edit)?;
                Ok((target, exists))
            })
            .await?;
        if !exists {
            return Err(FsError::Changed { op: Op::Edit, path });
        }
        let text = backend
            .read(&target.real_path)
            .await
            .map_err(|err| backend_error(Op::Edit, &path, &err))?;
        check_edit_basis(&path, text.as_bytes(), expected)?;
        Ok((target, text))
    }

    /// Opens the regular file `target` names, as it is now: `None` when there is none (missing,
    /// or a parent is not a directory), `FS_NOT_REGULAR_FILE` when it is something else.
    pub(super) fn open_existing(
        &self,
        target: &ResolvedPath,
        op: Op,
    ) -> Result<Option<File>, FsError> {
        let path = &target.display;
        if !resolved_as_file(target, op)? {
            return Ok(None);
        }
        let root = &self.shared.roots[target.root];
        match open_regular(root.dir(), &target.real_rel) {
            Ok(Some(file)) => Ok(Some(file)),
            Ok(None) => Err(FsError::NotRegularFile { op, path: path.clone() }),
            Err(err) => match classify(&err) {
                IoClass::NotFound | IoClass::NotDirectory => Ok(None),
                _ => Err(FsError::from_io(op, path, &err)),
            },
        }
    }

    /// The world `target` lives in, when it is not on this machine (see `remote.rs`).
    pub(super) fn world_of(
        &self,
        target: &ResolvedPath,
    ) -> Option<Arc<dyn toolhost_contract::ExecutionWorld>> {
        if target.root != 0 {
            return None;
        }
        self.world()
    }

    /// The backend that serves `target`'s text, if one is installed and the file is in a
    /// writable root: read-only roots hold toolhost's own files (session blobs, spills), which
    /// no editor buffer shadows.
    pub(super) fn backend_for(&self, target: &ResolvedPath) -> Option<Arc<dyn TextBackend>> {
        if self.in_read_only_root(target) {
            return None;
        }
        self.text_backend()
    }

    /// The replace step shared by write and edit commit. Runs under the path lock.
    pub(super) fn write_blocking(
        &self,
        target: &ResolvedPath,
        op: Op,
        expected: Option<&Observation>,
        content: &[u8],
    ) -> Result<WriteOutcome, FsError> {
        let path = &target.display;
        let io_err = |err: io::Error| FsError::from_io(op, path, &err);
        let expected = Expected::Observed(expected);
        // The check and the replace happen under the folder's lock (taken by `slot`), so a
        // writer in another process either finished before the check or starts after the rename.
        let mut slot = self.slot(target, op)?;
        expected.check(op, path, slot.prior.as_ref())?;
        // Hashed once: the keepers, the ledger and the listeners all need the new version.
        let version = content_version(content);
        let settle = self.keep_change(target, op, slot.prior.as_ref(), content, &version)?;
        if slot.parent.is_none() {
            if let Err(err) = self.slot_dir(&mut slot) {
                let _ = settle.settle();
                return Err(err);
            }
            if let Err(err) = expected.check(op, path, slot.prior.as_ref()) {
                let _ = settle.settle();
                return Err(err);
            }
        }
        let Slot { name, parent, prior, .. } = slot;
        let Some((parent, lock)) = parent else {
            let _ = settle.settle();
            return Err(FsError::NotDirectory { op, path: path.clone() });
        };
        let metadata = prior.as_ref().and_then(|p| p.metadata.as_ref());
        // The keepers finish while the new bytes are written and synced; a refusal then still
        // leaves the file as it was.
        let mut refusal = None;
        let settled = || {
            settle.settle().map_err(|err| {
                refusal = Some(err);
                io::Error::other("a change keeper refused the write")
            })
        };
        atomic::replace(&parent, lock.dir_fd(), name, content, metadata, settled)
            .map_err(|err| refusal.take().unwrap_or_else(|| io_err(err)))?;
        drop(lock);
        Ok(self.finish_write(target, prior, content, version))
    }

    /// After write or edit replaced the file: records the new version, tells the listeners and
    /// says what happened. Runs under the path lock.
    pub(super) fn finish_write(
        &self,
        target: &ResolvedPath,
        prior: Option<Prior>,
        content: &[u8],
        version: String,
    ) -> WriteOutcome {
        self.ledger.record(&target.key(), Observation::Present(version.clone()));
        let operation =
            if prior.is_some() { WriteOperation::Update } else { WriteOperation::Create };
        self.notify_change(target, operation, prior.as_ref(), Some((content, &version)));
        let before = match prior {
            Some(prior) if content.len() < DIFF_BASIS_MAX_BYTES => prior.diff_basis(),
            _ => None,
        };
        WriteOutcome {
            display: target.display.clone(),
            real_path: target.real_path.clone(),
            operation,
            before,
            version,
        }
    }

    /// Write, edit commit and restore through the backend: the same expectation, checked
    /// against the text the backend has now, then the same record and notification as on disk.
    /// The caller holds the path lock.
    pub(super) async fn write_via_backend(
        &self,
        backend: &dyn TextBackend,
        target: ResolvedPath,
        op: Op,
        expected: Expected<'_>,
        content: Vec<u8>,
    ) -> Result<WriteOutcome, FsError> {
        let path = target.display.clone();
        let to_fs = |err: io::Error| backend_error(op, &path, &err);
        let (target, exists) = self
            .blocking(op, &path, move |ws| {
                let exists = ws.backend_slot(&target, op)?;
                Ok((target, exists))
            })
            .await?;
        let prior = if exists {
            Some(Prior::of_text(backend.read(&target.real_path).await.map_err(to_fs)?))
        } else {
            None
        };
        expected.check(op, &path, prior.as_ref())?;
        let (target, prior, content) = self.keep_change_async(target, op, prior, content).await?;
        // An editor holds text; bytes that are not UTF-8 have no faithful form there.
        let text = std::str::from_utf8(&content)
            .map_err(|_| FsError::InvalidUtf8 { op, path: path.clone() })?;
        backend.write(&target.real_path, text).await.map_err(to_fs)?;
        let restored = matches!(expected, Expected::Restored(_));
        self.finish_elsewhere(target, op, prior, content, restored).await
    }

    /// After a write, edit commit or restore replaced the file somewhere else than this disk (an
    /// editor's buffer, an execution world): the same record and notification as on the disk.
    /// Listeners may do file I/O (history stores blobs), so they are told off the async threads,
    /// as on the disk path. The caller holds the path lock.
    pub(super) async fn finish_elsewhere(
        &self,
        target: ResolvedPath,
        op: Op,
        prior: Option<Prior>,
        content: Vec<u8>,
        restored: bool,
    ) -> Result<WriteOutcome, FsError> {
        let path = target.display.clone();
        self.blocking(op, &path, move |ws| {
            if !restored {
                let version = content_version(&content);
                return Ok(ws.finish_write(&target, prior, &content, version));
            }
            let operation =
                if prior.is_some() { WriteOperation::Update } else { WriteOperation::Create };
            Ok(ws.finish_restore(&target, operation, prior, Some(&content)))
        })
        .await
    }

    /// Whether a file exists where a write through the backend lands, refusing what
    /// [`Workspace::slot`] refuses: the root itself, a parent that is not a directory, an entry
    /// that is not a regular file.
    pub(super) fn backend_slot(&self, target: &ResolvedPath, op: Op) -> Result<bool, FsError> {
        if target.real_rel.file_name().is_none() {
            return Err(FsError::NotRegularFile { op, path: target.display.clone() });
        }
        if target.state == EntryState::ParentNotDir {
            return Err(FsError::NotDirectory { op, path: target.display.clone() });
        }
        self.exists_for_backend(target, op)
    }

    /// Whether the regular file `target` names exists now, before a backend is asked for it.
    /// The final component is not followed: the editor opens the path by name, so a file
    /// swapped for a symbolic link since resolution is refused rather than handed over.
    pub(super) fn exists_for_backend(
        &self,
        target: &ResolvedPath,
        op: Op,
    ) -> Result<bool, FsError> {
        let path = &target.display;
        if !resolved_as_file(target, op)? {
            return Ok(false);
        }
        if self.world_of(target).is_some() {
            // The file lives in the world, which resolved it just now; the disk here has none.
            return Ok(true);
        }
        let root = &self.shared.roots[target.root];
        match root.dir().symlink_metadata(&target.real_rel) {
            Ok(metadata) if metadata.is_file() => Ok(true),
            Ok(_) => Err(FsError::NotRegularFile { op, path: path.clone() }),
            Err(err) => match classify(&err) {
                IoClass::NotFound | IoClass::NotDirectory => Ok(false),
                _ => Err(FsError::from_io(op, path, &err)),
            },
        }
    }
}

/// What resolution found at `target`: `false` when nothing is there (missing, or a parent is not
/// a directory), `true` for a regular file, `FS_NOT_REGULAR_FILE` for anything else. Callers
/// still check the entry itself when they open it: it may have changed since.
pub(super) fn resolved_as_file(target: &ResolvedPath, op: Op) -> Result<bool, FsError> {
    match target.state {
        EntryState::Missing | EntryState::ParentNotDir => Ok(false),
        EntryState::Present(EntryKind::File) => Ok(true),
        EntryState::Present(_) => Err(FsError::NotRegularFile { op, path: target.display.clone() }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    /// A second descriptor of the folder stands for another process: `flock` locks belong to the
    /// open descriptor, so this is exactly what a `toolhost` process next door holds.
    fn lock_as_another_process(folder: &Path) -> DirLock {
        let dir = Dir::open_ambient_dir(folder, cap_std::ambient_authority()).unwrap();
        DirLock::acquire(&dir, Duration::ZERO).unwrap()
    }

    /// Waits for `task` at most `limit`; `None` while it is still running.
    async fn within<T>(limit: Duration, task: &mut tokio::task::JoinHandle<T>) -> Option<T> {
        tokio::time::timeout(limit, task).await.ok().map(Result::unwrap)
    }

    #[tokio::test]
    async fn a_write_waits_for_another_process_replacing_the_file_and_then_sees_its_change() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.txt");
        std::fs::write(&path, "one\n").unwrap();
        let ws = Workspace::new(WorkspaceConfig::new(tmp.path())).unwrap();
        ws.read_file("a.txt").await.unwrap();

        let other = lock_as_another_process(tmp.path());
        let mut write = tokio::spawn({
            let ws = ws.clone();
            async move { ws.write_file("a.txt", b"mine\n").await }
        });
        assert!(within(Duration::from_millis(200), &mut write).await.is_none(), "it waits");
        // What the other process does under its lock: replace the file.
        std::fs::write(&path, "theirs\n").unwrap();
        drop(other);
        let stale = within(Duration::from_secs(10), &mut write).await.unwrap().unwrap_err();
        assert_eq!(stale.code(), "FS_STALE_VERSION");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs\n");
    }

    #[tokio::test]
    async fn an_edit_commit_waits_for_another_process_and_then_sees_its_change() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let ws = Workspace::new(WorkspaceConfig::new(tmp.path())).unwrap();
        ws.read_file("a.txt").await.unwrap();
        let txn = ws.begin_edit("a.txt").await.unwrap();

        let other = lock_as_another_process(tmp.path());
        let mut commit = tokio::spawn(txn.commit(b"ONE\ntwo\n".to_vec()));
        assert!(within(Duration::from_millis(200), &mut commit).await.is_none(), "it waits");
        std::fs::write(&path, "one\nTWO\n").unwrap();
        drop(other);
        let stale = within(Duration::from_secs(10), &mut commit).await.unwrap().unwrap_err();
        assert_eq!(stale.code(), "FS_STALE_VERSION");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\nTWO\n");

        // Uncontended, the edit goes through, and nothing is left beside the file.
        ws.read_file("a.txt").await.unwrap();
        let txn = ws.begin_edit("a.txt").await.unwrap();
        txn.commit(b"ONE\nTWO\n".to_vec()).await.unwrap();
        let names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.txt"]);
    }
}
