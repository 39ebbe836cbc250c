//! `toolhost mcp` attached to the editor's `toolhost serve` (docs/protocol.md, Attach socket):
//! an agent's calls run in the editor's registry — its dirty-buffer guard, its session — and
//! their cards reach the editor live, labelled with the agent. Cancellation crosses the socket;
//! registry changes are announced; when the editor goes away, later calls run standalone with
//! a note in the log, never a hang. The socket is private and a stale one is replaced.
#![allow(clippy::unwrap_used)]

use crate::server;

use crate::mcp;

use mcp::{Mcp, error_code_of, text_of};
use serde_json::{Value, json};
use server::{Env, uri};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost_harness::client::Client;

fn did_open(client: &mut Client, path: &Path, version: i32, text: &str) {
    let doc =
        json!({"uri": uri(path), "languageId": "plaintext", "version": version, "text": text});
    client.notify("textDocument/didOpen", json!({"textDocument": doc})).unwrap();
}

fn did_change(client: &mut Client, path: &Path, version: i32, text: &str) {
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri(path), "version": version},
                "contentChanges": [{"text": text}]
            }),
        )
        .unwrap();
    // The server handles notifications in order, before a later request: once this answer is
    // here the buffer is tracked, so an agent's call over the attach socket cannot overtake it.
    client.request("toolhost/listSessions", json!({})).unwrap();
}

/// The `toolhost/card` notification of `tool` with `status`, as the editor received it.
fn card(client: &mut Client, tool: &str, status: &str) -> Value {
    client
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "toolhost/card"
                && m["params"]["tool"] == tool
                && m["params"]["status"] == status
        })
        .unwrap_or_else(|| panic!("no {status} card for {tool}; seen {:?}", client.seen))["params"]
        .clone()
}

