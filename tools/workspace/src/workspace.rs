//! `Workspace`: the confined filesystem the file tools use — resolve, read, write, edit.
//!
//! Every call goes: lexical checks on the string (roots, NUL, length) → resolution beneath the
//! root handle (symlink escapes refused) → write policy (read-only roots, protected paths, dirty
//! buffers) → the ledger expectation, captured *before* the per-path lock → the lock → the I/O,
//! which re-checks the expectation against the file's current hash. Capturing the expectation
//! before waiting for the lock is what makes the loser of two concurrent edits stale instead of
//! silently editing the winner's result. The final re-check and the rename also hold an advisory
//! lock on the file's folder, so the same holds between processes (two agents' `toolhost`
//! processes, an editor's server): see `locks.rs`.
//!
//! With a [`TextBackend`] installed, the I/O step of a file in a writable root reads and writes
//! text through it (the editor's buffers) instead of the disk; everything before it stays local.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use sha2::{Digest, Sha256};

use crate::atomic;
use crate::backend::{TextBackend, backend_error};
use crate::dirty::DirtyBuffers;
use crate::error::{FsError, IoClass, Op, SandboxReason, classify};
use crate::ledger::{Ledger, Observation, content_version};
use crate::lexical::{self, Protected};
use crate::locks::{DIR_LOCK_WAIT, DirLock, DirLockError, PathLock, PathLocks};
use crate::resolve::{EntryKind, EntryState, ResolveError, Root, resolve_beneath};

mod edit;
mod external;
mod keep;
mod lines;
mod ops;
mod read;
mod remote;

pub use edit::EditTxn;
use edit::{check_edit_basis, edit_text};
pub use keep::{ChangeKeeper, KeepError, SettleStep};
pub use lines::LineSink;
use ops::Trip;
pub use read::{StreamedFile, TextSink};
pub use remote::{WORLD_READ_MAX_BYTES, world_fs_error};

/// Protected patterns used when the configuration names none.
pub const DEFAULT_PROTECTED: [&str; 3] = [".git/", "toolhost.toml", ".toolhost/"];

/// Files at least this large get no `before` text for diffs (`diffBasisMaxBytes`, docs/tools.md
/// write).
pub const DIFF_BASIS_MAX_BYTES: usize = 10 * 1024 * 1024;

/// Read looks for NUL bytes in this many leading bytes to call a file binary.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// Prefix of the observation a restore leaves: never equal to a content version, so the next
/// write or edit of the file asks for a fresh read ("file changed since it was read").
pub const INVALIDATED_PREFIX: &str = "restored:";

/// How the workspace is confined.
#[derive(Debug, Clone)]
pub struct WorkspaceConfig {
    /// Writable roots; the first is the primary root that relative paths resolve against.
    pub roots: Vec<PathBuf>,
    /// Readable, never writable roots (e.g. the session blob folder).
    pub read_only_roots: Vec<PathBuf>,
    /// Root-relative paths where writes are refused; a trailing `/` protects a directory and
    /// everything beneath it, otherwise the pattern is one exact path.
    pub protected: Vec<String>,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        WorkspaceConfig {
            roots: Vec::new(),
            read_only_roots: Vec::new(),
            protected: DEFAULT_PROTECTED.iter().map(|p| (*p).to_owned()).collect(),
        }
    }
}

impl WorkspaceConfig {
    /// One writable root with the default protected patterns.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        WorkspaceConfig { roots: vec![root.into()], ..Self::default() }
    }
}

/// A path after confinement: where it is shown, and what it really names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// `resolve(primary root, input)`, lexical, never realpath'd: what messages and cards show.
    pub display: String,
    /// Index into [`Workspace::roots`] of the root the path lies under.
    pub root: usize,
    /// The display path relative to that root.
    pub rel: PathBuf,
    /// The symlink-free path relative to the root, as of resolution (empty = the root itself).
    pub real_rel: PathBuf,
    /// Canonical root joined with `real_rel`; the ledger and lock key.
    pub real_path: PathBuf,
    pub state: EntryState,
}

impl ResolvedPath {
    fn key(&self) -> String {
        self.real_path.to_string_lossy().into_owned()
    }
}

/// The whole text of a file that was read (the read tool does its own windowing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFile {
    pub display: String,
    pub real_path: PathBuf,
    pub text: String,
    /// sha256 hex of the bytes, as recorded in the ledger.
    pub version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOperation {
    Create,
    Update,
    /// The file was removed ([`Workspace::restore`] undoing a create).
    Remove,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    pub display: String,
    pub real_path: PathBuf,
    pub operation: WriteOperation,
    /// The replaced text with CRLF→LF, when it is a diffable basis (see [`DIFF_BASIS_MAX_BYTES`]).
    pub before: Option<String>,
    pub version: String,
}

