//! Tools an agent defines for its session (`tool_define`, `tool_undefine`) on the real host, over
//! the wire: a definition is checked (name, schemas, code), approved by the person on its first
//! call (asked once), called like any tool (its generic card, its `tools.*` calls as cards
//! inside it), replayed from the log, registered again with its approval in a resumed session,
//! and removed; a definition the person rejects never runs; `toolhost mcp` lists a new session
//! tool to its client after `notifications/tools/list_changed`; a session tool belongs to the
//! agent that defined it (two MCP agents on one editor: the other neither lists, calls nor
//! removes it; a resumed session gives it back to its definer only); the own agent in `auto`
//! mode has its definition approved by the mode (logged `by: mode`), in `ask` mode it is left to
//! the person.
#![allow(clippy::unwrap_used)]

use crate::mcp;
use crate::programs::{child_cards, cli_call};
use crate::server;

use serde_json::{Value, json};
use server::{Env, asking_editor, call_err, call_ok};
use std::time::Duration;

fn count_lines() -> Value {
    json!({
        "name": "count_lines",
        "description": "Counts the lines of a file.",
        "input_schema": {
            "type": "object",
            "properties": {"file": {"type": "string"}},
            "required": ["file"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"file": {"type": "string"}, "lines": {"type": "integer"}},
            "required": ["file", "lines"],
        },
        "code": "const r = await tools.read({ file_path: input.file });\n\
                 const lines: number = r.lines.length;\n\
                 return { file: input.file, lines };",
    })
}

fn answer(choice: &str) -> Value {
    json!({"answers": [{"id": "permission", "selected": [choice]}]})
}

#[test]
fn a_session_tool_is_defined_approved_called_replayed_resumed_and_undefined() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    let (mut editor, asked) = asking_editor(&env, json!({}), Some(answer("Allow")));

    let defined = call_ok(&mut editor, "tool_define", count_lines());
    assert_eq!(defined["result"]["value"], json!({"name": "count_lines", "status": "defined"}));
    assert!(asked.lock().unwrap().is_empty(), "defining asks nothing");

    // The first call asks the person, then runs; its card is generic, its read a child card.
    let first = call_ok(&mut editor, "count_lines", json!({"file": "a.txt"}));
    assert_eq!(first["result"]["value"], json!({"file": "a.txt", "lines": 3}), "{first}");
    let call_id = first["callId"].as_str().unwrap().to_owned();
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0]["callId"], call_id.as_str(), "{}", asked[0]);
        assert!(asked[0].to_string().contains("tools.read"), "the question shows the code");
    }
    assert_eq!(first["card"]["kind"], "generic", "{}", first["card"]);
    assert_eq!(first["card"]["status"], "completed", "{}", first["card"]);
    let nested = child_cards(&mut editor, &call_id);
    assert_eq!(nested.len(), 1, "{nested:#?}");
    assert_eq!(nested[0]["tool"], "read");
    assert_eq!(nested[0]["callId"], format!("{call_id}:code:1"));
    assert_eq!(nested[0]["status"], "completed");

    // Approved once for the session.
    let second = call_ok(&mut editor, "count_lines", json!({"file": "a.txt"}));
    assert_eq!(second["result"]["value"]["lines"], 3);
    assert_eq!(asked.lock().unwrap().len(), 1, "asked only before the first use");
    // Its declared schemas hold: arguments are validated.
    call_err(&mut editor, "count_lines", json!({"path": "a.txt"}), "INVALID_ARGS");

    // Replay: the definition's card, the tool's card and its child card, from the log.
    let session = first["sessionId"].as_str().unwrap().to_owned();
    let replay = editor.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let cards = replay["cards"].as_array().unwrap();
    let card_of = |id: &str| cards.iter().find(|c| c["callId"] == id).cloned();
    let define_card = card_of(defined["callId"].as_str().unwrap()).expect("tool_define's card");
    assert_eq!(define_card["title"], "Define tool: count_lines", "{define_card}");
    let replayed = card_of(&call_id).expect("the session tool's card");
    assert_eq!(replayed["kind"], "generic");
    assert_eq!(replayed["status"], "completed");
    assert!(card_of(&format!("{call_id}:code:1")).is_some(), "the nested read's card");
    let events = env.session_events(&session);
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| k.starts_with("agent/tool-"))
        .collect();
    assert_eq!(kinds, ["agent/tool-define", "agent/tool-approval"], "{events:#?}");
    let status = editor.shutdown().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0));

    // A resumed session has the tool again, approved: it runs without asking anyone.
    let (ok, resumed) = cli_call(&env, &session, "count_lines", json!({"file": "a.txt"}));
    assert!(ok, "{resumed}");
    assert_eq!(resumed["result"]["value"]["lines"], 3, "{resumed}");

    // Undefined, it is an unknown tool, in this process and in the next.
    let (ok, removed) = cli_call(&env, &session, "tool_undefine", json!({"name": "count_lines"}));
    assert!(ok, "{removed}");
    assert_eq!(removed["result"]["value"]["status"], "undefined", "{removed}");
    let (ok, gone) = cli_call(&env, &session, "count_lines", json!({"file": "a.txt"}));
    assert!(!ok, "{gone}");
    assert_eq!(gone["result"]["error"]["info"]["code"], "UNKNOWN_TOOL", "{gone}");
    let (ok, again) = cli_call(&env, &session, "tool_undefine", json!({"name": "count_lines"}));
    assert!(!ok);
    assert_eq!(again["result"]["error"]["info"]["code"], "NOT_DEFINED", "{again}");
}

