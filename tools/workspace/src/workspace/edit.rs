//! An edit of a file: [`Workspace::begin_edit`] loads the text under the file's lock, the tool
//! works out the new text, and [`EditTxn::commit`] replaces the file if it still has the version
//! the text was loaded at.

use super::*;

impl Workspace {
    /// Starts an edit: checks the observation, takes the lock, and loads the current text. The
    /// lock is held until the returned transaction is committed or dropped.
    pub async fn begin_edit(&self, input: &str) -> Result<EditTxn, FsError> {
        let (target, version) = match self.resolve_in_world(input, Op::Edit).await? {
            Some((_, target)) => {
                let version = self.edit_basis(&target)?;
                (target, version)
            }
            None => {
                let basis = |ws: &Workspace, target: &ResolvedPath| ws.edit_basis(target);
                let load = |ws: &Workspace, target: ResolvedPath, version: String, lock| {
                    // Loaded only if its version is the observed one.
                    let text = ws.edit_load_blocking(&target, &version)?;
                    Ok(EditTxn { workspace: ws.clone(), target, text, version, _lock: lock })
                };
                match self.in_one_trip(Op::Edit, input, basis, load).await? {
                    Trip::Done(txn) => return Ok(txn),
                    Trip::Wait(target, version) => (target, version),
                }
            }
        };
        let lock = self.shared.locks.lock(&target.key()).await;
        let (target, text) = match (self.world_of(&target), self.backend_for(&target)) {
            (_, Some(backend)) => {
                self.edit_load_via_backend(backend.as_ref(), target, &version).await?
            }
            (Some(world), None) => {
                let text = self.world_edit_load(world.as_ref(), &target, &version).await?;
                (target, text)
            }
            (None, None) => {
                let expected = version.clone();
                self.blocking(Op::Edit, input, move |ws| {
                    let text = ws.edit_load_blocking(&target, &expected)?;
                    Ok((target, text))
                })
                .await?
            }
        };
        // Every load above checked that the text has the observed version.
        Ok(EditTxn { workspace: self.clone(), target, text, version, _lock: lock })
    }

    /// The checks an edit starts with, in the order their failures are reported: the root is
    /// writable, the session has seen the file and seen it present, no unsaved buffer holds it.
    /// Returns the version the session saw.
    fn edit_basis(&self, target: &ResolvedPath) -> Result<String, FsError> {
        self.check_writable(target)?;
        let version = match self.ledger.get(&target.key()) {
            None => return Err(FsError::EditUnread { path: target.display.clone() }),
            Some(Observation::Absent) => {
                return Err(FsError::NotFound { op: Op::Edit, path: target.display.clone() });
            }
            Some(Observation::Present(version)) => version,
        };
        self.check_dirty(target)?;
        Ok(version)
    }
}

/// An edit in progress: the current text, with the path lock held until commit or drop.
#[derive(Debug)]
pub struct EditTxn {
    workspace: Workspace,
    target: ResolvedPath,
    text: String,
    version: String,
    _lock: PathLock,
}

impl EditTxn {
    pub fn display(&self) -> &str {
        &self.target.display
    }

    pub fn real_path(&self) -> &Path {
        &self.target.real_path
    }

    /// The whole current text, byte for byte (a BOM and CRLF line endings included).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The version the text has (the observed one: it was just checked).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Writes `new_bytes` atomically if the file still has the loaded version, records and
    /// returns the new version. The lock is released afterwards either way.
    pub async fn commit(self, new_bytes: impl Into<Vec<u8>>) -> Result<String, FsError> {
        let EditTxn { workspace, target, version, _lock, .. } = self;
        workspace.check_dirty(&target)?;
        let content = new_bytes.into();
        let display = target.display.clone();
        let expected = Observation::Present(version);
        let outcome = match (workspace.world_of(&target), workspace.backend_for(&target)) {
            (Some(world), None) => {
                let observed = Expected::Observed(Some(&expected));
                workspace
                    .world_write(world.as_ref(), target, Op::Edit, observed, Some(content))
                    .await?
            }
            (_, Some(backend)) => {
                let observed = Expected::Observed(Some(&expected));
                workspace
                    .write_via_backend(backend.as_ref(), target, Op::Edit, observed, content)
                    .await?
            }
            (None, None) => {
                workspace
                    .blocking(Op::Edit, &display, move |ws| {
                        ws.write_blocking(&target, Op::Edit, Some(&expected), &content)
                    })
                    .await?
            }
        };
        drop(_lock);
        Ok(outcome.version)
    }
}

/// The text an edit starts from, found (`None`: no file) where the file lives: it must still
/// be there and have the version the session saw, and be text.
pub(super) fn edit_text(
    path: &str,
    bytes: Option<Vec<u8>>,
    expected: &str,
) -> Result<String, FsError> {
    // A file gone since it was read has changed since it was read.
    let Some(bytes) = bytes else {
        return Err(FsError::Changed { op: Op::Edit, path: path.to_owned() });
    };
    check_edit_basis(path, &bytes, expected)?;
    String::from_utf8(bytes)
        .map_err(|_| FsError::InvalidUtf8 { op: Op::Edit, path: path.to_owned() })
}

/// The checks on the text an edit starts from. The version comes first: a stale file is reported
/// as stale even if it has also become binary.
pub(super) fn check_edit_basis(path: &str, bytes: &[u8], expected: &str) -> Result<(), FsError> {
    if content_version(bytes) != expected {
        return Err(FsError::Changed { op: Op::Edit, path: path.to_owned() });
    }
    if bytes.contains(&0) {
        return Err(FsError::Binary { op: Op::Edit, path: path.to_owned() });
    }
    Ok(())
}