/// What a listener hears about one successful change.
#[derive(Debug, Clone, Copy)]
pub struct WriteEvent<'a> {
    pub real_path: &'a Path,
    pub operation: WriteOperation,
    /// The call the change belongs to, when the writer's view was made with
    /// [`Workspace::for_call`].
    pub call_id: Option<&'a str>,
    /// The exact bytes the change replaced: `None` when there was no file, or when it was too
    /// large to keep in memory (over [`DIFF_BASIS_MAX_BYTES`]; then `before_version` still says
    /// what it was).
    pub before: Option<&'a [u8]>,
    /// The version (sha256 hex) of the replaced bytes; `None` when there was no file.
    pub before_version: Option<&'a str>,
    /// The exact bytes written; `None` when the file was removed.
    pub after: Option<&'a [u8]>,
    /// The version (sha256 hex) of the written bytes; `None` when the file was removed.
    pub after_version: Option<&'a str>,
}

/// Told after every successful write, edit or restore. Runs on the writing thread under the path
/// lock, so it must be quick (e.g. queue a message, store a blob).
pub type WriteListener = Arc<dyn Fn(&WriteEvent<'_>) + Send + Sync>;

#[derive(Default)]
struct WriteListeners(std::sync::RwLock<Vec<WriteListener>>);

impl std::fmt::Debug for WriteListeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.0.read().map_or(0, |l| l.len());
        write!(f, "WriteListeners({count})")
    }
}

#[derive(Debug)]
struct Shared {
    roots: Vec<Root>,
    protected: Vec<Protected>,
    locks: PathLocks,
    dirty: Arc<DirtyBuffers>,
    listeners: WriteListeners,
    keepers: keep::ChangeKeepers,
    /// Here rather than in [`WorkspaceConfig`] because the host learns whether its client can
    /// serve text (an ACP `initialize`) only after the workspace is open; shared so every view
    /// (`with_ledger`, `for_call`) uses it.
    text_backend: RwLock<Option<Arc<dyn TextBackend>>>,
    /// Where the primary root's files are when not on this machine (`remote.rs`).
    world: RwLock<Option<Arc<dyn toolhost_contract::ExecutionWorld>>>,
}

/// The confined filesystem of one session. Cloning is cheap; [`Workspace::with_ledger`] gives
/// another session a view sharing the roots, locks and dirty buffers.
#[derive(Debug, Clone)]
pub struct Workspace {
    shared: Arc<Shared>,
    ledger: Arc<Ledger>,
    /// The call this view writes for (told to write listeners).
    call_id: Option<Arc<str>>,
}

