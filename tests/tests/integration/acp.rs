//! `toolhost acp` driven by the official Python ACP client (agent-client-protocol 0.12.1,
//! tests/mcp-clients/python_acp.py) against a scripted chat completions server on 127.0.0.1.
//!
//! One task in `ask` mode with the client's files: the read sees the editor's unsaved buffer,
//! the edit asks for permission showing its diff, the write goes to the editor (the disk is never
//! touched), the calls stream as tool calls and the answer as message chunks; a second process
//! loads the session (the log replayed as updates) and continues the chat. Then the modes: an
//! edit denied, `auto` running a todo list (the plan), a command (its output) and a write unasked, a prompt cancelled mid-stream, plan mode refusing
//! an edit until the plan is approved and announcing `accept-edits`. Last the agent's questions:
//! one form for a client that offers forms, permission requests (single choices only) for one
//! that does not.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::sse;

use serde_json::Value;
use server::Env;
use sse::{Answer, last_tool_result, server as model_server};
use std::time::Duration;

/// Runs the Python client's `scenario`; the model server keeps answering on the other workers.
fn client(env: &Env, scenario: &str) -> Value {
    let config = env.config.to_string_lossy().into_owned();
    tokio::task::block_in_place(|| {
        server::run_python_client_with("python_acp.py", env, &[&config, scenario])
    })
}

fn of_kind<'a>(updates: &'a Value, kind: &str) -> Vec<&'a Value> {
    updates.as_array().unwrap().iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

