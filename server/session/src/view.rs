//! Read-only views of a session: `read_session` parses a log that may be live in another process
//! and never writes — a torn tail is ignored in memory and unfinished calls are shown as pending.
//! `read_session_salvaging` does the same for a damaged log, stepping over what it cannot read
//! and saying so in [`SessionView::skipped`].

use crate::base64;
use crate::blob::{BlobStore, parse_blob_reference};
use crate::error::SessionError;
use crate::large_strings;
use crate::paths::BLOB_DIR_NAME;
use crate::scan::{Event, Scan, SkippedLines, scan, scan_salvaging};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use toolhost_protocol::session_log::{FsChangeEvent, LOG_VERSION, SessionHeader, ToolResultEvent};
use toolhost_protocol::{CallPresentation, ContentBlock};

/// One tool call of a session, in log order.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// Seq of the `tool/call` event.
    pub seq: u64,
    pub call_id: String,
    pub name: String,
    /// The JSON arguments (a string only when they were not JSON).
    pub arguments: Value,
    /// How the tool presented the call (recorded, or derived for an older log).
    pub presentation: CallPresentation,
    /// Who made the call, when it was another program (an MCP client).
    pub caller: Option<String>,
    /// The call this one ran under (a program's or a subagent's call).
    pub parent_call_id: Option<String>,
    /// Large strings of the call (an argument, or the presentation's copy of one) that were kept
    /// as blobs and could not be read back — the blob is gone or damaged — as JSON pointers into
    /// the `tool/call` data (`/arguments/content`). They read as `""`; everything else of the
    /// call is there.
    pub strings_not_kept: Vec<String>,
    /// `None` while the call is open (pending, or interrupted before repair).
    pub result: Option<ToolResultEvent>,
}

/// Everything replay and listing need from one log.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionView {
    pub header: SessionHeader,
    pub calls: Vec<CallRecord>,
    /// The ledger's last recorded version per path (`fs/observed`, last wins), in order of first
    /// appearance.
    pub observed: Vec<(String, Option<String>)>,
    /// Every `fs/change`, in log order: the files calls changed, with blobs of both sides.
    pub changes: Vec<FsChangeEvent>,
    /// Session state events (`todo/write`, `plan/mode`, `structured/run`, `structured/output`) as
    /// `(seq, type, data)`, in log order.
    pub state: Vec<(u64, String, Value)>,
    /// The agent's conversation records (`agent/*`) as `(seq, type, data)`, in log order.
    pub conversation: Vec<(u64, String, Value)>,
    /// Number of envelopes read, i.e. the seq the next append would get.
    pub next_seq: u64,
    /// Bytes of a torn tail that were ignored (a live writer mid-append, or a crash not yet
    /// repaired).
    pub torn_tail_bytes: u64,
    /// The damaged stretches a salvaging read stepped over (always empty for `read_session`,
    /// which fails on them instead).
    pub skipped: Vec<SkippedLines>,
}

impl SessionView {
    /// Calls without a result.
    pub fn open_calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.calls.iter().filter(|c| c.result.is_none())
    }
}

/// Reads the log at `path` without locking or writing anything. Image references are resolved
/// from the `blobs/` folder beside the log when the blob exists (else the reference stays), and
/// so are a call's large strings (else they are empty and named in `strings_not_kept`).
pub fn read_session(path: &Path) -> Result<SessionView, SessionError> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SessionError::NotFound(path.to_owned()),
        _ => SessionError::io(format!("cannot read {}", path.display()), e),
    })?;
    let scanned = scan(&bytes)?;
    let blobs = path.parent().map(|dir| BlobStore::new(dir.join(BLOB_DIR_NAME)));
    build_view(scanned, blobs.as_ref())
}