impl Workspace {
    /// Opens every root. Relative roots are taken against the current directory. Fails when
    /// there is no writable root or a root cannot be opened.
    pub fn new(config: WorkspaceConfig) -> io::Result<Self> {
        if config.roots.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no workspace root"));
        }
        let cwd = std::env::current_dir()?;
        let mut roots = Vec::new();
        let all = config.roots.iter().map(|p| (p, false));
        for (path, read_only) in all.chain(config.read_only_roots.iter().map(|p| (p, true))) {
            let absolute = lexical::normalize_absolute(&cwd.join(path));
            roots.push(Root::open(absolute, read_only)?);
        }
        let protected = config.protected.iter().filter_map(|p| Protected::parse(p)).collect();
        let shared = Shared {
            roots,
            protected,
            locks: PathLocks::default(),
            dirty: Arc::default(),
            listeners: WriteListeners::default(),
            keepers: keep::ChangeKeepers::default(),
            text_backend: RwLock::new(None),
            world: RwLock::new(None),
        };
        Ok(Workspace { shared: Arc::new(shared), ledger: Arc::new(Ledger::new()), call_id: None })
    }

    /// The same workspace (roots, locks, dirty buffers) seen by the session owning `ledger`.
    pub fn with_ledger(&self, ledger: Arc<Ledger>) -> Self {
        Workspace { shared: self.shared.clone(), ledger, call_id: self.call_id.clone() }
    }

    /// The same view, writing on behalf of `call_id`: write listeners hear the id with every
    /// change, so a host can tie the change to the call in its log.
    pub fn for_call(&self, call_id: &str) -> Self {
        Workspace {
            shared: self.shared.clone(),
            ledger: self.ledger.clone(),
            call_id: Some(Arc::from(call_id)),
        }
    }

    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// Adds a listener told about every successful write or edit (every session's view).
    pub fn on_write(&self, listener: WriteListener) {
        if let Ok(mut listeners) = self.shared.listeners.0.write() {
            listeners.push(listener);
        }
    }

    /// Installs (or, with `None`, removes) the backend that the text of files in writable roots
    /// is read from and written to, for every view of this workspace. Meant to be set once, before
    /// calls run: a call already past its I/O step keeps the source it started with.
    pub fn set_text_backend(&self, backend: Option<Arc<dyn TextBackend>>) {
        *self.shared.text_backend.write().unwrap_or_else(PoisonError::into_inner) = backend;
    }

    /// The installed text backend, if any.
    pub fn text_backend(&self) -> Option<Arc<dyn TextBackend>> {
        self.shared.text_backend.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub fn dirty_buffers(&self) -> &Arc<DirtyBuffers> {
        &self.shared.dirty
    }

    /// Writable roots first (index 0 is the primary root), then read-only roots.
    pub fn roots(&self) -> &[Root] {
        &self.shared.roots
    }

    pub fn primary_root(&self) -> &Root {
        &self.shared.roots[0]
    }

    /// Whether a real (symlink-free) absolute path lies inside some root. Walkers that meet a
    /// symlink use this on its canonical target before following it.
    pub fn contains_real_path(&self, path: &Path) -> bool {
        self.shared.roots.iter().any(|root| path.starts_with(root.canonical()))
    }

    /// The display path after the lexical checks only (roots, NUL, length) — no I/O. Use
    /// [`Workspace::resolve`] when symlinks matter.
    pub fn display_path(&self, input: &str) -> Result<String, FsError> {
        self.locate(input).map(|(display, _, _)| display)
    }

    /// The display path after full confinement (symlinks included).
    pub async fn resolve_display(&self, input: &str) -> Result<String, FsError> {
        self.resolve(input).await.map(|resolved| resolved.display)
    }

    /// Full confinement: lexical checks and resolution beneath the root handle.
    pub async fn resolve(&self, input: &str) -> Result<ResolvedPath, FsError> {
        if let Some((_, target)) = self.resolve_in_world(input, Op::Read).await? {
            return Ok(target);
        }
        let owned = input.to_owned();
        self.blocking(Op::Read, input, move |ws| ws.resolve_blocking(&owned, Op::Read)).await
    }

    /// Takes the per-path lock for a file (keyed by its real path). The file operations below
    /// take it themselves, so do not hold it while calling them on the same file; it exists so
    /// other writers (e.g. edits applied through the editor) serialize with the tools.
    pub async fn lock(&self, input: &str) -> Result<PathLock, FsError> {
        let resolved = self.resolve(input).await?;
        Ok(self.shared.locks.lock(&resolved.key()).await)
    }

    /// Reads a whole text file and records its version.
    pub async fn read_file(&self, input: &str) -> Result<ReadFile, FsError> {
        self.read_impl(input, None).await
    }

    /// As [`Workspace::read_file`], refusing files over `max_bytes` with `FS_TOO_LARGE`.
    pub async fn read_file_limited(
        &self,
        input: &str,
        max_bytes: u64,
    ) -> Result<ReadFile, FsError> {
        self.read_impl(input, Some(max_bytes)).await
    }

    async fn read_impl(&self, input: &str, limit: Option<u64>) -> Result<ReadFile, FsError> {
        if let Some((world, target)) = self.resolve_in_world(input, Op::Read).await? {
            let _lock = self.shared.locks.lock(&target.key()).await;
            return self.world_or_editor_read(world.as_ref(), target, limit).await;
        }
        // A file the backend serves leaves the trip unread: the backend is async.
        let read =
            move |ws: &Workspace, target: ResolvedPath, (), _lock| ws.read_blocking(&target, limit);
        let target = match self.in_one_trip(Op::Read, input, |_, _| Ok(()), read).await? {
            Trip::Done(file) => return Ok(file),
            Trip::Wait(target, ()) => target,
        };
        let _lock = self.shared.locks.lock(&target.key()).await;
        if let Some(backend) = self.backend_for(&target) {
            return self.read_via_backend(backend.as_ref(), target, limit).await;
        }
        self.blocking(Op::Read, input, move |ws| ws.read_blocking(&target, limit)).await
    }

    /// [`Workspace::read_blocking`] with the text from the backend: the disk still says whether
    /// the file exists (an unsaved buffer of a file never saved stays invisible, like on disk), the
    /// backend what it says. Runs under the path lock.
    async fn read_via_backend(
        &self,
        backend: &dyn TextBackend,
        target: ResolvedPath,
        limit: Option<u64>,
    ) -> Result<ReadFile, FsError> {
        let path = target.display.clone();
        let (target, exists) = self
            .blocking(Op::Read, &path, move |ws| {
                let exists = ws.exists_for_backend(&target, Op::Read)?;
                Ok((target, exists))
            })
            .await?;
        if !exists {
            self.ledger.record(&target.key(), Observation::Absent);
            return Err(FsError::NotFound { op: Op::Read, path });
        }
        let text = backend
            .read(&target.real_path)
            .await
            .map_err(|err| backend_error(Op::Read, &path, &err))?;
        let size = text.len() as u64;
        if let Some(limit) = limit
            && size > limit
        {
            return Err(FsError::TooLarge { op: Op::Read, path, size, limit });
        }
        let sniff = &text.as_bytes()[..text.len().min(BINARY_SNIFF_BYTES)];
        if sniff.contains(&0) {
            return Err(FsError::Binary { op: Op::Read, path });
        }
        let version = content_version(text.as_bytes());
        self.ledger.record(&target.key(), Observation::Present(version.clone()));
        Ok(ReadFile { display: path, real_path: target.real_path, text, version })
    }

    /// Writes `content` verbatim, atomically. With a present observation the file must still
    /// have that version; without one the file must not exist yet.
    pub async fn write_file(&self, input: &str, content: &[u8]) -> Result<WriteOutcome, FsError> {
        let content = content.to_vec();
        let checks = move |ws: &Workspace, target: &ResolvedPath| {
            ws.check_writable(target)?;
            ws.check_dirty(target)?;
            Ok((ws.ledger.get(&target.key()), content))
        };
        let (target, (expected, content)) = match self.resolve_in_world(input, Op::Write).await? {
            Some((_, target)) => {
                let checked = checks(self, &target)?;
                (target, checked)
            }
            None => {
                // The bytes come back unwritten when the trip cannot write them.
                let write = |ws: &Workspace, target: ResolvedPath, checked, _lock| {
                    let (expected, content): (Option<Observation>, Vec<u8>) = checked;
                    ws.write_blocking(&target, Op::Write, expected.as_ref(), &content)
                };
                match self.in_one_trip(Op::Write, input, checks, write).await? {
                    Trip::Done(outcome) => return Ok(outcome),
                    Trip::Wait(target, checked) => (target, checked),
                }
            }
        };
        let _lock = self.shared.locks.lock(&target.key()).await;
        // The editor's buffer first: what the person sees wins, wherever the file lives.
        if let Some(backend) = self.backend_for(&target) {
            let expected = Expected::Observed(expected.as_ref());
            return self
                .write_via_backend(backend.as_ref(), target, Op::Write, expected, content)
                .await;
        }
        if let Some(world) = self.world_of(&target) {
            let expected = Expected::Observed(expected.as_ref());
            return self
                .world_write(world.as_ref(), target, Op::Write, expected, Some(content))
                .await;
        }
        self.blocking(Op::Write, input, move |ws| {
            ws.write_blocking(&target, Op::Write, expected.as_ref(), &content)
        })
        .await
    }

    /// Puts a file back to earlier bytes (a revert): `content` is written atomically, or the file
    /// is removed when it is `None`. `expected` is the version the file must have now (`None`:
    /// it must not exist), checked under the path lock, so a change made since the caller looked
    /// is never overwritten (`FS_STALE_VERSION`). The editor's unsaved changes are never
    /// overwritten either (`FS_DIRTY_BUFFER`).
    ///
    /// The session's observation of the file is invalidated rather than updated: whoever edits it
    /// next must read it first, since the restored bytes are not what the model last saw.
    pub async fn restore(
        &self,
        input: &str,
        expected: Option<&str>,
        content: Option<&[u8]>,
    ) -> Result<WriteOutcome, FsError> {
        let target = self.resolve_for(input, Op::Write).await?;
        self.check_writable(&target)?;
        self.check_dirty(&target)?;
        let _lock = self.shared.locks.lock(&target.key()).await;
        // Undoing a create removes the file on disk: an editor can replace a file's text, not
        // delete it.
        if let (Some(content), Some(backend)) = (content, self.backend_for(&target)) {
            let expected = Expected::Restored(expected);
            return self
                .write_via_backend(backend.as_ref(), target, Op::Write, expected, content.to_vec())
                .await;
        }
        if let Some(world) = self.world_of(&target) {
            let expected = Expected::Restored(expected);
            let content = content.map(<[u8]>::to_vec);
            return self.world_write(world.as_ref(), target, Op::Write, expected, content).await;
        }
        let expected = expected.map(str::to_owned);
        let content = content.map(<[u8]>::to_vec);
        self.blocking(Op::Write, input, move |ws| {
            ws.restore_blocking(&target, expected.as_deref(), content.as_deref())
        })
        .await
    }

    /// The checks `write_file` makes before replacing a file (confinement, write policy, unsaved
    /// editor changes, and the session's observation of the file), without writing: for asking a
    /// person about a write before it happens. Returns the file's current bytes (`None`: absent).
    pub async fn check_write(&self, input: &str) -> Result<Option<Vec<u8>>, FsError> {
        let target = self.resolve_for(input, Op::Write).await?;
        self.check_writable(&target)?;
        self.check_dirty(&target)?;
        let expected = self.ledger.get(&target.key());
        let current = self.peek(input).await?;
        let version = current.as_deref().map(content_version);
        let path = target.display;
        match (expected, version) {
            (Some(Observation::Present(seen)), Some(now)) if seen == now => Ok(current),
            (Some(Observation::Present(_)), None) => Err(FsError::FileGone { path }),
            (Some(Observation::Present(_)), Some(_)) => {
                Err(FsError::Changed { op: Op::Write, path })
            }
            (_, Some(_)) => Err(FsError::OverwriteUnread { path }),
            (_, None) => Ok(None),
        }
    }

    /// The bytes of a file as they are now (`None` when it does not exist), without recording an
    /// observation: for comparing against recorded versions, never for authorizing a write. With
    /// a text backend, an existing file's bytes are the backend's text.
    pub async fn peek(&self, input: &str) -> Result<Option<Vec<u8>>, FsError> {
        if let Some((world, target)) = self.resolve_in_world(input, Op::Read).await? {
            if let Some(backend) = self.backend_for(&target)
                && ops::resolved_as_file(&target, Op::Read)?
            {
                let text = backend
                    .read(&target.real_path)
                    .await
                    .map_err(|err| backend_error(Op::Read, &target.display, &err))?;
                return Ok(Some(text.into_bytes()));
            }
            return self.world_bytes(world.as_ref(), &target, Op::Read, WORLD_READ_MAX_BYTES).await;
        }
        let owned = input.to_owned();
        // `Err(target)`: an existing file whose text the backend has.
        let peeked = self
            .blocking(Op::Read, input, move |ws| {
                let target = ws.resolve_blocking(&owned, Op::Read)?;
                if ws.backend_for(&target).is_some() {
                    let exists = ws.exists_for_backend(&target, Op::Read)?;
                    return Ok(if exists { Err(target) } else { Ok(None) });
                }
                ws.peek_blocking(target).map(Ok)
            })
            .await?;
        let target = match peeked {
            Ok(bytes) => return Ok(bytes),
            Err(target) => target,
        };
        let Some(backend) = self.backend_for(&target) else {
            // Removed in the meantime: the disk has the text again.
            return self.blocking(Op::Read, input, move |ws| ws.peek_blocking(target)).await;
        };
        let text = backend
            .read(&target.real_path)
            .await
            .map_err(|err| backend_error(Op::Read, &target.display, &err))?;
        Ok(Some(text.into_bytes()))
    }
}

