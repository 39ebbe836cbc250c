//! Paging through a file with its line index shows exactly what a whole read shows: the same
//! lines, numbers, caps, footers and errors, and a changed file is never shown from an index of
//! its old content.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use toolhost_contract::Capabilities;
use toolhost_registry::{CallInput, Registry};
use toolhost_tools_fs::FsLimits;
use toolhost_workspace::{Workspace, WorkspaceConfig};

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

    /// The text (or the error code) of a read, with the file's path taken out.
    async fn read(&self, path: &str, offset: u64, limit: u64) -> String {
        let args = json!({"file_path": path, "offset": offset, "limit": limit});
        let done =
            self.registry.dispatch(CallInput::direct("c", "read", args, Arc::clone(&self.caps)));
        let result = serde_json::to_value(done.await.result).unwrap();
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        let code = result["error"]["info"]["code"].as_str().unwrap_or_default();
        let absolute = self.root.join(path).display().to_string();
        format!("{code}|{}", text.replace(&absolute, "<file>").replace(path, "<file>"))
    }
}

/// Lines of every kind the window treats specially: a BOM, CRLF, multibyte characters, lines
/// over the length cap, blank lines.
fn text() -> String {
    let mut text = String::from("\u{feff}");
    for i in 1..=3000u32 {
        match i % 7 {
            0 => text.push_str(&format!("{i} {}\r\n", "é".repeat(40))),
            1 => text.push('\n'),
            2 => text.push_str(&format!("{i} {}\n", "x".repeat(2500))),
            _ => text.push_str(&format!("line {i} of the file\n")),
        }
    }
    text.push_str("no newline at the end");
    text
}

/// Waits until the file's times are old enough for its index to be kept (the index module
/// keeps none for a file changed in the last two seconds).
fn wait_until_settled(path: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let changed = std::fs::metadata(path).unwrap().modified().unwrap();
        if SystemTime::now().duration_since(changed).unwrap_or_default() > Duration::from_secs(3) {
            return;
        }
        assert!(Instant::now() < deadline, "the file's time never settled");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_from_the_index_equal_pages_of_a_whole_read() {
    let f = Fixture::new();
    let text = text();
    std::fs::write(f.root.join("big.txt"), &text).unwrap();
    wait_until_settled(&f.root.join("big.txt"));
    // Written now: too fresh to be indexed, so every read of it scans it whole.
    std::fs::write(f.root.join("copy.txt"), &text).unwrap();

    let windows = [(1, 2000), (1, 5), (2, 3), (255, 4), (256, 2), (257, 300), (1500, 2000)];
    let tail = [(2990, 100), (3001, 10), (3002, 1), (4000, 1)];
    for round in 0..2 {
        for (offset, limit) in windows.iter().chain(&tail) {
            let paged = f.read("big.txt", *offset, *limit).await;
            let whole = f.read("copy.txt", *offset, *limit).await;
            assert_eq!(paged, whole, "round {round}, offset {offset}, limit {limit}");
        }
    }
    // Page through it as a model does, following the footers.
    let mut offset = 1;
    let mut pages = 0;
    loop {
        let page = f.read("big.txt", offset, 2000).await;
        assert_eq!(page, f.read("copy.txt", offset, 2000).await, "offset {offset}");
        pages += 1;
        match page.split("Use offset=").nth(1) {
            Some(rest) => {
                offset =
                    rest.split(' ').next().unwrap().trim_end_matches([')', '.']).parse().unwrap()
            }
            None => break,
        }
    }
    assert!(pages > 2, "the file takes several pages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_file_is_read_anew() {
    let f = Fixture::new();
    let path = f.root.join("a.txt");
    let old: String = (1..=2000).map(|i| format!("old {i:05}\n")).collect();
    std::fs::write(&path, &old).unwrap();
    wait_until_settled(&path);
    assert!(f.read("a.txt", 1500, 1).await.contains("1500: old 01500"));
    assert!(f.read("a.txt", 1500, 1).await.contains("1500: old 01500"), "from the index");
    // Same size, other lines: the index of the old content must not be used.
    let new: String = (1..=2000).map(|i| format!("new {i:05}\n")).collect();
    assert_eq!(new.len(), old.len());
    std::fs::write(&path, &new).unwrap();
    let page: Value = json!(f.read("a.txt", 1500, 1).await);
    assert!(page.as_str().unwrap().contains("1500: new 01500"), "{page}");
}
