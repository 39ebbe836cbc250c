//! Process groups from spawn to reap, checked in `/proc`: after `terminate` (or the leader's own
//! exit with `kill_group_with_leader`), no member of the group exists in any state — not even
//! `<defunct>`. One test function, because `reap_all` waits for any child of this process.
#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use toolhost_process::{GroupState, SpawnOptions, become_subreaper, reap_all, spawn};

/// Pids of every process whose process group is `pgid`, with their state letter.
fn members(pgid: u32) -> Vec<(u32, char)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|p| p.parse::<u32>().ok()) == Some(pgid) {
            out.push((pid, fields[0].chars().next().unwrap_or('?')));
        }
    }
    out
}

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]).stdin(Stdio::null()).stdout(Stdio::piped());
    command
}

async fn wait_gone(pgid: u32) -> Vec<(u32, char)> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = members(pgid);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_member_is_reaped() {
    become_subreaper().unwrap();

    // 1. terminate: a leader with background children (which ignore nothing) and a grandchild.
    let mut group = spawn(
        sh("sleep 1000 & (sleep 1000 & sleep 1000) & echo started; wait"),
        SpawnOptions { kill_group_with_leader: false },
    )
    .unwrap();
    let pgid = group.id();
    let mut stdout = group.take_stdout().unwrap();
    let mut line = [0u8; 8];
    stdout.read_exact(&mut line).await.unwrap();
    // The shell, its sleep, the subshell (which execs its last sleep) and the subshell's first
    // sleep; they may start after the echo, so wait.
    let until = Instant::now() + Duration::from_secs(5);
    while members(pgid).len() < 4 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(members(pgid).len() >= 4, "{:?}", members(pgid));
    let started = Instant::now();
    group.terminate(Duration::from_millis(500)).await;
    println!("terminate took {:?}", started.elapsed());
    assert_eq!(wait_gone(pgid).await, vec![], "members left after terminate");
    assert!(matches!(group.state(), GroupState::Reaped(_)));
    drop(group);

    // 2. A leader that ignores SIGTERM is killed after the grace.
    let group = spawn(sh("trap '' TERM; echo x; sleep 1000"), SpawnOptions::default()).unwrap();
    let pgid = group.id();
    let mut group = group;
    let mut pipe = group.take_stdout().unwrap();
    let mut byte = [0u8; 1];
    pipe.read_exact(&mut byte).await.unwrap();
    let started = Instant::now();
    group.terminate(Duration::from_millis(200)).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(wait_gone(pgid).await, vec![]);

    // 3. The leader exits by itself: its helpers die with it (kill_group_with_leader).
    let group = spawn(sh("sleep 1000 & exit 3"), SpawnOptions::default()).unwrap();
    let pgid = group.id();
    let status = group.wait().await.unwrap();
    assert_eq!(status.code(), Some(3));
    group.reaped().await;
    assert_eq!(wait_gone(pgid).await, vec![]);
    drop(group);

    // 4. Dropping a group kills it; the monitor reaps it.
    let group = spawn(sh("sleep 1000"), SpawnOptions::default()).unwrap();
    let pgid = group.id();
    drop(group);
    assert_eq!(wait_gone(pgid).await, vec![]);

    // 5. An orphan that left its group (setsid) is still ours to reap at exit.
    let group =
        spawn(sh("setsid sh -c 'echo x; exec sleep 1000' & sleep 1000"), SpawnOptions::default())
            .unwrap();
    let mut group = group;
    let mut pipe = group.take_stdout().unwrap();
    pipe.read_exact(&mut byte).await.unwrap();
    group.terminate(Duration::from_millis(100)).await;
    let reaped = tokio::task::spawn_blocking(|| reap_all(Duration::from_secs(2))).await.unwrap();
    assert!(reaped >= 1, "the setsid orphan was not reaped");
    let mut children = String::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        children += &std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
    }
    assert!(children.trim().is_empty(), "children left: {children}");
}
