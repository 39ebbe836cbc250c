//! `toolhost agent` through the binary against a scripted chat completions server on 127.0.0.1:
//! a three-step task (grep, read, edit) changing the file through the real registry, with the
//! conversation, usage and cards in the session log and in `toolhost replay`; the permission
//! modes (plan refusing an edit, ask with nobody to ask, auto); malformed arguments answered by
//! the registry's own check; compaction under a small context limit; a structured run ending with
//! its value; a model that refuses the key; Ctrl-C in the middle of a stream.
#![allow(clippy::unwrap_used)]

use crate::server;
use crate::sse;

use serde_json::{Value, json};
use server::{Env, binary};
use sse::{Answer, first_prompt, has_tool_answer, server as model_server};
use std::time::Duration;

/// A turn that calls `calls` (name, raw arguments), with usage.
fn calling(calls: &[(&str, &str)], prompt_tokens: u64) -> Answer {
    Answer::calling(calls, Some("let me look"), prompt_tokens)
}

fn answering(text: &str) -> Answer {
    Answer::answering(&[text], 300, 5)
}

struct Run {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

impl Run {
    fn end(&self) -> &Value {
        self.lines.iter().find(|l| l["type"] == "end").expect("an end line")
    }

    fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == kind).collect()
    }
}

/// `toolhost agent <task> --json --base-url <base> <extra>` in the workspace.
async fn agent(env: &Env, base: &str, task: &str, extra: &[&str]) -> Run {
    let out = tokio::process::Command::new(binary())
        .args(["agent", task, "--json", "--base-url", base, "--api-key-env", "SCRIPTED_KEY"])
        .args(extra)
        .current_dir(&env.root)
        .envs(env.env())
        .env("SCRIPTED_KEY", "sk-secret-4711")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    Run {
        code: out.status.code().unwrap_or(-1),
        lines,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The tool messages (model call id, text) of a recorded request.
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (m["tool_call_id"].as_str().unwrap().into(), m["content"].as_str().unwrap().into())
        })
        .collect()
}