/// Opens an existing regular file beneath `dir`; `Ok(None)` when it is something else. Opened
/// non-blocking so a FIFO swapped in after resolution cannot hang the call.
fn open_regular(dir: &Dir, rel: &Path) -> io::Result<Option<File>> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32);
    let file = dir.open_with(rel, &options)?.into_std();
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    Ok(Some(file))
}

fn open_dir(root: &Dir, rel: &Path) -> io::Result<Dir> {
    if rel.as_os_str().is_empty() { root.try_clone() } else { root.open_dir(rel) }
}

/// What a write expects to find, checked under the path lock against the file there now.
#[derive(Debug, Clone, Copy)]
enum Expected<'a> {
    /// Write and edit: the session's observation of the file (`None`: never seen, so the file
    /// must not exist).
    Observed(Option<&'a Observation>),
    /// Restore: exactly this version (`None`: no file).
    Restored(Option<&'a str>),
}

impl Expected<'_> {
    fn check(self, op: Op, path: &str, prior: Option<&Prior>) -> Result<(), FsError> {
        let path = || path.to_owned();
        let prior = prior.map(|p| p.version.as_str());
        match self {
            Expected::Observed(observed) => match (observed, prior) {
                (Some(Observation::Present(_)), None) => Err(match op {
                    Op::Write => FsError::FileGone { path: path() },
                    _ => FsError::Changed { op, path: path() },
                }),
                (Some(Observation::Present(version)), Some(prior)) if prior != version => {
                    Err(FsError::Changed { op, path: path() })
                }
                (Some(Observation::Present(_)), Some(_)) => Ok(()),
                (_, Some(_)) => Err(FsError::OverwriteUnread { path: path() }),
                (_, None) => Ok(()),
            },
            Expected::Restored(version) => match (version, prior) {
                (None, None) => Ok(()),
                (Some(version), Some(prior)) if prior == version => Ok(()),
                (Some(_), None) => Err(FsError::FileGone { path: path() }),
                _ => Err(FsError::Changed { op, path: path() }),
            },
        }
    }
}

