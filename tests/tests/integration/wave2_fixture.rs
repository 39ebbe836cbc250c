//! The wave-2 session-log fixture (`tests/fixtures/wave2-session/`): a log written by the code of
//! the end of wave 2, with the cards and the agent's conversation that code replayed it to.
//!
//! - `a_wave2_log_replays_to_the_same_cards_and_conversation` (always runs, no network, no binary)
//!   replays the checked-in log with an empty registry and requires every card and every
//!   conversation record to equal the checked-in expectations. It calls nothing of the host but
//!   the replay entry point, so it keeps holding while the host around it is rebuilt.
//! - `write_the_wave2_fixture` wrote those files, once, in-process through the host library; it
//!   runs only with `WAVE2_FIXTURE_WRITE=1`. The fixture records what wave-2 logs look like, so it
//!   is never to be regenerated with later code (the README says why).
#![allow(clippy::unwrap_used)]

use crate::sse;

use serde_json::{Value, json};
use sse::{Answer, first_prompt, server as model_server};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolhost_agent::PermissionMode;
use toolhost_agent::settings::CALLER;
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions, answers_of,
};
use toolhost_host::agent::{self as own_agent, RunRequest, RunUpdate};
use toolhost_host::config::Config;
use toolhost_host::review::Reviewer;
use toolhost_host::session::{open_session, replay_with_conversation};
use toolhost_host::{CallRequest, open_host};
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::{
    Answer as Answered, AskUserResult, ReviewMode, ReviewParams, ReviewResult, SetReviewParams,
};
use toolhost_registry::Registry;

/// Where the fixture lives in the repository.
fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/wave2-session")
}

/// One JSON value per line.
fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_wave2_log_replays_to_the_same_cards_and_conversation() {
    let fixture = fixture_dir();
    let expected_cards = read_jsonl(&fixture.join("cards.jsonl"));
    let expected_conversation = read_jsonl(&fixture.join("conversation.jsonl"));
    // Replay only reads the log; it is copied anyway so a bug can never touch the fixture.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    std::fs::copy(fixture.join("session.jsonl"), &log).unwrap();

    // The one call into the code under test: replay with a registry that knows no tool, since
    // a log must replay from what it recorded alone.
    let (cards, conversation) = replay_with_conversation(&Registry::default(), &log).unwrap();

    let cards: Vec<Value> = cards.iter().map(|c| serde_json::to_value(&c.card).unwrap()).collect();
    assert_eq!(cards.len(), expected_cards.len(), "number of cards");
    for (got, want) in cards.iter().zip(&expected_cards) {
        assert_eq!(got, want, "card {} differs", want["callId"]);
    }
    let conversation: Vec<Value> =
        conversation.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    assert_eq!(conversation.len(), expected_conversation.len(), "number of agent records");
    for (got, want) in conversation.iter().zip(&expected_conversation) {
        assert_eq!(got, want, "agent record seq {} differs", want["seq"]);
    }
    assert_covers_wave2(&expected_cards, &expected_conversation);
}

/// What the fixture must hold to be worth keeping: every wave-2 kind of call, and an agent run
/// with a subagent whose child ran a tool.
fn assert_covers_wave2(cards: &[Value], conversation: &[Value]) {
    let tools: Vec<&str> = cards.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    for tool in [
        "bash",
        "job_output",
        "terminal_open",
        "terminal_send",
        "edit",
        "write",
        "read",
        "revert",
        "ask_user_question",
        "todo_write",
        "exit_plan_mode",
        "subagent",
    ] {
        assert!(tools.contains(&tool), "no {tool} card in {tools:?}");
    }
    let callers: Vec<&str> = cards.iter().filter_map(|c| c["caller"].as_str()).collect();
    assert!(callers.contains(&"toolhost agent"), "no card of the agent: {callers:?}");
    assert!(callers.contains(&"subagent"), "no card of the subagent: {callers:?}");
    let reviewed = cards.iter().find(|c| c["tool"] == "edit").unwrap();
    assert!(reviewed["text"].as_str().unwrap().contains("User comment:"), "{reviewed}");
    let runs: Vec<&Value> = conversation.iter().filter(|r| r["type"] == "agent/run").collect();
    assert_eq!(runs.len(), 2, "a parent run and a child run");
    let child_of = runs[1]["data"]["parentCallId"].as_str().unwrap();
    assert!(
        cards.iter().any(|c| c["callId"] == child_of && c["tool"] == "subagent"),
        "the child run names its subagent call"
    );
}

// ---- The generator (run once; kept to show how the log was made) ----

/// The fixed workspace, so the paths on the cards are stable and readable.
const BASE: &str = "/tmp/toolhost-wave2-fixture";
const SESSION: &str = "wave2";

const TWO_HUNKS: &str = "line 1\nline 2 old\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11 old\nline 12\n";

