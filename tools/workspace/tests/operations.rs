//! Read, write and edit semantics: the ledger (read-before-write by content hash), stale and
//! concurrent edits, atomic writes keeping the mode, protected paths and dirty buffers.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on purpose

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use toolhost_workspace::{
    FsError, Ledger, Observation, TEMP_PREFIX, Workspace, WorkspaceConfig, WriteOperation,
    content_version,
};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ws: Workspace,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ws = Workspace::new(WorkspaceConfig::new(&root)).unwrap();
    Fixture { _tmp: tmp, root, ws }
}

impl Fixture {
    fn put(&self, rel: &str, content: &[u8]) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn get(&self, rel: &str) -> Vec<u8> {
        fs::read(self.root.join(rel)).unwrap()
    }

    fn display(&self, rel: &str) -> String {
        format!("{}/{rel}", self.root.display())
    }
}

fn err<T: std::fmt::Debug>(result: Result<T, FsError>) -> FsError {
    result.expect_err("expected an error")
}

#[tokio::test]
async fn read_reports_and_records() {
    let f = fixture();
    f.put("a.txt", b"hello\r\nworld\n");
    let read = f.ws.read_file("a.txt").await.unwrap();
    assert_eq!(read.text, "hello\r\nworld\n");
    assert_eq!(read.display, f.display("a.txt"));
    assert_eq!(read.version, content_version(b"hello\r\nworld\n"));
    assert_eq!(
        f.ws.ledger().get(&f.display("a.txt")),
        Some(Observation::Present(read.version.clone()))
    );

    let missing = err(f.ws.read_file("nope.txt").await);
    assert_eq!(missing.code(), "FS_NOT_FOUND");
    assert_eq!(
        missing.to_string(),
        format!("cannot read \"{}\": not found", f.display("nope.txt"))
    );
    assert_eq!(f.ws.ledger().get(&f.display("nope.txt")), Some(Observation::Absent));

    // A path through a regular file is simply absent.
    assert_eq!(err(f.ws.read_file("a.txt/x").await).code(), "FS_NOT_FOUND");

    fs::create_dir(f.root.join("dir")).unwrap();
    let dir = err(f.ws.read_file("dir").await);
    assert_eq!(
        dir.to_string(),
        format!("cannot read \"{}\": not a regular file", f.display("dir"))
    );
    assert_eq!(err(f.ws.read_file(".").await).code(), "FS_NOT_REGULAR_FILE");
}

#[tokio::test]
async fn read_rejects_binary_invalid_utf8_and_oversize() {
    let f = fixture();
    f.put("nul.bin", b"ab\0cd");
    let e = err(f.ws.read_file("nul.bin").await);
    assert_eq!(
        (e.code(), e.to_string()),
        ("FS_NOT_TEXT", format!("cannot read \"{}\": binary file", f.display("nul.bin")))
    );
    assert_eq!(f.ws.ledger().get(&f.display("nul.bin")), None, "no observation for a refused read");

    let mut late_nul = vec![b'a'; 9000];
    late_nul[8500] = 0;
    f.put("late.txt", &late_nul);
    assert!(f.ws.read_file("late.txt").await.is_ok(), "NUL after 8192 bytes is not sniffed");

    f.put("latin1.txt", b"caf\xe9\n");
    let e = err(f.ws.read_file("latin1.txt").await);
    assert_eq!(
        e.to_string(),
        format!("cannot read \"{}\": invalid UTF-8 text", f.display("latin1.txt"))
    );
    assert_eq!(e.code(), "FS_NOT_TEXT");

    f.put("big.txt", &[b'x'; 100]);
    let e = err(f.ws.read_file_limited("big.txt", 99).await);
    assert_eq!(e.code(), "FS_TOO_LARGE");
    assert!(f.ws.read_file_limited("big.txt", 100).await.is_ok());
}

#[tokio::test]
async fn read_of_a_fifo_does_not_hang() {
    let f = fixture();
    let fifo = f.root.join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), f.ws.read_file("pipe")).await;
    assert_eq!(err(result.expect("read hung")).code(), "FS_NOT_REGULAR_FILE");
    let write = tokio::time::timeout(Duration::from_secs(5), f.ws.write_file("pipe", b"x")).await;
    assert_eq!(err(write.expect("write hung")).code(), "FS_NOT_REGULAR_FILE");
}

