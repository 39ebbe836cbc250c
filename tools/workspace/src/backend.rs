//! The text backend seam: where the *content* of workspace text files comes from and goes to.
//!
//! Run as an Agent Client Protocol agent inside an editor, toolhost must see what the person sees:
//! a file open with unsaved changes has its truth in the editor's buffer, not on the disk, and a
//! write should land in that buffer (the editor saves it) rather than race it on disk. The editor
//! offers exactly that (`fs/read_text_file`, `fs/write_text_file`), so the workspace can swap the
//! disk for it as the source of text — one seam under every file tool instead of a special case
//! in each.
//!
//! Only content moves behind the seam. Confinement (resolution beneath the root handles,
//! read-only roots, protected paths), the per-path locks, the ledger and the dirty-buffer checks
//! stay local and run before the backend is asked, so an editor can never widen what a call may
//! touch. Whether a file exists, and what kind of entry it is, is still the disk's answer; files
//! in read-only roots (session blobs, spills) and the search tools never go through the backend.

use std::fmt;
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;

use crate::error::{FsError, Op};

/// What a [`TextBackend`] returns: boxed so the trait stays object safe.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + Send + 'a>>;

/// Text files read from / written to an editor holding unsaved buffers, instead of the disk.
///
/// Paths are real (canonical, symlink-free) absolute paths inside a writable workspace root; the
/// workspace has already confined them. Errors become file-tool errors by kind:
/// `NotFound` → `FS_NOT_FOUND`, `PermissionDenied` → `FS_PERMISSION_DENIED`, `InvalidData` (the
/// file cannot be had as text) → `FS_NOT_TEXT`, anything else → `FS_IO_ERROR` carrying the
/// error's message.
pub trait TextBackend: Send + Sync + fmt::Debug {
    /// The file's text as the editor has it (its unsaved buffer, else the disk).
    fn read<'a>(&'a self, real_path: &'a Path) -> BackendFuture<'a, String>;
    /// Replaces the file's text in the editor (which saves it).
    fn write<'a>(&'a self, real_path: &'a Path, text: &'a str) -> BackendFuture<'a, ()>;
}

/// A backend's failure as the error the file tools report for `path`.
///
/// Not [`FsError::from_io`]: that one reads a `PermissionDenied` without an OS error number as
/// cap-std's escape report, which a backend's refusal is not — the path was confined already.
pub(crate) fn backend_error(op: Op, path: &str, err: &io::Error) -> FsError {
    let path = path.to_owned();
    match err.kind() {
        io::ErrorKind::NotFound => FsError::NotFound { op, path },
        io::ErrorKind::PermissionDenied => FsError::PermissionDenied { op, path },
        io::ErrorKind::InvalidData => FsError::InvalidUtf8 { op, path },
        _ => FsError::Io { op, path, message: format!("editor: {err}") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_errors_keep_their_kind() {
        let cases = [
            (io::ErrorKind::NotFound, "FS_NOT_FOUND"),
            (io::ErrorKind::PermissionDenied, "FS_PERMISSION_DENIED"),
            (io::ErrorKind::InvalidData, "FS_NOT_TEXT"),
            (io::ErrorKind::TimedOut, "FS_IO_ERROR"),
            (io::ErrorKind::Other, "FS_IO_ERROR"),
        ];
        for (kind, code) in cases {
            let err = backend_error(Op::Read, "/w/a.txt", &io::Error::new(kind, "no"));
            assert_eq!(err.code(), code, "{kind:?}");
        }
        let other = backend_error(Op::Write, "/w/a.txt", &io::Error::other("editor went away"));
        assert_eq!(other.to_string(), "cannot write \"/w/a.txt\": editor: editor went away");
    }
}
