//! Where sessions live: the default sessions directory, workspace keys, session ids, and the
//! private (0700) directories and (0600) files that hold them — logs contain file contents.

use crate::error::SessionError;
use sha2::{Digest, Sha256};
use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// File name of a session's log inside its directory.
pub const LOG_FILE_NAME: &str = "session.jsonl";
/// Folder of a session's blob store inside its directory.
pub const BLOB_DIR_NAME: &str = "blobs";
/// Sidecar that keeps the bytes of torn tails cut by crash repair, for forensics.
pub const TORN_FILE_NAME: &str = "session.torn";
/// Sidecar that keeps the damaged stretches `toolhost sessions repair` moved out of the log.
pub const DAMAGED_FILE_NAME: &str = "session.damaged";

/// The default sessions directory: `$XDG_STATE_HOME/toolhost/sessions`, or
/// `~/.local/state/toolhost/sessions` when `XDG_STATE_HOME` is unset, empty or relative (the XDG
/// spec says relative values are invalid). `None` when neither gives an absolute base.
pub fn state_dir() -> Option<PathBuf> {
    let from_env =
        |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let base =
        from_env("XDG_STATE_HOME").or_else(|| from_env("HOME").map(|h| h.join(".local/state")))?;
    Some(base.join("toolhost").join("sessions"))
}

/// `<basename>-<first 16 hex of sha256(canonical root path)>`: readable in a listing, and
/// distinct for two checkouts with the same folder name. The root `/` has no basename and is
/// keyed as `root-…`.
pub fn workspace_key(canonical_root: &Path) -> String {
    let digest = Sha256::digest(canonical_root.as_os_str().as_bytes());
    let hash = hex::encode(digest);
    let base = canonical_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "root".to_owned());
    format!("{base}-{}", &hash[..16])
}

/// Refuses any id outside `[A-Za-z0-9_-]{1,64}`: ids come from clients and become path
/// components, so `..`, `/` and friends must never get through.
pub fn validate_session_id(id: &str) -> Result<(), SessionError> {
    let ok = (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(SessionError::InvalidSessionId(id.to_owned())) }
}

/// Refuses a workspace key that is not one plain path component (keys are normally made by
/// [`workspace_key`], but the CLI passes them through from users).
pub fn validate_workspace_key(key: &str) -> Result<(), SessionError> {
    let ok = !key.is_empty() && key != "." && key != ".." && !key.contains(['/', '\0']);
    if ok { Ok(()) } else { Err(SessionError::InvalidWorkspaceKey(key.to_owned())) }
}

/// A fresh, time-sortable session id: `YYYYMMDD-HHMMSS-<6 random hex>` (UTC), so a directory
/// listing sorts by creation and two ids in the same second still differ.
pub fn new_session_id() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, mo, d, h, mi, s) = civil_utc(secs);
    let random: u32 = rand::random::<u32>() & 0x00ff_ffff;
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{random:06x}")
}

/// UTC calendar fields of a Unix time (Howard Hinnant's days-to-civil), to avoid a date crate
/// for one id format.
fn civil_utc(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `<sessions dir>/<workspace key>/<session id>`, after validating both components.
pub fn session_dir(
    sessions_dir: &Path,
    workspace_key: &str,
    id: &str,
) -> Result<PathBuf, SessionError> {
    validate_workspace_key(workspace_key)?;
    validate_session_id(id)?;
    Ok(sessions_dir.join(workspace_key).join(id))
}

/// Creates `dir` and missing parents with mode 0700.
pub(crate) fn create_private_dir_all(dir: &Path) -> Result<(), SessionError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| SessionError::io(format!("cannot create {}", dir.display()), e))
}

/// Opens `path` for appending (creating it 0600 when `create`), readable too so repair can scan
/// it through the same locked handle.
pub(crate) fn open_private_append(path: &Path, create: bool) -> std::io::Result<File> {
    OpenOptions::new().read(true).append(true).create(create).mode(0o600).open(path)
}

/// Makes a directory entry (a new file, a rename) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), SessionError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SessionError::io(format!("cannot sync directory {}", dir.display()), e))
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_validated() {
        for ok in ["a", "A-b_9", &"x".repeat(64), "20250101-000000-abcdef"] {
            assert!(validate_session_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "..", "a/b", "a b", "é", &"x".repeat(65), "a.b", "a\0"] {
            assert_eq!(
                validate_session_id(bad).unwrap_err().code(),
                "SESSION_INVALID_ID",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn new_ids_match_the_rule_and_sort_by_time() {
        let id = new_session_id();
        validate_session_id(&id).unwrap();
        assert_eq!(id.len(), "YYYYMMDD-HHMMSS-xxxxxx".len());
        assert_ne!(new_session_id(), new_session_id());
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_utc(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil_utc(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil_utc(1_767_225_599), (2025, 12, 31, 23, 59, 59));
    }

    #[test]
    fn workspace_keys() {
        let key = workspace_key(Path::new("/home/u/proj"));
        assert!(key.starts_with("proj-"));
        assert_eq!(key.len(), "proj-".len() + 16);
        assert_ne!(key, workspace_key(Path::new("/other/proj")));
        assert!(workspace_key(Path::new("/")).starts_with("root-"));
        assert!(validate_workspace_key(&key).is_ok());
        assert!(validate_workspace_key("..").is_err());
        assert!(validate_workspace_key("a/b").is_err());
    }
}
