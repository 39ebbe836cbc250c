//! `run_code` on the real host, over the wire: a program's nested calls are calls — each a card
//! inside the program's card (`parentCallId`, ids `<run>:code:<n>`), recorded with its own
//! `tool/call`/`tool/result` and the program's `tool/code-dispatch-start`/`tool/code-dispatch`,
//! replayed, revertible on its own, reviewed like any edit (a rejected hunk fails that call inside
//! the program with a `ToolCallError`), cancelled with the program; and `toolhost mcp` offers
//! `run_code` to agents, whose nested cards reach the editor.
#![allow(clippy::unwrap_used)]

use crate::mcp;
use crate::programs::child_cards;
use crate::server;

use serde_json::{Value, json};
use server::{Env, call_ok, children_of, reviewing_editor};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_harness::client::Client;

const PROGRAM: &str = r#"
const hits = await tools.grep({ pattern: "TODO" });
const files: string[] = [...new Set(hits.matches.map((m) => m.path))].sort();
const lines: number[] = [];
for (const file of files.slice(0, 3)) {
  const read = await tools.read({ file_path: file });
  lines.push(read.lines.length);
}
console.log(`found ${hits.matches.length} TODOs in ${files.length} files`);
await tools.edit({ file_path: files[0], old_string: "TODO: fix", new_string: "DONE: fixed" });
return { files, lines };
"#;

fn workspace() -> Env {
    let env = Env::new();
    env.write("a.txt", "one\nTODO: fix a\nthree\n");
    env.write("b.txt", "TODO: fix b\n");
    env.write("c.txt", "x\ny\nTODO: fix c\nz\n");
    env.write("d.txt", "nothing here\n");
    env
}

fn run(client: &mut Client, code: &str, description: &str) -> Value {
    client.call_tool("run_code", json!({"code": code, "description": description})).unwrap()
}

