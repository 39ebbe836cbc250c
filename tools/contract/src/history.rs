//! The change-history seam: what a tool that undoes changes (`revert`, docs/tools.md) needs from
//! the host — the file changes the session log recorded, the exact bytes behind them, and a
//! journal that makes a multi-file revert all or nothing.
//!
//! The host implements it over its session log and blob store (`toolhost-server`); tools reach
//! it only as a capability of their context, like every other piece of the world.

use crate::future::BoxFuture;
use std::sync::Arc;
use toolhost_protocol::session_log::{FsChangeEvent, RevertJournal};

/// A call of the session, as far as undoing is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryCall {
    pub call_id: String,
    pub name: String,
    /// The call ended successfully (a failed or unfinished call's changes are never undone
    /// implicitly: its outcome is unknown).
    pub completed: bool,
    /// Its place in the log (the `tool/call` record's seq).
    pub seq: u64,
    /// Its arguments as recorded.
    pub arguments: serde_json::Value,
}

/// A turn of an agent of the session: the point before it is a checkpoint of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryTurn {
    pub run_id: String,
    /// The `agent/run` record's seq.
    pub seq: u64,
    /// What the person asked (the turn's first user message), when recorded.
    pub prompt: Option<String>,
}

/// The session's calls and file changes, in log order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    pub calls: Vec<HistoryCall>,
    pub changes: Vec<FsChangeEvent>,
    /// The agents' turns, in log order.
    pub turns: Vec<HistoryTurn>,
}

/// Why the history could not answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HistoryError {
    /// The host keeps no session log, so nothing was recorded.
    #[error("this session keeps no log, so its changes cannot be undone")]
    NoSession,
    /// A recorded blob is missing or unreadable.
    #[error("the recorded content {hash} is missing from the session's blob store: {detail}")]
    MissingBlob { hash: String, detail: String },
    #[error("cannot read the session's history: {0}")]
    Io(String),
}

impl HistoryError {
    /// The stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            HistoryError::NoSession => "REVERT_NO_SESSION",
            HistoryError::MissingBlob { .. } => "REVERT_MISSING_CONTENT",
            HistoryError::Io(_) => "REVERT_IO_ERROR",
        }
    }
}

/// The host's record of changes.
pub trait ChangeHistory: Send + Sync {
    /// Every call and file change of the session so far, in log order (durable or queued).
    fn history(&self) -> BoxFuture<'_, Result<History, HistoryError>>;

    /// The bytes of a recorded blob.
    fn load(&self, hash: String) -> BoxFuture<'_, Result<Vec<u8>, HistoryError>>;

    /// Stores bytes durably (content-addressed) and returns their hash.
    fn keep(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<String, HistoryError>>;

    /// Writes the journal of a multi-file change durably, before its first file is touched.
    fn begin_journal(&self, journal: RevertJournal) -> BoxFuture<'_, Result<(), HistoryError>>;

    /// Removes the journal once every file is done (or rolled back).
    fn end_journal(&self) -> BoxFuture<'_, Result<(), HistoryError>>;
}

/// The capability as tools get it.
pub type HistoryHandle = Arc<dyn ChangeHistory>;
