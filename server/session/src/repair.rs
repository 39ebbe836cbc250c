//! Repairing a damaged log (`toolhost sessions repair`): the readable records stay, the damaged
//! stretches move to `session.damaged` beside the log, and the seqs after a gap are renumbered so
//! the log is whole again and the session can be continued.
//!
//! Nothing is deleted: the damaged bytes are appended to the sidecar and synced *before* the log
//! is replaced, and the log is replaced atomically (temp file, fsync, rename, fsync of the folder),
//! so a crash at any point leaves either the damaged log or the repaired one, and the bytes moved
//! aside are in the sidecar in both cases. A readable line is copied byte for byte unless its seq
//! changes. A torn tail stays at the end, for the next open to cut as usual.

use crate::error::SessionError;
use crate::paths::{
    DAMAGED_FILE_NAME, LOG_FILE_NAME, now_ms, open_private_append, sync_dir, validate_session_id,
    workspace_key,
};
use crate::scan::{SkippedLines, scan_salvaging};
use crate::session_lock::lock_session;
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use toolhost_protocol::session_log::{LOG_VERSION, SessionHeader};

/// What [`repair_session`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// The repaired log.
    pub log_path: PathBuf,
    /// The stretches moved aside, as they were in the damaged log (empty: it needed no repair,
    /// and nothing was written).
    pub moved: Vec<SkippedLines>,
    /// The file beside the log that holds the moved bytes (appended to by every repair).
    pub moved_to: PathBuf,
    /// Records kept (the header not counted).
    pub kept: usize,
    /// Kept records whose seq changed to close the gaps the damage left.
    pub renumbered: usize,
    /// The header was unreadable and was written anew (this workspace as its `cwd`).
    pub header_rewritten: bool,
}

/// Repairs session `id` of the workspace at `workspace_root` (see the module doc). Fails with
/// `Locked` while a toolhost process has the session open, and changes nothing when the log has
/// no damage.
pub fn repair_session(
    sessions_dir: &Path,
    workspace_root: &Path,
    id: &str,
) -> Result<RepairReport, SessionError> {
    validate_session_id(id)?;
    let root = std::fs::canonicalize(workspace_root).unwrap_or_else(|_| workspace_root.to_owned());
    let dir = sessions_dir.join(workspace_key(&root)).join(id);
    let log_path = dir.join(LOG_FILE_NAME);
    let mut file = match OpenOptions::new().read(true).open(&log_path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SessionError::NotFound(log_path));
        }
        Err(e) => return Err(SessionError::io_at(&log_path, "open")(e)),
    };
    lock_session(&file, &log_path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(SessionError::io_at(&log_path, "read"))?;
    let scanned = scan_salvaging(&bytes)?;
    let moved_to = dir.join(DAMAGED_FILE_NAME);
    let mut report = RepairReport {
        log_path: log_path.clone(),
        moved: scanned.skipped.clone(),
        moved_to: moved_to.clone(),
        kept: 0,
        renumbered: 0,
        header_rewritten: false,
    };
    if scanned.skipped.is_empty() {
        report.kept = scanned.lines.iter().filter(|l| l.seq.is_some()).count();
        return Ok(report);
    }

    // The damaged bytes first: from here on they exist outside the log.
    let mut aside =
        open_private_append(&moved_to, true).map_err(SessionError::io_at(&moved_to, "open"))?;
    for stretch in &scanned.skipped {
        let start = stretch.offset as usize;
        let end = start + stretch.bytes as usize;
        aside.write_all(&bytes[start..end]).map_err(SessionError::io_at(&moved_to, "write"))?;
    }
    aside.sync_all().map_err(SessionError::io_at(&moved_to, "sync"))?;
    sync_dir(&dir)?;

    let mut out = Vec::with_capacity(bytes.len());
    let mut lines = scanned.lines.iter().peekable();
    match lines.next_if(|l| l.seq.is_none()) {
        Some(header) => out.extend_from_slice(&bytes[header.start..header.end]),
        None => {
            let created_at = scanned.records.first().map_or_else(now_ms, |r| r.time);
            let header = SessionHeader {
                kind: "session".to_owned(),
                version: LOG_VERSION,
                id: id.to_owned(),
                cwd: root.to_string_lossy().into_owned(),
                created_at,
            };
            let line = serde_json::to_vec(&header).map_err(|e| SessionError::InvalidEvent {
                kind: "session".to_owned(),
                detail: e.to_string(),
            })?;
            out.extend_from_slice(&line);
            out.push(b'\n');
            report.header_rewritten = true;
        }
    }
    for (next_seq, line) in (0u64..).zip(lines) {
        let text = &bytes[line.start..line.end];
        if line.seq == Some(next_seq) {
            out.extend_from_slice(text);
        } else {
            out.extend_from_slice(&renumbered(text, next_seq)?);
            out.push(b'\n');
            report.renumbered += 1;
        }
        report.kept += 1;
    }
    out.extend_from_slice(&bytes[scanned.good_len..]);

    let temp = dir.join(format!("{LOG_FILE_NAME}.repairing"));
    let mut new_log = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .map_err(SessionError::io_at(&temp, "create"))?;
    // Locked before it takes the log's name, so no opener can slip in before this returns.
    lock_session(&new_log, &temp)?;
    let written = new_log
        .write_all(&out)
        .and_then(|()| new_log.sync_all())
        .and_then(|()| std::fs::rename(&temp, &log_path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(SessionError::io_at(&log_path, "replace")(e));
    }
    sync_dir(&dir)?;
    Ok(report)
}

/// The envelope `line` with `seq` set to `seq`, its keys in the order they had (the workspace's
/// `serde_json` keeps map order).
fn renumbered(line: &[u8], seq: u64) -> Result<Vec<u8>, SessionError> {
    let invalid = |e: serde_json::Error| SessionError::InvalidEvent {
        kind: "envelope".to_owned(),
        detail: e.to_string(),
    };
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut envelope: Value = serde_json::from_slice(line).map_err(invalid)?;
    if let Some(map) = envelope.as_object_mut() {
        map.insert("seq".to_owned(), Value::from(seq));
    }
    serde_json::to_vec(&envelope).map_err(invalid)
}
