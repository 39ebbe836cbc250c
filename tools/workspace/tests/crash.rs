//! Crash consistency: a child process (this test binary re-executed with an environment
//! variable) alternates a 1 MiB file between two contents through `write_file`; the parent
//! SIGKILLs it at random moments and checks the file is always exactly one of the two.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on purpose

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::Rng;
use toolhost_workspace::{TEMP_PREFIX, Workspace, WorkspaceConfig, content_version};

const CHILD_ENV: &str = "TOOLHOST_WORKSPACE_CRASH_CHILD";
const READY: &str = "CRASH-CHILD-READY";
const KILLS: usize = 200;
const SIZE: usize = 1024 * 1024;

fn content(fill: u8) -> Vec<u8> {
    let mut bytes = vec![fill; SIZE];
    for line_end in (79..SIZE).step_by(80) {
        bytes[line_end] = b'\n';
    }
    bytes
}

/// The child: runs only when re-executed by `kill_9_never_tears`, then writes until killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let ws = Workspace::new(WorkspaceConfig::new(&dir)).unwrap();
        let (a, b) = (content(b'a'), content(b'b'));
        println!("{READY}");
        loop {
            let current = ws.read_file("data.txt").await.unwrap();
            let next = if current.text.as_bytes() == a { &b } else { &a };
            ws.write_file("data.txt", next).await.unwrap();
        }
    });
}

fn remove_temp_files(dir: &Path) -> usize {
    let mut removed = 0;
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            fs::remove_file(entry.path()).unwrap();
            removed += 1;
        }
    }
    removed
}

#[test]
fn kill_9_never_tears() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data.txt");
    let (a, b) = (content(b'a'), content(b'b'));
    let (va, vb) = (content_version(&a), content_version(&b));
    fs::write(&data, &a).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::rng();
    let started = Instant::now();
    let (mut flips, mut leftovers) = (0, 0);
    let mut last = va.clone();

    for kill in 0..KILLS {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (ready_tx, ready_rx) = mpsc::channel();
        // libtest may print the marker after its own "test crash_child ... " prefix.
        std::thread::spawn(move || {
            let found =
                BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.contains(READY));
            let _ = ready_tx.send(found);
        });
        let ready = ready_rx.recv_timeout(Duration::from_secs(30));
        if ready != Ok(true) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kill {kill}: the child did not become ready: {ready:?}");
        }
        std::thread::sleep(Duration::from_micros(rng.random_range(0..40_000)));
        child.kill().unwrap();
        child.wait().unwrap();

        let bytes = fs::read(&data).unwrap();
        let version = content_version(&bytes);
        assert!(
            version == va || version == vb,
            "kill {kill}: torn file ({} bytes, starts {:?})",
            bytes.len(),
            &bytes[..bytes.len().min(8)]
        );
        flips += usize::from(version != last);
        last = version;
        leftovers += remove_temp_files(tmp.path());
    }
    eprintln!(
        "{KILLS} kills in {:?}: content changed {flips} times, {leftovers} temp files left behind",
        started.elapsed()
    );
    assert!(flips > 0, "the child never completed a write; the test proves nothing");
}