#[test]
fn a_definition_the_person_rejects_never_runs() {
    let env = Env::new();
    let (mut editor, asked) = asking_editor(&env, json!({}), Some(answer("Deny")));
    let note = json!({
        "name": "write_note",
        "description": "Writes a note.",
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object"},
        "code": "await tools.write({ file_path: 'note.txt', content: 'x' }); return { ok: true };",
    });
    call_ok(&mut editor, "tool_define", note);
    let refused = call_err(&mut editor, "write_note", json!({}), "DEFINITION_REJECTED");
    let call_id = refused["callId"].as_str().unwrap().to_owned();
    assert_eq!(asked.lock().unwrap().len(), 1);
    // Rejected for the session: not asked again, never run.
    call_err(&mut editor, "write_note", json!({}), "DEFINITION_REJECTED");
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(!env.root.join("note.txt").exists(), "the body never ran");
    assert!(child_cards(&mut editor, &call_id).is_empty(), "no nested call");
    let session = refused["sessionId"].as_str().unwrap().to_owned();
    editor.shutdown().unwrap();
    let events = env.session_events(&session);
    let approval = events.iter().find(|e| e["type"] == "agent/tool-approval").unwrap();
    assert_eq!(approval["data"]["approved"], false, "{approval}");
    // Still rejected in a resumed session.
    let (ok, resumed) = cli_call(&env, &session, "write_note", json!({}));
    assert!(!ok);
    assert_eq!(resumed["result"]["error"]["info"]["code"], "DEFINITION_REJECTED", "{resumed}");
    assert!(!env.root.join("note.txt").exists());
}

#[test]
fn a_definition_is_checked_before_it_is_registered() {
    let env = Env::new();
    let mut editor = env.start(json!({}));
    let with = |key: &str, value: Value| {
        let mut args = count_lines();
        args[key] = value;
        args
    };
    for (args, code) in [
        (with("name", json!("Count")), "INVALID_NAME"),
        (with("name", json!("read")), "INVALID_NAME"),
        (with("name", json!("tool_define")), "INVALID_NAME"),
        (with("output_schema", json!({"type": 5})), "INVALID_DEFINITION"),
        (with("code", json!("return {")), "INVALID_DEFINITION"),
    ] {
        call_err(&mut editor, "tool_define", args, code);
    }
    call_err(&mut editor, "count_lines", json!({"file": "a.txt"}), "UNKNOWN_TOOL");
    editor.shutdown().unwrap();
}