fn text_of(updates: &Value, kind: &str) -> String {
    of_kind(updates, kind).iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

/// The tool calls announced, by title, with the status of their last update.
fn calls(updates: &Value) -> Vec<(String, String, String)> {
    let mut calls: Vec<(String, String, String, String)> = Vec::new();
    for u in updates.as_array().unwrap() {
        let id = u["toolCallId"].as_str().unwrap_or_default().to_owned();
        match u["sessionUpdate"].as_str() {
            Some("tool_call") => calls.push((
                id,
                u["title"].as_str().unwrap().to_owned(),
                u["kind"].as_str().unwrap_or("other").to_owned(),
                u["status"].as_str().unwrap_or("pending").to_owned(),
            )),
            Some("tool_call_update") => {
                if let Some(call) = calls.iter_mut().find(|c| c.0 == id)
                    && let Some(status) = u["status"].as_str()
                {
                    call.3 = status.to_owned();
                }
            }
            _ => {}
        }
    }
    calls.into_iter().map(|(_, title, kind, status)| (title, kind, status)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_acp_client_runs_a_task_with_a_permission_request_and_a_diff_then_loads_it() {
    let env = Env::new();
    env.write("a.txt", "hello from disk\n");
    let model = model_server(|n, _body| match n {
        0 => Answer::calling(&[("read", r#"{"file_path":"a.txt"}"#)], Some("let me look"), 100),
        1 => Answer::calling(
            &[("edit", r#"{"file_path":"a.txt","old_string":"buffer","new_string":"client"}"#)],
            Some("now the edit"),
            150,
        ),
        2 => Answer::answering(&["Done", "."], 200, 5),
        _ => Answer::answering(&["I changed buffer to client."], 300, 8),
    })
    .await;
    env.write_agent_config(&model.base, "ask");
    let out = client(&env, "task");
    let root = env.root.to_string_lossy().into_owned();
    let a_txt = format!("{root}/a.txt");

    assert_eq!(out["initialize"]["agentCapabilities"]["loadSession"], true, "{out}");
    assert_eq!(out["initialize"]["agentInfo"]["name"], "toolhost");
    assert_eq!(out["new"]["modes"]["currentModeId"], "ask");
    let modes: Vec<&str> = out["new"]["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["ask", "accept-edits", "plan", "auto"]);
    assert_eq!(out["stop"], "end_turn");

    // One permission request, for the edit, carrying its diff.
    let permissions = out["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{permissions:#?}");
    let options: Vec<(&str, &str)> = permissions[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o[0].as_str().unwrap(), o[1].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        [("allow", "allow_once"), ("allow-always", "allow_always"), ("deny", "reject_once")]
    );
    let asked = &permissions[0]["toolCall"];
    let diff = &asked["content"][0];
    assert_eq!(diff["type"], "diff", "{asked}");
    assert_eq!(diff["path"], a_txt);
    assert_eq!(diff["oldText"], "buffer");
    assert_eq!(diff["newText"], "client");

    // The read saw the buffer, the write went to the editor, the disk is untouched.
    assert!(out["reads"].as_array().unwrap().iter().any(|p| p == &Value::String(a_txt.clone())));
    let writes = out["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0]["path"], a_txt);
    assert_eq!(writes[0]["content"], "hello from the client\n");
    assert_eq!(out["disk"], "hello from disk\n");

    // What streamed: reasoning, the two calls (pending → completed), the edit's final diff,
    // usage with the context window and the cost, the answer.
    let live = &out["live"];
    assert_eq!(text_of(live, "agent_thought_chunk"), "let me looknow the edit");
    assert_eq!(text_of(live, "agent_message_chunk"), "Done.");
    let seen = calls(live);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!((seen[0].1.as_str(), seen[0].2.as_str()), ("read", "completed"));
    assert_eq!((seen[1].1.as_str(), seen[1].2.as_str()), ("edit", "completed"));
    let edit_done = of_kind(live, "tool_call_update")
        .into_iter()
        .rfind(|u| u["status"] == "completed" && u["content"][0]["type"] == "diff")
        .expect("the edit's final diff");
    assert_eq!(edit_done["content"][0]["path"], a_txt);
    assert_eq!(edit_done["content"][0]["oldText"], "hello from the buffer");
    assert_eq!(edit_done["content"][0]["newText"], "hello from the client");
    assert!(
        of_kind(live, "tool_call_update").iter().any(|u| u["status"] == "in_progress"),
        "the allowed edit is shown running"
    );
    let usage = of_kind(live, "usage_update");
    let replayed_usage: Vec<&Value> =
        of_kind(&out["replay"], "usage_update").iter().map(|u| &u["used"]).collect();
    assert_eq!(replayed_usage, usage.iter().map(|u| &u["used"]).collect::<Vec<_>>());
    assert_eq!(usage.len(), 3, "one per model request");
    assert_eq!(usage[0]["size"], 128_000);
    assert_eq!(usage[0]["used"], 110);
    assert_eq!(usage[2]["cost"]["currency"], "USD");

    // The second process replays the session and continues the chat.
    assert_eq!(out["loaded"]["modes"]["currentModeId"], "ask");
    let replay = &out["replay"];
    assert_eq!(text_of(replay, "user_message_chunk"), "change buffer to client in a.txt");
    assert_eq!(text_of(replay, "agent_message_chunk"), "Done.");
    let replayed = calls(replay);
    assert_eq!(
        replayed.iter().map(|c| (c.1.as_str(), c.2.as_str())).collect::<Vec<_>>(),
        [("read", "completed"), ("edit", "completed")]
    );
    let replayed_edit =
        of_kind(replay, "tool_call").into_iter().find(|u| u["kind"] == "edit").unwrap();
    assert_eq!(replayed_edit["content"][0]["newText"], "hello from the client");
    assert_eq!(out["secondStop"], "end_turn");
    assert_eq!(text_of(&out["second"], "agent_message_chunk"), "I changed buffer to client.");
    let bodies = model.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 4);
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"mcp__py_tools__weather"),
        "the client's MCP server's tools are offered from the first prompt: {offered:?}"
    );
    let continued = bodies[3]["messages"].to_string();
    assert!(
        continued.contains("change buffer to client in a.txt") && continued.contains("Done."),
        "the loaded chat continues the conversation: {continued}"
    );
    assert!(out["unknownLoad"].as_str().unwrap().contains("no-such-session"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn acp_modes_deny_auto_cancel_and_plan() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let model = model_server(|n, _body| match n {
        // ask: the write is denied.
        0 => Answer::calling(
            &[("write", r#"{"file_path":"denied.txt","content":"no\n"}"#)],
            None,
            50,
        ),
        1 => Answer::answering(&["Understood."], 60, 2),
        // auto: the write runs unasked.
        2 => Answer::calling(
            &[
                ("todo_write", r#"{"todos":[{"content":"write b.txt","status":"in_progress"},{"content":"say so","status":"pending"}]}"#),
                ("bash", r#"{"command":"echo hi from bash","description":"say hi"}"#),
                ("write", r#"{"file_path":"b.txt","content":"b\n"}"#),
            ],
            None,
            70,
        ),
        3 => Answer::answering(&["Wrote b.txt."], 80, 3),
        // cancelled while streaming.
        4 => {
            let mut slow = Answer::answering(&["Thinking", " at length"], 90, 4);
            slow.pieces[1].0 = Duration::from_secs(30);
            slow
        }
        // plan: the write is refused, the plan approved, then the write runs.
        5 => {
            Answer::calling(&[("write", r#"{"file_path":"plan.txt","content":"p\n"}"#)], None, 100)
        }
        6 => Answer::calling(
            &[("exit_plan_mode", r##"{"plan":"# Plan\n\nWrite plan.txt."}"##)],
            None,
            110,
        ),
        7 => {
            Answer::calling(&[("write", r#"{"file_path":"plan.txt","content":"p\n"}"#)], None, 120)
        }
        _ => Answer::answering(&["Planned and done."], 130, 5),
    })
    .await;
    env.write_agent_config(&model.base, "ask");
    let out = client(&env, "modes");

    assert_eq!(out["denyStop"], "end_turn", "{out}");
    assert_eq!(out["denyPermissions"].as_array().unwrap().len(), 1);
    assert_eq!(calls(&out["deny"])[0].2, "failed");
    assert!(!env.root.join("denied.txt").exists(), "a denied write writes nothing");

    assert_eq!(out["autoStop"], "end_turn");
    assert!(out["autoPermissions"].as_array().unwrap().is_empty(), "auto asks nothing: {out}");
    let auto_calls = calls(&out["auto"]);
    let kinds: Vec<(&str, &str)> =
        auto_calls.iter().map(|c| (c.1.as_str(), c.2.as_str())).collect();
    assert_eq!(
        kinds,
        [("execute", "completed"), ("edit", "completed")],
        "the todo list is no call"
    );
    let plan = &of_kind(&out["auto"], "plan")[0]["entries"];
    assert_eq!(plan[0]["content"], "write b.txt");
    assert_eq!(plan[0]["status"], "in_progress");
    assert_eq!(plan[1]["status"], "pending");
    let command = of_kind(&out["auto"], "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "completed" && u["content"][0]["content"]["text"].is_string())
        .expect("the command's output");
    assert_eq!(
        command["content"][0]["content"]["text"],
        "```console\n$ echo hi from bash\nhi from bash\n```\nexit code 0"
    );
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "b\n");

    assert_eq!(out["cancelStop"], "cancelled");
    assert_eq!(text_of(&out["cancel"], "agent_message_chunk"), "Thinking");

    assert_eq!(out["planStop"], "end_turn");
    let plan_calls = calls(&out["plan"]);
    let statuses: Vec<(&str, &str)> =
        plan_calls.iter().map(|c| (c.1.as_str(), c.2.as_str())).collect();
    assert_eq!(
        statuses,
        [("edit", "failed"), ("switch_mode", "completed"), ("edit", "completed")],
        "{plan_calls:?}"
    );
    let review = &out["planPermissions"].as_array().unwrap()[0];
    assert_eq!(review["options"][0][0], "approve");
    assert!(
        review["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Write plan.txt.")
    );
    let announced: Vec<&Value> = of_kind(&out["plan"], "current_mode_update");
    assert_eq!(announced.len(), 1);
    assert_eq!(announced[0]["currentModeId"], "accept-edits");
    assert_eq!(std::fs::read_to_string(env.root.join("plan.txt")).unwrap(), "p\n");
    assert!(out["badMode"].as_str().unwrap().contains("yolo"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn acp_questions_are_one_form_when_the_client_offers_forms_else_choices() {
    let env = Env::new();
    let asking = |questions: &str| {
        Answer::calling(
            &[("ask_user_question", &format!(r#"{{"questions":{questions}}}"#))],
            None,
            40,
        )
    };
    let model = model_server(move |n, _body| match n {
        // A client with forms: a choice, several choices, free text — one form.
        0 => asking(
            r#"[{"id":"db","header":"Database","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite","description":"one file"}]},
                {"id":"targets","question":"Which targets?","options":[{"label":"linux"},{"label":"mac"},{"label":"windows"}],"multi_select":true},
                {"id":"name","question":"What is the project called?"}]"#,
        ),
        1 => Answer::answering(&["Noted."], 50, 2),
        // The person declines the form.
        2 => asking(r#"[{"id":"why","question":"Why?"}]"#),
        3 => Answer::answering(&["OK."], 60, 2),
        // A client without forms: a choice is a permission request, free text cannot be asked.
        4 => asking(
            r#"[{"id":"db","question":"Which database?","options":[{"label":"Postgres"},{"label":"SQLite"}]}]"#,
        ),
        5 => asking(r#"[{"id":"name","question":"What is the project called?"}]"#),
        _ => Answer::answering(&["Done."], 70, 2),
    })
    .await;
    env.write_agent_config(&model.base, "ask");
    let out = client(&env, "questions");

    assert_eq!(out["formStop"], "end_turn", "{out}");
    assert_eq!(out["declineStop"], "end_turn");
    assert!(
        out["formPermissions"].as_array().unwrap().is_empty(),
        "questions are no permission requests: {out}"
    );
    let forms = out["forms"].as_array().unwrap();
    assert_eq!(forms.len(), 2, "{forms:#?}");
    assert_eq!(forms[0]["message"], "The agent asks 3 questions.");
    let mode = &forms[0]["mode"];
    let first_call = &of_kind(&out["formUpdates"], "tool_call")[0]["toolCallId"];
    assert_eq!(&mode["toolCallId"], first_call, "the form belongs to the asking call: {mode}");
    let props = &mode["requestedSchema"]["properties"];
    assert_eq!(props["db"]["title"], "Database");
    assert_eq!(props["db"]["oneOf"][1]["const"], "SQLite");
    assert_eq!(props["db"]["oneOf"][1]["title"], "SQLite — one file");
    assert_eq!(props["targets"]["type"], "array");
    assert_eq!(props["targets"]["items"]["anyOf"][2]["const"], "windows");
    assert_eq!(props["name"]["type"], "string");
    assert!(props["db__other"].is_object() && props["name__other"].is_null(), "{props}");
    assert_eq!(forms[1]["message"], "Why?");

    let bodies = model.bodies.lock().unwrap();
    let answered: Value = serde_json::from_str(&last_tool_result(&bodies[1])).unwrap();
    assert_eq!(
        answered,
        serde_json::json!({"answers": [
            {"id": "db", "selected": ["SQLite"]},
            {"id": "targets", "selected": ["linux", "mac"], "custom": "bsd"},
            {"id": "name", "selected": [], "custom": "toolhost"},
        ]})
    );
    assert!(
        last_tool_result(&bodies[3]).contains("the user cancelled ask_user_question"),
        "{}",
        last_tool_result(&bodies[3])
    );
    let asked = calls(&out["formUpdates"]);
    assert_eq!(
        asked.iter().map(|c| c.2.as_str()).collect::<Vec<_>>(),
        ["completed", "failed"],
        "{asked:?}"
    );

    // Without forms: the choice as a permission request, the free-text question refused.
    assert_eq!(out["choiceStop"], "end_turn");
    assert!(out["choiceForms"].as_array().unwrap().is_empty());
    let permissions = out["choicePermissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{permissions:#?}");
    assert_eq!(permissions[0]["options"][0][0], "0");
    let chosen: Value = serde_json::from_str(&last_tool_result(&bodies[5])).unwrap();
    assert_eq!(chosen["answers"][0]["selected"][0], "Postgres");
    let refused = last_tool_result(&bodies[6]);
    assert!(refused.contains("offers no forms") && refused.contains("a typed answer"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_code_program_streams_its_nested_calls_as_tool_calls_and_its_edit_asks() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let program = serde_json::json!({
        "code": "await tools.read({file_path: 'a.txt'});\nawait tools.edit({file_path: 'a.txt', old_string: 'hello', new_string: 'bye'});\nreturn 'ok';",
        "description": "Say bye",
    })
    .to_string();
    let model = model_server(move |n, _| match n {
        0 => Answer::calling(&[("run_code", &program)], None, 100),
        _ => Answer::answering(&["Done."], 200, 5),
    })
    .await;
    env.write_agent_config(&model.base, "ask");
    let config = env.config.join("toolhost").join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[code]\nmode = \"both\"\n");
    std::fs::write(&config, text).unwrap();
    let out = client(&env, "program");
    assert_eq!(out["stop"], "end_turn", "{out}");
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "bye\n");

    // The program, then its two nested calls, each ending completed.
    let live = &out["live"];
    let seen = calls(live);
    let titles: Vec<&str> = seen.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(titles.len(), 3, "{seen:?}");
    assert_eq!(titles[0], "Say bye");
    assert!(seen.iter().all(|c| c.2 == "completed"), "{seen:?}");
    let started = of_kind(live, "tool_call");
    let program_id = started[0]["toolCallId"].as_str().unwrap();
    for nested in &started[1..] {
        assert_eq!(nested["_meta"]["toolhost"]["parentCallId"], program_id, "{nested}");
    }
    // The program asked nothing itself; its nested edit asked, in the run's `ask` mode.
    let permissions = out["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{permissions:#?}");
    assert_eq!(permissions[0]["toolCall"]["content"][0]["type"], "diff", "{permissions:#?}");
}
