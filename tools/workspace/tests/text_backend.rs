//! The text backend seam: with an editor's buffers installed, reads, edits, writes and restores
//! of files in writable roots see and change the buffers instead of the disk, while confinement,
//! the ledger and the write notifications stay as they are without one.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on purpose

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use toolhost_workspace::{
    BackendFuture, FsError, INVALIDATED_PREFIX, Ledger, Observation, TextBackend, Workspace,
    WorkspaceConfig, WriteOperation, content_version,
};

/// An editor in memory: open buffers shadow the disk on read; writes land in the buffers and
/// never on disk, so a test can tell which side a call used.
#[derive(Debug, Default)]
struct Editor {
    buffers: Mutex<HashMap<PathBuf, String>>,
    reads: Mutex<Vec<PathBuf>>,
    writes: Mutex<Vec<(PathBuf, String)>>,
    /// Every request fails with this kind while set.
    fail: Mutex<Option<io::ErrorKind>>,
}

impl Editor {
    fn open(&self, path: &Path, text: &str) {
        self.buffers.lock().unwrap().insert(path.to_path_buf(), text.to_owned());
    }

    fn reads(&self) -> Vec<PathBuf> {
        self.reads.lock().unwrap().clone()
    }

    fn writes(&self) -> Vec<(PathBuf, String)> {
        self.writes.lock().unwrap().clone()
    }

    fn failure(&self) -> io::Result<()> {
        match *self.fail.lock().unwrap() {
            Some(kind) => Err(io::Error::new(kind, "the editor says no")),
            None => Ok(()),
        }
    }
}

impl TextBackend for Editor {
    fn read<'a>(&'a self, real_path: &'a Path) -> BackendFuture<'a, String> {
        Box::pin(async move {
            self.reads.lock().unwrap().push(real_path.to_path_buf());
            self.failure()?;
            let buffered = self.buffers.lock().unwrap().get(real_path).cloned();
            match buffered {
                Some(text) => Ok(text),
                None => fs::read_to_string(real_path),
            }
        })
    }

    fn write<'a>(&'a self, real_path: &'a Path, text: &'a str) -> BackendFuture<'a, ()> {
        Box::pin(async move {
            self.writes.lock().unwrap().push((real_path.to_path_buf(), text.to_owned()));
            self.failure()?;
            self.open(real_path, text);
            Ok(())
        })
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    /// The writable root.
    root: PathBuf,
    /// A read-only root beside it (like the session blob folder).
    blobs: PathBuf,
    /// A folder in no root.
    outside: PathBuf,
    ws: Workspace,
    editor: Arc<Editor>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (root, blobs, outside) = (base.join("ws"), base.join("blobs"), base.join("outside"));
    for dir in [&root, &blobs, &outside] {
        fs::create_dir(dir).unwrap();
    }
    let config = WorkspaceConfig {
        roots: vec![root.clone()],
        read_only_roots: vec![blobs.clone()],
        ..WorkspaceConfig::default()
    };
    let ws = Workspace::new(config).unwrap();
    let editor = Arc::new(Editor::default());
    ws.set_text_backend(Some(editor.clone()));
    Fixture { _tmp: tmp, root, blobs, outside, ws, editor }
}

impl Fixture {
    fn put(&self, path: &Path, content: &[u8]) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn key(&self, rel: &str) -> String {
        self.at(rel).to_string_lossy().into_owned()
    }
}

fn err<T: std::fmt::Debug>(result: Result<T, FsError>) -> FsError {
    result.expect_err("expected an error")
}

/// What a listener heard: operation, before, before version, after.
type Heard = Vec<(WriteOperation, Option<Vec<u8>>, Option<String>, Option<Vec<u8>>)>;

fn listen(ws: &Workspace) -> Arc<Mutex<Heard>> {
    let heard: Arc<Mutex<Heard>> = Arc::default();
    let sink = Arc::clone(&heard);
    ws.on_write(Arc::new(move |event| {
        sink.lock().unwrap().push((
            event.operation,
            event.before.map(<[u8]>::to_vec),
            event.before_version.map(str::to_owned),
            event.after.map(<[u8]>::to_vec),
        ));
    }));
    heard
}