/// A person answering questions in order.
struct Person(Mutex<Vec<AskUserResult>>);

impl UserQuestions for Person {
    fn ask(
        &self,
        _request: QuestionRequest,
        _stop: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answered>, QuestionError>> {
        let next = self.0.lock().unwrap().pop();
        Box::pin(async move {
            answers_of(
                next.ok_or_else(|| QuestionError::Cancelled("no answer was scripted".to_owned()))?,
            )
        })
    }
}

/// A person reviewing changes in order.
struct ReviewingPerson(Mutex<Vec<ReviewResult>>);

impl Reviewer for ReviewingPerson {
    fn review(
        &self,
        _params: ReviewParams,
        _stop: CancellationToken,
    ) -> BoxFuture<'_, Result<ReviewResult, String>> {
        let next = self.0.lock().unwrap().pop();
        Box::pin(async move { next.ok_or_else(|| "no review was scripted".to_owned()) })
    }
}

/// Answers in the order they are given (kept as a stack, popped from the end).
fn in_order<T>(mut items: Vec<T>) -> Mutex<Vec<T>> {
    items.reverse();
    Mutex::new(items)
}

/// How many tool results a request carries (which step of its run it is).
fn tool_answers(body: &Value) -> usize {
    body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count()
}

const PARENT_TASK: &str = "Where does the workspace say hello? Use a helper.";
const CHILD_TASK: &str = "Find the files that contain the word hello.";

