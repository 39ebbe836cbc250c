//! The loop against a scripted model server on 127.0.0.1 and a recording tool runner: a
//! three-step task (grep, read, edit) completing with each tool's text sent back, read-only
//! calls of one turn overlapping while an edit waits for them, malformed arguments answered as
//! the tool's failure, the turn limit and the token budget, and cancellation during a call.
#![allow(clippy::unwrap_used)]

#[path = "support/sse.rs"]
mod sse;

use serde_json::{Value, json};
use sse::{Answer, server};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_agent::agent::{
    ABORTED_BEFORE_DISPATCH, AgentEvent, AgentOptions, BoxFuture, CostBudget, RunOutcome,
    StopReason, ToolOutcome, ToolRunner, run,
};
use toolhost_agent::model::{ModelClient, ModelConfig, Price, RetryPolicy, ToolSpec};

/// Tools that record when each call started and ended. `read` is concurrency-safe and takes
/// 300 ms; `edit` and `grep` are not. Arguments that are not an object fail like the registry's
/// argument check.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, Value, Instant, Instant)>>,
    /// Cancelled when a call of this name starts.
    cancel_on: Mutex<Option<(String, CancellationToken)>>,
}

impl ToolRunner for Recorder {
    fn tools(&self) -> Vec<ToolSpec> {
        ["edit", "grep", "read"]
            .iter()
            .map(|name| ToolSpec {
                name: (*name).to_owned(),
                description: format!("the {name} tool"),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn concurrency_safe(&self, name: &str, _args: &Value) -> bool {
        name == "read"
    }

    fn call<'a>(
        &'a self,
        _call_id: &'a str,
        name: &'a str,
        args: Value,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let started = Instant::now();
            if let Some((on, token)) = self.cancel_on.lock().unwrap().as_ref()
                && on == name
            {
                token.cancel();
            }
            if !args.is_object() {
                return ToolOutcome::new(
                    "Error: invalid arguments: \"arguments\" must be an object",
                    true,
                );
            }
            if name == "read" {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            self.calls.lock().unwrap().push((
                name.to_owned(),
                args.clone(),
                started,
                Instant::now(),
            ));
            ToolOutcome::new(format!("{name} result for {args}"), false)
        })
    }
}

fn client(base: &str) -> ModelClient {
    let mut config = ModelConfig::new(base, "deepseek-v4-flash");
    config.retry = RetryPolicy {
        max_retries: 1,
        initial_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
    };
    ModelClient::new(config).unwrap()
}

/// A turn that calls `calls` (name, raw arguments), with usage.
fn calling(calls: &[(&str, &str)]) -> Answer {
    Answer::calling(calls, Some("thinking"), 100)
}

fn answering(text: &str) -> Answer {
    Answer::answering(&[text], 200, 5)
}

/// Runs `task` to its end with no cancellation and no event sink.
async fn run_task(base: &str, tools: &Recorder, options: &AgentOptions, task: &str) -> RunOutcome {
    run(&client(base), tools, options, task, &CancellationToken::new(), &mut |_| {}).await.unwrap()
}

/// The tool messages of a recorded request.
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_three_step_task_completes() {
    let server = server(|n, _| match n {
        0 => calling(&[("grep", r#"{"pattern":"hello"}"#)]),
        1 => calling(&[("read", r#"{"file_path":"a.txt"}"#)]),
        2 => {
            calling(&[("edit", r#"{"file_path":"a.txt","old_string":"hello","new_string":"hi"}"#)])
        }
        _ => answering("Done: a.txt now says hi."),
    })
    .await;
    let tools = Recorder::default();
    let options =
        AgentOptions { system_prompt: "You edit code.".into(), ..AgentOptions::default() };
    let mut events = Vec::new();
    let outcome = run(
        &client(&server.base),
        &tools,
        &options,
        "say hi",
        &CancellationToken::new(),
        &mut |e| events.push(e),
    )
    .await
    .unwrap();
    assert_eq!(outcome.stop, StopReason::Answered);
    assert_eq!(outcome.answer.as_deref(), Some("Done: a.txt now says hi."));
    assert_eq!(outcome.turns, 4);
    assert_eq!(outcome.usage.total_tokens, 3 * 110 + 205);
    let names: Vec<String> = tools.calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(names, ["grep", "read", "edit"]);
    let bodies = server.bodies.lock().unwrap().clone();
    // The tools are offered in a stable order, the same in every request.
    for body in &bodies {
        let offered: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(offered, ["edit", "grep", "read"]);
    }
    assert_eq!(bodies[0]["messages"][0], json!({"role": "system", "content": "You edit code."}));
    assert_eq!(bodies[0]["messages"][1], json!({"role": "user", "content": "say hi"}));
    // Each tool's text goes back as the answer to its call; the reasoning stays with its turn.
    let last = &bodies[3];
    assert_eq!(
        tool_messages(last),
        [
            ("call_0".to_owned(), r#"grep result for {"pattern":"hello"}"#.to_owned()),
            ("call_0".to_owned(), r#"read result for {"file_path":"a.txt"}"#.to_owned()),
            (
                "call_0".to_owned(),
                r#"edit result for {"file_path":"a.txt","old_string":"hello","new_string":"hi"}"#
                    .to_owned()
            ),
        ]
    );
    assert!(
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .all(|m| m["reasoning_content"] == "thinking")
    );
    assert_eq!(events.iter().filter(|e| matches!(e, AgentEvent::Usage(_))).count(), 4);
}

#[tokio::test]
async fn read_only_calls_overlap_while_an_edit_waits() {
    let server = server(|n, _| match n {
        0 => calling(&[
            ("read", r#"{"file_path":"a"}"#),
            ("read", r#"{"file_path":"b"}"#),
            ("edit", r#"{"file_path":"c"}"#),
            ("read", r#"{"file_path":"d"}"#),
        ]),
        _ => answering("ok"),
    })
    .await;
    let tools = Recorder::default();
    let outcome = run_task(&server.base, &tools, &AgentOptions::default(), "look").await;
    assert_eq!(outcome.stop, StopReason::Answered);
    let calls = tools.calls.lock().unwrap().clone();
    let find = |path: &str| calls.iter().find(|c| c.1["file_path"] == path).unwrap().clone();
    let (a, b, c, d) = (find("a"), find("b"), find("c"), find("d"));
    assert!(a.2 < b.3 && b.2 < a.3, "the two reads overlap");
    assert!(c.2 >= a.3 && c.2 >= b.3, "the edit starts after both reads ended");
    assert!(d.2 >= c.3, "the read after the edit waits for it");
    // Answers go back in the model's order whatever order the calls finished in.
    let body = server.bodies.lock().unwrap()[1].clone();
    let ids: Vec<String> = tool_messages(&body).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["call_0", "call_1", "call_2", "call_3"]);
}

#[tokio::test]
async fn malformed_arguments_are_answered_as_the_tools_failure() {
    let server = server(|n, _| match n {
        0 => calling(&[("read", r#"{"file_path": "a.txt""#), ("grep", "")]),
        _ => answering("I will fix my call."),
    })
    .await;
    let tools = Recorder::default();
    let mut events = Vec::new();
    let outcome = run(
        &client(&server.base),
        &tools,
        &AgentOptions::default(),
        "read",
        &CancellationToken::new(),
        &mut |e| events.push(e),
    )
    .await
    .unwrap();
    assert_eq!(outcome.stop, StopReason::Answered);
    let body = server.bodies.lock().unwrap()[1].clone();
    assert_eq!(
        tool_messages(&body),
        [
            (
                "call_0".to_owned(),
                "Error: invalid arguments: \"arguments\" must be an object".to_owned()
            ),
            ("call_1".to_owned(), "grep result for {}".to_owned()),
        ]
    );
    assert!(events.contains(&AgentEvent::ToolFinished {
        call_id: "call_0".into(),
        name: "read".into(),
        is_error: true
    }));
}

#[tokio::test]
async fn turns_and_tokens_are_bounded() {
    let server = server(|_, _| calling(&[("grep", "{}")])).await;
    let tools = Recorder::default();
    let options = AgentOptions { max_turns: 3, ..AgentOptions::default() };
    let outcome = run_task(&server.base, &tools, &options, "loop").await;
    assert_eq!((outcome.stop, outcome.turns), (StopReason::TurnLimit, 3));
    assert_eq!(tools.calls.lock().unwrap().len(), 3);

    let options = AgentOptions { token_budget: Some(200), ..AgentOptions::default() };
    let outcome = run_task(&server.base, &tools, &options, "loop").await;
    assert_eq!((outcome.stop, outcome.turns), (StopReason::TokenBudget, 2), "110 + 110 ≥ 200");

    // Each turn: 50 fresh prompt tokens at $2/M, 50 cached at $0.50/M, 10 completion at $10/M.
    let price = Price { input: 2.0, output: 10.0, cached_input: Some(0.5) };
    let options = AgentOptions {
        cost_budget: Some(CostBudget { usd: 0.0005, price }),
        ..AgentOptions::default()
    };
    let outcome = run_task(&server.base, &tools, &options, "loop").await;
    assert_eq!(
        (outcome.stop, outcome.turns),
        (StopReason::CostBudget, 3),
        "$0.000225 a turn: two turns stay under $0.0005, the third reaches it"
    );
    assert_eq!(outcome.stop.as_str(), "cost-budget");
}

#[tokio::test]
async fn cancellation_during_a_call_aborts_the_calls_not_started() {
    let server = server(|_, _| calling(&[("edit", r#"{"file_path":"a"}"#), ("grep", "{}")])).await;
    let tools = Recorder::default();
    let cancel = CancellationToken::new();
    *tools.cancel_on.lock().unwrap() = Some(("edit".to_owned(), cancel.clone()));
    let outcome =
        run(&client(&server.base), &tools, &AgentOptions::default(), "go", &cancel, &mut |_| {})
            .await
            .unwrap();
    assert_eq!(outcome.stop, StopReason::Cancelled);
    let names: Vec<String> = tools.calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(names, ["edit"], "the started call finished; grep never started");
    let answers: Vec<&str> = outcome
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_ref().and(m.content.as_deref()))
        .collect();
    assert_eq!(answers, [r#"edit result for {"file_path":"a"}"#, ABORTED_BEFORE_DISPATCH]);
    assert_eq!(server.bodies.lock().unwrap().len(), 1, "no model request after the cancel");
}
