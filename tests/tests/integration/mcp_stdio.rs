//! `toolhost mcp` on its own (no editor): tools/list (stable order, the tools' own annotations,
//! configured `_meta`, output schemas only for structured clients), tools/call through the whole
//! pipeline in both result shapes, failures as `isError` results, unknown tools as JSON-RPC
//! errors, cancellation, progress, `tools/list_changed`, the 2026-07-28 lifecycle, and the
//! session log (caller, chosen shape) that `toolhost sessions`/`replay` read.
#![allow(clippy::unwrap_used)]

use crate::server;

use crate::mcp;

use mcp::{Mcp, error_code_of, text_of};
use serde_json::{Value, json};
use server::Env;
use std::time::Duration;

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool {name}"))
}

/// The single session this workspace's MCP server logged to.
fn only_session(env: &Env) -> (String, Vec<Value>) {
    let logs = env.session_logs();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let id = logs[0].parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let events = env.session_events(&id);
    (id, events)
}

#[test]
fn tools_are_listed_sorted_with_their_own_annotations_and_the_configured_meta() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    let init = mcp.initialize("some-agent");
    assert_eq!(init["protocolVersion"], mcp::PROTOCOL);
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(init["serverInfo"]["name"], "toolhost");

    let tools = mcp.tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools/list must be in a stable (sorted) order");
    for name in ["read", "write", "edit", "glob", "grep", "lsp"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for name in ["read", "glob", "grep", "lsp"] {
        let a = &tool(&tools, name)["annotations"];
        assert_eq!(a["readOnlyHint"], true, "{name}: {a}");
        assert_eq!(a["idempotentHint"], true, "{name}: {a}");
    }
    for name in ["write", "edit"] {
        let a = &tool(&tools, name)["annotations"];
        assert_eq!(a["readOnlyHint"], false, "{name}: {a}");
        assert_eq!(a["destructiveHint"], true, "{name}: {a}");
    }
    for t in &tools {
        assert_eq!(t["_meta"]["anthropic/alwaysLoad"], true, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        // A structured client gets output schemas, always objects (MCP's structuredContent).
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
    }
    // Listing twice gives the same bytes (clients cache their prompts on it).
    assert_eq!(
        serde_json::to_string(&mcp.tools()).unwrap(),
        serde_json::to_string(&tools).unwrap()
    );
}

#[test]
fn configuration_chooses_text_results_and_adds_meta_per_tool() {
    let env = Env::new();
    env.write(
        "toolhost.toml",
        "[mcp]\nresults = \"text\"\n\n[mcp.meta.read]\n\"example/hint\" = \"fast\"\n",
    );
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    let tools = mcp.tools();
    for t in &tools {
        assert!(t.get("outputSchema").is_none(), "text results publish no output schema: {t}");
    }
    assert_eq!(tool(&tools, "read")["_meta"]["example/hint"], "fast");
    assert_eq!(tool(&tools, "read")["_meta"]["anthropic/alwaysLoad"], true);
    assert!(tool(&tools, "edit")["_meta"].get("example/hint").is_none());
    let read = mcp.call("read", json!({"file_path": "a.txt"}));
    assert!(read.get("structuredContent").is_none(), "{read}");
    assert!(text_of(&read).contains("1: hello"), "{read}");
    assert_eq!(read["_meta"]["toolhost/value"]["totalLines"], 1, "{read}");
}

#[test]
fn structured_results_carry_the_canonical_value_and_the_native_text() {
    let env = Env::new();
    let path = env.write("a.txt", "hello\nworld\n");
    env.write("b.txt", "another world\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    let tools = mcp.tools();

    let read = mcp.call("read", json!({"file_path": "a.txt"}));
    assert_eq!(read["isError"], false, "{read}");
    assert!(text_of(&read).contains("<content>\n1: hello\n2: world"), "{read}");
    assert_eq!(read["structuredContent"]["totalLines"], 2);
    assert!(read["_meta"]["toolhost/callId"].as_str().unwrap().starts_with("call_"));
    validate(&tool(&tools, "read")["outputSchema"], &read["structuredContent"]);

    let edit = mcp
        .call("edit", json!({"file_path": "a.txt", "old_string": "world", "new_string": "there"}));
    assert_eq!(edit["isError"], false, "{edit}");
    assert!(text_of(&edit).contains("has been updated successfully"), "{edit}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nthere\n");
    validate(&tool(&tools, "edit")["outputSchema"], &edit["structuredContent"]);

    let grep = mcp.call("grep", json!({"pattern": "world"}));
    assert_eq!(grep["isError"], false, "{grep}");
    assert!(text_of(&grep).contains("b.txt"), "{grep}");
    validate(&tool(&tools, "grep")["outputSchema"], &grep["structuredContent"]);

    let glob = mcp.call("glob", json!({"pattern": "*.txt"}));
    validate(&tool(&tools, "glob")["outputSchema"], &glob["structuredContent"]);
}

fn validate(schema: &Value, value: &Value) {
    let validator = jsonschema::options().build(schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "structuredContent does not match its schema: {errors:?}\n{value}");
}

#[test]
fn agents_that_drop_content_get_the_native_text_and_the_choice_is_logged() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("claude-code");
    for t in mcp.tools() {
        assert!(t.get("outputSchema").is_none(), "{t}");
    }
    let read = mcp.call("read", json!({"file_path": "a.txt"}));
    assert!(read.get("structuredContent").is_none(), "{read}");
    assert!(text_of(&read).starts_with("<path>"), "{read}");
    assert_eq!(read["_meta"]["toolhost/value"]["lines"][0]["text"], "hello");
    drop(mcp);

    let (_, events) = only_session(&env);
    let client = events.iter().find(|e| e["type"] == "mcp/client").expect("mcp/client event");
    assert_eq!(client["data"]["name"], "claude-code");
    assert_eq!(client["data"]["results"], "text");
    assert_eq!(client["data"]["protocolVersion"], mcp::PROTOCOL);
    let call = events.iter().find(|e| e["type"] == "tool/call").expect("tool/call event");
    assert_eq!(call["data"]["caller"], "claude-code", "{call}");
}

#[test]
fn failures_are_error_results_and_unknown_tools_are_protocol_errors() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");

    let not_read =
        mcp.call("edit", json!({"file_path": "a.txt", "old_string": "hello", "new_string": "x"}));
    assert_eq!(not_read["isError"], true, "{not_read}");
    assert_eq!(error_code_of(&not_read).as_deref(), Some("FS_NOT_OBSERVED"));
    assert!(text_of(&not_read).contains("read the file, then retry"), "{not_read}");
    assert!(not_read.get("structuredContent").is_none(), "{not_read}");

    let invalid = mcp.call("read", json!({"path": "a.txt"}));
    assert_eq!(invalid["isError"], true, "{invalid}");
    assert_eq!(error_code_of(&invalid).as_deref(), Some("INVALID_ARGS"));
    assert!(text_of(&invalid).contains("missing required property \"file_path\""), "{invalid}");

    let missing = mcp.call("read", json!({"file_path": "nope.txt"}));
    assert_eq!(error_code_of(&missing).as_deref(), Some("FS_NOT_FOUND"));

    let unknown = mcp.request("tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("no_such_tool"));
    // Still serving.
    assert_eq!(mcp.call("read", json!({"file_path": "a.txt"}))["isError"], false);
}

/// A client that numbers nothing (every request `id: 1`, the next sent once the last is
/// answered) was sometimes refused "request id 1 is in use": the id was freed after its answer
/// was queued, so a fast client could be back before it was.
#[test]
fn an_id_used_again_once_answered_is_never_in_use() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    for _ in 0..300 {
        mcp.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"file_path": "a.txt"}}}));
        let answer = mcp.response(&json!(1));
        assert!(answer.get("error").is_none(), "{answer}");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
}

