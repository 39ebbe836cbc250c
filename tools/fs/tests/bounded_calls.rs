//! No file tool call hangs or holds a whole file: before these checks a `grep` whose `path` was a
//! FIFO blocked forever in `open`, and `read` with `limit: 1` loaded the whole file (1 GB of memory
//! for a 1 GB file). Every call runs under a deadline so a regression fails instead of hanging.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_contract::Capabilities;
use toolhost_registry::{CallInput, Registry};
use toolhost_tools_fs::FsLimits;
use toolhost_workspace::{Workspace, WorkspaceConfig};

const DEADLINE: Duration = Duration::from_secs(30);

/// The tests that read gigabytes take turns, so one's reading is not mistaken for another's.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    registry: Registry,
    caps: Arc<Capabilities>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let registry = Registry::default();
        let _ = toolhost_tools_fs::register(&registry, FsLimits::default()).unwrap();
        let workspace = Workspace::new(WorkspaceConfig::new(&root)).unwrap();
        let caps = Arc::new(Capabilities::new().with::<Workspace>(workspace));
        Fixture { _dir: dir, root, registry, caps }
    }

    fn input(&self, tool: &str, args: Value) -> CallInput {
        CallInput::direct("c1", tool, args, Arc::clone(&self.caps))
    }

    async fn call(&self, tool: &str, args: Value) -> Value {
        let call = self.registry.dispatch(self.input(tool, args));
        let done = tokio::time::timeout(DEADLINE, call).await.expect("the call hung");
        serde_json::to_value(done.result).unwrap()
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn code_of(result: &Value) -> String {
    result["error"]["info"]["code"].as_str().unwrap_or_default().to_owned()
}

/// A sparse file: `head`, then zeros up to `size` bytes, then `tail` (no disk is filled).
fn sparse(path: &Path, head: &[u8], size: u64, tail: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(head).unwrap();
    file.seek(SeekFrom::Start(size - tail.len() as u64)).unwrap();
    file.write_all(tail).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_read_and_glob_of_a_fifo_answer_at_once() {
    let f = Fixture::new();
    std::fs::write(f.root.join("a.txt"), "needle\n").unwrap();
    mkfifo(&f.root.join("pipe"));

    let grep = f.call("grep", json!({"pattern": "x", "path": "pipe"})).await;
    assert_eq!(code_of(&grep), "SEARCH_NOT_REGULAR_FILE", "{grep}");
    assert_eq!(
        text_of(&grep),
        "Error: grep cannot search \"pipe\": a FIFO is not a regular file or directory"
    );
    let read = f.call("read", json!({"file_path": "pipe"})).await;
    assert_eq!(code_of(&read), "FS_NOT_REGULAR_FILE", "{read}");
    let glob = f.call("glob", json!({"pattern": "*", "path": "pipe"})).await;
    assert_eq!(code_of(&glob), "SEARCH_NOT_REGULAR_FILE", "{glob}");

    // Over the tree the FIFO is skipped.
    let grep = f.call("grep", json!({"pattern": "needle"})).await;
    assert_eq!(text_of(&grep), "Found 1 match\n\na.txt\nLine 1: needle", "{grep}");
    let glob = f.call("glob", json!({"pattern": "*"})).await;
    assert_eq!(text_of(&glob), "a.txt", "{glob}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_one_line_of_a_large_file_shows_it_and_counts_every_line() {
    let _turn = HEAVY.lock().await;
    let f = Fixture::new();
    let size = 256 * 1024 * 1024;
    // Text first: a NUL in the first 8 KiB would make the file binary.
    let head = format!("first\r\nsecond\n{}\n", "x".repeat(9000));
    sparse(&f.root.join("big.txt"), head.as_bytes(), size, b"\nlast");
    let read = f.call("read", json!({"file_path": "big.txt", "limit": 1})).await;
    let path = f.root.join("big.txt");
    assert_eq!(
        text_of(&read),
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n1: first\n\n(Showing lines 1-1 of 5. Use offset=2 to continue.)\n</content>",
            path.display()
        ),
        "{read}"
    );
    // Long lines (the zeros among them) are cut; the last line is counted and shown.
    let read = f.call("read", json!({"file_path": "big.txt", "offset": 3})).await;
    let value = &read["value"];
    assert_eq!(value["totalLines"], 5, "{read}");
    let cut = format!("{}... (line truncated to 2000 chars)", "x".repeat(2000));
    assert_eq!(value["lines"][0], json!({"number": 3, "text": cut}));
    let zeros = format!("{}... (line truncated to 2000 chars)", "\0".repeat(2000));
    assert_eq!(value["lines"][1], json!({"number": 4, "text": zeros}));
    assert_eq!(value["lines"][2], json!({"number": 5, "text": "last"}));
}

/// Bytes this process has read so far (`rchar` of /proc/self/io).
fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    let line = io.lines().find(|l| l.starts_with("rchar:")).unwrap();
    line["rchar:".len()..].trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_cancelled_while_streaming_returns_at_once() {
    let _turn = HEAVY.lock().await;
    let f = Fixture::new();
    // Far more than can be read before the cancellation lands.
    let head = format!("first\n{}\n", "x".repeat(9000));
    sparse(&f.root.join("huge.txt"), head.as_bytes(), 64 * 1024 * 1024 * 1024, b"\n");
    let input = f.input("read", json!({"file_path": "huge.txt", "limit": 1}));
    let signal = input.signal.clone();
    let before = bytes_read();
    let registry = Arc::new(f.registry);
    let running = tokio::spawn({
        let registry = Arc::clone(&registry);
        async move { registry.dispatch(input).await }
    });
    let deadline = Instant::now() + DEADLINE;
    while bytes_read() < before + 64 * 1024 * 1024 {
        assert!(Instant::now() < deadline, "the read never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled = Instant::now();
    signal.cancel();
    let done = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the cancelled read kept going")
        .unwrap();
    let result = serde_json::to_value(done.result).unwrap();
    assert_eq!(code_of(&result), "FS_ABORTED", "{result}");
    println!("cancelled read returned after {:?}", cancelled.elapsed());
}