/// Where a write or restore lands (see [`Workspace::slot`]).
struct Slot<'t> {
    target: &'t ResolvedPath,
    op: Op,
    name: &'t OsStr,
    parent_rel: &'t Path,
    /// The folder and its cross-process lock; `None` while the folder does not exist.
    parent: Option<(Dir, DirLock)>,
    prior: Option<Prior>,
}

/// The file about to be replaced: its metadata (mode to keep), version, and — when small enough
/// — its bytes for the diff basis.
struct Prior {
    /// `None` when the text came from a backend: the editor writes the file, so there is no
    /// mode for us to keep.
    metadata: Option<Metadata>,
    version: String,
    basis: Option<Vec<u8>>,
}

impl Prior {
    /// The bytes a world has for the file (it keeps the file's mode itself).
    fn of_bytes(bytes: Vec<u8>) -> Self {
        let version = content_version(&bytes);
        let basis = (bytes.len() < DIFF_BASIS_MAX_BYTES).then_some(bytes);
        Prior { metadata: None, version, basis }
    }

    /// The text a backend has for the file.
    fn of_text(text: String) -> Self {
        let version = content_version(text.as_bytes());
        let bytes = text.into_bytes();
        let basis = (bytes.len() < DIFF_BASIS_MAX_BYTES).then_some(bytes);
        Prior { metadata: None, version, basis }
    }

