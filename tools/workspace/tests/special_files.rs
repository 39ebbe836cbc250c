//! Nothing blocks on a special file, and a streamed read holds no file whole. A FIFO opened for
//! reading waits for a writer forever: before these checks, a grep whose `path` named one hung
//! its call (and, in a server, every call queued behind it). Each search and read runs on a
//! thread the test waits for with a deadline, so a regression fails instead of hanging the suite.

#![allow(clippy::unwrap_used, reason = "test helpers: a panic is the failure report")]

use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolhost_workspace::search::{GlobOptions, GrepOptions, SearchError, SearchTool, glob, grep};
use toolhost_workspace::{FsError, TextSink, Workspace, WorkspaceConfig, content_version};

const NEVER: &(dyn Fn() -> bool + Sync) = &|| false;

/// Well beyond anything here takes when it does not block.
const DEADLINE: Duration = Duration::from_secs(20);

fn fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Runs `work` on its own thread; panics if it does not finish in time (the thread is left
/// blocked, which is the bug being reported).
fn within_deadline<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(DEADLINE).expect("the call blocked")
}

fn grep_in(root: &Path, path: &Path, pattern: &str) -> Result<Vec<String>, SearchError> {
    let (root, path, pattern) = (root.to_owned(), path.to_owned(), pattern.to_owned());
    within_deadline(move || {
        grep(&GrepOptions::new(&root, &path, &pattern, None, NEVER))
            .map(|found| found.into_iter().map(|m| format!("{}:{}", m.path, m.line)).collect())
    })
}

fn glob_in(root: &Path, path: &Path, pattern: &str) -> Result<Vec<String>, SearchError> {
    let (root, path, pattern) = (root.to_owned(), path.to_owned(), pattern.to_owned());
    within_deadline(move || glob(&GlobOptions::new(&root, &path, &pattern, NEVER)))
}

#[test]
fn grep_of_a_fifo_no_longer_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fifo(&root.join("pipe"));
    let err = grep_in(&root, &root.join("pipe"), "x").unwrap_err();
    assert_eq!(err, SearchError::NotSearchable(SearchTool::Grep, "pipe".into(), "a FIFO"));
    assert_eq!(err.code(), "SEARCH_NOT_REGULAR_FILE");
    assert_eq!(
        err.to_string(),
        "grep cannot search \"pipe\": a FIFO is not a regular file or directory"
    );
    let err = glob_in(&root, &root.join("pipe"), "*").unwrap_err();
    assert_eq!(err, SearchError::NotSearchable(SearchTool::Glob, "pipe".into(), "a FIFO"));
}

#[test]
fn walks_skip_fifos_and_sockets_and_search_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/a.txt"), "needle\n").unwrap();
    fifo(&root.join("needle.fifo"));
    fifo(&root.join("sub/needle.fifo"));
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sub/needle.sock")).unwrap();
    assert_eq!(grep_in(&root, &root, "needle").unwrap(), ["sub/a.txt:needle"]);
    assert_eq!(glob_in(&root, &root, "*").unwrap(), ["sub/a.txt"]);
    let err = grep_in(&root, &root.join("sub/needle.sock"), "x").unwrap_err();
    assert_eq!(err.code(), "SEARCH_NOT_REGULAR_FILE");
    assert!(err.to_string().contains("a socket"), "{err}");
}

#[test]
fn a_folder_whose_ignore_file_is_a_fifo_is_skipped_and_a_root_one_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    for dir in ["plain", "trapped", "trapped-git/.git/info"] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in ["plain/a.txt", "trapped/b.txt", "trapped-git/c.txt"] {
        fs::write(root.join(file), "needle\n").unwrap();
    }
    fifo(&root.join("trapped/.gitignore"));
    fifo(&root.join("trapped-git/.git/info/exclude"));
    assert_eq!(grep_in(&root, &root, "needle").unwrap(), ["plain/a.txt:needle"]);
    // glob reads no ignore files: nothing is left out.
    assert_eq!(glob_in(&root, &root, "*.txt").unwrap().len(), 3);

    let err = grep_in(&root, &root.join("trapped"), "needle").unwrap_err();
    assert_eq!(err.code(), "SEARCH_FAILED");
    assert!(err.to_string().contains("trapped/.gitignore is a FIFO"), "{err}");
    fifo(&root.join(".ignore"));
    let err = grep_in(&root, &root.join("plain"), "needle").unwrap_err();
    assert!(err.to_string().contains(".ignore is a FIFO"), "{err}");
}