#[test]
fn a_program_that_greps_reads_three_files_and_edits_one_leaves_a_child_card_per_call() {
    let env = workspace();
    let mut client = env.start(json!({}));
    let out = run(&mut client, PROGRAM, "Fix the first TODO");
    assert_eq!(out["result"]["isError"], false, "{out}");
    let run_id = out["callId"].as_str().unwrap().to_owned();
    let value = &out["result"]["value"];
    assert_eq!(value["logs"], json!(["found 3 TODOs in 3 files"]), "{value}");
    assert_eq!(value["result"]["lines"], json!([3, 1, 4]), "{value}");
    let a = std::fs::read_to_string(env.root.join("a.txt")).unwrap();
    assert_eq!(a, "one\nDONE: fixed a\nthree\n");

    // Live: five child cards, in submission order, each with its parent and its own kind.
    let cards = child_cards(&mut client, &run_id);
    let ids: Vec<_> = cards.iter().map(|c| c["callId"].as_str().unwrap().to_owned()).collect();
    let expected: Vec<_> = (1..=5).map(|n| format!("{run_id}:code:{n}")).collect();
    assert_eq!(ids, expected, "{cards:#?}");
    let tools: Vec<_> = cards.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["grep", "read", "read", "read", "edit"]);
    assert!(cards.iter().all(|c| c["status"] == "completed"), "{cards:#?}");
    assert_eq!(cards[4]["kind"], "diff", "{}", cards[4]);
    assert!(cards[4]["hunks"].as_array().is_some_and(|h| !h.is_empty()), "{}", cards[4]);
    // The Native text: the logs, then the result as pretty JSON.
    let pretty = serde_json::to_string_pretty(&value["result"]).unwrap();
    assert_eq!(out["card"]["text"], format!("found 3 TODOs in 3 files\n{pretty}"));

    // The log: the program's view of each nested call, beside the calls' own records.
    let session = out["sessionId"].as_str().unwrap().to_owned();
    client.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let events = env.session_events(&session);
    let of = |kind: &str| -> Vec<Value> {
        events.iter().filter(|e| e["type"] == kind).map(|e| e["data"].clone()).collect()
    };
    let starts = of("tool/code-dispatch-start");
    let settled = of("tool/code-dispatch");
    assert_eq!(starts.len(), 5, "{events:#?}");
    assert_eq!(settled.len(), 5, "{events:#?}");
    for (n, (start, end)) in starts.iter().zip(&settled).enumerate() {
        let sub = format!("{run_id}:code:{}", n + 1);
        assert_eq!(start["subCallId"], sub);
        assert_eq!(start["parentCallId"], run_id.as_str());
        assert_eq!(start["rootCallId"], run_id.as_str());
        let keys: Vec<_> = end.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            ["rootCallId", "parentCallId", "subCallId", "name", "arguments", "isError", "content"]
        );
    }
    let nested_calls: Vec<_> =
        of("tool/call").into_iter().filter(|c| c["parentCallId"] == run_id.as_str()).collect();
    assert_eq!(nested_calls.len(), 5);

    // Replayed: the same child cards under the same parent.
    let replay = client.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let replayed: Vec<_> = replay["cards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["parentCallId"] == run_id.as_str())
        .map(|c| c["callId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(replayed, expected);
}

#[test]
fn reverting_a_nested_edit_from_its_child_card_undoes_only_that_edit() {
    let env = workspace();
    let mut client = env.start(json!({}));
    let program = r#"
      await tools.read({ file_path: "a.txt" });
      await tools.edit({ file_path: "a.txt", old_string: "one", new_string: "ONE" });
      await tools.read({ file_path: "b.txt" });
      await tools.edit({ file_path: "b.txt", old_string: "TODO", new_string: "DONE" });
    "#;
    let out = run(&mut client, program, "Two edits");
    assert_eq!(out["result"]["isError"], false, "{out}");
    let run_id = out["callId"].as_str().unwrap();
    let undo = format!("{run_id}:code:2");
    call_ok(&mut client, "revert", json!({"call_id": undo}));
    assert_eq!(
        std::fs::read_to_string(env.root.join("a.txt")).unwrap(),
        "one\nTODO: fix a\nthree\n"
    );
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "DONE: fix b\n");
}

/// An editor that reviews every change and rejects every hunk.
fn rejecting_editor(env: &Env) -> (Client, Arc<Mutex<Vec<Value>>>) {
    let rejection = json!({"accepted": [], "comment": "not this one"});
    let (mut client, asked) = reviewing_editor(env, Some(rejection), Duration::ZERO);
    client.request("toolhost/setReview", json!({"mode": "ask"})).unwrap();
    (client, asked)
}

#[test]
fn a_nested_edit_rejected_in_review_fails_that_call_inside_the_program() {
    let env = workspace();
    let (mut client, asked) = rejecting_editor(&env);
    let program = r#"
      await tools.read({ file_path: "a.txt" });
      try {
        await tools.edit({ file_path: "a.txt", old_string: "one", new_string: "ONE" });
        return "written";
      } catch (e) {
        return { name: e.name, tool: e.toolName, isError: e instanceof ToolCallError, code: e.code ?? null, message: e.message };
      }
    "#;
    let out = run(&mut client, program, "Edit under review");
    let value = &out["result"]["value"]["result"];
    assert_eq!(value["name"], "ToolCallError", "{out}");
    assert_eq!(value["tool"], "edit");
    assert_eq!(value["isError"], true);
    assert!(value["message"].as_str().unwrap().contains("not this one"), "{value}");
    assert_eq!(asked.lock().unwrap().len(), 1, "the person was asked about the nested edit");
    let asked = asked.lock().unwrap()[0].clone();
    let run_id = out["callId"].as_str().unwrap();
    assert_eq!(asked["callId"], format!("{run_id}:code:2"), "{asked}");
    assert_eq!(
        std::fs::read_to_string(env.root.join("a.txt")).unwrap(),
        "one\nTODO: fix a\nthree\n"
    );
}

#[test]
fn cancelling_a_program_mid_run_leaves_no_nested_call_running() {
    let env = workspace();
    let mut client = env.start(json!({}));
    let program = r#"
      while (true) {
        await tools.bash({ command: "sleep 60", description: "wait" });
      }
    "#;
    let id = json!("forever-run");
    let params = json!({"name": "run_code", "callId": "forever",
        "arguments": {"code": program, "description": "Forever"}});
    client.write_raw(&server::raw_request(id.clone(), "toolhost/callTool", params)).unwrap();
    // Wait until the nested bash runs (its pending card is out and its sleep exists).
    let started = client.wait_for(Duration::from_secs(20), |n| {
        n["method"] == "toolhost/card" && n["params"]["callId"] == "forever:code:1"
    });
    assert!(started.is_some(), "the nested bash never started");
    let pid = client.pid();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !descendants(pid).iter().any(|p| command_of(*p).contains("sleep")) {
        assert!(Instant::now() < deadline, "no sleep process");
        std::thread::sleep(Duration::from_millis(20));
    }
    client.request("toolhost/cancelCall", json!({"callId": "forever"})).unwrap();
    let done = server::wait_response(&mut client, &id, Duration::from_secs(20)).unwrap();
    let result = &done["result"]["result"];
    assert_eq!(result["isError"], true, "{done}");
    let message = result["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("abort") || message.contains("cancel"), "{done}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while descendants(pid).iter().any(|p| command_of(*p).contains("sleep")) {
        assert!(Instant::now() < deadline, "a nested sleep outlived its program");
        std::thread::sleep(Duration::from_millis(20));
    }
    let nested = child_cards(&mut client, "forever");
    assert!(nested.iter().all(|c| c["status"] != "pending"), "{nested:#?}");
    assert!(nested.iter().all(|c| c["callId"] != "forever:code:2"), "no call after the cancel");
}

fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        for child in children_of(p) {
            out.push(child);
            queue.push(child);
        }
    }
    out
}

