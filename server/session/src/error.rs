//! The one error type of the crate. Every variant has a stable code (`code()`) so the CLI and the
//! server can map them (e.g. `SESSION_LOCKED` ⇒ exit code 3) without matching on messages.

use std::path::{Path, PathBuf};

/// Everything that can go wrong opening, writing, reading or managing a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A session id outside `[A-Za-z0-9_-]{1,64}`; refused before it can name a path.
    #[error("invalid session id {0:?}: use 1-64 characters of A-Z, a-z, 0-9, '_' or '-'")]
    InvalidSessionId(String),
    /// A workspace key that is not a single plain path component.
    #[error("invalid workspace key {0:?}")]
    InvalidWorkspaceKey(String),
    /// The session (or its log) does not exist.
    #[error("no session at {}", .0.display())]
    NotFound(PathBuf),
    /// Another process (or another handle in this one) holds the session's exclusive lock.
    #[error("session {} is in use by another toolhost process", .0.display())]
    Locked(PathBuf),
    /// A line that is not the torn tail is unreadable, out of sequence or malformed. Nothing is
    /// skipped or truncated silently: the log stays as it is for a human to inspect.
    #[error("session log corrupt at line {line} (expected seq {expected_seq}): {detail}")]
    Corrupt { line: usize, expected_seq: u64, detail: String },
    /// The log of session `id` is damaged before its tail (a `Corrupt` or `UnknownEvent`
    /// underneath). Opening it for appending is refused — what follows the damage would be out
    /// of reach — and the message says how to repair it.
    #[error(
        "{source}; run `toolhost sessions repair {id}` in the workspace to keep its readable records and move the damaged lines aside (nothing is deleted)"
    )]
    Damaged {
        id: String,
        #[source]
        source: Box<SessionError>,
    },
    /// An event type this version does not know and that is not marked `ignorable`.
    #[error(
        "session log line {line} (seq {seq}) has unknown event type {kind:?} not marked ignorable"
    )]
    UnknownEvent { line: usize, seq: u64, kind: String },
    /// A filesystem operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The writer stopped (after an I/O failure, or because the log was closed); reopen the
    /// session to continue.
    #[error("the session log writer has stopped: {0}")]
    WriterClosed(String),
    /// An append that would make the log unreadable: an unknown event type not marked
    /// `ignorable`, or a known type whose `data` does not have the event's shape.
    #[error("refused to append {kind:?}: {detail}")]
    InvalidEvent { kind: String, detail: String },
    /// A duration string that `parse_duration` does not accept.
    #[error("invalid duration {0:?}: use a number followed by s, m, h, d or w (e.g. 30d)")]
    InvalidDuration(String),
    /// A blob hash that is not 64 lowercase hex digits.
    #[error("invalid blob hash {0:?}")]
    InvalidBlobHash(String),
}

impl SessionError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::InvalidSessionId(_) => "SESSION_INVALID_ID",
            SessionError::InvalidWorkspaceKey(_) => "SESSION_INVALID_WORKSPACE_KEY",
            SessionError::NotFound(_) => "SESSION_NOT_FOUND",
            SessionError::Locked(_) => "SESSION_LOCKED",
            SessionError::Corrupt { .. } => "SESSION_CORRUPT",
            SessionError::Damaged { source, .. } => source.code(),
            SessionError::UnknownEvent { .. } => "SESSION_UNKNOWN_EVENT",
            SessionError::Io { .. } => "SESSION_IO",
            SessionError::WriterClosed(_) => "SESSION_WRITER_CLOSED",
            SessionError::InvalidEvent { .. } => "SESSION_INVALID_EVENT",
            SessionError::InvalidDuration(_) => "SESSION_INVALID_DURATION",
            SessionError::InvalidBlobHash(_) => "SESSION_INVALID_BLOB_HASH",
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        SessionError::Io { context: context.into(), source }
    }

    /// The mapping of an I/O error of `what` on `path` ("cannot {what} {path}").
    pub(crate) fn io_at(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> SessionError {
        let context = format!("cannot {what} {}", path.display());
        move |e| SessionError::io(context, e)
    }

    /// A copy for fanning one batch failure out to every waiting appender (`io::Error` is not
    /// `Clone`, so its kind and text are carried over).
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            SessionError::Io { context, source } => SessionError::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            other => SessionError::WriterClosed(other.to_string()),
        }
    }
}
