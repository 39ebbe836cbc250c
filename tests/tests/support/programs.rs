//! What the suites of programs on the host share (`run_code`, session tools): the cards an editor
//! saw under a program's call, and one `toolhost call --session` in a test's workspace.
#![allow(dead_code)]

use super::server::{Env, binary};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;
use toolhost_harness::client::Client;

/// The final cards seen so far whose parent is `parent`, in arrival order (a card's last state).
pub fn child_cards(client: &mut Client, parent: &str) -> Vec<Value> {
    client.wait_for(Duration::ZERO, |_| false);
    let mut out: Vec<Value> = Vec::new();
    for note in &client.seen {
        if note["method"] != "toolhost/card" || note["params"]["parentCallId"] != parent {
            continue;
        }
        let card = note["params"].clone();
        match out.iter_mut().find(|c| c["callId"] == card["callId"]) {
            Some(seen) => *seen = card,
            None => out.push(card),
        }
    }
    out
}

/// `toolhost call <tool> <args> --session <session> --json`: its exit success and its JSON.
pub fn cli_call(env: &Env, session: &str, tool: &str, args: Value) -> (bool, Value) {
    let mut command = Command::new(binary());
    command.current_dir(&env.root).stdin(Stdio::null());
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let args = args.to_string();
    let out = command.args(["call", tool, &args, "--session", session, "--json"]).output().unwrap();
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), value)
}
