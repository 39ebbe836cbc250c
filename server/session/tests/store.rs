//! Blob store (spill capability) and session retention: list, delete, prune.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};
use toolhost_contract::spill::{RETRIEVAL_HINT, SpillRequest, SpillStore};
use toolhost_protocol::session_log::ToolCallEvent;
use toolhost_session::{
    BlobStore, SessionError, SessionLog, delete_session, list_sessions, prune_sessions,
    workspace_key,
};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn request(content: &str) -> SpillRequest {
    SpillRequest {
        session_id: "s".into(),
        tool_name: "grep".into(),
        call_id: "c1".into(),
        label: "result".into(),
        suggested_name: "grep.txt".into(),
        content: content.into(),
    }
}

#[test]
fn spill_into_blobs_is_content_addressed_and_private() {
    let tmp = tempfile::tempdir().unwrap();
    let store = BlobStore::new(tmp.path().join("sess/blobs"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let text = "line\n".repeat(20_000);
    let first = rt.block_on(store.save_text(request(&text))).unwrap();
    let second = rt.block_on(store.save_text(request(&text))).unwrap();
    assert_eq!(first, second, "same content ⇒ same locator");
    assert_eq!(first.bytes, text.len() as u64);
    assert_eq!(first.retrieval_hint, RETRIEVAL_HINT);
    let locator = Path::new(&first.locator);
    assert!(locator.is_absolute());
    assert_eq!(locator.parent().unwrap(), store.blob_dir());
    assert_eq!(std::fs::read_to_string(locator).unwrap(), text);
    assert_eq!(mode(locator), 0o600);
    assert_eq!(mode(store.blob_dir()), 0o700);
    // No temp files are left behind.
    assert_eq!(std::fs::read_dir(store.blob_dir()).unwrap().count(), 1);

    let other = rt.block_on(store.save_text(request("other"))).unwrap();
    assert_ne!(other.locator, first.locator);
    let hash = store.put_bytes(b"other").unwrap();
    assert_eq!(store.path_of(&hash).unwrap().to_str().unwrap(), other.locator);
    assert_eq!(store.get_bytes(&hash).unwrap(), b"other");
    assert_eq!(
        store.get_bytes("../../etc/passwd").unwrap_err().code(),
        "SESSION_INVALID_BLOB_HASH"
    );
    assert_eq!(store.get_bytes(&"0".repeat(64)).unwrap_err().code(), "SESSION_NOT_FOUND");
}

#[test]
fn keyed_entries_replace_atomically_and_outlive_the_store_handle() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::new(dir.path().join("blobs"));
    assert_eq!(store.get_keyed("https://example.test/").unwrap(), None);
    store.put_keyed("https://example.test/", b"first").unwrap();
    store.put_keyed("https://example.test/", b"second").unwrap();
    store.put_keyed("https://other.test/", b"other").unwrap();
    // A new handle on the same folder (the next process) sees the latest entry per key.
    let reopened = BlobStore::new(dir.path().join("blobs"));
    assert_eq!(reopened.get_keyed("https://example.test/").unwrap().unwrap(), b"second");
    assert_eq!(reopened.get_keyed("https://other.test/").unwrap().unwrap(), b"other");
    let keys = dir.path().join("blobs/keys");
    assert_eq!(mode(&keys), 0o700);
    let names: Vec<String> = std::fs::read_dir(&keys)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temp files left: {names:?}");
    // A pointer whose blob is gone reads as a miss, not an error.
    let hash = reopened.put_keyed("gone", b"gone").unwrap();
    std::fs::remove_file(reopened.path_of(&hash).unwrap()).unwrap();
    assert_eq!(reopened.get_keyed("gone").unwrap(), None);
}

fn make_session(sessions: &Path, root: &Path, id: &str, calls: usize) -> SessionLog {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (log, _) = SessionLog::open(sessions, root, id, true).unwrap();
    for i in 0..calls {
        let event = ToolCallEvent {
            call_id: format!("c{i}"),
            name: "read".into(),
            arguments: json!({}),
            card: None,
            caller: None,
            parent_call_id: None,
        };
        rt.block_on(log.append_tool_call(&event)).unwrap();
    }
    log
}

fn age(log_path: &Path, by: Duration) {
    let file = std::fs::File::options().write(true).open(log_path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

#[test]
fn list_delete_prune() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let root_a = tmp.path().join("a");
    let root_b = tmp.path().join("b");
    std::fs::create_dir_all(&root_a).unwrap();
    std::fs::create_dir_all(&root_b).unwrap();
    let (root_a, root_b) = (root_a.canonicalize().unwrap(), root_b.canonicalize().unwrap());
    let key_a = workspace_key(&root_a);
    let key_b = workspace_key(&root_b);

    let paths: Vec<_> = [("old", &root_a, 2), ("mid", &root_a, 1), ("new", &root_b, 0)]
        .into_iter()
        .map(|(id, root, calls)| {
            let log = make_session(&sessions, root, id, calls);
            std::thread::sleep(Duration::from_millis(5)); // distinct createdAt
            log.log_path().to_owned()
        })
        .collect();
    // Not sessions: stray folders and files are ignored.
    std::fs::create_dir_all(sessions.join(&key_a).join("no-log")).unwrap();
    std::fs::write(sessions.join("stray.txt"), "x").unwrap();

    let all = list_sessions(&sessions, None);
    let ids: Vec<_> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["new", "mid", "old"], "newest first");
    assert_eq!(all[2].calls, 2);
    assert_eq!(all[2].cwd, root_a.to_str().unwrap());
    assert_eq!(all[2].workspace_key, key_a);
    assert_eq!(all[2].path, paths[0]);
    assert!(all.iter().all(|s| s.error.is_none()));
    let only_a: Vec<_> = list_sessions(&sessions, Some(&key_a)).into_iter().map(|s| s.id).collect();
    assert_eq!(only_a, ["mid", "old"]);
    assert!(list_sessions(&sessions, Some("../x")).is_empty());
    assert!(list_sessions(&tmp.path().join("missing"), None).is_empty());

    // Delete: refused while locked, typed errors for bad input.
    let live = SessionLog::open(&sessions, &root_a, "mid", false).unwrap().0;
    assert!(matches!(delete_session(&sessions, &key_a, "mid"), Err(SessionError::Locked(_))));
    drop(live);
    delete_session(&sessions, &key_a, "mid").unwrap();
    assert!(!paths[1].exists());
    assert_eq!(delete_session(&sessions, &key_a, "mid").unwrap_err().code(), "SESSION_NOT_FOUND");
    assert_eq!(
        delete_session(&sessions, &key_a, "../old").unwrap_err().code(),
        "SESSION_INVALID_ID"
    );

    // Prune: only old and unlocked sessions; empty workspace folders go too.
    age(&paths[0], Duration::from_secs(40 * 86_400));
    age(&paths[2], Duration::from_secs(40 * 86_400));
    let held = SessionLog::open(&sessions, &root_b, "new", false).unwrap().0;
    // Opening touches nothing, so the held session is still "old" — and must be skipped.
    assert_eq!(prune_sessions(&sessions, Duration::from_secs(30 * 86_400)).unwrap(), 1);
    assert!(!paths[0].exists() && paths[2].exists());
    drop(held);
    assert_eq!(prune_sessions(&sessions, Duration::from_secs(30 * 86_400)).unwrap(), 1);
    assert!(!sessions.join(&key_b).exists(), "empty workspace folder removed");
    assert!(list_sessions(&sessions, None).is_empty());
    assert_eq!(prune_sessions(&tmp.path().join("missing"), Duration::ZERO).unwrap(), 0);
}

#[test]
fn broken_header_is_listed_not_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("k-0123456789abcdef/s1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("session.jsonl"), "garbage\n").unwrap();
    let listed = list_sessions(tmp.path(), None);
    assert_eq!(listed.len(), 1);
    assert!(listed[0].error.as_deref().unwrap().contains("unreadable header"));
}
