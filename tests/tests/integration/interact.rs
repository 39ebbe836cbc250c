//! The interaction tools end to end: questions over the wire (`toolhost/askUser` to a scripted
//! editor: the question carries the call, a cancelled call withdraws it, an unanswered one times
//! out), MCP clients answering by elicitation (Python `mcp` 2.3.0 with `elicitation/create` on
//! 2025-11-25 and with an input-required result on 2026-07-28, standalone and attached to the
//! editor), plan mode and the structured run surviving a resumed session, and a replay of todos,
//! questions and a plan review showing the live cards.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, call_ok, raw_request, wait_response};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions, answers_of,
};
use toolhost_harness::client::Client;
use toolhost_host::config::Config;
use toolhost_host::session::{OpenedSession, open_session};
use toolhost_host::{CallRequest, Host};
use toolhost_protocol::lsp_ext::{Answer, AskUserResult};

const DB_QUESTION: &str = r#"{"questions":[{"id":"db","question":"Which database?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}"#;

/// An editor that answers questions: every question is kept, answered with `answer` (or never).
fn asking_editor(env: &Env, answer: Option<Value>) -> (Client, Arc<Mutex<Vec<Value>>>) {
    server::asking_editor(env, json!({}), answer)
}

fn text(out: &Value) -> &str {
    out["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn the_editor_answers_a_question_that_carries_its_call() {
    let env = Env::new();
    let answer = json!({"answers": [{"id": "db", "selected": ["SQLite"]}]});
    let (mut client, asked) = asking_editor(&env, Some(answer));
    let args: Value = serde_json::from_str(DB_QUESTION).unwrap();
    let out = client.call_tool("ask_user_question", args).unwrap();
    assert_eq!(text(&out), r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#);
    let question = asked.lock().unwrap()[0].clone();
    assert_eq!(question["callId"], out["callId"]);
    assert_eq!(question["tool"], "ask_user_question");
    assert_eq!(question["title"], "Ask: DB");
    assert_eq!(question["intent"], "question");
    assert_eq!(question["questions"][0]["options"][1]["label"], "SQLite");
    assert!(question["requestId"].is_number());
    assert_eq!(out["card"]["kind"], "question");
    assert_eq!(out["card"]["data"]["answers"][0]["selected"][0], "SQLite");
}

#[test]
fn a_cancelled_call_withdraws_its_question() {
    let env = Env::new();
    let (mut client, asked) = asking_editor(&env, None);
    let args: Value = serde_json::from_str(DB_QUESTION).unwrap();
    client
        .write_raw(&raw_request(
            json!(900),
            "toolhost/callTool",
            json!({"name": "ask_user_question", "arguments": args, "callId": "call_asking"}),
        ))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while asked.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the question never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    let request_id = asked.lock().unwrap()[0]["requestId"].clone();
    let cancelled =
        client.request("toolhost/cancelCall", json!({"callId": "call_asking"})).unwrap();
    assert_eq!(cancelled["cancelled"], true);
    let withdrawn = client.wait_for(Duration::from_secs(10), |m| {
        m["method"] == "$/cancelRequest" && m["params"]["id"] == request_id
    });
    assert!(withdrawn.is_some(), "the question was not withdrawn");
    let response = wait_response(&mut client, &json!(900), Duration::from_secs(10)).unwrap();
    assert_eq!(response["result"]["result"]["error"]["info"]["code"], "ASK_ABORTED", "{response}");
}

#[test]
fn an_unanswered_question_times_out_and_is_withdrawn() {
    let env = Env::new();
    let (mut client, asked) = asking_editor(&env, None);
    client.request("toolhost/setReview", json!({"timeoutMs": 300})).unwrap();
    let args: Value = serde_json::from_str(DB_QUESTION).unwrap();
    let out = client.call_tool("ask_user_question", args).unwrap();
    assert_eq!(out["result"]["error"]["info"]["code"], "ASK_CANCELLED", "{out}");
    assert_eq!(text(&out), "Error: the question was not answered within 1 s");
    let request_id = asked.lock().unwrap()[0]["requestId"].clone();
    let withdrawn = client.wait_for(Duration::from_secs(5), |m| {
        m["method"] == "$/cancelRequest" && m["params"]["id"] == request_id
    });
    assert!(withdrawn.is_some(), "the question was not withdrawn");
}

#[test]
fn without_an_editor_that_asks_the_question_fails_no_provider() {
    let env = Env::new();
    let mut client = env.spawn();
    client.initialize(&env.root, json!({}), json!({})).unwrap();
    let args: Value = serde_json::from_str(DB_QUESTION).unwrap();
    let out = client.call_tool("ask_user_question", args).unwrap();
    assert_eq!(out["result"]["error"]["info"]["code"], "NO_PROVIDER", "{out}");
    assert_eq!(out["result"]["error"]["info"]["name"], "UserQuestionError");
}

#[test]
fn plan_mode_over_lsp_refuses_changes_until_the_plan_is_approved() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let answer = json!({"answers": [{"id": "plan", "selected": ["Approve"]}]});
    let (mut client, asked) = asking_editor(&env, Some(answer));
    let state = client.request("toolhost/setPlanMode", json!({"active": true})).unwrap();
    assert_eq!(state, json!({"active": true}));
    call_ok(&mut client, "read", json!({"file_path": "a.txt"}));
    let denied =
        client.call_tool("write", json!({"file_path": "a.txt", "content": "two\n"})).unwrap();
    assert_eq!(denied["result"]["isError"], true);
    let out = client
        .call_tool("exit_plan_mode", json!({"plan": "# Change a.txt\n\n- write two"}))
        .unwrap();
    assert_eq!(
        text(&out),
        "Plan approved — plan mode exited; carry out the plan starting with your next step."
    );
    let question = asked.lock().unwrap()[0].clone();
    assert_eq!(question["intent"], "plan-review");
    assert_eq!(question["plan"], "# Change a.txt\n\n- write two");
    assert_eq!(
        client.request("toolhost/setPlanMode", json!({})).unwrap(),
        json!({"active": false})
    );
    call_ok(&mut client, "write", json!({"file_path": "a.txt", "content": "two\n"}));
}

fn elicitation_summary(env: &Env, mode: &str) -> Value {
    let summary = server::run_python_client_with("python_elicit.py", env, &[mode]);
    let calls = summary["calls"].as_array().unwrap();
    assert_eq!(calls[0]["isError"], false, "{summary}");
    assert_eq!(calls[0]["text"], r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#, "{summary}");
    assert_eq!(calls[1]["isError"], true, "{summary}");
    assert_eq!(calls[1]["text"], "Error: the user declined to answer", "{summary}");
    let form = &summary["forms"][0];
    assert_eq!(form["message"], "Which database?");
    assert_eq!(form["schema"]["properties"]["db"]["oneOf"][1]["const"], "SQLite", "{summary}");
    summary
}

#[test]
fn an_mcp_client_answers_by_elicitation_create_and_gets_skills_as_prompts() {
    let env = Env::new();
    env.write(
        ".claude/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Add a changelog entry\n---\nAdd one line.\n",
    );
    let summary = elicitation_summary(&env, "session");
    assert_eq!(summary["protocol"], "2025-11-25");
    let prompt = &summary["prompts"][0];
    assert_eq!(prompt["name"], "changelog", "{summary}");
    assert_eq!(prompt["description"], "Add a changelog entry");
    let text = prompt["text"].as_str().unwrap();
    assert!(text.starts_with("<skill_content name=\"changelog\">"), "{text}");
    assert!(text.contains("<skill_instructions>\nAdd one line.\n</skill_instructions>"), "{text}");
}

#[test]
fn an_mcp_client_on_2026_07_28_answers_an_input_required_result() {
    let env = Env::new();
    let summary = elicitation_summary(&env, "client");
    assert_eq!(summary["protocol"], "2026-07-28");
}

#[test]
fn an_attached_mcp_client_answers_its_own_questions_before_the_editor() {
    let env = Env::new();
    // The editor would answer "Postgres"; the agent's own client is asked first.
    let answer = json!({"answers": [{"id": "db", "selected": ["Postgres"]}]});
    let (_editor, asked) = asking_editor(&env, Some(answer));
    let summary = elicitation_summary(&env, "session");
    assert_eq!(summary["protocol"], "2025-11-25");
    assert!(asked.lock().unwrap().is_empty(), "the editor was asked");
}

/// A scripted person for the in-process host.
struct Person(Mutex<Vec<AskUserResult>>);

impl UserQuestions for Person {
    fn ask(
        &self,
        _request: QuestionRequest,
        _stop: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        let next = self.0.lock().unwrap().remove(0);
        Box::pin(async move { answers_of(next) })
    }
}

fn host_for(root: &std::path::Path, opened: &OpenedSession) -> Arc<Host> {
    toolhost_host::open_host(&Config::default(), root, Some(opened)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_of_todos_questions_and_a_plan_review_shows_the_live_cards() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    let opened = open_session(&dir.path().join("sessions"), &root, "interact").unwrap();
    let host = host_for(&root, &opened);
    let answers = |v: Value| serde_json::from_value::<AskUserResult>(v).unwrap();
    host.questions().set_asker(Some(Arc::new(Person(Mutex::new(vec![
        answers(json!({"answers": [{"id": "db", "selected": ["SQLite"]}]})),
        answers(json!({"dismissed": true})),
        answers(json!({"answers": [{"id": "plan", "selected": [], "custom": "smaller steps"}]})),
        answers(json!({"answers": [{"id": "plan", "selected": ["Approve"]}]})),
    ])))));
    host.interaction().set_plan_mode(Some(true)).await;
    let plan = "# Two\n\n1. write two";
    let calls: Vec<(&str, Value)> = vec![
        (
            "todo_write",
            json!({"todos": [{"content": "plan", "status": "in_progress"}, {"content": "write", "status": "pending"}]}),
        ),
        ("ask_user_question", serde_json::from_str(DB_QUESTION).unwrap()),
        ("ask_user_question", json!({"questions": [{"id": "q", "question": "Sure?"}]})),
        ("write", json!({"file_path": "a.txt", "content": "two\n"})),
        ("exit_plan_mode", json!({"plan": plan})),
        ("exit_plan_mode", json!({"plan": plan})),
        (
            "todo_write",
            json!({"todos": [{"content": "plan", "status": "completed"}, {"content": "write", "status": "in_progress"}]}),
        ),
        ("structured_output", json!({"done": true})),
    ];
    let mut live = Vec::new();
    for (idx, (tool, args)) in calls.iter().enumerate() {
        let outcome =
            host.run(CallRequest::new(*tool, args.clone()).id(format!("c{idx}"))).await.unwrap();
        let text = toolhost_protocol::content::joined_text(outcome.finalized.result.content());
        live.push((outcome.card(), text));
    }
    let kinds: Vec<&str> = live.iter().map(|(c, _)| c.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["todo", "question", "question", "generic", "plan", "plan", "todo", "structured"]
    );
    assert_eq!(
        live[5].1,
        "Plan approved — plan mode exited; carry out the plan starting with your next step."
    );
    opened.log.flush().await.unwrap();
    let replayed = toolhost_host::session::replay(host.registry(), opened.log.log_path()).unwrap();
    assert_eq!(replayed.len(), live.len());
    for ((card, text), again) in live.iter().zip(&replayed) {
        assert_eq!(&again.card, card, "card of {} differs on replay", card.call_id);
        assert_eq!(&again.text, text, "Native text of {} differs on replay", card.call_id);
    }
    // The log keeps the session state: the todo list, plan mode's end, the structured value.
    let log = std::fs::read_to_string(opened.log.log_path()).unwrap();
    let types: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .filter(|t| !t.starts_with("tool/") && !t.starts_with("fs/") && t != "session")
        .collect();
    assert_eq!(
        types,
        ["plan/mode", "todo/write", "plan/mode", "todo/write", "structured/output"],
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_and_a_completed_run_survive_a_resumed_session() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let sessions = dir.path().join("sessions");
    {
        let opened = open_session(&sessions, &root, "resumed").unwrap();
        let host = host_for(&root, &opened);
        host.interaction().set_plan_mode(Some(true)).await;
        let out = host
            .run(CallRequest::new("structured_output", json!({"a": 1})).id("s1"))
            .await
            .unwrap();
        assert!(!out.finalized.result.is_error());
        host.shutdown().await;
        opened.log.flush().await.unwrap();
    }
    let opened = open_session(&sessions, &root, "resumed").unwrap();
    let host = host_for(&root, &opened);
    assert!(host.interaction().set_plan_mode(None).await.active);
    let state = host.interaction().structured_state();
    assert!(state.recorded);
    assert_eq!(state.value, Some(json!({"a": 1})));
    let out = host.run(CallRequest::new("glob", json!({"pattern": "*"})).id("s2")).await.unwrap();
    let text = toolhost_protocol::content::joined_text(out.finalized.result.content());
    assert_eq!(
        text,
        "Error: structured output already recorded: the run is complete, so `glob` is not executed"
    );
}