fn sockets(env: &Env) -> Vec<PathBuf> {
    let dir = env.state.join("toolhost/run");
    std::fs::read_dir(&dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn an_agent_edit_of_a_dirty_buffer_fails_and_its_cards_reach_the_editor() {
    let env = Env::new();
    let path = env.write("doc.txt", "alpha\n");
    let mut editor = env.start(json!({}));
    let mut agent = Mcp::spawn(&env, &[]);
    agent.initialize("claude-code");

    let read = agent.call("read", json!({"file_path": "doc.txt"}));
    assert_eq!(read["isError"], false, "{read}");
    assert!(text_of(&read).contains("1: alpha"), "the Native text: {read}");
    let pending = card(&mut editor, "read", "pending");
    assert_eq!(pending["caller"], "claude-code", "{pending}");
    let done = card(&mut editor, "read", "completed");
    assert_eq!(done["caller"], "claude-code", "{done}");
    assert!(done["rendered"].as_str().unwrap().lines().next().unwrap().ends_with(" · claude-code"));

    // The person types into the file in the editor, without saving.
    did_open(&mut editor, &path, 1, "alpha\n");
    did_change(&mut editor, &path, 2, "alpha typed\n");
    let edit = agent
        .call("edit", json!({"file_path": "doc.txt", "old_string": "alpha", "new_string": "beta"}));
    assert_eq!(edit["isError"], true, "{edit}");
    assert_eq!(error_code_of(&edit).as_deref(), Some("FS_DIRTY_BUFFER"), "{edit}");
    assert!(text_of(&edit).contains("unsaved changes in the editor"), "{edit}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha\n", "the file was overwritten");
    let failed = card(&mut editor, "edit", "failed");
    assert_eq!(failed["caller"], "claude-code", "{failed}");

    // Saved (reverted to the disk content): the agent's edit goes through, with a diff card.
    did_change(&mut editor, &path, 3, "alpha\n");
    let edit = agent
        .call("edit", json!({"file_path": "doc.txt", "old_string": "alpha", "new_string": "beta"}));
    assert_eq!(edit["isError"], false, "{edit}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "beta\n");
    let diff = card(&mut editor, "edit", "completed");
    assert_eq!(diff["kind"], "diff", "{diff}");
    assert_eq!(diff["caller"], "claude-code");

    // Everything went to the editor's one session; the MCP side opened none of its own.
    drop(agent);
    let logs = env.session_logs();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let id = logs[0].parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let events = env.session_events(&id);
    let attached = events.iter().find(|e| e["type"] == "mcp/client").expect("mcp/client event");
    assert_eq!(attached["data"]["name"], "claude-code");
    assert_eq!(attached["data"]["attached"], true);
    assert_eq!(attached["data"]["results"], "text");
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool/call").collect();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["data"]["caller"] == "claude-code"), "{calls:?}");
    // The editor's replay shows the same cards, caller included.
    let replay = editor.request("toolhost/replaySession", json!({"sessionId": id})).unwrap();
    let cards = replay["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 3);
    assert!(cards.iter().all(|c| c["caller"] == "claude-code"), "{cards:?}");
}

#[test]
fn the_socket_is_private_and_a_stale_one_is_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    // A socket file left by a crashed server, which nobody listens on.
    let editor = env.start(json!({}));
    let socket = sockets(&env).pop().expect("the editor listens on its attach socket");
    drop(editor);
    std::thread::sleep(Duration::from_millis(200));
    let stale = std::os::unix::net::UnixListener::bind(&socket);
    if let Ok(listener) = stale {
        drop(listener); // the file stays, nobody listens
    }
    assert!(socket.exists(), "the stale socket file should be there");

    let mut editor = env.start(json!({}));
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode {mode:o}");
    let dir_mode =
        std::fs::metadata(socket.parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700, "socket folder mode {dir_mode:o}");
    env.write("a.txt", "x\n");
    let mut agent = Mcp::spawn(&env, &[]);
    agent.initialize("some-agent");
    assert_eq!(agent.call("read", json!({"file_path": "a.txt"}))["isError"], false);
    card(&mut editor, "read", "completed");

    // A second editor on the same workspace leaves the first one's socket alone.
    let second = env.start(json!({}));
    agent.call("read", json!({"file_path": "a.txt"}));
    card(&mut editor, "read", "completed");
    drop(second);
    assert!(socket.exists());

    // The socket goes away with its server.
    drop(agent);
    editor.shutdown().unwrap();
    assert!(!socket.exists(), "the socket outlived its server");
}

#[test]
fn when_the_editor_goes_away_later_calls_run_standalone_with_a_note() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut editor = env.start(json!({}));
    let mut agent = Mcp::spawn(&env, &[]);
    agent.initialize("some-agent");
    assert_eq!(agent.call("read", json!({"file_path": "a.txt"}))["isError"], false);
    card(&mut editor, "read", "completed");
    editor.kill();

    let started = std::time::Instant::now();
    let read = agent.call("read", json!({"file_path": "a.txt"}));
    assert_eq!(read["isError"], false, "{read}");
    assert!(started.elapsed() < Duration::from_secs(10), "the fallback hung");
    // The agent is told the tools may have changed (they now come from this process).
    agent
        .wait_for(Duration::from_secs(5), |m| m["method"] == "notifications/tools/list_changed")
        .expect("tools/list_changed after the switch");
    drop(agent);

    let logs = env.session_logs();
    assert_eq!(logs.len(), 2, "the editor's session and the standalone one: {logs:?}");
    let standalone = logs
        .iter()
        .map(|log| std::fs::read_to_string(log).unwrap())
        .find(|text| text.contains("\"mcp/fallback\""))
        .expect("an mcp/fallback note in the standalone session");
    assert!(standalone.contains("went away"), "{standalone}");
    assert!(standalone.contains("\"tool/call\""));
}

#[test]
fn an_attached_command_streams_to_the_editor_and_the_agent_s_progress() {
    let env = Env::new();
    let mut editor = env.start(json!({}));
    let mut agent = Mcp::spawn(&env, &[]);
    agent.initialize("some-agent");
    let command = "for i in 1 2 3 4 5; do echo step $i; sleep 0.6; done";
    let id = agent.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": {"command": command, "description": "steps"}, "_meta": {"progressToken": "p-3"}}),
    );
    let done = agent.response(&id);
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert!(
        agent
            .wait_for(Duration::from_millis(100), |m| {
                m["method"] == "notifications/progress"
                    && m["params"]["message"].as_str().is_some_and(|t| t.contains("— step "))
            })
            .is_some(),
        "no progress message quoted the output"
    );
    let finished = card(&mut editor, "bash", "completed");
    assert_eq!(finished["caller"], "some-agent");
    let call_id = finished["callId"].as_str().unwrap().to_owned();
    let streamed: String = editor
        .seen
        .iter()
        .filter(|m| {
            m["method"] == "toolhost/callOutput" && m["params"]["callId"] == call_id.as_str()
        })
        .map(|m| m["params"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(streamed, "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n");
}

#[test]
fn cancellation_and_registry_changes_cross_the_socket() {
    let env = Env::new();
    let mut editor = env.start(json!({}));
    let mut agent = Mcp::spawn(&env, &[]);
    agent.initialize("some-agent");

    let id = agent.send_request(
        "tools/call",
        json!({"name": "test_sleep", "arguments": {"seconds": 30, "marker": "started.txt"}}),
    );
    let marker = env.root.join("started.txt");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    agent.notify("notifications/cancelled", json!({"requestId": id}));
    let aborted = card(&mut editor, "test_sleep", "failed");
    assert!(aborted["text"].as_str().unwrap().contains("aborted"), "{aborted}");
    agent.ok("ping", json!({}));
    assert!(
        agent.wait_for(Duration::from_millis(500), |m| m.get("id") == Some(&id)).is_none(),
        "a cancelled request was answered"
    );

    agent.call("test_toggle_tool", json!({"name": "test_attached_extra"}));
    agent
        .wait_for(Duration::from_secs(10), |m| m["method"] == "notifications/tools/list_changed")
        .expect("tools/list_changed from the editor's registry");
    assert!(agent.tools().iter().any(|t| t["name"] == "test_attached_extra"));
}

#[test]
fn an_agent_started_in_a_subfolder_finds_the_editor_of_the_workspace() {
    let env = Env::new();
    std::fs::create_dir_all(env.root.join("pkg/src")).unwrap();
    env.write("pkg/src/lib.rs", "pub fn f() {}\n");
    let mut editor = env.start(json!({}));
    let mut command = std::process::Command::new(server::binary());
    command
        .arg("mcp")
        .current_dir(env.root.join("pkg/src"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let mut agent = Mcp::start(command);
    agent.initialize("some-agent");
    let path = env.root.join("pkg/src/lib.rs").display().to_string();
    assert_eq!(agent.call("read", json!({"file_path": path}))["isError"], false);
    let read = card(&mut editor, "read", "completed");
    assert_eq!(read["caller"], "some-agent", "{read}");
}