#[test]
fn a_cancelled_call_aborts_and_nothing_is_sent_for_it() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    let id = mcp.send_request(
        "tools/call",
        json!({"name": "test_sleep", "arguments": {"seconds": 30, "marker": "started.txt"}}),
    );
    wait_for_file(&env.root.join("started.txt"));
    mcp.notify("notifications/cancelled", json!({"requestId": id, "reason": "user"}));
    // The server keeps answering, and never answers the cancelled request.
    mcp.ok("ping", json!({}));
    let late = mcp.wait_for(Duration::from_secs(2), |m| m.get("id") == Some(&id));
    assert!(late.is_none(), "a cancelled request was answered: {late:?}");
    drop(mcp);
    let (_, events) = only_session(&env);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .expect("the cancelled call's body was awaited and its result logged");
    assert_eq!(result["data"]["error"]["code"], "ABORTED", "{result}");
}

fn wait_for_file(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_long_call_reports_progress_to_a_client_that_asked() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    let id = mcp.send_request(
        "tools/call",
        json!({"name": "test_sleep", "arguments": {"seconds": 2.6}, "_meta": {"progressToken": "p-1"}}),
    );
    let done = mcp.response(&id);
    assert_eq!(done["result"]["isError"], false, "{done}");
    let progress = mcp
        .wait_for(Duration::from_millis(100), |m| m["method"] == "notifications/progress")
        .expect("a progress notification before the result");
    assert_eq!(progress["params"]["progressToken"], "p-1");
    assert!(progress["params"]["message"].as_str().unwrap().contains("test_sleep"), "{progress}");
}

