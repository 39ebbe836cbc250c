//! Resolution beneath a held root directory handle.
//!
//! Each component is looked up through the root's `cap_std::fs::Dir` (openat2 with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` on Linux), and symbolic links are expanded here by
//! hand. Doing it by hand gives two things the kernel alone does not: the symlink-free real path
//! (for protected-path checks, ledger keys and locks), and acceptance of absolute links that point
//! back inside the root. It is not what keeps us confined: every later open also goes through the
//! root handle, so a directory swapped for a symlink after this walk still cannot lead out.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

use crate::error::{IoClass, classify};

/// Symlink expansions allowed in one resolution, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINK_HOPS: usize = 40;

/// One workspace root: where it was configured, where it really is, and the handle every
/// operation beneath it goes through.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    canonical: PathBuf,
    dir: Dir,
    read_only: bool,
}

impl Root {
    pub(crate) fn open(path: PathBuf, read_only: bool) -> io::Result<Self> {
        let canonical = std::fs::canonicalize(&path).map_err(|e| {
            io::Error::new(e.kind(), format!("workspace root {}: {e}", path.display()))
        })?;
        let dir = Dir::open_ambient_dir(&canonical, cap_std::ambient_authority()).map_err(|e| {
            io::Error::new(e.kind(), format!("workspace root {}: {e}", canonical.display()))
        })?;
        Ok(Root { path, canonical, dir, read_only })
    }

    /// The root as configured (absolute, lexically normalized; may contain symlinks).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root with every symlink resolved; real paths and ledger keys are built on it.
    pub fn canonical(&self) -> &Path {
        &self.canonical
    }

    /// The held handle. Anything that opens files beneath this root should go through it.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Read-only roots (such as the session blob folder) are readable but never writable.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// `abs` relative to this root if it lies beneath either spelling of the root.
    pub(crate) fn relative<'a>(&self, abs: &'a Path) -> Option<&'a Path> {
        abs.strip_prefix(&self.canonical).ok().or_else(|| abs.strip_prefix(&self.path).ok())
    }
}

/// What a path names, without following a final symlink (resolution already did).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    /// Sockets, FIFOs, devices, or a symlink that changed under us.
    Other,
}

impl EntryKind {
    pub(crate) fn of(file_type: cap_std::fs::FileType) -> Self {
        if file_type.is_file() {
            EntryKind::File
        } else if file_type.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::Other
        }
    }
}

/// The state of the resolved entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    Present(EntryKind),
    Missing,
    /// Some parent component exists but is not a directory.
    ParentNotDir,
}

#[derive(Debug)]
pub(crate) struct Resolution {
    /// Root-relative, symlink-free (as of the walk) path; empty for the root itself.
    pub(crate) real_rel: PathBuf,
    pub(crate) state: EntryState,
}

#[derive(Debug)]
pub(crate) enum ResolveError {
    Escape,
    Loop,
    Io(io::Error),
}

impl From<io::Error> for ResolveError {
    fn from(err: io::Error) -> Self {
        match classify(&err) {
            IoClass::Escape => ResolveError::Escape,
            IoClass::Loop => ResolveError::Loop,
            _ => ResolveError::Io(err),
        }
    }
}

fn join(parts: &[OsString]) -> PathBuf {
    parts.iter().collect()
}

fn push_components(into: &mut VecDeque<OsString>, path: &Path) -> Result<(), ResolveError> {
    // Pushed to the front in reverse, so the link target is walked before what followed the link.
    let mut parts: Vec<OsString> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => parts.push(name.to_owned()),
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::CurDir => {}
            // Absolute targets are made root-relative before they get here.
            Component::RootDir | Component::Prefix(_) => return Err(ResolveError::Escape),
        }
    }
    for part in parts.into_iter().rev() {
        into.push_front(part);
    }
    Ok(())
}

/// Walks `lexical_rel` (root-relative, already free of `..`) beneath `root`, expanding symlinks.
pub(crate) fn resolve_beneath(root: &Root, lexical_rel: &Path) -> Result<Resolution, ResolveError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, lexical_rel)?;
    let mut resolved: Vec<OsString> = Vec::new();
    let mut kind = EntryKind::Dir;
    let mut hops = 0usize;

    while let Some(name) = pending.pop_front() {
        if name == OsStr::new("..") {
            if resolved.pop().is_none() {
                return Err(ResolveError::Escape);
            }
            kind = EntryKind::Dir;
            continue;
        }
        resolved.push(name);
        let candidate = join(&resolved);
        let metadata = match root.dir.symlink_metadata(&candidate) {
            Ok(metadata) => metadata,
            Err(err) => {
                return match classify(&err) {
                    IoClass::NotFound => finish_missing(resolved, pending, EntryState::Missing),
                    IoClass::NotDirectory => {
                        finish_missing(resolved, pending, EntryState::ParentNotDir)
                    }
                    _ => Err(err.into()),
                };
            }
        };
        if metadata.file_type().is_symlink() {
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(ResolveError::Loop);
            }
            let target = root.dir.read_link_contents(&candidate)?;
            resolved.pop();
            if target.is_absolute() {
                let Some(rel) = root.relative(&target) else {
                    return Err(ResolveError::Escape);
                };
                resolved.clear();
                push_components(&mut pending, rel)?;
            } else {
                push_components(&mut pending, &target)?;
            }
            continue;
        }
        kind = EntryKind::of(metadata.file_type());
        if kind != EntryKind::Dir && !pending.is_empty() {
            return finish_missing(resolved, pending, EntryState::ParentNotDir);
        }
    }
    Ok(Resolution { real_rel: join(&resolved), state: EntryState::Present(kind) })
}

/// Appends what is left lexically once the walk hits something that does not exist: there is
/// nothing on disk left to follow, and `..` may still not climb above the root.
fn finish_missing(
    mut resolved: Vec<OsString>,
    pending: VecDeque<OsString>,
    state: EntryState,
) -> Result<Resolution, ResolveError> {
    for name in pending {
        if name == OsStr::new("..") {
            if resolved.pop().is_none() {
                return Err(ResolveError::Escape);
            }
        } else {
            resolved.push(name);
        }
    }
    Ok(Resolution { real_rel: join(&resolved), state })
}
