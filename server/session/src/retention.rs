//! Listing, deleting and pruning sessions, so the state dir stays bounded
//! (`toolhost sessions --prune --older-than 30d`, `--delete <id>`). A session whose lock is held
//! by a live process is never deleted.

use crate::error::SessionError;
use crate::paths::{LOG_FILE_NAME, session_dir, validate_session_id, validate_workspace_key};
use std::fs::{File, TryLockError};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use toolhost_protocol::session_log::SessionHeader;

/// One row of a session listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    pub workspace_key: String,
    /// From the header (empty when the header is unreadable).
    pub cwd: String,
    /// Epoch ms from the header (the log's mtime when the header is unreadable).
    pub created_at: u64,
    /// Number of `tool/call` lines (counted without parsing them).
    pub calls: u64,
    /// The log file.
    pub path: PathBuf,
    /// Why the header could not be read, so a broken session is listed rather than hidden.
    pub error: Option<String>,
}

/// Parses `<n><unit>` with unit `s`, `m`, `h`, `d` or `w` (e.g. `30d`, `12h`, `45m`, `10s`).
pub fn parse_duration(text: &str) -> Result<Duration, SessionError> {
    let invalid = || SessionError::InvalidDuration(text.to_owned());
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).ok_or_else(invalid)?;
    let (digits, unit) = trimmed.split_at(split);
    let n: u64 = digits.parse().map_err(|_| invalid())?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(invalid()),
    };
    n.checked_mul(unit_secs).map(Duration::from_secs).ok_or_else(invalid)
}

fn read_dir_names(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    out.sort();
    out
}

fn mtime_ms(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

/// Header plus a count of `tool/call` lines. The writer always serializes `type` first, so a
/// prefix test counts calls without parsing JSON — listing stays cheap for big logs.
fn summarize(id: String, workspace_key: String, path: PathBuf) -> SessionSummary {
    let mut summary = SessionSummary {
        id,
        workspace_key,
        cwd: String::new(),
        created_at: 0,
        calls: 0,
        path,
        error: None,
    };
    let file = match File::open(&summary.path) {
        Ok(file) => file,
        Err(e) => {
            summary.error = Some(e.to_string());
            return summary;
        }
    };
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut first = Vec::new();
    let header = reader
        .read_until(b'\n', &mut first)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_slice::<SessionHeader>(&first).map_err(|e| e.to_string()));
    match header {
        Ok(header) => {
            summary.cwd = header.cwd;
            summary.created_at = header.created_at;
        }
        Err(e) => {
            summary.error = Some(format!("unreadable header: {e}"));
            summary.created_at = mtime_ms(&summary.path);
            return summary;
        }
    }
    let mut rest = Vec::new();
    if reader.read_to_end(&mut rest).is_ok() {
        const PREFIX: &[u8] = br#"{"type":"tool/call","#;
        summary.calls = rest
            .split(|&b| b == b'\n')
            .filter(|line| line.starts_with(PREFIX) && line.ends_with(b"}"))
            .count() as u64;
    }
    summary
}

/// Sessions under `sessions_dir`, of one workspace (`Some(key)`) or all, newest first. Folders
/// without a `session.jsonl` are not sessions and are left out.
pub fn list_sessions(sessions_dir: &Path, workspace_key: Option<&str>) -> Vec<SessionSummary> {
    let keys: Vec<(String, PathBuf)> = match workspace_key {
        Some(key) if validate_workspace_key(key).is_ok() => {
            vec![(key.to_owned(), sessions_dir.join(key))]
        }
        Some(_) => Vec::new(),
        None => read_dir_names(sessions_dir),
    };
    let mut out = Vec::new();
    for (key, key_dir) in keys {
        for (id, dir) in read_dir_names(&key_dir) {
            let log = dir.join(LOG_FILE_NAME);
            if validate_session_id(&id).is_ok() && log.is_file() {
                out.push(summarize(id, key.clone(), log));
            }
        }
    }
    out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    out
}

/// Holds the session's lock (proving no live process uses it) while removing its folder.
fn remove_unlocked(dir: &Path) -> Result<(), SessionError> {
    let log = dir.join(LOG_FILE_NAME);
    let guard = match File::open(&log) {
        Ok(file) => match file.try_lock() {
            Ok(()) => Some(file),
            Err(TryLockError::WouldBlock) => return Err(SessionError::Locked(log)),
            Err(TryLockError::Error(e)) => {
                return Err(SessionError::io(format!("cannot lock {}", log.display()), e));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(SessionError::io(format!("cannot open {}", log.display()), e)),
    };
    let removed = std::fs::remove_dir_all(dir)
        .map_err(|e| SessionError::io(format!("cannot remove {}", dir.display()), e));
    drop(guard);
    removed
}

/// Deletes one session (log and blobs). `Locked` if a live process holds it.
pub fn delete_session(
    sessions_dir: &Path,
    workspace_key: &str,
    id: &str,
) -> Result<(), SessionError> {
    let dir = session_dir(sessions_dir, workspace_key, id)?;
    if !dir.is_dir() {
        return Err(SessionError::NotFound(dir));
    }
    remove_unlocked(&dir)
}

/// Deletes every session (all workspaces) whose log was last modified more than `older_than`
/// ago, skipping sessions in use; returns how many were deleted. Workspace folders left empty
/// are removed too. A missing `sessions_dir` prunes nothing.
pub fn prune_sessions(sessions_dir: &Path, older_than: Duration) -> Result<usize, SessionError> {
    let now = SystemTime::now();
    let mut deleted = 0;
    for (_, key_dir) in read_dir_names(sessions_dir) {
        for (id, dir) in read_dir_names(&key_dir) {
            if validate_session_id(&id).is_err() {
                continue;
            }
            let log = dir.join(LOG_FILE_NAME);
            let modified = std::fs::metadata(&log)
                .or_else(|_| std::fs::metadata(&dir))
                .and_then(|m| m.modified())
                .map_err(|e| SessionError::io(format!("cannot stat {}", log.display()), e))?;
            let age = now.duration_since(modified).unwrap_or_default();
            if age <= older_than {
                continue;
            }
            match remove_unlocked(&dir) {
                Ok(()) => deleted += 1,
                Err(SessionError::Locked(_)) => {}
                Err(e) => return Err(e),
            }
        }
        // Only succeeds when empty, which is exactly when it should go.
        let _ = std::fs::remove_dir(&key_dir);
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d").unwrap(), Duration::from_secs(30 * 86_400));
        assert_eq!(parse_duration("12h").unwrap(), Duration::from_secs(12 * 3600));
        assert_eq!(parse_duration("45m").unwrap(), Duration::from_secs(45 * 60));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2w").unwrap(), Duration::from_secs(14 * 86_400));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        for bad in ["", "d", "10", "10x", "-1d", "1.5h", "99999999999999999999d", "1 d"] {
            assert_eq!(
                parse_duration(bad).unwrap_err().code(),
                "SESSION_INVALID_DURATION",
                "{bad:?}"
            );
        }
    }
}