#[test]
fn tools_registered_at_run_time_are_announced_and_listed() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    let before = mcp.tools();
    assert!(before.iter().all(|t| t["name"] != "test_extra"));
    mcp.call("test_toggle_tool", json!({"name": "test_extra"}));
    mcp.wait_for(Duration::from_secs(10), |m| m["method"] == "notifications/tools/list_changed")
        .expect("notifications/tools/list_changed");
    let after = mcp.tools();
    assert!(after.iter().any(|t| t["name"] == "test_extra"), "{after:?}");
    let echo = mcp.call("test_extra", json!({"x": 1}));
    assert_eq!(echo["structuredContent"]["echo"]["x"], 1, "{echo}");
    mcp.call("test_toggle_tool", json!({"name": "test_extra"}));
    mcp.wait_for(Duration::from_secs(10), |m| m["method"] == "notifications/tools/list_changed")
        .expect("a second notifications/tools/list_changed");
    assert!(mcp.tools().iter().all(|t| t["name"] != "test_extra"));
}

#[test]
fn the_2026_07_28_revision_works_without_initialize() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "future-agent", "version": "2"}
    });
    let discovered = mcp.ok("server/discover", json!({"_meta": meta}));
    let versions = discovered["supportedVersions"].as_array().unwrap();
    for v in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(versions.contains(&json!(v)), "{discovered}");
    }
    let tools = mcp.ok("tools/list", json!({"_meta": meta}))["tools"].clone();
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "read"));
    // A keep-alive ping carries no `_meta`, even once the session has its revision.
    assert_eq!(mcp.ok("ping", json!({})), json!({}));
    let read = mcp.ok(
        "tools/call",
        json!({"_meta": meta, "name": "read", "arguments": {"file_path": "a.txt"}}),
    );
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(read["structuredContent"]["totalLines"], 1);

    // Tool-list changes arrive over a subscription (the only kind toolhost has to offer).
    mcp.send_request(
        "subscriptions/listen",
        json!({"_meta": meta, "notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
    );
    let ack = mcp
        .wait_for(Duration::from_secs(5), |m| {
            m["method"] == "notifications/subscriptions/acknowledged"
        })
        .expect("the subscription is acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}), "{ack}");
    mcp.ok(
        "tools/call",
        json!({"_meta": meta, "name": "test_toggle_tool", "arguments": {"name": "test_new"}}),
    );
    let changed = mcp
        .wait_for(Duration::from_secs(5), |m| m["method"] == "notifications/tools/list_changed")
        .expect("tools/list_changed on the subscription");
    assert_eq!(changed["params"]["_meta"], ack["params"]["_meta"], "{changed}");
    drop(mcp);
    let (_, events) = only_session(&env);
    let call = events.iter().find(|e| e["type"] == "tool/call").unwrap();
    assert_eq!(call["data"]["caller"], "future-agent", "{call}");
}

#[test]
fn mcp_sessions_are_listed_and_replayed_with_the_caller() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("codex-mcp-client");
    mcp.call("read", json!({"file_path": "a.txt"}));
    mcp.call("edit", json!({"file_path": "a.txt", "old_string": "hello", "new_string": "bye"}));
    drop(mcp);
    let (id, _) = only_session(&env);

    let run = |args: &[&str]| {
        let mut command = std::process::Command::new(server::binary());
        command.args(args).current_dir(&env.root);
        for (k, v) in env.env() {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let listed: Value = serde_json::from_str(&run(&["sessions", "--json"])).unwrap();
    let row = listed["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id.as_str());
    assert_eq!(row.unwrap()["calls"], 2, "{listed}");
    let cards: Vec<Value> =
        run(&["replay", &id, "--json"]).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(cards.len(), 2);
    assert!(cards.iter().all(|c| c["caller"] == "codex-mcp-client"), "{cards:?}");
    assert_eq!(cards[1]["kind"], "diff");
    assert!(
        cards[1]["rendered"]
            .as_str()
            .unwrap()
            .starts_with("edit Edit a.txt · completed · codex-mcp-client")
    );
}

#[test]
fn a_running_command_s_output_is_quoted_in_its_progress() {
    let env = Env::new();
    let mut mcp = Mcp::spawn(&env, &["--standalone"]);
    mcp.initialize("some-agent");
    let command = "for i in 1 2 3 4 5; do echo step $i; sleep 0.6; done";
    let id = mcp.send_request(
        "tools/call",
        json!({"name": "bash", "arguments": {"command": command, "description": "steps"}, "_meta": {"progressToken": "p-2"}}),
    );
    let done = mcp.response(&id);
    assert_eq!(done["result"]["isError"], false, "{done}");
    let progress = mcp
        .wait_for(Duration::from_millis(100), |m| {
            m["method"] == "notifications/progress"
                && m["params"]["message"].as_str().is_some_and(|t| t.contains("— step "))
        })
        .expect("a progress message quoting the output");
    assert!(progress["params"]["message"].as_str().unwrap().starts_with("bash: running for "));
}