/// Collects what a streamed read passes on, counting the pieces.
#[derive(Debug, Default)]
struct Collect {
    text: String,
    pieces: usize,
}

impl TextSink for Collect {
    fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.pieces += 1;
    }
}

fn workspace(root: &Path) -> Workspace {
    Workspace::new(WorkspaceConfig::new(root)).unwrap()
}

async fn streamed(ws: &Workspace, rel: &str) -> Result<(String, String), FsError> {
    let never = CancellationToken::new();
    let read = tokio::time::timeout(DEADLINE, ws.read_streaming(rel, Collect::default(), &never));
    let (file, sink) = read.await.expect("the read blocked")?;
    Ok((sink.text, file.version))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_read_of_a_fifo_is_not_a_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    fifo(&tmp.path().join("pipe"));
    let ws = workspace(tmp.path());
    let err = streamed(&ws, "pipe").await.unwrap_err();
    assert_eq!(err.code(), "FS_NOT_REGULAR_FILE");
    let err = tokio::time::timeout(DEADLINE, ws.read_file("pipe")).await.unwrap().unwrap_err();
    assert_eq!(err.code(), "FS_NOT_REGULAR_FILE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_read_checks_and_versions_like_a_whole_read() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = workspace(tmp.path());
    let big: String = (0..40_000).map(|n| format!("line {n} é𝄞\n")).collect();
    let mut late_nul = vec![b'a'; 8192];
    late_nul.extend_from_slice(b"\0tail\n");
    let mut late_invalid = big.clone().into_bytes();
    late_invalid.extend_from_slice(b"\xff\n");
    let mut nul_then_invalid = vec![b'\xff'];
    nul_then_invalid.extend_from_slice(&[b'a'; 100]);
    nul_then_invalid.push(0);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("small", "\u{feff}one\r\ntwo".into()),
        ("big", big.into_bytes()),
        ("late-nul", late_nul),
        ("early-nul", b"ab\0cd".to_vec()),
        ("late-invalid", late_invalid),
        ("nul-then-invalid", nul_then_invalid),
        ("cut-char", b"ok \xe2\x82".to_vec()),
    ];
    for (name, bytes) in &files {
        fs::write(tmp.path().join(name), bytes).unwrap();
        let whole = ws.read_file(name).await;
        let streamed = streamed(&ws, name).await;
        match (whole, streamed) {
            (Ok(whole), Ok((text, version))) => {
                assert_eq!(text, whole.text, "{name}");
                assert_eq!(version, whole.version, "{name}");
                assert_eq!(version, content_version(bytes), "{name}");
            }
            (Err(whole), Err(streamed)) => assert_eq!(streamed, whole, "{name}"),
            (whole, streamed) => panic!("{name}: whole {whole:?}, streamed {streamed:?}"),
        }
    }
    // The big file came through in pieces, not as one text.
    let (_, sink) =
        ws.read_streaming("big", Collect::default(), &CancellationToken::new()).await.unwrap();
    assert!(sink.pieces > 1, "{}", sink.pieces);
    // A streamed read records the version, so the file may be edited next.
    let edit = ws.begin_edit("small").await.unwrap();
    drop(edit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_streamed_read_stops_with_aborted() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("a.txt"), "a\n").unwrap();
    let ws = workspace(tmp.path());
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let err = ws.read_streaming("a.txt", Collect::default(), &cancelled).await.unwrap_err();
    assert_eq!(err.code(), "FS_ABORTED");
    assert_eq!(
        err.to_string(),
        format!("cannot read \"{}/a.txt\": aborted", ws.primary_root().path().display())
    );
    // Nothing was recorded: an edit still needs a read.
    assert_eq!(ws.begin_edit("a.txt").await.unwrap_err().code(), "FS_NOT_OBSERVED");
}