#[tokio::test]
async fn read_sees_the_buffer_not_the_disk() {
    let f = fixture();
    f.put(&f.at("a.txt"), b"disk\n");
    f.editor.open(&f.at("a.txt"), "buffer\n");
    let read = f.ws.read_file("a.txt").await.unwrap();
    assert_eq!(read.text, "buffer\n");
    assert_eq!(read.real_path, f.at("a.txt"));
    assert_eq!(read.display, f.key("a.txt"));
    assert_eq!(read.version, content_version(b"buffer\n"));
    assert_eq!(f.ws.ledger().get(&f.key("a.txt")), Some(Observation::Present(read.version)));
    assert_eq!(f.editor.reads(), [f.at("a.txt")]);

    // A file without a buffer is what the editor reads from disk.
    f.put(&f.at("b.txt"), b"plain\n");
    assert_eq!(f.ws.read_file("b.txt").await.unwrap().text, "plain\n");

    // Every view of the workspace uses the backend; removing it brings the disk back.
    let other = f.ws.with_ledger(Arc::new(Ledger::new())).for_call("call-1");
    assert_eq!(other.read_file("a.txt").await.unwrap().text, "buffer\n");
    assert!(other.text_backend().is_some());
    f.ws.set_text_backend(None);
    assert_eq!(other.read_file("a.txt").await.unwrap().text, "disk\n");
}

#[tokio::test]
async fn read_through_the_editor_keeps_the_limits_and_refusals() {
    let f = fixture();
    f.put(&f.at("nul.txt"), b"text\n");
    f.editor.open(&f.at("nul.txt"), "a\0b\n");
    assert_eq!(err(f.ws.read_file("nul.txt").await).code(), "FS_NOT_TEXT");

    f.put(&f.at("big.txt"), b"x\n");
    f.editor.open(&f.at("big.txt"), "much longer in the editor\n");
    let too_large = err(f.ws.read_file_limited("big.txt", 10).await);
    assert_eq!(too_large.code(), "FS_TOO_LARGE");
    assert!(too_large.to_string().contains("26 bytes; the limit is 10 bytes"), "{too_large}");
    assert_eq!(f.ws.ledger().get(&f.key("big.txt")), None, "a refused read records nothing");

    let before = f.editor.reads().len();
    // An unsaved buffer of a file that is not on disk stays invisible, as the file does.
    f.editor.open(&f.at("unsaved.txt"), "new\n");
    let missing = err(f.ws.read_file("unsaved.txt").await);
    assert_eq!(missing.code(), "FS_NOT_FOUND");
    assert_eq!(f.ws.ledger().get(&f.key("unsaved.txt")), Some(Observation::Absent));
    fs::create_dir(f.at("dir")).unwrap();
    assert_eq!(err(f.ws.read_file("dir").await).code(), "FS_NOT_REGULAR_FILE");
    assert_eq!(f.ws.peek("unsaved.txt").await.unwrap(), None);
    assert_eq!(f.editor.reads().len(), before, "the editor is not asked about those");
}

#[tokio::test]
async fn an_edit_loads_the_buffer_and_commits_to_the_editor() {
    let f = fixture();
    let heard = listen(&f.ws);
    f.put(&f.at("a.txt"), b"one\n");
    f.editor.open(&f.at("a.txt"), "two\n");
    f.ws.read_file("a.txt").await.unwrap();

    let txn = f.ws.for_call("call-7").begin_edit("a.txt").await.unwrap();
    assert_eq!(txn.text(), "two\n");
    assert_eq!(txn.version(), content_version(b"two\n"));
    let version = txn.commit(b"three\n".to_vec()).await.unwrap();

    assert_eq!(version, content_version(b"three\n"));
    assert_eq!(f.editor.writes(), [(f.at("a.txt"), "three\n".to_owned())]);
    assert_eq!(fs::read(f.at("a.txt")).unwrap(), b"one\n", "the disk is the editor's business");
    assert_eq!(f.ws.ledger().get(&f.key("a.txt")), Some(Observation::Present(version)));
    assert_eq!(
        *heard.lock().unwrap(),
        [(
            WriteOperation::Update,
            Some(b"two\n".to_vec()),
            Some(content_version(b"two\n")),
            Some(b"three\n".to_vec()),
        )]
    );

    // Diffs, reverts and the write check compare against the buffer.
    assert_eq!(f.ws.peek("a.txt").await.unwrap(), Some(b"three\n".to_vec()));
    assert_eq!(f.ws.check_write("a.txt").await.unwrap(), Some(b"three\n".to_vec()));
}

