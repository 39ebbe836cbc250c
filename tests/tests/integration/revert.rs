//! Undo from the log (`revert`, over the wire and from the CLI): the exact bytes a call found come
//! back (CRLF, BOM, no final newline), a created file goes, a revert can be reverted, `since`
//! undoes several files newest first, a file edited since gets the reverse change merged or the
//! whole revert is refused naming the conflicting lines, the editor's unsaved buffer is never
//! overwritten, the revert card replays, `toolhost revert` runs in the editor that holds the
//! session, and 200 `kill -9` during a multi-file revert leave every file old or new with the
//! next start rolling the journal back.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, call_err, call_ok, uri};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

fn text(call: &Value) -> String {
    call["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn call_id(call: &Value) -> String {
    call["callId"].as_str().unwrap().to_owned()
}

fn read(client: &mut Client, path: &str) {
    call_ok(client, "read", json!({"file_path": path}));
}

fn edit(client: &mut Client, path: &str, old: &str, new: &str) -> String {
    read(client, path);
    let out =
        call_ok(client, "edit", json!({"file_path": path, "old_string": old, "new_string": new}));
    call_id(&out)
}

fn revert(client: &mut Client, call: &str) -> Value {
    call_ok(client, "revert", json!({"call_id": call}))
}

#[test]
fn a_revert_restores_the_exact_bytes_the_call_found() {
    let env = Env::new();
    let original = "\u{feff}alpha\r\nbeta\r\ngamma";
    env.write("a.txt", original);
    let mut client = env.start(json!({}));
    let id = edit(&mut client, "a.txt", "beta", "BETA");
    assert_eq!(
        std::fs::read_to_string(env.root.join("a.txt")).unwrap(),
        "\u{feff}alpha\r\nBETA\r\ngamma"
    );

    let out = revert(&mut client, &id);
    assert_eq!(std::fs::read(env.root.join("a.txt")).unwrap(), original.as_bytes());
    assert_eq!(
        text(&out),
        format!("Reverted {id}:\nrestored a.txt\nRead these files again before editing them.")
    );
    let value = &out["result"]["value"];
    assert_eq!(value["revertedCalls"], json!([id]), "{value}");
    assert_eq!(value["files"][0]["action"], "restored");
    assert_eq!(value["files"][0]["before"], "alpha\nBETA\ngamma");
    assert_eq!(value["files"][0]["after"], "alpha\nbeta\ngamma");
    let card = &out["card"];
    assert_eq!(card["kind"], "diff");
    assert_eq!(card["title"], format!("Revert {id}"));
    assert_eq!(card["stats"], json!({"additions": 1, "deletions": 1}), "{card}");
    assert_eq!(card["hunks"][0]["path"], "a.txt");
    let here = env.root.join("a.txt").display().to_string();
    assert_eq!(card["locations"], json!([{"path": here, "line": 1}]), "{card}");
    // The model must read the file again before editing it: the observation is not reused.
    let stale = call_err(
        &mut client,
        "edit",
        json!({"file_path": "a.txt", "old_string": "beta", "new_string": "b"}),
        "FS_STALE_VERSION",
    );
    assert!(text(&stale).contains("re-read"), "{stale}");
}

#[test]
fn a_created_file_is_removed_and_a_reverted_revert_brings_it_back() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    let write =
        call_ok(&mut client, "write", json!({"file_path": "new/b.txt", "content": "one\ntwo\n"}));
    let undo = revert(&mut client, &call_id(&write));
    assert!(!env.root.join("new/b.txt").exists());
    assert!(text(&undo).contains("removed new/b.txt"), "{undo}");
    assert_eq!(undo["card"]["stats"], json!({"additions": 0, "deletions": 2}));

    let redo = revert(&mut client, &call_id(&undo));
    assert_eq!(std::fs::read_to_string(env.root.join("new/b.txt")).unwrap(), "one\ntwo\n");
    assert_eq!(redo["result"]["value"]["files"][0]["action"], "recreated");
    // And once more: a revert of a revert of a revert removes it again.
    revert(&mut client, &call_id(&redo));
    assert!(!env.root.join("new/b.txt").exists());
}

