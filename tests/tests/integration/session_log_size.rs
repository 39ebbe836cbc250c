//! The session log keeps a call's large argument strings once, in the blob store: a 10 MiB `write`
//! used to leave a 21 MB `tool/call` line (the content in the arguments and again in the card's
//! preview) beside the 10 MiB blob of its `fs/change`. Through the real binary: the write, the
//! log's growth, `toolhost replay` showing the card the call showed live, and `toolhost revert`.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, call_ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const MIB: usize = 1024 * 1024;

/// `len` bytes of text in lines of 1 KiB that all differ (so the card has a hunk to draw).
fn content_of(len: usize) -> String {
    let mut text = String::with_capacity(len);
    let mut n = 0;
    while text.len() < len {
        let head = format!("line {n:08} ");
        text.push_str(&head);
        text.push_str(&"x".repeat(1023 - head.len()));
        text.push('\n');
        n += 1;
    }
    text.truncate(len);
    text
}

fn cli(env: &Env, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(server::binary());
    command.args(args).current_dir(&env.root).stdin(Stdio::null());
    for (key, value) in env.env() {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The files of a session's blob store.
fn blobs(log: &Path) -> Vec<PathBuf> {
    let dir = log.parent().unwrap().join("blobs");
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_file()).collect()
}

#[test]
fn a_10_mib_write_no_longer_leaves_a_21_mb_log_line() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    // A 10 MiB call and its cards in a debug build on a busy machine.
    client.timeout = Duration::from_secs(300);
    let before = env.session_logs().first().map_or(0, |log| size(log));
    let content = content_of(10 * MIB);

    let live = call_ok(&mut client, "write", json!({"file_path": "big.txt", "content": content}));
    let session = live["sessionId"].as_str().unwrap().to_owned();
    let call_id = live["callId"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(env.root.join("big.txt")).unwrap(), content);

    let log = env.session_logs().into_iter().next().unwrap();
    let grown = size(&log) - before;
    assert!(grown < MIB as u64, "the log grew by {grown} bytes for a 10 MiB write");
    // The content is one blob — the arguments', the preview's and the file's `fs/change` after.
    let blobs = blobs(&log);
    let stored: u64 = blobs.iter().map(|b| size(b)).sum();
    assert!(stored < (11 * MIB) as u64, "{stored} bytes of blobs: {blobs:?}");
    assert!(blobs.iter().any(|b| std::fs::read(b).unwrap() == content.as_bytes()));
    let call_line = env
        .session_events(&session)
        .into_iter()
        .find(|e| e["type"] == "tool/call" && e["data"]["callId"] == call_id.as_str())
        .unwrap();
    let pointers: Vec<&str> = call_line["externalized"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, vec!["/arguments/content", "/card/preview/0/newText"]);
    assert_eq!(client.shutdown().unwrap().map(|s| s.success()), Some(true));

    // Replay shows the card the call showed live.
    let out = cli(&env, &["replay", &session, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let replayed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|c| c["callId"] == call_id.as_str())
        .expect("the write's card is replayed");
    assert!(replayed == live["card"], "the replayed card differs from the live one");

    // And the write can be undone from the log: the file it created goes.
    let out = cli(&env, &["revert", &session, "--call", &call_id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!env.root.join("big.txt").exists());
}

#[test]
fn toolhost_call_keeps_a_large_argument_out_of_the_log_line() {
    let env = Env::new();
    // Under the kernel's 128 KiB cap on one command-line argument.
    let content = content_of(100 * 1024);
    let args = json!({"file_path": "mid.txt", "content": content}).to_string();
    let out = cli(&env, &["call", "write", &args, "--session", "cli-write", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let live: Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = env.session_logs().into_iter().next().unwrap();
    assert!(size(&log) < 16 * 1024, "a {} byte log for a 100 KiB write", size(&log));

    let out = cli(&env, &["replay", "cli-write", "--json"]);
    let replayed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(replayed, vec![live["card"].clone()]);
}