/// [`read_session`] for a log that may be damaged: every record that can be read is in the view
/// and every stretch that cannot is listed in [`SessionView::skipped`]. An unreadable header is
/// stood in for by one naming the session's folder (with an empty `cwd`). Fails only when the
/// file cannot be read or its header is of a format this build does not read.
pub fn read_session_salvaging(path: &Path) -> Result<SessionView, SessionError> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SessionError::NotFound(path.to_owned()),
        _ => SessionError::io(format!("cannot read {}", path.display()), e),
    })?;
    let mut scanned = scan_salvaging(&bytes)?;
    if scanned.header.is_none() && !scanned.skipped.is_empty() {
        let id = path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy());
        scanned.header = Some(SessionHeader {
            kind: "session".to_owned(),
            version: LOG_VERSION,
            id: id.map(|n| n.into_owned()).unwrap_or_default(),
            cwd: String::new(),
            created_at: 0,
        });
    }
    let blobs = path.parent().map(|dir| BlobStore::new(dir.join(BLOB_DIR_NAME)));
    build_view(scanned, blobs.as_ref())
}

/// Assembles the view from a scan.
pub(crate) fn build_view(
    scan: Scan,
    blobs: Option<&BlobStore>,
) -> Result<SessionView, SessionError> {
    let Some(header) = scan.header else {
        return Err(SessionError::Corrupt {
            line: 1,
            expected_seq: 0,
            detail: "the log has no complete session header".to_owned(),
        });
    };
    let mut calls: Vec<CallRecord> = Vec::new();
    // callId → index of its still-open call; ids may be reused by clients, so a result closes the
    // most recent open call with its id.
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut observed: Vec<(String, Option<String>)> = Vec::new();
    let mut observed_at: HashMap<String, usize> = HashMap::new();
    let mut changes = Vec::new();
    let mut state = Vec::new();
    let mut conversation = Vec::new();
    for record in scan.records {
        match record.event {
            Event::Call(call) => {
                let mut call = *call;
                open.insert(call.call_id.clone(), calls.len());
                let strings_not_kept = if record.externalized.is_empty() {
                    Vec::new()
                } else {
                    large_strings::restore(&mut call, &record.externalized, blobs)
                };
                let presentation = call.presentation();
                calls.push(CallRecord {
                    seq: record.seq,
                    call_id: call.call_id,
                    name: call.name,
                    arguments: call.arguments,
                    presentation,
                    caller: call.caller,
                    parent_call_id: call.parent_call_id,
                    strings_not_kept,
                    result: None,
                });
            }
            Event::Result(mut result) => {
                if let Some(blobs) = blobs {
                    restore_images(&mut result.content, blobs);
                }
                match open.remove(&result.call_id) {
                    Some(index) => calls[index].result = Some(result),
                    // A result without its call (hand-edited log): keep it visible rather than
                    // drop it, with unknown arguments.
                    None => calls.push(CallRecord {
                        seq: record.seq,
                        call_id: result.call_id.clone(),
                        name: result.name.clone(),
                        arguments: Value::Null,
                        presentation: CallPresentation::generic(&result.name),
                        caller: None,
                        parent_call_id: None,
                        strings_not_kept: Vec::new(),
                        result: Some(result),
                    }),
                }
            }
            Event::Observed(obs) => match observed_at.get(&obs.path) {
                Some(&index) => observed[index].1 = obs.version,
                None => {
                    observed_at.insert(obs.path.clone(), observed.len());
                    observed.push((obs.path, obs.version));
                }
            },
            Event::Change(change) => changes.push(change),
            Event::State { kind, data } => state.push((record.seq, kind, data)),
            Event::Conversation { kind, data } => conversation.push((record.seq, kind, data)),
            Event::Ignored => {}
        }
    }
    Ok(SessionView {
        header,
        calls,
        observed,
        changes,
        state,
        conversation,
        next_seq: scan.next_seq,
        torn_tail_bytes: scan.torn_len as u64,
        skipped: scan.skipped,
    })
}

/// Puts base64 image data back in place of blob references whose blob is present.
fn restore_images(content: &mut [ContentBlock], blobs: &BlobStore) {
    for block in content {
        if let ContentBlock::Image { data, .. } = block
            && let Some(hash) = parse_blob_reference(data)
            && let Ok(bytes) = blobs.get_bytes(hash)
        {
            *data = base64::encode(&bytes);
        }
    }
}