#[tokio::test]
async fn write_create_update_and_before() {
    let f = fixture();
    let created = f.ws.write_file("new/deep/a.txt", b"one\r\ntwo\r\n").await.unwrap();
    assert_eq!(created.operation, WriteOperation::Create);
    assert_eq!(created.before, None);
    assert_eq!(f.get("new/deep/a.txt"), b"one\r\ntwo\r\n", "content is written verbatim");

    // Our own write counts as an observation: update without reading.
    let updated = f.ws.write_file("new/deep/a.txt", b"three\n").await.unwrap();
    assert_eq!(updated.operation, WriteOperation::Update);
    assert_eq!(updated.before.as_deref(), Some("one\ntwo\n"), "before is LF-normalized");
    assert_eq!(updated.version, content_version(b"three\n"));

    // A binary prior gives no diff basis but the write succeeds.
    f.put("bin", b"a\0b");
    f.ws.ledger().record(&f.display("bin"), Observation::Present(content_version(b"a\0b")));
    let over_binary = f.ws.write_file("bin", b"text\n").await.unwrap();
    assert_eq!(over_binary.before, None);
    assert_eq!(f.get("bin"), b"text\n");

    // A file where a directory is needed.
    f.put("plain", b"x");
    let e = err(f.ws.write_file("plain/child.txt", b"x").await);
    assert_eq!(e.code(), "FS_NOT_DIRECTORY");
    fs::create_dir(f.root.join("adir")).unwrap();
    assert_eq!(err(f.ws.write_file("adir", b"x").await).code(), "FS_NOT_REGULAR_FILE");
    assert_eq!(err(f.ws.write_file(".", b"x").await).code(), "FS_NOT_REGULAR_FILE");

    assert_no_temp_files(&f.root);
}

#[tokio::test]
async fn write_requires_observation_of_existing_files() {
    let f = fixture();
    f.put("a.txt", b"old\n");
    let e = err(f.ws.write_file("a.txt", b"new\n").await);
    assert_eq!(e.code(), "FS_NOT_OBSERVED");
    assert_eq!(
        e.to_string(),
        format!("cannot overwrite existing \"{}\" without reading it first", f.display("a.txt"))
    );
    assert_eq!(f.get("a.txt"), b"old\n");

    // Observed absent, then created by someone else: still an unread overwrite.
    assert!(f.ws.read_file("b.txt").await.is_err());
    f.put("b.txt", b"theirs\n");
    assert_eq!(err(f.ws.write_file("b.txt", b"mine\n").await).code(), "FS_NOT_OBSERVED");

    // Read, changed outside: stale.
    f.ws.read_file("a.txt").await.unwrap();
    f.put("a.txt", b"changed\n");
    let e = err(f.ws.write_file("a.txt", b"new\n").await);
    assert_eq!(e.code(), "FS_STALE_VERSION");
    assert_eq!(
        e.to_string(),
        format!("cannot write \"{}\": file changed since it was read", f.display("a.txt"))
    );

    // Read, deleted outside: gone.
    f.ws.read_file("a.txt").await.unwrap();
    fs::remove_file(f.root.join("a.txt")).unwrap();
    let e = err(f.ws.write_file("a.txt", b"new\n").await);
    assert_eq!(e.code(), "FS_STALE_VERSION");
    assert_eq!(
        e.to_string(),
        format!("cannot write \"{}\": file no longer exists", f.display("a.txt"))
    );
    assert!(!f.root.join("a.txt").exists());
}

