//! A process that spawned groups through this crate is killed with SIGKILL: every member of
//! those groups — the grandchildren the leaders started included — is gone afterwards, checked
//! in `/proc`. (Terminal sessions, whose jobs lead groups of their own, are checked through the
//! real terminal tool in `tests/tests/kill9.rs`.)
//!
//! The killed process is this test binary run again as a helper (`KILLED_PARENT_ROLE`): it
//! spawns the groups, prints `ready` and waits to be killed. This test process makes itself the
//! subreaper of its descendants (as an init would be), so what dies is reaped here and "gone"
//! means gone in every state, `<defunct>` included.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "KILLED_PARENT_ROLE";
const MARK: &str = "KILLED_PARENT_MARK";

/// Pids of processes whose environment holds `MARK=<mark>` (the helper, its guard and every
/// process the helper started), with their state letter.
fn marked(mark: &str) -> Vec<(u32, char)> {
    let needle = format!("{MARK}={mark}");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if !environ.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let state = stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next());
        out.push((pid, state.unwrap_or('?')));
    }
    out
}

/// The helper: two groups with grandchildren (one spawned with `kill_group_with_leader`, one
/// without), then `ready`, then nothing until SIGKILL. Between the two spawns its guard is
/// killed: the second spawn must start another and register the first group with it again.
fn helper() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        toolhost_process::become_subreaper().unwrap();
        let mut groups = Vec::new();
        for keep in [true, false] {
            let mut command = tokio::process::Command::new("sh");
            command
                .args(["-c", "sleep 300 & (sleep 300 & sleep 300) & sleep 300"])
                .stdin(Stdio::null());
            let options = toolhost_process::SpawnOptions { kill_group_with_leader: keep };
            groups.push(toolhost_process::spawn(command, options).unwrap());
            if keep {
                kill_own_guard();
            }
        }
        println!("ready");
        std::future::pending::<()>().await;
    });
}

/// How many of the marked processes are `sleep`s.
fn sleeping(mark: &str) -> usize {
    marked(mark)
        .iter()
        .filter(|(pid, _)| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
        .count()
}

/// This process's children named `toolhost-guard`.
fn own_guards() -> Vec<(u32, char)> {
    let mut guards = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            if stat.contains("(toolhost-guard)") {
                let state = stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next());
                guards.push((pid, state.unwrap_or('?')));
            }
        }
    }
    guards
}

/// SIGKILL to this process's guard, and a wait until it is dead (a zombie, reaped at next spawn).
fn kill_own_guard() {
    let guards = own_guards();
    assert_eq!(guards.len(), 1, "one guard per process: {guards:?}");
    let pid = rustix::process::Pid::from_raw(guards[0].0 as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while own_guards().iter().any(|(_, state)| *state != 'Z') {
        assert!(Instant::now() < until, "the guard did not die");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_killed_parent_leaves_no_member_of_its_groups() {
    if std::env::var_os(ROLE).is_some() {
        return helper();
    }
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap();
    let mark = format!("{}-{}", std::process::id(), Instant::now().elapsed().as_nanos());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_killed_parent_leaves_no_member_of_its_groups", "--nocapture"])
        .env(ROLE, "helper")
        .env(MARK, &mark)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.unwrap().contains("ready")), "the helper did not start");
    // Every sleep runs (2 groups × 4) before the kill.
    let until = Instant::now() + Duration::from_secs(10);
    while sleeping(&mark) < 8 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(sleeping(&mark), 8, "{:?}", marked(&mark));
    let before = marked(&mark);
    child.kill().unwrap();
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let left = loop {
        while let Ok(Some(_)) = rustix::process::wait(rustix::process::WaitOptions::NOHANG) {}
        let left = marked(&mark);
        if left.is_empty() || Instant::now() > until {
            break left;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(left, vec![], "survivors of a killed parent (before the kill: {before:?})");
}
