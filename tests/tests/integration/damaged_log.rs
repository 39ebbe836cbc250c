//! Nothing is recorded without its bytes, and a damaged log still serves what it can — through
//! the real binary:
//!
//! - an edit whose session cannot store the bytes revert needs (its blob folder read-only) fails
//!   before it changes the file, naming the blob store; once the store is writable again an edit
//!   succeeds and reverts;
//! - one corrupt byte in the middle of `session.jsonl` no longer makes `toolhost replay` print
//!   nothing: every card before the damage is shown with a notice of what was skipped (also in
//!   the editor's `toolhost/replaySession` result), and opening the session names the command
//!   that repairs it;
//! - `toolhost sessions repair <id>` moves the damaged lines aside byte for byte, after which the
//!   session opens, a new call appends and earlier calls revert.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::Env;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn command(env: &Env, program: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(&env.root).stdin(Stdio::null());
    for (key, value) in env.env() {
        command.env(key, value);
    }
    command
}

fn cli(env: &Env, args: &[&str]) -> Output {
    command(env, &server::binary()).args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `toolhost call <tool> <args> --session <session> --json`, parsed.
fn call(env: &Env, session: &str, tool: &str, args: Value) -> (Output, Value) {
    let args = args.to_string();
    let out = cli(env, &["call", tool, &args, "--session", session, "--json"]);
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, value)
}

fn call_ok(env: &Env, session: &str, tool: &str, args: Value) -> String {
    let (out, value) = call(env, session, tool, args);
    assert!(out.status.success(), "{tool} failed: {}{}", stdout(&out), stderr(&out));
    value["callId"].as_str().unwrap().to_owned()
}

fn session_dir(env: &Env, session: &str) -> PathBuf {
    let log = env
        .session_logs()
        .into_iter()
        .find(|p| p.parent().and_then(Path::file_name).is_some_and(|n| n == session))
        .unwrap_or_else(|| panic!("no log for session {session}"));
    log.parent().unwrap().to_path_buf()
}

/// How to run the binary so it cannot write into `dir`: `chmod` where that is enough (not root),
/// else a private mount namespace in which `dir` is bind-mounted read-only (root ignores modes;
/// the mount is gone when the process is, whatever happens to the test).
enum Unwritable {
    Chmod(PathBuf),
    ReadOnlyBind(PathBuf),
}

impl Unwritable {
    fn make(dir: &Path) -> Unwritable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        let probe = dir.join("probe");
        if std::fs::write(&probe, b"x").is_err() {
            return Unwritable::Chmod(dir.to_path_buf());
        }
        std::fs::remove_file(&probe).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let ok = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind -o ro "$0" "$0" && ! touch "$0/probe" 2>/dev/null"#)
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "cannot make {} unwritable: not chmod (root), not unshare+mount",
            dir.display()
        );
        Unwritable::ReadOnlyBind(dir.to_path_buf())
    }

    /// `toolhost <args>` unable to write into the folder.
    fn run(&self, env: &Env, args: &[&str]) -> Output {
        match self {
            Unwritable::Chmod(_) => cli(env, args),
            Unwritable::ReadOnlyBind(dir) => command(env, Path::new("unshare"))
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(r#"mount --bind -o ro "$0" "$0" && exec "$@""#)
                .arg(dir)
                .arg(server::binary())
                .args(args)
                .output()
                .unwrap(),
        }
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        if let Unwritable::Chmod(dir) = self {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
}

#[test]
fn an_edit_with_an_unwritable_blob_store_fails_before_changing_the_file() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    let session = "20261206-100000-b10b00";
    call_ok(&env, session, "read", json!({"file_path": "a.txt"}));
    let blobs = session_dir(&env, session).join("blobs");
    let edit = json!({"file_path": "a.txt", "old_string": "two", "new_string": "TWO"}).to_string();

    let unwritable = Unwritable::make(&blobs);
    let out = unwritable.run(&env, &["call", "edit", &edit, "--session", session, "--json"]);
    drop(unwritable);
    assert_eq!(out.status.code(), Some(1), "a tool failure: {}{}", stdout(&out), stderr(&out));
    let failed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert_eq!(failed["result"]["error"]["info"]["code"], "FS_IO_ERROR", "{failed}");
    let message = failed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains("nothing was changed") && message.contains(&blobs.display().to_string()),
        "the message names the real cause: {message}"
    );
    assert!(
        message.contains("Read-only file system") || message.contains("Permission denied"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "one\ntwo\n");
    let failed_id = failed["callId"].as_str().unwrap();
    let changes: Vec<Value> = env
        .session_events(session)
        .into_iter()
        .filter(|e| e["type"] == "fs/change" && e["data"]["callId"] == failed_id)
        .collect();
    assert!(changes.is_empty(), "no change is recorded for the failed edit: {changes:?}");

    // With the store writable again the same edit succeeds, and reverts.
    let id = call_ok(&env, session, "edit", serde_json::from_str(&edit).unwrap());
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "one\nTWO\n");
    let out = cli(&env, &["revert", session, "--call", &id]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "one\ntwo\n");
}