#[test]
fn since_reverts_every_change_from_that_call_on_newest_first() {
    let env = Env::new();
    env.write("a.txt", "a1\na2\n");
    env.write("c.txt", "c1\n");
    env.write("untouched.txt", "u\n");
    let mut client = env.start(json!({}));
    let first = edit(&mut client, "a.txt", "a1", "A1");
    let write = call_ok(&mut client, "write", json!({"file_path": "b.txt", "content": "b\n"}));
    let second = edit(&mut client, "a.txt", "a2", "A2");
    let third = edit(&mut client, "c.txt", "c1", "C1");

    let out = call_ok(&mut client, "revert", json!({"call_id": first, "since": true}));
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "a1\na2\n");
    assert_eq!(std::fs::read_to_string(env.root.join("c.txt")).unwrap(), "c1\n");
    assert!(!env.root.join("b.txt").exists());
    assert_eq!(std::fs::read_to_string(env.root.join("untouched.txt")).unwrap(), "u\n");
    let value = &out["result"]["value"];
    assert_eq!(value["revertedCalls"], json!([third, second, call_id(&write), first]));
    let actions: Vec<(&str, &str)> = value["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["action"].as_str().unwrap()))
        .collect();
    assert_eq!(actions, [("a.txt", "restored"), ("b.txt", "removed"), ("c.txt", "restored")]);
    let card = &out["card"];
    assert_eq!(card["title"], format!("Revert since {first}"));
    let paths: Vec<&str> =
        card["hunks"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["a.txt", "b.txt", "c.txt"], "{card}");
    let located: Vec<String> = card["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["path"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = ["a.txt", "b.txt", "c.txt"]
        .iter()
        .map(|f| env.root.join(f).display().to_string())
        .collect();
    assert_eq!(located, expected);
    let rendered = card["rendered"].as_str().unwrap();
    assert!(
        rendered.contains("\na.txt\n@@ -1,2 +1,2 @@\n-A1\n-A2\n+a1\n+a2\nb.txt\n@@"),
        "{rendered}"
    );
    assert!(text(&out).starts_with(&format!("Reverted 4 calls since {first} (")), "{out}");
    // No journal is left behind.
    assert!(journals(&env.state).is_empty());
}

#[test]
fn a_file_edited_since_gets_only_the_calls_change_undone() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\nfour\nfive\nsix\n");
    let mut client = env.start(json!({}));
    let id = edit(&mut client, "a.txt", "two", "TWO");
    // The person edits another part of the file afterwards.
    env.write("a.txt", "one\nTWO\nthree\nfour\nfive\nSIX (mine)\n");
    let out = revert(&mut client, &id);
    assert_eq!(
        std::fs::read_to_string(env.root.join("a.txt")).unwrap(),
        "one\ntwo\nthree\nfour\nfive\nSIX (mine)\n"
    );
    assert_eq!(out["result"]["value"]["files"][0]["action"], "merged");
    assert!(text(&out).contains("merged (the file was edited since"), "{out}");
}

#[test]
fn a_conflicting_edit_since_refuses_the_whole_revert_and_writes_nothing() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    env.write("b.txt", "bee\n");
    let mut client = env.start(json!({}));
    let first = edit(&mut client, "a.txt", "two", "TWO");
    edit(&mut client, "b.txt", "bee", "BEE");
    // The person rewrites the very line the agent changed.
    let mine = "one\nmy two\nmy extra\nthree\n";
    env.write("a.txt", mine);
    let out = call_err(
        &mut client,
        "revert",
        json!({"call_id": first, "since": true}),
        "REVERT_CONFLICT",
    );
    assert!(text(&out).contains("a.txt conflicts at lines 2-3"), "{out}");
    assert!(text(&out).contains("nothing was written"), "{out}");
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), mine);
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "BEE\n", "all or nothing");
}