#[tokio::test]
async fn edit_requires_observation_and_detects_staleness() {
    let f = fixture();
    f.put("a.txt", b"one\n");
    let e = err(f.ws.begin_edit("a.txt").await);
    assert_eq!(
        (e.code(), e.to_string()),
        ("FS_NOT_OBSERVED", format!("edit requires reading \"{}\" first", f.display("a.txt")))
    );

    assert!(f.ws.read_file("absent.txt").await.is_err());
    let e = err(f.ws.begin_edit("absent.txt").await);
    assert_eq!(
        (e.code(), e.to_string()),
        ("FS_NOT_FOUND", format!("cannot edit \"{}\": not found", f.display("absent.txt")))
    );

    f.ws.read_file("a.txt").await.unwrap();
    f.put("a.txt", b"two\n");
    let e = err(f.ws.begin_edit("a.txt").await);
    assert_eq!(
        (e.code(), e.to_string()),
        (
            "FS_STALE_VERSION",
            format!("cannot edit \"{}\": file changed since it was read", f.display("a.txt"))
        )
    );

    f.ws.read_file("a.txt").await.unwrap();
    fs::remove_file(f.root.join("a.txt")).unwrap();
    let e = err(f.ws.begin_edit("a.txt").await);
    assert_eq!(
        e.to_string(),
        format!("cannot edit \"{}\": file changed since it was read", f.display("a.txt"))
    );

    // Stale is reported before the content is judged: a file that became binary is stale.
    f.put("c.txt", b"text\n");
    f.ws.read_file("c.txt").await.unwrap();
    f.put("c.txt", b"bin\0ary");
    assert_eq!(err(f.ws.begin_edit("c.txt").await).code(), "FS_STALE_VERSION");
}

#[tokio::test]
async fn edit_accepts_mtime_only_changes() {
    let f = fixture();
    f.put("a.txt", b"same\n");
    f.ws.read_file("a.txt").await.unwrap();
    let file = fs::File::options().write(true).open(f.root.join("a.txt")).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(3600)).unwrap();
    drop(file);
    // Rewriting identical bytes (new inode, new ctime) is also not a change.
    f.put("a.txt", b"same\n");
    let txn = f.ws.begin_edit("a.txt").await.unwrap();
    assert_eq!(txn.text(), "same\n");
    let version = txn.commit(b"edited\n".to_vec()).await.unwrap();
    assert_eq!(version, content_version(b"edited\n"));
    assert_eq!(f.get("a.txt"), b"edited\n");
    f.put("a.txt", b"edited\n");
    assert!(f.ws.write_file("a.txt", b"again\n").await.is_ok());
}

#[tokio::test]
async fn write_then_edit_without_read() {
    let f = fixture();
    f.ws.write_file("w.txt", b"\xef\xbb\xbfbom\r\n").await.unwrap();
    let txn = f.ws.begin_edit("w.txt").await.unwrap();
    assert_eq!(txn.text(), "\u{feff}bom\r\n", "the text is byte-exact, BOM and CRLF kept");
    assert_eq!(txn.display(), f.display("w.txt"));
    txn.commit(b"\xef\xbb\xbfBOM\r\n".to_vec()).await.unwrap();
    assert_eq!(f.get("w.txt"), b"\xef\xbb\xbfBOM\r\n");
    // And edit after edit.
    let txn = f.ws.begin_edit("w.txt").await.unwrap();
    txn.commit(b"x".to_vec()).await.unwrap();
    assert_eq!(f.get("w.txt"), b"x");
}