/// A session of several calls: `a.txt` edited first (its call id returned), then reads of a
/// larger file, so the middle of the log lies well after the edit.
fn session_with_an_edit_then_reads(env: &Env, session: &str) -> (String, PathBuf) {
    env.write("a.txt", "alpha\nbeta\n");
    let big: String = (0..60).map(|i| format!("line {i} of the padding file\n")).collect();
    env.write("b.txt", &big);
    call_ok(env, session, "read", json!({"file_path": "a.txt"}));
    let edit = json!({"file_path": "a.txt", "old_string": "beta", "new_string": "BETA"});
    let edit_id = call_ok(env, session, "edit", edit);
    for _ in 0..4 {
        call_ok(env, session, "read", json!({"file_path": "b.txt"}));
    }
    (edit_id, session_dir(env, session).join("session.jsonl"))
}

/// Overwrites the byte in the middle of the log with a NUL (never valid JSON, inside a string or
/// out); returns the byte range of the line it damaged.
fn corrupt_the_middle_byte(log: &Path) -> std::ops::Range<usize> {
    let mut bytes = std::fs::read(log).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] = 0;
    std::fs::write(log, &bytes).unwrap();
    let start = bytes[..middle].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end = middle + bytes[middle..].iter().position(|&b| b == b'\n').unwrap() + 1;
    start..end
}

/// The call ids of the `kind` lines (`tool/call`, `tool/result`) before byte `offset` of the log.
fn logged_before(log: &Path, offset: usize, kind: &str) -> Vec<String> {
    let bytes = std::fs::read(log).unwrap();
    bytes[..offset]
        .split_inclusive(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|value| value["type"] == kind)
        .map(|value| value["data"]["callId"].as_str().unwrap().to_owned())
        .collect()
}

fn replayed_call_ids(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|card| card["callId"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_corrupt_byte_mid_log_still_replays_the_cards_before_it() {
    let env = Env::new();
    let session = "20261206-100000-c0ffee";
    let (_, log) = session_with_an_edit_then_reads(&env, session);
    let sound = cli(&env, &["replay", session, "--json"]);
    assert!(sound.status.success() && stderr(&sound).is_empty(), "{}", stderr(&sound));
    let sound_cards: Vec<String> = stdout(&sound).lines().map(str::to_owned).collect();
    assert_eq!(sound_cards.len(), 6);

    let damaged = corrupt_the_middle_byte(&log);
    let before = logged_before(&log, damaged.start, "tool/call");
    let finished = logged_before(&log, damaged.start, "tool/result");
    assert!(finished.len() >= 2, "the damage lies after the edit: {before:?}");
    let out = cli(&env, &["replay", session, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = replayed_call_ids(&out);
    assert_eq!(replayed[..before.len()], before[..], "every card before the damage is shown");
    // ... those that finished before it exactly as the sound log replayed them.
    let text = stdout(&out);
    let cards: Vec<&str> = text.lines().take(finished.len()).collect();
    assert!(cards == sound_cards[..finished.len()], "the cards before the damage differ");
    let notice = stderr(&out);
    assert!(
        notice.contains("damaged")
            && notice.contains("skipped")
            && notice.contains(&format!("toolhost sessions repair {session}")),
        "{notice}"
    );

    // The editor's replay carries the same notice and the skipped stretch.
    let mut editor = env.start(json!({}));
    let result = editor.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let cards = result["cards"].as_array().unwrap();
    let ids: Vec<&str> = cards.iter().map(|c| c["callId"].as_str().unwrap()).collect();
    assert_eq!(ids[..before.len()], before.iter().map(String::as_str).collect::<Vec<_>>()[..]);
    let damage = &result["damage"];
    assert!(damage["notice"].as_str().unwrap().contains("toolhost sessions repair"), "{damage}");
    assert_eq!(damage["skipped"][0]["offset"], damaged.start as u64, "{damage}");
    drop(editor);

    // Opening the session says what to run, and changes nothing.
    let bytes = std::fs::read(&log).unwrap();
    let (out, _) = call(&env, session, "read", json!({"file_path": "a.txt"}));
    assert!(!out.status.success());
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains(&format!("toolhost sessions repair {session}")), "{text}");
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
}

#[test]
fn sessions_repair_moves_the_damage_aside_and_the_session_continues() {
    let env = Env::new();
    let session = "20261206-100000-fade00";
    let (edit_id, log) = session_with_an_edit_then_reads(&env, session);
    let damaged = corrupt_the_middle_byte(&log);
    let damaged_bytes = std::fs::read(&log).unwrap()[damaged.clone()].to_vec();

    let out = cli(&env, &["sessions", "repair", session]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("repaired session") && report.contains("session.damaged"), "{report}");
    let aside = log.with_file_name("session.damaged");
    assert_eq!(std::fs::read(&aside).unwrap(), damaged_bytes, "moved aside byte for byte");

    // The session opens again, replays without a notice, and a new call appends to it.
    let replay = cli(&env, &["replay", session]);
    assert!(replay.status.success() && stderr(&replay).is_empty(), "{}", stderr(&replay));
    let new_call = call_ok(&env, session, "read", json!({"file_path": "b.txt"}));
    assert!(std::fs::read_to_string(&log).unwrap().contains(&new_call));
    // An earlier call still reverts.
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "alpha\nBETA\n");
    let out = cli(&env, &["revert", session, "--call", &edit_id]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "alpha\nbeta\n");

    // A sound session needs no repair.
    let again = cli(&env, &["sessions", "repair", session]);
    assert!(again.status.success());
    assert!(stdout(&again).contains("nothing was changed"), "{}", stdout(&again));
}