/// The scripted model: the parent asks a subagent, then reads the file it named, then answers;
/// the child greps, then answers.
fn script(_n: usize, body: &Value) -> Answer {
    if first_prompt(body) == CHILD_TASK {
        return match tool_answers(body) {
            0 => Answer::calling(&[("grep", r#"{"pattern":"hello"}"#)], Some("search"), 120),
            _ => Answer::answering(&["hello is in ", "notes.md"], 180, 6),
        };
    }
    let subagent =
        json!({"description": "find hello", "prompt": CHILD_TASK, "run_in_background": false});
    match tool_answers(body) {
        0 => Answer::calling(&[("subagent", &subagent.to_string())], Some("delegate"), 100),
        1 => Answer::calling(&[("read", r#"{"file_path":"notes.md"}"#)], None, 160),
        _ => Answer::answering(&["notes.md says hello ", "from the fixture."], 220, 9),
    }
}

/// One step of the direct part of the session: a call (id, tool, arguments) or a switch of plan
/// mode or review mode, as an editor would make it.
enum Step {
    Call(&'static str, &'static str, Value),
    PlanMode(bool),
    Review(bool),
}

fn direct_steps() -> Vec<Step> {
    use Step::{Call, PlanMode, Review};
    let db = json!({"questions": [{"id": "db", "question": "Which database?", "header": "DB",
        "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "one file"}]}]});
    vec![
        PlanMode(true),
        Call(
            "call_w2_todo_plan",
            "todo_write",
            json!({"todos": [
                {"content": "Plan the change", "status": "in_progress"},
                {"content": "Change a.txt", "status": "pending"},
                {"content": "Check the build", "status": "pending"},
            ]}),
        ),
        Call("call_w2_question", "ask_user_question", db),
        Call(
            "call_w2_plan",
            "exit_plan_mode",
            json!({"plan": "# Change a.txt\n\n1. Edit both old lines.\n2. Write notes.md."}),
        ),
        Call("call_w2_read", "read", json!({"file_path": "a.txt"})),
        Call("call_w2_read_missing", "read", json!({"file_path": "missing.txt"})),
        Review(true),
        Call(
            "call_w2_edit_reviewed",
            "edit",
            json!({"file_path": "a.txt", "old_string": " old", "new_string": " new",
                   "replace_all": true}),
        ),
        Review(false),
        Call(
            "call_w2_write",
            "write",
            json!({"file_path": "notes.md", "content": "# Notes\n\nhello from the fixture\n"}),
        ),
        Call(
            "call_w2_bash",
            "bash",
            json!({"command": "printf 'one\\ntwo\\n'; echo warning >&2; exit 3",
                   "description": "Print two lines and fail"}),
        ),
        Call(
            "call_w2_job",
            "bash",
            json!({"command": "echo job started; echo job done", "description": "A short job",
                   "run_in_background": true}),
        ),
        Call("call_w2_job_output", "job_output", json!({"job_id": "bash-1", "wait": true})),
        Call("call_w2_terminal_open", "terminal_open", json!({"type": "bash", "name": "fixture"})),
        Call(
            "call_w2_terminal_send",
            "terminal_send",
            json!({"sessionId": "term-1", "text": "echo terminal-ok", "timeout_ms": 20000}),
        ),
        Call("call_w2_terminal_close", "terminal_close", json!({"sessionId": "term-1"})),
        Call("call_w2_revert", "revert", json!({"call_id": "call_w2_edit_reviewed"})),
        Call(
            "call_w2_todo_done",
            "todo_write",
            json!({"todos": [
                {"content": "Plan the change", "status": "completed"},
                {"content": "Change a.txt", "status": "completed"},
                {"content": "Check the build", "status": "in_progress"},
            ]}),
        ),
    ]
}

/// Writes the fixture: a fresh workspace at [`BASE`], one session with every direct call of
/// [`direct_steps`] and then an own-agent run with a subagent, each live card checked against its
/// replay, then the log, the replayed cards and the conversation copied into the fixture folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_the_wave2_fixture() {
    if std::env::var("WAVE2_FIXTURE_WRITE").as_deref() != Ok("1") {
        return;
    }
    let base = Path::new(BASE);
    if base.exists() {
        std::fs::remove_dir_all(base).unwrap();
    }
    let root = base.join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), TWO_HUNKS).unwrap();
    let opened = open_session(&base.join("sessions"), &root, SESSION).unwrap();
    let model = model_server(script).await;
    let mut config = Config::default();
    config.agent.base_url = model.base.clone();
    config.agent.api_key_env = None;
    config.agent.mode = PermissionMode::Auto;
    let host = open_host(&config, &root, Some(&opened)).unwrap();
    assert!(host.registry().contains("subagent"), "[agent] reaches the scripted model");
    let answer = |v: Value| serde_json::from_value::<AskUserResult>(v).unwrap();
    host.questions().set_asker(Some(Arc::new(Person(in_order(vec![
        answer(json!({"answers": [{"id": "db", "selected": ["SQLite"]}]})),
        answer(json!({"answers": [{"id": "plan", "selected": ["Approve"]}]})),
    ])))));
    host.review().set_reviewer(Some(Arc::new(ReviewingPerson(in_order(vec![ReviewResult {
        accepted: vec![1],
        comment: Some("keep line 2 as it is".to_owned()),
    }])))));

    let mut live: Vec<Card> = Vec::new();
    for step in direct_steps() {
        match step {
            Step::PlanMode(active) => {
                host.interaction().set_plan_mode(Some(active)).await;
            }
            Step::Review(on) => {
                let mode = if on { ReviewMode::Ask } else { ReviewMode::Off };
                host.review().update(&SetReviewParams { mode: Some(mode), ..Default::default() });
            }
            Step::Call(id, tool, args) => {
                let outcome = host.run(CallRequest::new(tool, args).id(id)).await.unwrap();
                let failed = outcome.finalized.result.is_error();
                assert_eq!(failed, id == "call_w2_read_missing", "{id}: {:?}", outcome.card().text);
                live.push(outcome.card());
            }
        }
    }
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), TWO_HUNKS, "reverted");

    // The own agent: its calls' final cards as its front end saw them.
    let agent_cards: Arc<Mutex<Vec<Card>>> = Arc::default();
    let seen = Arc::clone(&agent_cards);
    let request = RunRequest {
        settings: config.agent.clone(),
        prompt: PARENT_TASK.to_owned(),
        history: None,
        caller: CALLER.to_owned(),
        run_id: None,
        parent: None,
        mode: None,
        presentation: None,
    };
    let report =
        own_agent::run(&host, request, &CancellationToken::new(), &mut |_| {}, move |update| {
            if let RunUpdate::CallFinished { card, .. } = update {
                seen.lock().unwrap().push(card);
            }
        })
        .await;
    assert_eq!(report.exit_code(), 0, "{:?}", report.end_event());
    live.extend(agent_cards.lock().unwrap().drain(..));
    assert_eq!(model.bodies.lock().unwrap().len(), 5, "three parent turns, two child turns");

    host.shutdown().await;
    opened.log.flush().await.unwrap();
    let (cards, conversation) =
        replay_with_conversation(host.registry(), opened.log.log_path()).unwrap();
    // Every card a front end drew live comes back the same from the log.
    for card in &live {
        let again = cards.iter().find(|c| c.card.call_id == card.call_id).unwrap();
        assert_eq!(&again.card, card, "card of {} differs on replay", card.call_id);
    }
    let to_lines =
        |values: Vec<Value>| -> String { values.iter().map(|v| format!("{v}\n")).collect() };
    let fixture = fixture_dir();
    std::fs::create_dir_all(&fixture).unwrap();
    std::fs::copy(opened.log.log_path(), fixture.join("session.jsonl")).unwrap();
    let cards: Vec<Value> = cards.iter().map(|c| serde_json::to_value(&c.card).unwrap()).collect();
    let conversation: Vec<Value> =
        conversation.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    assert_covers_wave2(&cards, &conversation);
    std::fs::write(fixture.join("cards.jsonl"), to_lines(cards)).unwrap();
    std::fs::write(fixture.join("conversation.jsonl"), to_lines(conversation)).unwrap();
}
