//! Append-only session log, crash repair, replay and the content-addressed blob store
//! (docs/design.md §6).
//!
//! Layout: `<sessions dir>/<workspace key>/<session id>/session.jsonl`, blobs in `blobs/` beside
//! it; directories 0700, files 0600. The first line is a [`SessionHeader`], every other line an
//! [`Envelope`] `{type, seq, time, data, externalized?, ignorable?}` with `seq` contiguous from 0.
//!
//! - [`SessionLog::open`] takes the session's exclusive lock, repairs a crash (torn tail cut,
//!   open calls closed with `TOOL_OUTCOME_UNKNOWN`) and starts the single writer; appends return
//!   once durable, but a read-only call's result under [`Durability::Batched`], which is synced
//!   within [`SYNC_WINDOW`].
//! - [`read_session`] and [`list_sessions`] are read-only and work on live sessions;
//!   [`replay_cards`] rebuilds cards from a [`SessionView`] without touching the workspace.
//!   [`read_session_salvaging`] reads what is left of a damaged log and lists what it skipped;
//!   [`repair_session`] rewrites such a log without its damage (moved aside, never deleted).
//! - [`BlobStore`] stores spill files (it is the server's `SpillStore`) and image bytes; image
//!   blocks are logged as `blob:sha256:<hex>` references, and a `tool/call`'s strings over
//!   [`LARGE_STRING_BYTES`] are kept there too, listed in the envelope and restored on reading.
//!
//! [`SessionHeader`]: toolhost_protocol::session_log::SessionHeader
//! [`Envelope`]: toolhost_protocol::session_log::Envelope

mod base64;
mod blob;
mod durability;
mod encoded;
mod error;
mod large_strings;
mod lines;
mod paths;
mod repair;
mod replay;
mod retention;
mod scan;
mod session_lock;
mod view;
mod writer;

pub use blob::{BLOB_REF_PREFIX, BlobStore, blob_hash, blob_reference, parse_blob_reference};
pub use durability::{Durability, SYNC_WINDOW};
pub use error::SessionError;
pub use large_strings::LARGE_STRING_BYTES;
pub use paths::{
    BLOB_DIR_NAME, DAMAGED_FILE_NAME, LOG_FILE_NAME, TORN_FILE_NAME, new_session_id, session_dir,
    state_dir, validate_session_id, validate_workspace_key, workspace_key,
};
pub use repair::{RepairReport, repair_session};
pub use replay::{ReplayedCall, replay_cards};
pub use retention::{
    SessionSummary, delete_session, list_sessions, parse_duration, prune_sessions,
};
pub use scan::{FS_CHANGE, FS_OBSERVED, SkippedLines, TOOL_CALL, TOOL_RESULT};
pub use view::{CallRecord, SessionView, read_session, read_session_salvaging};
pub use writer::{
    Durable, OUTCOME_UNKNOWN_CODE, OUTCOME_UNKNOWN_NAME, ObserveFn, OpenReport, SessionLog,
    TornTail, outcome_unknown_result,
};

/// Base64 helpers for image blocks (canonical padded standard alphabet).
pub mod image_data {
    pub use crate::base64::{decode_canonical, encode};
}
