//! What a line must be before the writer appends it: an event of a known kind in the shape
//! readers expect (or marked ignorable), and images stored as blobs rather than inline base64.

use crate::base64;
use crate::blob::{BlobStore, blob_reference, parse_blob_reference};
use crate::error::SessionError;
use crate::scan::{FS_CHANGE, FS_OBSERVED, TOOL_CALL, TOOL_RESULT};
use serde::Deserialize;
use serde_json::Value;
use toolhost_protocol::session_log::{
    FsChangeEvent, FsObservedEvent, ToolCallEvent, ToolResultEvent,
};

/// Replaces the base64 `data` of image blocks in a `tool/result`'s `content` by a blob reference,
/// storing the decoded bytes first (so a reference in a synced line always has its blob). Data
/// that is not canonical base64 stays inline: storing it would not round-trip byte-exactly.
pub(crate) fn externalize_images(data: &mut Value, blobs: &BlobStore) -> Result<(), SessionError> {
    let Some(blocks) = data.get_mut("content").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for block in blocks {
        if block.get("type").and_then(Value::as_str) != Some("image") {
            continue;
        }
        let Some(Value::String(text)) = block.get_mut("data") else { continue };
        if parse_blob_reference(text).is_some() {
            continue;
        }
        if let Some(bytes) = base64::decode_canonical(text) {
            *text = blob_reference(&blobs.put_bytes(&bytes)?);
        }
    }
    Ok(())
}

/// Checks that `data` has the shape readers expect for `kind`, so an append can never make the
/// log unreadable.
pub(crate) fn validate_event(
    kind: &str,
    data: &Value,
    ignorable: bool,
) -> Result<(), SessionError> {
    let invalid = |e: serde_json::Error| SessionError::InvalidEvent {
        kind: kind.to_owned(),
        detail: e.to_string(),
    };
    match kind {
        TOOL_CALL => ToolCallEvent::deserialize(data).map(drop).map_err(invalid),
        TOOL_RESULT => ToolResultEvent::deserialize(data).map(drop).map_err(invalid),
        FS_OBSERVED => FsObservedEvent::deserialize(data).map(drop).map_err(invalid),
        FS_CHANGE => FsChangeEvent::deserialize(data).map(drop).map_err(invalid),
        _ if ignorable => Ok(()),
        _ => Err(SessionError::InvalidEvent {
            kind: kind.to_owned(),
            detail:
                "unknown event types must be marked ignorable, or readers could not load the log"
                    .to_owned(),
        }),
    }
}