#[test]
fn unknown_calls_calls_without_changes_and_dirty_buffers_are_refused() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    let mut client = env.start(json!({}));
    call_err(&mut client, "revert", json!({"call_id": "call_nope"}), "REVERT_UNKNOWN_CALL");
    let read = call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let none =
        call_err(&mut client, "revert", json!({"call_id": call_id(&read)}), "REVERT_NO_CHANGES");
    assert!(text(&none).contains("changed no file"), "{none}");

    let id = edit(&mut client, "a.txt", "x", "y");
    let path = env.root.join("a.txt");
    let doc =
        json!({"uri": uri(&path), "languageId": "plaintext", "version": 1, "text": "unsaved\n"});
    client.notify("textDocument/didOpen", json!({"textDocument": doc})).unwrap();
    call_err(&mut client, "revert", json!({"call_id": id}), "FS_DIRTY_BUFFER");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "y\n");
}

#[test]
fn the_revert_card_replays_as_it_showed_live() {
    let env = Env::new();
    env.write("a.txt", "left\nright\n");
    let mut client = env.start(json!({}));
    let id = edit(&mut client, "a.txt", "right", "RIGHT");
    let live = revert(&mut client, &id);
    let session = live["sessionId"].as_str().unwrap().to_owned();
    let replay = client.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let cards = replay["cards"].as_array().unwrap();
    let replayed = cards.iter().find(|c| c["callId"] == live["callId"]).unwrap();
    assert_eq!(replayed, &live["card"]);
}

#[test]
fn toolhost_revert_runs_in_the_editor_that_holds_the_session() {
    let env = Env::new();
    env.write("a.txt", "before\n");
    let mut editor = env.start(json!({}));
    let id = edit(&mut editor, "a.txt", "before", "after");
    let session = {
        let out = call_ok(&mut editor, "read", json!({"file_path": "a.txt"}));
        out["sessionId"].as_str().unwrap().to_owned()
    };
    let out = cli(&env, &["revert", &session, "--call", &id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("Reverted {id}:\nrestored a.txt\nRead these files again before editing them.\n")
    );
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "before\n");
    let card = editor
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "toolhost/card"
                && m["params"]["tool"] == "revert"
                && m["params"]["status"] == "completed"
        })
        .expect("the editor shows the revert's card");
    assert_eq!(card["params"]["caller"], "toolhost revert");
}

