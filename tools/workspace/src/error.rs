//! `FsError`: every way a workspace file operation can fail, with its `FS_*` code (docs/tools.md)
//! and the exact model-facing message.
//!
//! Remedies such as ` — re-read the file, then retry` are deliberately not part of these messages:
//! the tool layer appends them, so one error type serves read, write, edit and the search tools.

use std::fmt;
use std::io;

/// The operation an error belongs to; it is the verb in `cannot <op> "<p>": …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Write,
    Edit,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Edit => "edit",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a path was refused by the sandbox (`FS_SANDBOX_DENIED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxReason {
    /// The lexical path lies under none of the workspace roots.
    Outside,
    /// A symbolic link on the way leads out of the root (or `..` climbs above it).
    SymlinkEscape,
    /// A write target matches a protected pattern (the pattern is carried).
    Protected(String),
    /// A write target lies in a read-only root (e.g. the session's blob folder).
    ReadOnlyRoot,
    /// The path string itself is unusable (empty, NUL byte, too long).
    Invalid(&'static str),
}

/// A failed workspace file operation. `Display` is the model-facing message; [`FsError::code`] is
/// its `FS_*` code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// `FS_NOT_FOUND`.
    #[error("cannot {op} \"{path}\": not found")]
    NotFound { op: Op, path: String },
    /// `FS_NOT_DIRECTORY`: a parent component of the path is not a directory.
    #[error("cannot {op} \"{path}\": a parent of the path is not a directory")]
    NotDirectory { op: Op, path: String },
    /// `FS_NOT_REGULAR_FILE`.
    #[error("cannot {op} \"{path}\": not a regular file")]
    NotRegularFile { op: Op, path: String },
    /// `FS_NOT_TEXT`: a NUL byte (in the first 8192 bytes for read, anywhere for edit).
    #[error("cannot {op} \"{path}\": binary file")]
    Binary { op: Op, path: String },
    /// `FS_NOT_TEXT`.
    #[error("cannot {op} \"{path}\": invalid UTF-8 text")]
    InvalidUtf8 { op: Op, path: String },
    /// `FS_TOO_LARGE`.
    #[error("cannot {op} \"{path}\": file is too large ({size} bytes; the limit is {limit} bytes)")]
    TooLarge { op: Op, path: String, size: u64, limit: u64 },
    /// `FS_PERMISSION_DENIED`: the operating system refused access.
    #[error("cannot {op} \"{path}\": permission denied")]
    PermissionDenied { op: Op, path: String },
    /// `FS_SANDBOX_DENIED`: confinement or protection refused the path before any I/O on it.
    #[error("{}", sandbox_message(path, reason))]
    SandboxDenied { path: String, reason: SandboxReason },
    /// `FS_IO_ERROR`.
    #[error("cannot {op} \"{path}\": {message}")]
    Io { op: Op, path: String, message: String },
    /// `FS_STALE_VERSION` for write: the file observed present has disappeared.
    #[error("cannot write \"{path}\": file no longer exists")]
    FileGone { path: String },
    /// `FS_STALE_VERSION`: the content hash differs from the observed version.
    #[error("cannot {op} \"{path}\": file changed since it was read")]
    Changed { op: Op, path: String },
    /// `FS_NOT_OBSERVED` for write: creating would overwrite an existing file never read.
    #[error("cannot overwrite existing \"{path}\" without reading it first")]
    OverwriteUnread { path: String },
    /// `FS_NOT_OBSERVED` for edit: the file was never read in this session.
    #[error("edit requires reading \"{path}\" first")]
    EditUnread { path: String },
    /// `FS_DIRTY_BUFFER`: the editor holds unsaved changes for this file.
    #[error("\"{path}\" has unsaved changes in the editor; save or revert it, then retry")]
    DirtyBuffer { path: String },
    /// `FS_ABORTED`.
    #[error("cannot {op} \"{path}\": aborted")]
    Aborted { op: Op, path: String },
}

fn sandbox_message(path: &str, reason: &SandboxReason) -> String {
    match reason {
        SandboxReason::Outside => format!("path \"{path}\" is outside the workspace"),
        SandboxReason::SymlinkEscape => {
            format!("path \"{path}\" is outside the workspace (a symbolic link leads out of it)")
        }
        SandboxReason::Protected(pattern) => {
            format!("path \"{path}\" is protected: writes matching \"{pattern}\" are not allowed")
        }
        SandboxReason::ReadOnlyRoot => {
            format!("path \"{path}\" is protected: it lies in a read-only root")
        }
        SandboxReason::Invalid(why) => format!("path \"{path}\" is invalid: {why}"),
    }
}

impl FsError {
    /// The error code (`info.code`), e.g. `FS_NOT_FOUND`.
    pub fn code(&self) -> &'static str {
        match self {
            FsError::NotFound { .. } => "FS_NOT_FOUND",
            FsError::NotDirectory { .. } => "FS_NOT_DIRECTORY",
            FsError::NotRegularFile { .. } => "FS_NOT_REGULAR_FILE",
            FsError::Binary { .. } | FsError::InvalidUtf8 { .. } => "FS_NOT_TEXT",
            FsError::TooLarge { .. } => "FS_TOO_LARGE",
            FsError::PermissionDenied { .. } => "FS_PERMISSION_DENIED",
            FsError::SandboxDenied { .. } => "FS_SANDBOX_DENIED",
            FsError::Io { .. } => "FS_IO_ERROR",
            FsError::FileGone { .. } | FsError::Changed { .. } => "FS_STALE_VERSION",
            FsError::OverwriteUnread { .. } | FsError::EditUnread { .. } => "FS_NOT_OBSERVED",
            FsError::DirtyBuffer { .. } => "FS_DIRTY_BUFFER",
            FsError::Aborted { .. } => "FS_ABORTED",
        }
    }

    /// The error name (`info.name`); always `FsError`.
    pub fn name(&self) -> &'static str {
        "FsError"
    }

    /// The display path the error is about.
    pub fn path(&self) -> &str {
        match self {
            FsError::NotFound { path, .. }
            | FsError::NotDirectory { path, .. }
            | FsError::NotRegularFile { path, .. }
            | FsError::Binary { path, .. }
            | FsError::InvalidUtf8 { path, .. }
            | FsError::TooLarge { path, .. }
            | FsError::PermissionDenied { path, .. }
            | FsError::SandboxDenied { path, .. }
            | FsError::Io { path, .. }
            | FsError::FileGone { path }
            | FsError::Changed { path, .. }
            | FsError::OverwriteUnread { path }
            | FsError::EditUnread { path }
            | FsError::DirtyBuffer { path }
            | FsError::Aborted { path, .. } => path,
        }
    }

    pub(crate) fn denied(path: &str, reason: SandboxReason) -> Self {
        FsError::SandboxDenied { path: path.to_owned(), reason }
    }

    /// Maps an I/O error on `path` to the closest code. cap-std reports an attempted escape as
    /// `PermissionDenied` without an OS error number, which must become a sandbox denial rather
    /// than `FS_PERMISSION_DENIED`.
    pub(crate) fn from_io(op: Op, path: &str, err: &io::Error) -> Self {
        let path = path.to_owned();
        match classify(err) {
            IoClass::Escape => {
                FsError::SandboxDenied { path, reason: SandboxReason::SymlinkEscape }
            }
            IoClass::NotFound => FsError::NotFound { op, path },
            IoClass::NotDirectory => FsError::NotDirectory { op, path },
            IoClass::PermissionDenied => FsError::PermissionDenied { op, path },
            IoClass::Loop => {
                FsError::Io { op, path, message: "too many levels of symbolic links".to_owned() }
            }
            IoClass::Other => FsError::Io { op, path, message: io_message(err) },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IoClass {
    Escape,
    NotFound,
    NotDirectory,
    PermissionDenied,
    Loop,
    Other,
}

pub(crate) fn classify(err: &io::Error) -> IoClass {
    match err.raw_os_error() {
        None if err.kind() == io::ErrorKind::PermissionDenied => IoClass::Escape,
        None if err.kind() == io::ErrorKind::NotFound => IoClass::NotFound,
        None => IoClass::Other,
        Some(raw) => match rustix::io::Errno::from_raw_os_error(raw) {
            rustix::io::Errno::NOENT => IoClass::NotFound,
            rustix::io::Errno::NOTDIR => IoClass::NotDirectory,
            rustix::io::Errno::ACCESS | rustix::io::Errno::PERM => IoClass::PermissionDenied,
            rustix::io::Errno::LOOP => IoClass::Loop,
            rustix::io::Errno::XDEV => IoClass::Escape,
            _ => IoClass::Other,
        },
    }
}

/// The OS description without Rust's ` (os error N)` suffix, which means nothing to a model.
fn io_message(err: &io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(idx) => text[..idx].to_lowercase(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_documented_ones() {
        let p = "/w/a.txt".to_owned();
        let cases: Vec<(FsError, &str, &str)> = vec![
            (
                FsError::NotFound { op: Op::Read, path: p.clone() },
                "FS_NOT_FOUND",
                "cannot read \"/w/a.txt\": not found",
            ),
            (
                FsError::NotRegularFile { op: Op::Read, path: p.clone() },
                "FS_NOT_REGULAR_FILE",
                "cannot read \"/w/a.txt\": not a regular file",
            ),
            (
                FsError::Binary { op: Op::Read, path: p.clone() },
                "FS_NOT_TEXT",
                "cannot read \"/w/a.txt\": binary file",
            ),
            (
                FsError::InvalidUtf8 { op: Op::Read, path: p.clone() },
                "FS_NOT_TEXT",
                "cannot read \"/w/a.txt\": invalid UTF-8 text",
            ),
            (
                FsError::EditUnread { path: p.clone() },
                "FS_NOT_OBSERVED",
                "edit requires reading \"/w/a.txt\" first",
            ),
            (
                FsError::NotFound { op: Op::Edit, path: p.clone() },
                "FS_NOT_FOUND",
                "cannot edit \"/w/a.txt\": not found",
            ),
            (
                FsError::FileGone { path: p.clone() },
                "FS_STALE_VERSION",
                "cannot write \"/w/a.txt\": file no longer exists",
            ),
            (
                FsError::Changed { op: Op::Write, path: p.clone() },
                "FS_STALE_VERSION",
                "cannot write \"/w/a.txt\": file changed since it was read",
            ),
            (
                FsError::OverwriteUnread { path: p.clone() },
                "FS_NOT_OBSERVED",
                "cannot overwrite existing \"/w/a.txt\" without reading it first",
            ),
            (
                FsError::Changed { op: Op::Edit, path: p.clone() },
                "FS_STALE_VERSION",
                "cannot edit \"/w/a.txt\": file changed since it was read",
            ),
            (
                FsError::Binary { op: Op::Edit, path: p.clone() },
                "FS_NOT_TEXT",
                "cannot edit \"/w/a.txt\": binary file",
            ),
            (
                FsError::DirtyBuffer { path: p.clone() },
                "FS_DIRTY_BUFFER",
                "\"/w/a.txt\" has unsaved changes in the editor; save or revert it, then retry",
            ),
            (
                FsError::SandboxDenied {
                    path: "/etc/passwd".into(),
                    reason: SandboxReason::Outside,
                },
                "FS_SANDBOX_DENIED",
                "path \"/etc/passwd\" is outside the workspace",
            ),
        ];
        for (err, code, message) in cases {
            assert_eq!(err.code(), code);
            assert_eq!(err.to_string(), message);
        }
    }

    #[test]
    fn escape_is_not_a_permission_error() {
        let escape = io::Error::new(io::ErrorKind::PermissionDenied, "a path led outside");
        assert_eq!(classify(&escape), IoClass::Escape);
        let eacces = io::Error::from_raw_os_error(rustix::io::Errno::ACCESS.raw_os_error());
        assert_eq!(classify(&eacces), IoClass::PermissionDenied);
    }
}