fn session_log(env: &Env) -> (String, Vec<Value>) {
    let logs = env.session_logs();
    assert_eq!(logs.len(), 1, "one session");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let events = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (text, events)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_three_step_task_edits_the_file_and_the_log_holds_the_conversation() {
    let env = Env::new();
    env.write("a.txt", "hello world\n");
    let model = model_server(|n, _| match n {
        0 => calling(&[("grep", r#"{"pattern":"hello"}"#)], 100),
        1 => calling(&[("read", r#"{"file_path":"a.txt"}"#)], 200),
        2 => calling(
            &[("edit", r#"{"file_path":"a.txt","old_string":"hello","new_string":"hi"}"#)],
            250,
        ),
        _ => answering("Done: a.txt now says hi."),
    })
    .await;
    let run = agent(&env, &model.base, "say hi in a.txt", &["--mode", "auto"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hi world\n");
    let end = run.end();
    assert_eq!(end["stop"], "answered");
    assert_eq!(end["turns"], 4);
    assert_eq!(end["answer"], "Done: a.txt now says hi.");
    assert_eq!(end["usage"]["totalTokens"], 110 + 210 + 260 + 305);
    // Each call has its pending and final card, with the agent named as the caller.
    let results = run.of_type("toolResult");
    let names: Vec<&str> = results.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["grep", "read", "edit"]);
    assert!(
        results.iter().all(|r| r["isError"] == false && r["card"]["caller"] == "toolhost agent")
    );
    assert_eq!(results[2]["card"]["kind"], "diff");
    assert_eq!(run.of_type("toolCall").len(), 3);
    let text = run.of_type("text");
    assert_eq!(text[0]["text"], "Done: a.txt now says hi.");

    let bodies = model.bodies.lock().unwrap().clone();
    // The tools offered are the registry's, sorted, the same in every request.
    let offered = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = offered(&bodies[0]);
    assert!(first.windows(2).all(|w| w[0] < w[1]), "sorted: {first:?}");
    assert!(
        ["read", "edit", "grep", "bash", "todo_write"]
            .iter()
            .all(|t| first.contains(&t.to_string()))
    );
    assert!(bodies.iter().all(|b| offered(b) == first));
    // The model got toolhost's Native texts: the read shows numbered lines; the edit says it
    // edited.
    let answers = tool_messages(&bodies[3]);
    assert_eq!(answers.len(), 3);
    assert!(
        answers[1].1.contains("1\thello world") || answers[1].1.contains("hello world"),
        "{answers:?}"
    );
    assert!(answers[2].1.to_lowercase().contains("a.txt"), "{answers:?}");
    // Reasoning of tool-calling turns goes back (DeepSeek requires it).
    let assistants: Vec<&Value> = bodies[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistants.len(), 3);
    assert!(assistants.iter().all(|m| m["reasoning_content"] == "let me look"));

    // The session log: the run, every message in order among the calls, usage, the end; never
    // the key.
    let (text, events) = session_log(&env);
    assert!(!text.contains("sk-secret-4711"), "the key is never logged");
    let kinds: Vec<&str> = events.iter().skip(1).map(|e| e["type"].as_str().unwrap()).collect();
    let agent_kinds: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| k.starts_with("agent/") || k.starts_with("tool/"))
        .collect();
    assert_eq!(
        agent_kinds,
        [
            "agent/run",
            "agent/message",
            "agent/message",
            "agent/usage",
            "agent/message",
            "tool/call",
            "tool/result",
            "agent/message",
            "agent/usage",
            "agent/message",
            "tool/call",
            "tool/result",
            "agent/message",
            "agent/usage",
            "agent/message",
            "tool/call",
            "tool/result",
            "agent/message",
            "agent/usage",
            "agent/message",
            "agent/end",
        ]
    );
    let messages: Vec<&Value> =
        events.iter().filter(|e| e["type"] == "agent/message").map(|e| &e["data"]).collect();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["content"], "say hi in a.txt");
    assert_eq!(messages[2]["toolCalls"][0]["name"], "grep");
    assert_eq!(messages[2]["reasoning"], "let me look");
    // A tool's answer names the card it belongs to.
    let edit_call =
        events.iter().find(|e| e["type"] == "tool/call" && e["data"]["name"] == "edit").unwrap();
    assert_eq!(messages[7]["callId"], edit_call["data"]["callId"]);
    assert_eq!(messages[7]["toolCallId"], "call_0");
    let usage: Vec<&Value> = events.iter().filter(|e| e["type"] == "agent/usage").collect();
    assert_eq!(usage[0]["data"]["cachedTokens"], 50);
    assert!(
        events
            .iter()
            .all(|e| !e["type"].as_str().unwrap_or("").starts_with("agent/")
                || e["ignorable"] == true)
    );

    // Replay shows the conversation between the cards.
    let session = end["sessionId"].as_str().unwrap();
    let out = std::process::Command::new(binary())
        .args(["replay", session])
        .current_dir(&env.root)
        .envs(env.env())
        .output()
        .unwrap();
    let replay = String::from_utf8_lossy(&out.stdout);
    let prompt = replay.find("> say hi in a.txt").expect("the prompt");
    let grep = replay.find("grep").unwrap();
    let answer = replay.find("Done: a.txt now says hi.").expect("the answer");
    let ended = replay.find("run ended: answered after 4 turns").expect("the end");
    assert!(prompt < grep && grep < answer && answer < ended, "{replay}");
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_refuses_an_edit_until_the_plan_is_approved() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let model = model_server(|n, _| match n {
        0 => calling(
            &[
                ("read", r#"{"file_path":"a.txt"}"#),
                ("edit", r#"{"file_path":"a.txt","old_string":"hello","new_string":"bye"}"#),
            ],
            100,
        ),
        _ => answering("I will write a plan first."),
    })
    .await;
    let run = agent(&env, &model.base, "change a.txt", &["--mode", "plan"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hello\n");
    let answers = tool_messages(&model.bodies.lock().unwrap()[1]);
    assert!(!answers[0].1.starts_with("Error:"), "the read runs: {answers:?}");
    assert!(
        answers[1]
            .1
            .contains("plan mode is active: `edit` is not available until the plan is approved"),
        "{answers:?}"
    );
    let (_, events) = session_log(&env);
    assert!(events.iter().any(|e| e["type"] == "plan/mode" && e["data"]["active"] == true));
}

/// A task that reads a.txt, then edits it and runs a command in one turn, in `mode`: the
/// workspace, the run and the tool answers of the last request.
async fn edit_and_command(mode: &str) -> (Env, Run, Vec<(String, String)>) {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let model = model_server(|n, _| match n {
        0 => calling(&[("read", r#"{"file_path":"a.txt"}"#)], 100),
        1 => calling(
            &[
                ("edit", r#"{"file_path":"a.txt","old_string":"hello","new_string":"bye"}"#),
                ("bash", r#"{"command":"touch made-by-bash"}"#),
            ],
            100,
        ),
        _ => answering("Done what I could."),
    })
    .await;
    let run = agent(&env, &model.base, "change a.txt", &["--mode", mode]).await;
    let answers = tool_messages(&model.bodies.lock().unwrap()[2]);
    (env, run, answers)
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_mode_with_nobody_to_ask_refuses_changes_and_tells_the_model() {
    let (env, run, answers) = edit_and_command("ask").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "hello\n");
    assert!(!env.root.join("made-by-bash").exists());
    assert!(
        answers[1]
            .1
            .contains("tool \"edit\" requires approval, but no approval channel is available"),
        "{answers:?}"
    );
    assert!(answers[2].1.contains("tool \"bash\" requires approval"), "{answers:?}");

    // accept-edits: the edit runs, the command still asks.
    let (env, run, answers) = edit_and_command("accept-edits").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(env.root.join("a.txt")).unwrap(), "bye\n");
    assert!(!env.root.join("made-by-bash").exists());
    assert!(answers[2].1.contains("tool \"bash\" requires approval"), "{answers:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_arguments_are_refused_by_the_registry_and_the_model_retries() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let model = model_server(|n, _| match n {
        0 => calling(&[("read", r#"{"file_path": "a.txt""#)], 100),
        1 => calling(&[("read", r#"{"file_path": "a.txt"}"#)], 100),
        _ => answering("It says hello."),
    })
    .await;
    let run = agent(&env, &model.base, "read a.txt", &["--mode", "auto"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bodies = model.bodies.lock().unwrap().clone();
    let first = tool_messages(&bodies[1]);
    assert!(first[0].1.contains("invalid arguments: \"arguments\" must be an object"), "{first:?}");
    let second = tool_messages(&bodies[2]);
    assert!(second[1].1.contains("hello"), "{second:?}");
    assert_eq!(run.of_type("toolResult")[0]["isError"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_context_limit_compacts_the_conversation_with_a_summary() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let model = model_server(|n, body| {
        let tools = body.get("tools").is_some();
        match (n, tools) {
            (0, _) => calling(&[("read", r#"{"file_path":"a.txt"}"#)], 950),
            // The summary request offers no tools.
            (1, false) => answering("The task: read a.txt. Done: read it; it says hello."),
            _ => answering("a.txt says hello."),
        }
    })
    .await;
    let run = agent(
        &env,
        &model.base,
        "what does a.txt say?",
        &["--mode", "auto", "--context-limit", "1000"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let compaction = run.of_type("compaction");
    assert_eq!(compaction.len(), 1, "{:?}", run.lines);
    assert_eq!(compaction[0]["summarized"], true);
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 3);
    let summary_request = bodies[1]["messages"].as_array().unwrap();
    assert!(summary_request.last().unwrap()["content"].as_str().unwrap().contains("Summarize it"));
    let after: Vec<&Value> = bodies[2]["messages"].as_array().unwrap().iter().collect();
    assert_eq!(after.len(), 3, "system, the task, the summary: {after:?}");
    assert_eq!(after[1]["content"], "what does a.txt say?");
    assert!(after[2]["content"].as_str().unwrap().contains("it says hello"));
    let (_, events) = session_log(&env);
    let logged = events.iter().find(|e| e["type"] == "agent/compaction").unwrap();
    assert_eq!(logged["data"]["summary"], "The task: read a.txt. Done: read it; it says hello.");
    assert_eq!(run.end()["turns"], 3, "the summary is a model request too");
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_output_ends_the_run_with_the_validated_value() {
    let env = Env::new();
    let model = model_server(|n, _| match n {
        0 => calling(&[("structured_output", r#"{"count":"three"}"#)], 100),
        1 => calling(&[("structured_output", r#"{"count":3}"#)], 100),
        _ => answering("should not be asked"),
    })
    .await;
    let schema =
        r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}"#;
    let run =
        agent(&env, &model.base, "count", &["--mode", "auto", "--structured-schema", schema]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.end()["stop"], "structured");
    assert_eq!(run.end()["structured"], json!({"count": 3}));
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "no request after the value was recorded");
    assert!(tool_messages(&bodies[1])[0].1.starts_with("Error:"), "the invalid value failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cost_budget_stops_the_run_once_its_requests_cost_that_much() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let model =
        model_server(|_, _| calling(&[("read", r#"{"file_path":"a.txt"}"#)], 100_000)).await;
    // Without a price there is no cost to count: the flag is refused before anything runs.
    let refused =
        agent(&env, &model.base, "read on", &["--mode", "auto", "--cost-budget", "1"]).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--cost-budget needs [agent] price"), "{}", refused.stderr);
    assert!(model.bodies.lock().unwrap().is_empty());

    // $1/M prompt tokens, $2/M completion: a request of 100,000 + 10 tokens costs $0.10002.
    env.write_user_config("[agent.price]\ninput = 1.0\noutput = 2.0\n");
    let run =
        agent(&env, &model.base, "read on", &["--mode", "auto", "--cost-budget", "0.25"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let end = run.end();
    assert_eq!(end["stop"], "cost-budget", "{end}");
    assert_eq!(end["turns"], 3, "two requests cost $0.20, the third reaches $0.25: {end}");
    assert!(end["cost"].as_f64().unwrap() >= 0.25, "{end}");
    assert_eq!(model.bodies.lock().unwrap().len(), 3, "no request after the budget was spent");
    let (_, events) = session_log(&env);
    assert!(events.iter().any(|e| e["type"] == "agent/end" && e["data"]["stop"] == "cost-budget"));

    // In the configuration too.
    env.write_user_config(
        "[agent]\ncost_budget = 0.15\n\n[agent.price]\ninput = 1.0\noutput = 2.0\n",
    );
    let run = agent(&env, &model.base, "read on", &["--mode", "auto", "--session", "last"]).await;
    assert_eq!(
        (run.end()["stop"].as_str(), run.end()["turns"].as_u64()),
        (Some("cost-budget"), Some(2))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_fails_the_run_with_the_models_message() {
    let env = Env::new();
    let model =
        model_server(|_, _| Answer::status(401, r#"{"error":{"message":"bad key"}}"#)).await;
    let run = agent(&env, &model.base, "hi", &[]).await;
    assert_eq!(run.code, 1);
    assert_eq!(run.end()["stop"], "failed");
    assert_eq!(run.end()["error"]["code"], "MODEL_HTTP_ERROR");
    assert!(run.end()["error"]["message"].as_str().unwrap().contains("bad key"));
    let (text, events) = session_log(&env);
    assert!(!text.contains("sk-secret-4711"));
    assert!(events.iter().any(|e| e["type"] == "agent/end" && e["data"]["stop"] == "failed"));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_in_the_middle_of_a_stream_cancels_the_run() {
    let env = Env::new();
    let model = model_server(|_, _| {
        let mut answer = answering("never finished");
        answer.pieces.insert(
            0,
            (
                Duration::ZERO,
                format!(
                    "data: {}\n\n",
                    json!({"choices": [{"delta": {"content": "thinking about it"}}]})
                ),
            ),
        );
        answer.pieces[1].0 = Duration::from_secs(30);
        answer
    })
    .await;
    let child = tokio::process::Command::new(binary())
        .args(["agent", "hi", "--json", "--base-url", &model.base, "--api-key-env", ""])
        .current_dir(&env.root)
        .envs(env.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // Wait for the first streamed text, then interrupt.
    let started = std::time::Instant::now();
    while model.bodies.lock().unwrap().is_empty() && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(out.status.code(), Some(1));
    assert!(lines.iter().any(|l| l["type"] == "text" && l["text"] == "thinking about it"));
    let end = lines.iter().find(|l| l["type"] == "end").unwrap();
    assert_eq!(end["stop"], "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagent_runs_a_child_loop_whose_answer_is_the_calls_result() {
    let env = Env::new();
    env.write("a.txt", "hello world\n");
    let model = model_server(|_, body| {
        let child = first_prompt(body) == "find where hello is";
        match (child, has_tool_answer(body)) {
            (false, false) => calling(
                &[("subagent", r#"{"description":"find hello","prompt":"find where hello is"}"#)],
                100,
            ),
            (true, false) => calling(&[("grep", r#"{"pattern":"hello"}"#)], 80),
            (true, true) => answering("hello is in a.txt"),
            (false, true) => answering("The subagent found it in a.txt."),
        }
    })
    .await;
    let run = agent(&env, &model.base, "where is hello?", &["--mode", "auto"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.end()["answer"], "The subagent found it in a.txt.");
    // The parent's call answered with the child's answer; the child's own calls are cards too.
    let bodies = model.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 4);
    let parent_last = bodies.iter().rfind(|b| first_prompt(b) == "where is hello?").unwrap();
    assert_eq!(tool_messages(parent_last)[0].1, "hello is in a.txt");
    let child_first = bodies.iter().find(|b| first_prompt(b) == "find where hello is").unwrap();
    assert!(child_first["messages"].as_array().unwrap().len() == 2, "a fresh conversation");
    let results = run.of_type("toolResult");
    assert_eq!(results.len(), 1, "the parent's stream shows its own calls");
    assert_eq!(results[0]["name"], "subagent");
    assert_eq!(results[0]["card"]["title"], "Subagent: find hello");

    let (_, events) = session_log(&env);
    let runs: Vec<&Value> = events.iter().filter(|e| e["type"] == "agent/run").collect();
    assert_eq!(runs.len(), 2);
    let subagent_call = events
        .iter()
        .find(|e| e["type"] == "tool/call" && e["data"]["name"] == "subagent")
        .unwrap();
    assert_eq!(runs[1]["data"]["parentCallId"], subagent_call["data"]["callId"]);
    let grep_call =
        events.iter().find(|e| e["type"] == "tool/call" && e["data"]["name"] == "grep").unwrap();
    assert_eq!(grep_call["data"]["caller"], "subagent", "{grep_call}");
    let result = events
        .iter()
        .find(|e| {
            e["type"] == "tool/result" && e["data"]["callId"] == subagent_call["data"]["callId"]
        })
        .unwrap();
    assert_eq!(result["data"]["content"][0]["text"], "hello is in a.txt", "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_subagent_is_a_job_and_a_failed_child_fails_the_call_with_why() {
    let env = Env::new();
    let model = model_server(|_, body| {
        let prompt = first_prompt(body);
        let tool_texts: Vec<String> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect();
        match prompt.as_str() {
            "slow research" => answering("research done"),
            // A child whose model refuses it.
            "doomed" => Answer::status(400, r#"{"error":{"message":"model exploded"}}"#),
            _ if tool_texts.is_empty() => calling(
                &[(
                    "subagent",
                    r#"{"description":"research","prompt":"slow research","run_in_background":true}"#,
                )],
                100,
            ),
            _ if tool_texts.len() == 1 => calling(
                &[
                    ("job_output", r#"{"job_id":"subagent-1","wait":true}"#),
                    ("subagent", r#"{"description":"doomed","prompt":"doomed"}"#),
                ],
                100,
            ),
            _ => answering("ok"),
        }
    })
    .await;
    let run = agent(&env, &model.base, "research", &["--mode", "auto"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bodies = model.bodies.lock().unwrap().clone();
    let last = bodies.iter().rfind(|b| first_prompt(b) == "research").unwrap();
    let answers = tool_messages(last);
    assert_eq!(answers[0].1, "started background subagent job subagent-1", "{answers:?}");
    assert!(answers[1].1.contains("research done"), "job_output reads the answer: {answers:?}");
    assert!(answers[2].1.starts_with("Error: subagent run failed\nDiagnostic: "), "{answers:?}");
}