#[test]
fn toolhost_revert_of_a_session_nobody_holds_runs_in_process() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let session = "20261203-000000-abcdef";
    assert!(
        cli(&env, &["call", "read", r#"{"file_path":"a.txt"}"#, "--session", session])
            .status
            .success()
    );
    let out = cli(
        &env,
        &[
            "call",
            "edit",
            r#"{"file_path":"a.txt","old_string":"one","new_string":"two"}"#,
            "--session",
            session,
            "--json",
        ],
    );
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["callId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = cli(&env, &["revert", session, "--call", &id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "one\n");
    let again = cli(&env, &["revert", session, "--call", &id]);
    assert_eq!(again.status.code(), Some(1), "nothing left to revert is a tool failure");
}

fn cli(env: &Env, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(server::binary());
    command.args(args).current_dir(&env.root).stdin(Stdio::null());
    for (key, value) in env.env() {
        command.env(key, value);
    }
    command.output().unwrap()
}

/// Every revert journal under the state directory.
fn journals(state: &Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.file_name().is_some_and(|n| n == "revert-journal.json") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(state, &mut out);
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// xorshift: reproducible kill delays without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

#[test]
fn kill_9_during_a_multi_file_revert_leaves_every_file_old_or_new_and_the_next_start_rolls_back() {
    const FILES: usize = 16;
    const KILLS: usize = 200;
    let env = Env::new();
    let session = "20261203-000000-c0ffee";
    let old = |i: usize| format!("file {i}\nold line\n{}\n", "x".repeat(i * 97));
    let new = |i: usize| format!("file {i}\nnew line\n{}\n", "x".repeat(i * 97));
    for i in 0..FILES {
        env.write(&format!("f{i:02}.txt"), &old(i));
    }
    // One session that changed every file; its first call is where `--since` starts.
    let mut first = None;
    for i in 0..FILES {
        let file = format!("f{i:02}.txt");
        let read = format!(r#"{{"file_path":"{file}"}}"#);
        assert!(cli(&env, &["call", "read", &read, "--session", session]).status.success());
        let edit =
            format!(r#"{{"file_path":"{file}","old_string":"old line","new_string":"new line"}}"#);
        let out = cli(&env, &["call", "edit", &edit, "--session", session, "--json"]);
        let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["callId"]
            .as_str()
            .unwrap()
            .to_owned();
        first.get_or_insert(id);
    }
    let first = first.unwrap();
    let template = env.dir.path().join("state-template");
    copy_dir(&env.state, &template);

    let reset = || {
        std::fs::remove_dir_all(&env.state).unwrap();
        copy_dir(&template, &env.state);
        for i in 0..FILES {
            std::fs::write(env.root.join(format!("f{i:02}.txt")), new(i)).unwrap();
        }
    };
    let spawn_revert = || {
        let mut command = Command::new(server::binary());
        command
            .args(["revert", session, "--call", &first, "--since"])
            .current_dir(&env.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (key, value) in env.env() {
            command.env(key, value);
        }
        command.spawn().unwrap()
    };
    // How long an undisturbed revert takes, to spread the kills over it.
    reset();
    let started = Instant::now();
    assert!(spawn_revert().wait().unwrap().success());
    let full = started.elapsed().as_micros() as u64;
    for i in 0..FILES {
        assert_eq!(std::fs::read_to_string(env.root.join(format!("f{i:02}.txt"))).unwrap(), old(i));
    }

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut rolled_back, mut completed, mut mid_way) = (0, 0, 0);
    for kill in 0..KILLS {
        reset();
        let mut child = spawn_revert();
        std::thread::sleep(Duration::from_micros(rng.below(full + full / 5)));
        let _ = child.kill();
        let _ = child.wait();
        // Right after the kill: every file is whole, old or new.
        let mut olds = 0;
        for i in 0..FILES {
            let now = std::fs::read_to_string(env.root.join(format!("f{i:02}.txt"))).unwrap();
            assert!(now == old(i) || now == new(i), "kill {kill}: f{i:02} is torn: {now:?}");
            olds += usize::from(now == old(i));
        }
        if olds > 0 && olds < FILES {
            mid_way += 1;
        }
        // The next start (any call in the session) finishes the story: all or nothing.
        let read = cli(&env, &["call", "read", r#"{"file_path":"f00.txt"}"#, "--session", session]);
        assert!(read.status.success(), "kill {kill}: {}", String::from_utf8_lossy(&read.stderr));
        assert!(journals(&env.state).is_empty(), "kill {kill}: the journal was not resolved");
        let all: Vec<bool> = (0..FILES)
            .map(|i| {
                std::fs::read_to_string(env.root.join(format!("f{i:02}.txt"))).unwrap() == old(i)
            })
            .collect();
        if all.iter().all(|o| *o) {
            completed += 1;
        } else if all.iter().all(|o| !*o) {
            rolled_back += 1;
        } else {
            panic!("kill {kill}: half a revert is left: {all:?}");
        }
    }
    eprintln!(
        "{KILLS} kills over a {FILES}-file revert of {full} µs: {mid_way} mid-way, then {rolled_back} rolled back and {completed} complete"
    );
    assert!(mid_way > 0, "no kill landed in the middle of the revert");
}