fn command_of(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

#[test]
fn toolhost_mcp_runs_a_program_whose_nested_cards_reach_the_editor() {
    let env = workspace();
    let mut editor = env.start(json!({}));
    let mut agent = mcp::Mcp::spawn(&env, &[]);
    agent.initialize("claude-code");
    let names: Vec<_> =
        agent.tools().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert!(names.iter().any(|n| n == "run_code"), "{names:?}");
    let description = agent
        .tools()
        .into_iter()
        .find(|t| t["name"] == "run_code")
        .and_then(|t| t["description"].as_str().map(str::to_owned))
        .unwrap();
    assert!(description.contains("declare const tools"), "{description}");
    let result = agent.call(
        "run_code",
        json!({"code": "const r = await tools.grep({pattern: 'TODO'}); return r.matches.length;", "description": "Count TODOs"}),
    );
    assert_eq!(mcp::text_of(&result), "3", "{result}");
    let nested = editor.wait_for(Duration::from_secs(20), |n| {
        n["method"] == "toolhost/card"
            && n["params"]["tool"] == "grep"
            && n["params"]["parentCallId"].is_string()
            && n["params"]["status"] == "completed"
    });
    let nested = nested.expect("the nested grep's card reached the editor");
    assert_eq!(nested["params"]["caller"], "claude-code", "{nested}");
}

#[test]
fn in_code_mode_toolhost_mcp_offers_only_run_code_and_a_direct_read_is_an_unknown_tool() {
    let env = workspace();
    env.write_user_config("[code]\nmode = \"code\"\n");
    for args in [&["--standalone"][..], &[][..]] {
        // Standalone (its own host) and attached to an editor's host.
        let _editor = args.is_empty().then(|| env.start(json!({})));
        let mut agent = mcp::Mcp::spawn(&env, args);
        agent.initialize("codex-mcp-client");
        let names: Vec<_> =
            agent.tools().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
        assert_eq!(names, ["run_code"], "{args:?}");
        // Hidden from the model, the tool is no tool at all: MCP's unknown-tool error.
        let direct = agent
            .request("tools/call", json!({"name": "read", "arguments": {"file_path": "a.txt"}}));
        assert_eq!(direct["error"]["code"], -32602, "{direct}");
        assert_eq!(direct["error"]["message"], "unknown tool \"read\"", "{direct}");
        let program = agent.call(
            "run_code",
            json!({"code": "return (await tools.read({file_path: 'a.txt'})).lines.length;", "description": "Count lines"}),
        );
        assert_eq!(mcp::text_of(&program), "3", "{args:?}: {program}");
    }
}

#[test]
fn a_thousand_nested_calls_in_one_program_are_each_a_recorded_call() {
    let env = workspace();
    let mut client = env.start(json!({}));
    let program = r#"
      let lines = 0;
      for (let i = 0; i < 1000; i++) {
        lines += (await tools.read({ file_path: "b.txt" })).lines.length;
      }
      return lines;
    "#;
    let out = run(&mut client, program, "A thousand reads");
    assert_eq!(out["result"]["isError"], false, "{out}");
    assert_eq!(out["result"]["value"]["result"], 1000);
    let run_id = out["callId"].as_str().unwrap().to_owned();
    let session = out["sessionId"].as_str().unwrap().to_owned();
    client.request("toolhost/replaySession", json!({"sessionId": session})).unwrap();
    let events = env.session_events(&session);
    let settled = events
        .iter()
        .filter(|e| {
            e["type"] == "tool/code-dispatch" && e["data"]["parentCallId"] == run_id.as_str()
        })
        .count();
    assert_eq!(settled, 1000);
    let last = format!("{run_id}:code:1000");
    assert!(events.iter().any(|e| e["type"] == "tool/result" && e["data"]["callId"] == last));
}

#[test]
fn a_program_in_the_background_is_a_job_whose_output_job_output_reads() {
    let env = workspace();
    let mut client = env.start(json!({}));
    let program = r#"
      const found = await tools.grep({ pattern: "TODO" });
      console.log(`found ${found.matches.length}`);
      return found.matches.length;
    "#;
    let out = client
        .call_tool(
            "run_code",
            json!({"code": program, "description": "Count in the background", "run_in_background": true}),
        )
        .unwrap();
    assert_eq!(out["result"]["isError"], false, "{out}");
    let job = out["result"]["value"]["result"]["jobId"].as_str().unwrap().to_owned();
    assert!(job.starts_with("code-"), "{job}");
    let read = call_ok(&mut client, "job_output", json!({"job_id": job, "wait": true}));
    let text = read["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("found 3"), "{text}");
    // Its nested call ran under the program's call, after that call had answered.
    let run_id = out["callId"].as_str().unwrap();
    assert!(!child_cards(&mut client, run_id).is_empty(), "the nested grep's card");
}

#[test]
fn a_background_programs_nested_calls_are_still_made_by_its_caller() {
    let env = workspace();
    let mut editor = env.start(json!({}));
    let mut agent = mcp::Mcp::spawn(&env, &[]);
    agent.initialize("claude-code");
    let started = agent.call(
        "run_code",
        json!({"code": "return (await tools.grep({pattern: 'TODO'})).matches.length;",
               "description": "Count later", "run_in_background": true}),
    );
    assert_eq!(started["isError"], false, "{started}");
    // The nested grep runs after the program's call answered: its card still names the agent.
    let nested = editor.wait_for(Duration::from_secs(20), |n| {
        n["method"] == "toolhost/card"
            && n["params"]["tool"] == "grep"
            && n["params"]["status"] == "completed"
    });
    let nested = nested.expect("the background program's grep");
    assert_eq!(nested["params"]["caller"], "claude-code", "{nested}");
    assert!(nested["params"]["parentCallId"].is_string(), "{nested}");
}
