//! Checkpoints: a named point of a session (`toolhost checkpoint <name>`, or the `checkpoint`
//! call an editor makes), restored as one recorded call that undoes every change after it — a
//! new file goes, edited files get their bytes back — and that restore undone by `revert` of its
//! call, the bytes identical (sha256) each time. The CLI reaches the editor's toolhost that holds
//! the session. The own agent's turns are checkpoints of their own (see agent_serve.rs).
#![allow(clippy::unwrap_used)]

use crate::server::{self, Env, call_ok};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

/// The sha256 of each file (`None`: absent), through the system's `sha256sum`.
fn sums(env: &Env, names: &[&str]) -> Vec<Option<String>> {
    names
        .iter()
        .map(|name| {
            let path = env.root.join(name);
            path.exists().then(|| {
                let out = Command::new("sha256sum").arg(&path).output().unwrap();
                String::from_utf8(out.stdout).unwrap().split(' ').next().unwrap().to_owned()
            })
        })
        .collect()
}

fn cli(env: &Env, args: &[&str]) -> Value {
    let mut command = Command::new(server::binary());
    command.args(args).arg("--json").current_dir(&env.root).stdin(Stdio::null());
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_restored_checkpoint_and_its_undoing_give_back_the_exact_bytes() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    env.write("c.txt", "kept\n");
    let files = ["a.txt", "b.txt", "c.txt"];
    let mut client = env.start(json!({}));
    call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    call_ok(
        &mut client,
        "edit",
        json!({"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}),
    );
    let at_checkpoint = sums(&env, &files);

    // From the command line, in the editor's toolhost that holds the session.
    let created = cli(&env, &["checkpoint", "before-refactor"]);
    assert_eq!(created["result"]["value"]["name"], "before-refactor", "{created}");
    assert_eq!(created["card"]["caller"], "toolhost checkpoint", "{created}");

    call_ok(
        &mut client,
        "edit",
        json!({"file_path": "a.txt", "old_string": "two", "new_string": "TWO"}),
    );
    call_ok(&mut client, "write", json!({"file_path": "b.txt", "content": "new file\n"}));
    let after_work = sums(&env, &files);
    assert_ne!(after_work, at_checkpoint);

    let listed = cli(&env, &["checkpoint", "--list"]);
    let checkpoints = listed["result"]["value"]["checkpoints"].as_array().unwrap().clone();
    assert_eq!(checkpoints.len(), 1, "{listed}");
    assert_eq!(checkpoints[0]["name"], "before-refactor");
    assert_eq!(checkpoints[0]["kind"], "named");
    assert_eq!(checkpoints[0]["changedAfter"], 2);

    // Restored: one call undoing both changes; the new file is gone, c.txt untouched.
    let restored = cli(&env, &["checkpoint", "--restore", "before-refactor"]);
    let restore_call = restored["callId"].as_str().unwrap().to_owned();
    assert_eq!(sums(&env, &files), at_checkpoint, "{restored}");
    assert!(!env.root.join("b.txt").exists());
    assert_eq!(restored["card"]["kind"], "diff", "{restored}");
    let undone = restored["result"]["value"]["restored"]["revertedCalls"].as_array().unwrap();
    assert_eq!(undone.len(), 2, "{restored}");

    // The restore undone: everything after the checkpoint is back.
    call_ok(&mut client, "revert", json!({"call_id": restore_call}));
    assert_eq!(sums(&env, &files), after_work);
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "new file\n");

    // And restored once more, from the editor this time: the same bytes again.
    let again =
        call_ok(&mut client, "checkpoint", json!({"action": "restore", "name": "before-refactor"}));
    assert_eq!(sums(&env, &files), at_checkpoint, "{again}");

    // Errors say what is wrong.
    let unknown =
        client.call_tool("checkpoint", json!({"action": "restore", "name": "nope"})).unwrap();
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    assert!(unknown.to_string().contains("CHECKPOINT_UNKNOWN"), "{unknown}");
    client.shutdown().unwrap();
}