#[tokio::test]
async fn edit_rejects_binary_and_invalid_utf8() {
    let f = fixture();
    let mut late_nul = vec![b'a'; 9000];
    late_nul[8999] = 0;
    f.put("late.txt", &late_nul);
    f.ws.read_file("late.txt").await.unwrap();
    let e = err(f.ws.begin_edit("late.txt").await);
    assert_eq!(
        (e.code(), e.to_string()),
        ("FS_NOT_TEXT", format!("cannot edit \"{}\": binary file", f.display("late.txt")))
    );

    f.put("l1.txt", b"caf\xe9");
    f.ws.ledger().record(&f.display("l1.txt"), Observation::Present(content_version(b"caf\xe9")));
    let e = err(f.ws.begin_edit("l1.txt").await);
    assert_eq!(
        e.to_string(),
        format!("cannot edit \"{}\": invalid UTF-8 text", f.display("l1.txt"))
    );

    fs::create_dir(f.root.join("d")).unwrap();
    f.ws.ledger().record(&f.display("d"), Observation::Present("x".into()));
    assert_eq!(err(f.ws.begin_edit("d").await).code(), "FS_NOT_REGULAR_FILE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_never_lose_an_update() {
    // Two edits of one read: either the second saw the file before the first landed (it fails
    // stale and the first's change is the file), or the scheduler ran them one after the other
    // (the second read the first's result and both land). What may never happen is both
    // reporting success with one change gone — the lost update this test was named after.
    for _ in 0..20 {
        let f = fixture();
        f.put("c.txt", b"base\n");
        f.ws.read_file("c.txt").await.unwrap();
        let run = |ws: Workspace, tag: &'static str| async move {
            let txn = ws.begin_edit("c.txt").await?;
            let new = format!("{}{tag}\n", txn.text());
            tokio::task::yield_now().await;
            txn.commit(new.into_bytes()).await
        };
        let (a, b) = tokio::join!(
            tokio::spawn(run(f.ws.clone(), "A")),
            tokio::spawn(run(f.ws.clone(), "B"))
        );
        let results = [a.unwrap(), b.unwrap()];
        let content = String::from_utf8(f.get("c.txt")).unwrap();
        match results.iter().filter(|r| r.is_ok()).count() {
            1 => {
                let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
                assert_eq!(loser.code(), "FS_STALE_VERSION");
                assert!(content == "base\nA\n" || content == "base\nB\n", "{content:?}");
            }
            2 => assert!(content == "base\nA\nB\n" || content == "base\nB\nA\n", "{content:?}"),
            _ => panic!("{results:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_one_wins_the_other_is_stale() {
    let f = fixture();
    f.put("c.txt", b"base\n");
    f.ws.read_file("c.txt").await.unwrap();
    let (a, b) = tokio::join!(f.ws.write_file("c.txt", b"A\n"), f.ws.write_file("c.txt", b"B\n"));
    assert_eq!([a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(), 1, "{a:?} {b:?}");
    let loser = a.err().or(b.err()).unwrap();
    assert_eq!(loser.code(), "FS_STALE_VERSION");
}

#[tokio::test]
async fn ledger_reports_to_the_observer_and_restores() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    type Events = Vec<(String, Option<String>)>;
    let events: Arc<Mutex<Events>> = Arc::default();
    let sink = events.clone();
    let ledger = Arc::new(Ledger::with_observer(Arc::new(move |p: &str, v: Option<&str>| {
        sink.lock().unwrap().push((p.to_owned(), v.map(str::to_owned)));
    })));
    let ws = Workspace::new(WorkspaceConfig::new(&root)).unwrap().with_ledger(ledger);
    ws.read_file("a.txt").await.unwrap();
    assert!(ws.read_file("b.txt").await.is_err());
    ws.write_file("b.txt", b"b\n").await.unwrap();
    let log = events.lock().unwrap().clone();
    let a = format!("{}/a.txt", root.display());
    let b = format!("{}/b.txt", root.display());
    assert_eq!(
        log,
        vec![
            (a.clone(), Some(content_version(b"a\n"))),
            (b.clone(), None),
            (b.clone(), Some(content_version(b"b\n"))),
        ]
    );

    // A continued session rebuilt from the log may edit without reading again.
    let restored = Arc::new(Ledger::new());
    restored.restore(log);
    let continued = ws.with_ledger(restored);
    let txn = continued.begin_edit("a.txt").await.unwrap();
    txn.commit(b"a2\n".to_vec()).await.unwrap();
    // Another session sharing the workspace has its own ledger.
    let other = ws.with_ledger(Arc::new(Ledger::new()));
    assert_eq!(err(other.begin_edit("b.txt").await).code(), "FS_NOT_OBSERVED");

    ws.ledger().mark_suspect(&b);
    assert!(ws.ledger().is_suspect(&b));
}

#[tokio::test]
async fn atomic_write_keeps_mode_and_new_files_are_not_executable() {
    let f = fixture();
    for mode in [0o600, 0o755, 0o640] {
        f.put("m.sh", b"old\n");
        fs::set_permissions(f.root.join("m.sh"), fs::Permissions::from_mode(mode)).unwrap();
        let ino_before =
            std::os::unix::fs::MetadataExt::ino(&fs::metadata(f.root.join("m.sh")).unwrap());
        f.ws.read_file("m.sh").await.unwrap();
        f.ws.write_file("m.sh", b"new\n").await.unwrap();
        let meta = fs::metadata(f.root.join("m.sh")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, mode);
        assert_ne!(std::os::unix::fs::MetadataExt::ino(&meta), ino_before, "replaced by rename");
        let txn = f.ws.begin_edit("m.sh").await.unwrap();
        txn.commit(b"edited\n".to_vec()).await.unwrap();
        assert_eq!(fs::metadata(f.root.join("m.sh")).unwrap().permissions().mode() & 0o7777, mode);
    }
    f.ws.write_file("fresh.txt", b"x").await.unwrap();
    let mode = fs::metadata(f.root.join("fresh.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o111, 0, "new files are not executable: {mode:o}");
    assert_eq!(mode & 0o600, 0o600, "new files are owner read-write: {mode:o}");
    assert_no_temp_files(&f.root);
}

#[tokio::test]
async fn protected_paths_refuse_writes_even_when_read() {
    let f = fixture();
    f.put(".git/config", b"[core]\n");
    f.put("toolhost.toml", b"");
    symlink(".git", f.root.join("link-to-git")).unwrap();
    assert!(f.ws.read_file(".git/config").await.is_ok());
    for path in [".git/config", "link-to-git/config", "toolhost.toml", ".git/new", ".toolhost/x"] {
        let _ = f.ws.read_file(path).await;
        assert_eq!(err(f.ws.write_file(path, b"x").await).code(), "FS_SANDBOX_DENIED", "{path}");
        assert_eq!(err(f.ws.begin_edit(path).await).code(), "FS_SANDBOX_DENIED", "{path}");
    }
    assert_eq!(f.get(".git/config"), b"[core]\n");
    assert!(!f.root.join(".toolhost").exists());
    // Similar names are not protected.
    assert!(f.ws.write_file(".gitignore", b"target\n").await.is_ok());
    assert!(f.ws.write_file("sub/toolhost.toml", b"").await.is_ok());

    // Custom patterns replace the defaults.
    let config =
        WorkspaceConfig { protected: vec!["secrets/".into()], ..WorkspaceConfig::new(&f.root) };
    let custom = Workspace::new(config).unwrap();
    assert_eq!(err(custom.write_file("secrets/k", b"x").await).code(), "FS_SANDBOX_DENIED");
    assert!(custom.write_file(".git/new", b"x").await.is_ok());
}

#[tokio::test]
async fn dirty_buffers_block_writes_and_edits() {
    let f = fixture();
    f.put("d.txt", b"disk\n");
    symlink("d.txt", f.root.join("alias.txt")).unwrap();
    f.ws.read_file("d.txt").await.unwrap();
    f.ws.dirty_buffers().set(f.root.join("d.txt"), true);
    let e = err(f.ws.write_file("d.txt", b"x").await);
    assert_eq!(e.code(), "FS_DIRTY_BUFFER");
    assert_eq!(
        e.to_string(),
        format!(
            "\"{}\" has unsaved changes in the editor; save or revert it, then retry",
            f.display("d.txt")
        )
    );
    assert_eq!(err(f.ws.begin_edit("d.txt").await).code(), "FS_DIRTY_BUFFER");
    // The buffer is found through a link too.
    assert_eq!(err(f.ws.write_file("alias.txt", b"x").await).code(), "FS_DIRTY_BUFFER");
    // Reads are fine.
    assert!(f.ws.read_file("d.txt").await.is_ok());

    // Becoming dirty during an edit blocks the commit.
    f.ws.dirty_buffers().set(f.root.join("d.txt"), false);
    let txn = f.ws.begin_edit("d.txt").await.unwrap();
    f.ws.dirty_buffers().set(f.root.join("alias.txt"), true);
    assert_eq!(err(txn.commit(b"x".to_vec()).await).code(), "FS_DIRTY_BUFFER");
    f.ws.dirty_buffers().clear();
    let txn = f.ws.begin_edit("d.txt").await.unwrap();
    txn.commit(b"saved\n".to_vec()).await.unwrap();
    assert_eq!(f.get("d.txt"), b"saved\n");
}

#[tokio::test]
async fn a_held_edit_blocks_other_writers_until_dropped() {
    let f = fixture();
    f.put("l.txt", b"x\n");
    f.ws.read_file("l.txt").await.unwrap();
    let txn = f.ws.begin_edit("l.txt").await.unwrap();
    let blocked = tokio::time::timeout(Duration::from_millis(200), f.ws.lock("l.txt")).await;
    assert!(blocked.is_err(), "the path lock is held by the edit");
    drop(txn);
    let lock =
        tokio::time::timeout(Duration::from_secs(5), f.ws.lock("l.txt")).await.unwrap().unwrap();
    assert_eq!(lock.key(), f.display("l.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_waited_for_the_lock_never_edits_text_it_did_not_see() {
    // The waiter's expectation is the version it saw before the lock, so the holder's change
    // makes it stale. Only a waiter that had not looked yet (a slow machine) starts from the
    // holder's result; it never edits the text from before it.
    let f = fixture();
    f.put("w.txt", b"one\n");
    f.ws.read_file("w.txt").await.unwrap();
    let held = f.ws.begin_edit("w.txt").await.unwrap();
    let ws = f.ws.clone();
    let waiter = tokio::spawn(async move {
        let txn = ws.begin_edit("w.txt").await?;
        Ok::<_, toolhost_workspace::FsError>(txn.text().to_owned())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished(), "the second edit waits for the held lock");
    held.commit(b"two\n".to_vec()).await.unwrap();
    match waiter.await.unwrap() {
        Err(err) => assert_eq!(err.code(), "FS_STALE_VERSION"),
        Ok(text) => assert_eq!(text, "two\n"),
    }
    assert_eq!(f.get("w.txt"), b"two\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_waited_for_a_dropped_edit_lands() {
    let f = fixture();
    f.put("v.txt", b"one\n");
    f.ws.read_file("v.txt").await.unwrap();
    let held = f.ws.begin_edit("v.txt").await.unwrap();
    let ws = f.ws.clone();
    let writer = tokio::spawn(async move { ws.write_file("v.txt", b"written\n").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!writer.is_finished(), "the write waits for the held lock");
    drop(held);
    writer.await.unwrap().unwrap();
    assert_eq!(f.get("v.txt"), b"written\n");
}

fn assert_no_temp_files(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(TEMP_PREFIX), "leftover temp file {name}");
        if entry.file_type().unwrap().is_dir() {
            assert_no_temp_files(&entry.path());
        }
    }
}

#[tokio::test]
async fn write_listeners_hear_every_successful_write_and_edit_only() {
    let f = fixture();
    let heard: Arc<Mutex<Vec<(PathBuf, WriteOperation)>>> = Arc::default();
    let sink = Arc::clone(&heard);
    f.ws.on_write(Arc::new(move |event| {
        sink.lock().unwrap().push((event.real_path.to_path_buf(), event.operation))
    }));
    // Another session's view shares the listeners.
    let other = f.ws.with_ledger(Arc::new(Ledger::new()));
    other.on_write(Arc::new(|_| panic!("a panicking listener must not fail the write")));

    f.ws.write_file("new.txt", b"one\n").await.unwrap();
    f.ws.write_file("new.txt", b"two\n").await.unwrap();
    let txn = f.ws.begin_edit("new.txt").await.unwrap();
    txn.commit(b"three\n".to_vec()).await.unwrap();
    f.put("unread.txt", b"x\n");
    assert!(f.ws.write_file("unread.txt", b"y\n").await.is_err(), "refused: never read");
    assert_eq!(f.get("new.txt"), b"three\n");
    let path = f.root.join("new.txt");
    assert_eq!(
        *heard.lock().unwrap(),
        [
            (path.clone(), WriteOperation::Create),
            (path.clone(), WriteOperation::Update),
            (path, WriteOperation::Update),
        ]
    );
}
