//! Disconnect and exit (B.5, B.11 row 7): `shutdown` → `exit` exits 0, `exit` alone 1; stdin
//! EOF or the death of the client process (`initialize.processId`) during a running call exits
//! within the budget (1.5 s grace for running calls) with code 1, the log is flushed, and no
//! child process of the server is left behind.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, children_of, ms, pid_exists, raw_request};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

/// Starts a `test_sleep` call (not awaited) and waits until its body runs (it writes a marker).
fn start_sleep(client: &mut Client, root: &std::path::Path, call_id: &str, mut arguments: Value) {
    let marker = format!("started-{call_id}");
    arguments["marker"] = json!(marker);
    let params = json!({"name": "test_sleep", "arguments": arguments, "callId": call_id});
    client.write_raw(&raw_request(json!(4_000_000), "toolhost/callTool", params)).unwrap();
    client
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "toolhost/card" && m["params"]["callId"] == call_id
        })
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !root.join(&marker).exists() {
        assert!(Instant::now() < deadline, "the body of {call_id} never started");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits for the exit; returns the status and the time it took.
fn wait_exit(client: &mut Client, start: Instant) -> (ExitStatus, f64) {
    let status = client.wait(Duration::from_secs(10)).unwrap();
    let elapsed = ms(start);
    (status.unwrap_or_else(|| panic!("the server did not exit within 10 s")), elapsed)
}

/// The server spawned no child processes, and after its exit its pid is gone.
fn assert_no_leftovers(pid: u32, children_before: &[u32]) {
    assert!(!pid_exists(pid), "the server process {pid} still exists");
    for child in children_before {
        assert!(!pid_exists(*child), "child {child} of the server outlived it");
    }
    assert!(children_of(pid).is_empty());
}

#[test]
fn shutdown_then_exit_exits_0() {
    let env = Env::new();
    let client = env.start(json!({}));
    let pid = client.pid();
    let status = client.shutdown().unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_no_leftovers(pid, &[]);
}

#[test]
fn exit_without_shutdown_exits_1() {
    let env = Env::new();
    let mut client = env.start(json!({}));
    client.notify("exit", Value::Null).unwrap();
    let (status, elapsed) = wait_exit(&mut client, Instant::now());
    println!("exit without shutdown: code {:?} after {elapsed:.0} ms", status.code());
    assert_eq!(status.code(), Some(1));
}

#[test]
fn exit_before_initialize_exits_1() {
    let env = Env::new();
    let mut client = env.spawn();
    client.notify("exit", Value::Null).unwrap();
    let (status, _) = wait_exit(&mut client, Instant::now());
    assert_eq!(status.code(), Some(1));
}

#[test]
fn exit_during_a_running_call_after_shutdown_exits_0() {
    let env = Env::new();
    let mut client = env.start(json!({"session_id": "exit-running"}));
    start_sleep(&mut client, &env.root, "running", json!({"seconds": 30}));
    client.request("shutdown", Value::Null).unwrap();
    let start = Instant::now();
    client.notify("exit", Value::Null).unwrap();
    let (status, elapsed) = wait_exit(&mut client, start);
    println!("exit with a running call: code {:?} after {elapsed:.0} ms", status.code());
    assert_eq!(status.code(), Some(0));
    assert!(elapsed < 3000.0);
    let events = env.session_events("exit-running");
    let result = events.iter().find(|e| e["type"] == "tool/result").unwrap();
    assert_eq!(result["data"]["error"]["code"], "ABORTED", "{result}");
}

fn stdin_eof_during_a_call(arguments: Value, session: &str) -> (Env, f64) {
    let env = Env::new();
    let mut client = env.start(json!({"session_id": session}));
    let pid = client.pid();
    start_sleep(&mut client, &env.root, "interrupted", arguments);
    let children = children_of(pid);
    assert!(children.is_empty(), "the server has child processes: {children:?}");
    let start = Instant::now();
    client.close_stdin();
    let (status, elapsed) = wait_exit(&mut client, start);
    println!("stdin EOF during a call ({session}): code {:?} after {elapsed:.0} ms", status.code());
    assert_eq!(status.code(), Some(1));
    assert!(elapsed < 3000.0, "exit took {elapsed:.0} ms");
    assert_no_leftovers(pid, &children);
    (env, elapsed)
}

#[test]
fn stdin_eof_during_a_call_exits_1_quickly_and_flushes_the_log() {
    let (env, _) = stdin_eof_during_a_call(json!({"seconds": 30}), "eof-cooperative");
    // The cooperative body saw its signal; its ABORTED result reached the log before exit.
    let events = env.session_events("eof-cooperative");
    assert!(
        events.iter().any(|e| e["type"] == "tool/call" && e["data"]["callId"] == "interrupted")
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result" && e["data"]["callId"] == "interrupted")
        .unwrap_or_else(|| panic!("no tool/result in {events:?}"));
    assert_eq!(result["data"]["error"]["code"], "ABORTED", "{result}");
}

#[test]
fn stdin_eof_during_a_call_that_ignores_its_signal_exits_after_the_grace() {
    let (env, elapsed) =
        stdin_eof_during_a_call(json!({"seconds": 30, "ignoreCancel": true}), "eof-stubborn");
    // The grace (1.5 s) ran out: the body was abandoned and the exit came after it.
    assert!(elapsed >= 1400.0, "exit after {elapsed:.0} ms, before the grace ran out");
    let events = env.session_events("eof-stubborn");
    assert!(
        events.iter().any(|e| e["type"] == "tool/call" && e["data"]["callId"] == "interrupted")
    );
    assert!(!events.iter().any(|e| e["type"] == "tool/result"), "an abandoned call has no result");
}

#[test]
fn the_death_of_the_client_process_stops_the_server() {
    let env = Env::new();
    // The "editor": a short-lived process whose pid the server watches.
    let mut editor = Command::new("sh").args(["-c", "exec sleep 30"]).spawn().unwrap();
    let mut client = env.spawn();
    let pid = client.pid();
    let uri = server::uri(&env.root);
    client
        .request(
            "initialize",
            json!({
                "processId": editor.id(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "workspace"}],
                "capabilities": {},
                "initializationOptions": {"session_id": "client-died"},
            }),
        )
        .unwrap();
    client.notify("initialized", json!({})).unwrap();
    start_sleep(&mut client, &env.root, "orphaned", json!({"seconds": 30}));
    let children = children_of(pid);
    assert!(children.is_empty(), "the server has child processes: {children:?}");
    let start = Instant::now();
    editor.kill().unwrap();
    editor.wait().unwrap();
    let (status, elapsed) = wait_exit(&mut client, start);
    println!("client process death: code {:?} after {elapsed:.0} ms", status.code());
    assert_eq!(status.code(), Some(1));
    assert!(elapsed < 3000.0, "exit took {elapsed:.0} ms");
    assert_no_leftovers(pid, &children);
    let events = env.session_events("client-died");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result" && e["data"]["callId"] == "orphaned")
        .unwrap_or_else(|| panic!("no tool/result in {events:?}"));
    assert_eq!(result["data"]["error"]["code"], "ABORTED", "{result}");
}