#[test]
fn toolhost_mcp_lists_a_session_tool_after_tools_list_changed() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let mut agent = mcp::Mcp::spawn(&env, &["--standalone"]);
    agent.initialize("claude-code");
    let defined = agent.call("tool_define", count_lines());
    assert_eq!(defined["isError"], false, "{defined}");
    agent
        .wait_for(Duration::from_secs(10), |m| m["method"] == "notifications/tools/list_changed")
        .expect("tools/list_changed after the definition");
    let tool = agent.tools().into_iter().find(|t| t["name"] == "count_lines").expect("listed");
    assert_eq!(tool["description"], "Counts the lines of a file.");
    assert_eq!(tool["inputSchema"]["required"], json!(["file"]), "{tool}");
    // Nobody here can approve it (no editor, no elicitation): it does not run.
    let refused = agent.call("count_lines", json!({"file": "a.txt"}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(mcp::error_code_of(&refused).as_deref(), Some("DEFINITION_NOT_APPROVED"));
    agent.call("tool_undefine", json!({"name": "count_lines"}));
    assert!(agent.tools().iter().all(|t| t["name"] != "count_lines"));
}

#[test]
fn a_session_tool_belongs_to_the_agent_that_defined_it() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    let (mut editor, asked) = asking_editor(&env, json!({}), Some(answer("Allow")));
    let mut definer = mcp::Mcp::spawn(&env, &[]);
    definer.initialize("claude-code");
    let mut other = mcp::Mcp::spawn(&env, &[]);
    other.initialize("codex");
    assert!(other.tools().iter().any(|t| t["name"] == "read"), "attached to the editor");

    let defined = definer.call("tool_define", count_lines());
    assert_eq!(defined["isError"], false, "{defined}");
    definer
        .wait_for(Duration::from_secs(10), |m| m["method"] == "notifications/tools/list_changed")
        .expect("tools/list_changed to the definer");
    assert!(definer.tools().iter().any(|t| t["name"] == "count_lines"), "listed to its definer");
    assert!(other.tools().iter().all(|t| t["name"] != "count_lines"), "not to another agent");

    // To the other agent it is not a tool: unknown to its tools/call, not defined to remove.
    let refused =
        other.request("tools/call", json!({"name": "count_lines", "arguments": {"file": "a.txt"}}));
    assert!(refused["error"]["message"].as_str().unwrap().contains("unknown tool"), "{refused}");
    let removed = other.call("tool_undefine", json!({"name": "count_lines"}));
    assert_eq!(mcp::error_code_of(&removed).as_deref(), Some("NOT_DEFINED"), "{removed}");
    assert!(asked.lock().unwrap().is_empty(), "nothing ran, nobody was asked");

    // Its definer calls it (the person approves it once in the editor).
    let counted = definer.call("count_lines", json!({"file": "a.txt"}));
    assert_eq!(counted["isError"], false, "{counted}");
    assert_eq!(counted["_meta"]["toolhost/value"]["lines"], 2, "{counted}");
    assert_eq!(asked.lock().unwrap().len(), 1);
    // The person in the editor reaches every session tool.
    let by_person = call_ok(&mut editor, "count_lines", json!({"file": "a.txt"}));
    assert_eq!(by_person["result"]["value"]["lines"], 2);
    let session = by_person["sessionId"].as_str().unwrap().to_owned();
    let events = env.session_events(&session);
    let define = events.iter().find(|e| e["type"] == "agent/tool-define").unwrap();
    assert_eq!(define["data"]["owner"], "claude-code", "the log keeps the definer: {define}");
    drop((definer, other));
    editor.shutdown().unwrap();

    // A resumed session gives it back to its definer only.
    let mut other = mcp::Mcp::spawn(&env, &["--standalone", "--session", &session]);
    other.initialize("codex");
    assert!(other.tools().iter().all(|t| t["name"] != "count_lines"));
    drop(other);
    let mut definer = mcp::Mcp::spawn(&env, &["--standalone", "--session", &session]);
    definer.initialize("claude-code");
    assert!(definer.tools().iter().any(|t| t["name"] == "count_lines"));
    let again = definer.call("count_lines", json!({"file": "a.txt"}));
    assert_eq!(again["isError"], false, "approved in the log, it runs: {again}");
}

/// `toolhost agent define --mode <mode>` against a model that defines `count_lines`, calls it on
/// `a.txt` and ends: the text the model read back from that call, and the session's events.
async fn own_agent_defines_and_calls(env: &Env, mode: &str) -> (String, Vec<Value>) {
    use crate::sse::{Answer, first_prompt, last_tool_result, server as model_server};
    let model = model_server(|_, body| {
        let answered =
            body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        let calling =
            |name: &str, args: Value| Answer::calling(&[(name, &args.to_string())], None, 100);
        match answered {
            0 => calling("tool_define", count_lines()),
            1 => calling("count_lines", json!({"file": "a.txt"})),
            _ => Answer::answering(&["done"], 100, 5),
        }
    })
    .await;
    let out = tokio::process::Command::new(server::binary())
        .args(["agent", "define", "--json", "--base-url", &model.base, "--api-key-env", ""])
        .args(["--mode", mode])
        .current_dir(&env.root)
        .envs(env.env())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = model.bodies.lock().unwrap().clone();
    assert!(bodies.iter().all(|b| first_prompt(b) == "define"), "one run, no child");
    let text = last_tool_result(&bodies[2]);
    let logs = env.session_logs();
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    (text, log.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_own_agent_in_auto_mode_approves_its_definition_by_its_mode() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    let (text, events) = own_agent_defines_and_calls(&env, "auto").await;
    assert!(text.contains("\"lines\": 3"), "it ran without asking anyone: {text}");
    let approvals: Vec<&Value> =
        events.iter().filter(|e| e["type"] == "agent/tool-approval").collect();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0]["data"]["approved"], true);
    assert_eq!(approvals[0]["data"]["by"], "mode", "the log says the mode approved it");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_own_agent_in_ask_mode_leaves_its_definition_to_the_person() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    // Nobody is at the terminal: the person cannot be asked, so the body never runs.
    let (text, events) = own_agent_defines_and_calls(&env, "ask").await;
    assert!(text.contains("needs approval"), "{text}");
    assert!(events.iter().all(|e| e["type"] != "agent/tool-approval"), "undecided, not approved");
}