#[tokio::test]
async fn write_creates_and_replaces_through_the_editor() {
    let f = fixture();
    let heard = listen(&f.ws);
    let created = f.ws.write_file("new/b.txt", b"hi\n").await.unwrap();
    assert_eq!(created.operation, WriteOperation::Create);
    assert_eq!(created.before, None);
    assert_eq!(created.version, content_version(b"hi\n"));
    assert_eq!(f.editor.writes(), [(f.at("new/b.txt"), "hi\n".to_owned())]);
    assert!(!f.at("new").exists(), "the test editor never saves");

    f.put(&f.at("c.txt"), b"x\r\ny\n");
    f.ws.read_file("c.txt").await.unwrap();
    let replaced = f.ws.write_file("c.txt", b"z\n").await.unwrap();
    assert_eq!(replaced.operation, WriteOperation::Update);
    assert_eq!(replaced.before.as_deref(), Some("x\ny\n"));
    assert_eq!(fs::read(f.at("c.txt")).unwrap(), b"x\r\ny\n");

    let heard = heard.lock().unwrap();
    assert_eq!(heard[0], (WriteOperation::Create, None, None, Some(b"hi\n".to_vec())));
    assert_eq!(
        heard[1],
        (
            WriteOperation::Update,
            Some(b"x\r\ny\n".to_vec()),
            Some(content_version(b"x\r\ny\n")),
            Some(b"z\n".to_vec()),
        )
    );
}

#[tokio::test]
async fn a_buffer_changed_since_the_read_makes_edits_and_writes_stale() {
    let f = fixture();
    f.put(&f.at("a.txt"), b"disk\n");
    f.editor.open(&f.at("a.txt"), "seen\n");
    f.ws.read_file("a.txt").await.unwrap();
    f.editor.open(&f.at("a.txt"), "typed since\n");

    let stale = err(f.ws.begin_edit("a.txt").await);
    assert_eq!(stale.code(), "FS_STALE_VERSION");
    assert_eq!(
        stale.to_string(),
        format!("cannot edit \"{}\": file changed since it was read", f.key("a.txt"))
    );
    assert_eq!(err(f.ws.write_file("a.txt", b"x\n").await).code(), "FS_STALE_VERSION");
    assert_eq!(err(f.ws.check_write("a.txt").await).code(), "FS_STALE_VERSION");

    // Typing between loading the edit and committing it is caught at the commit.
    f.ws.read_file("a.txt").await.unwrap();
    let txn = f.ws.begin_edit("a.txt").await.unwrap();
    f.editor.open(&f.at("a.txt"), "typed again\n");
    assert_eq!(err(txn.commit(b"mine\n".to_vec()).await).code(), "FS_STALE_VERSION");

    // An existing file never read is not overwritten.
    f.put(&f.at("unread.txt"), b"u\n");
    assert_eq!(err(f.ws.write_file("unread.txt", b"x\n").await).code(), "FS_NOT_OBSERVED");
    assert!(f.editor.writes().is_empty());
}

