//! Check-then-use races: a thread keeps exchanging a directory with a symlink to outside
//! (`renameat2(RENAME_EXCHANGE)`, so the name always exists) while reads and writes run through
//! it. Resolution may see the directory and the open the symlink; the open beneath the root
//! handle must still refuse. Zero escapes allowed.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on purpose

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use toolhost_workspace::{Workspace, WorkspaceConfig};

const SECRET: &str = "OUTSIDE-SECRET\n";
const ITERATIONS: usize = 1500;

fn listing(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let content = fs::read_to_string(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), content)
        })
        .collect();
    out.sort();
    out
}

async fn swap_race(link_target: impl Fn(&Path) -> String) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("d")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("d/f"), "inside\n").unwrap();
    fs::write(outside.join("f"), SECRET).unwrap();
    symlink(link_target(&base), root.join("l")).unwrap();
    let before = listing(&outside);

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, root) = (stop.clone(), swaps.clone(), root.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    root.join("d"),
                    rustix::fs::CWD,
                    root.join("l"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    let ws = Workspace::new(WorkspaceConfig::new(&root)).unwrap();
    let (mut reads_ok, mut writes_ok, mut denied) = (0, 0, 0);
    for i in 0..ITERATIONS {
        match ws.read_file("d/f").await {
            Ok(read) => {
                assert_ne!(read.text, SECRET, "iteration {i}: read escaped");
                reads_ok += 1;
            }
            Err(err) => denied += usize::from(err.code() == "FS_SANDBOX_DENIED"),
        }
        match ws.write_file("d/f", format!("w{i}\n").as_bytes()).await {
            Ok(_) => writes_ok += 1,
            Err(err) => denied += usize::from(err.code() == "FS_SANDBOX_DENIED"),
        }
        if let Ok(txn) = ws.begin_edit("d/f").await {
            let _ = txn.commit(format!("e{i}\n").into_bytes()).await;
        }
        if ws.write_file(&format!("d/new{}", i % 7), b"created\n").await.is_ok() {
            writes_ok += 1;
        }
        // Whatever resolution saw, nothing outside may change.
        if i % 100 == 0 {
            assert_eq!(listing(&outside), before, "iteration {i}: outside changed");
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();

    assert_eq!(listing(&outside), before, "outside changed");
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("swaps {swaps}, reads ok {reads_ok}, writes ok {writes_ok}, denied {denied}");
    assert!(swaps > ITERATIONS, "the swapper barely ran ({swaps} swaps)");
    assert!(denied > 0, "the race never showed the symlink");
    assert!(reads_ok + writes_ok > 0, "the race never showed the directory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dir_swapped_for_relative_symlink() {
    swap_race(|_| "../outside".to_owned()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dir_swapped_for_absolute_symlink() {
    swap_race(|base| base.join("outside").to_string_lossy().into_owned()).await;
}