    /// The prior text for diffs: only a NUL-free, valid UTF-8 file under the cap, CRLF→LF.
    fn diff_basis(self) -> Option<String> {
        let bytes = self.basis?;
        if bytes.contains(&0) {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        Some(text.replace("\r\n", "\n"))
    }
}

enum PriorError {
    NotRegular,
    Io(io::Error),
}

/// Looks at `parent/name` without following a final symlink: resolution already followed
/// links, so a symlink here means the path changed under us and is refused rather than chased.
fn load_prior(parent: &Dir, name: &OsStr) -> Result<Option<Prior>, PriorError> {
    let metadata = match parent.symlink_metadata(name) {
        Ok(metadata) => metadata,
        Err(err) if classify(&err) == IoClass::NotFound => return Ok(None),
        Err(err) => return Err(PriorError::Io(err)),
    };
    if !metadata.is_file() {
        return Err(PriorError::NotRegular);
    }
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(
        (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::NOFOLLOW)
            .bits() as i32,
    );
    let mut file = match parent.open_with(name, &options) {
        Ok(file) => file.into_std(),
        Err(err) if classify(&err) == IoClass::NotFound => return Ok(None),
        Err(err) => return Err(PriorError::Io(err)),
    };
    let metadata = file.metadata().map_err(PriorError::Io)?;
    if !metadata.is_file() {
        return Err(PriorError::NotRegular);
    }
    // Hash by streaming so replacing a huge file does not need it in memory; keep the bytes
    // only while they can still serve as a diff basis.
    let mut hasher = Sha256::new();
    let mut basis = Some(Vec::new());
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(PriorError::Io(err)),
        };
        hasher.update(&chunk[..n]);
        if let Some(kept) = basis.as_mut() {
            if kept.len() + n < DIFF_BASIS_MAX_BYTES {
                kept.extend_from_slice(&chunk[..n]);
            } else {
                basis = None;
            }
        }
    }
    Ok(Some(Prior { metadata: Some(metadata), version: hex::encode(hasher.finalize()), basis }))
}