#[tokio::test]
async fn read_only_roots_and_paths_outside_never_reach_the_editor() {
    let f = fixture();
    let blob = f.blobs.join("blob.txt");
    f.put(&blob, b"stored\n");
    f.editor.open(&blob, "a buffer of a blob\n");
    let blob_input = blob.to_string_lossy().into_owned();
    assert_eq!(f.ws.read_file(&blob_input).await.unwrap().text, "stored\n");
    assert_eq!(f.ws.peek(&blob_input).await.unwrap(), Some(b"stored\n".to_vec()));
    assert_eq!(err(f.ws.write_file(&blob_input, b"x\n").await).code(), "FS_SANDBOX_DENIED");

    let secret = f.outside.join("secret.txt");
    f.put(&secret, b"secret\n");
    f.editor.open(&secret, "secret buffer\n");
    let secret_input = secret.to_string_lossy().into_owned();
    assert_eq!(err(f.ws.read_file(&secret_input).await).code(), "FS_SANDBOX_DENIED");
    assert_eq!(err(f.ws.write_file(&secret_input, b"x\n").await).code(), "FS_SANDBOX_DENIED");
    symlink(&secret, f.at("link.txt")).unwrap();
    assert_eq!(err(f.ws.read_file("link.txt").await).code(), "FS_SANDBOX_DENIED");
    assert_eq!(err(f.ws.write_file("link.txt", b"x\n").await).code(), "FS_SANDBOX_DENIED");
    // Protected paths stay protected.
    assert_eq!(err(f.ws.write_file(".git/config", b"x\n").await).code(), "FS_SANDBOX_DENIED");

    assert!(f.editor.reads().is_empty(), "{:?}", f.editor.reads());
    assert!(f.editor.writes().is_empty(), "{:?}", f.editor.writes());
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_refused_before_the_editor() {
    let f = fixture();
    let refused = err(f.ws.write_file("bin.txt", &[b'a', 0xff, 0xfe]).await);
    assert_eq!(refused.code(), "FS_NOT_TEXT");
    assert_eq!(
        refused.to_string(),
        format!("cannot write \"{}\": invalid UTF-8 text", f.key("bin.txt"))
    );

    f.put(&f.at("a.txt"), b"a\n");
    f.ws.read_file("a.txt").await.unwrap();
    let txn = f.ws.begin_edit("a.txt").await.unwrap();
    assert_eq!(err(txn.commit(vec![0xc3]).await).code(), "FS_NOT_TEXT");
    assert!(f.editor.writes().is_empty());
    assert_eq!(f.ws.ledger().get(&f.key("bin.txt")), None);
}

#[tokio::test]
async fn restore_writes_through_the_editor_and_undoing_a_create_deletes_on_disk() {
    let f = fixture();
    let heard = listen(&f.ws);
    f.put(&f.at("r.txt"), b"disk\n");
    f.editor.open(&f.at("r.txt"), "buffer\n");

    let stale = f.ws.restore("r.txt", Some(&content_version(b"disk\n")), Some(b"old\n")).await;
    assert_eq!(err(stale).code(), "FS_STALE_VERSION", "the buffer is what is there now");

    let current = content_version(b"buffer\n");
    let restored = f.ws.restore("r.txt", Some(&current), Some(b"old\n")).await.unwrap();
    assert_eq!(restored.operation, WriteOperation::Update);
    assert_eq!(restored.before.as_deref(), Some("buffer\n"));
    assert_eq!(f.editor.writes(), [(f.at("r.txt"), "old\n".to_owned())]);
    let invalidated = format!("{INVALIDATED_PREFIX}{}", content_version(b"old\n"));
    assert_eq!(f.ws.ledger().get(&f.key("r.txt")), Some(Observation::Present(invalidated)));

    f.put(&f.at("gone.txt"), b"made by a call\n");
    let version = content_version(b"made by a call\n");
    let removed = f.ws.restore("gone.txt", Some(&version), None).await.unwrap();
    assert_eq!(removed.operation, WriteOperation::Remove);
    assert!(!f.at("gone.txt").exists());
    assert_eq!(f.editor.writes().len(), 1, "a removal is not the editor's");

    let heard = heard.lock().unwrap();
    assert_eq!(heard.len(), 2);
    assert_eq!(heard[0].0, WriteOperation::Update);
    assert_eq!(heard[0].1.as_deref(), Some(&b"buffer\n"[..]));
    assert_eq!(heard[1].0, WriteOperation::Remove);
    assert_eq!(heard[1].3, None);
}

#[tokio::test]
async fn editor_failures_become_file_errors() {
    let f = fixture();
    f.put(&f.at("a.txt"), b"a\n");
    f.ws.read_file("a.txt").await.unwrap();
    let cases = [
        (io::ErrorKind::NotFound, "FS_NOT_FOUND"),
        (io::ErrorKind::PermissionDenied, "FS_PERMISSION_DENIED"),
        (io::ErrorKind::BrokenPipe, "FS_IO_ERROR"),
    ];
    for (kind, code) in cases {
        *f.editor.fail.lock().unwrap() = Some(kind);
        assert_eq!(err(f.ws.read_file("a.txt").await).code(), code, "read {kind:?}");
        assert_eq!(err(f.ws.begin_edit("a.txt").await).code(), code, "edit {kind:?}");
        assert_eq!(err(f.ws.write_file("a.txt", b"b\n").await).code(), code, "write {kind:?}");
    }
    let failed = err(f.ws.write_file("fresh.txt", b"b\n").await);
    assert_eq!(
        failed.to_string(),
        format!("cannot write \"{}\": editor: the editor says no", f.key("fresh.txt"))
    );
    // A write the editor refused is not recorded as made.
    assert_eq!(f.ws.ledger().get(&f.key("fresh.txt")), None);
    assert_eq!(
        f.ws.ledger().get(&f.key("a.txt")),
        Some(Observation::Present(content_version(b"a\n")))
    );
}
