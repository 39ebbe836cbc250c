//! The model client against a scripted chat completions server on 127.0.0.1 replaying SSE
//! answers: a streamed turn with tool calls and usage, the reasoning round trip (the server
//! refuses a request whose assistant turn dropped its `reasoning_content`, as DeepSeek does),
//! 429 with `Retry-After` then success, a 500 then success, a stream that breaks then succeeds,
//! a 400 not retried, and cancellation mid-stream.
#![allow(clippy::unwrap_used)]

#[path = "support/sse.rs"]
mod sse;

use serde_json::{Value, json};
use sse::{Answer, server};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_agent::model::{
    Message, ModelClient, ModelConfig, RetryPolicy, StreamEvent, ToolSpec,
};

fn client(base: &str) -> ModelClient {
    let mut config = ModelConfig::new(base, "deepseek-v4-flash");
    config.api_key = Some("sk-test".to_owned());
    config.extra.insert("thinking".to_owned(), json!({"type": "enabled"}));
    config.retry = RetryPolicy {
        max_retries: 3,
        initial_delay: Duration::from_millis(50),
        max_delay: Duration::from_secs(2),
    };
    config.idle_timeout = Duration::from_secs(10);
    ModelClient::new(config).unwrap()
}

fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
    }
}

fn tool_turn() -> Vec<Value> {
    vec![
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "I should read it."}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"file_"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "path\":\"a.txt\"}"}}]}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}}),
    ]
}

#[tokio::test]
async fn a_streamed_turn_and_the_reasoning_round_trip() {
    let server = server(|n, body| {
        if n == 0 {
            return Answer::sse(&tool_turn());
        }
        // DeepSeek refuses a follow-up whose tool-calling assistant turn lost its reasoning.
        let assistant =
            body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant");
        if assistant.is_none_or(|m| m.get("reasoning_content").is_none()) {
            return Answer::status(400, r#"{"error":{"message":"reasoning_content is missing"}}"#);
        }
        Answer::sse(&[
            json!({"choices": [{"delta": {"content": "It says "}}]}),
            json!({"choices": [{"delta": {"content": "hello."}, "finish_reason": "stop"}]}),
        ])
    })
    .await;
    let client = client(&server.base);
    let mut messages = vec![Message::system("You help."), Message::user("What is in a.txt?")];
    let mut events = Vec::new();
    let first = client
        .turn(&messages, &[read_tool()], &CancellationToken::new(), &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(first.finish_reason, "tool_calls");
    assert_eq!(first.message.tool_calls[0].function.arguments, r#"{"file_path":"a.txt"}"#);
    assert_eq!(first.usage.as_ref().unwrap().total_tokens, 42);
    assert_eq!(
        events,
        [
            StreamEvent::Reasoning("I should read it.".into()),
            StreamEvent::ToolCallStarted { index: 0, id: "call_1".into(), name: "read".into() },
        ]
    );
    let request = server.bodies.lock().unwrap()[0].clone();
    assert_eq!(request["model"], "deepseek-v4-flash");
    assert_eq!(request["stream"], true);
    assert_eq!(request["stream_options"], json!({"include_usage": true}));
    assert_eq!(request["thinking"], json!({"type": "enabled"}));
    assert_eq!(request["tools"][0]["function"]["name"], "read");

    messages.push(first.message.clone());
    messages.push(Message::tool("call_1", "hello"));
    let second = client
        .turn(&messages, &[read_tool()], &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap();
    assert_eq!(second.message.content.as_deref(), Some("It says hello."));
    assert_eq!(second.finish_reason, "stop");
    let follow_up = server.bodies.lock().unwrap()[1].clone();
    assert_eq!(follow_up["messages"][2]["reasoning_content"], "I should read it.");
    assert_eq!(
        follow_up["messages"][3],
        json!({"role": "tool", "content": "hello", "tool_call_id": "call_1"})
    );

    // A request that drops the reasoning is refused with 400, which is not retried.
    let mut stripped = messages.clone();
    stripped[2].reasoning_content = None;
    let refused =
        client.turn(&stripped, &[], &CancellationToken::new(), &mut |_| {}).await.unwrap_err();
    assert_eq!(refused.code(), "MODEL_HTTP_ERROR");
    assert!(refused.to_string().contains("HTTP 400"), "{refused}");
    assert_eq!(server.bodies.lock().unwrap().len(), 3, "a 400 is not retried");
}

#[tokio::test]
async fn rate_limits_server_errors_and_broken_streams_are_retried() {
    let server = server(|n, _| match n {
        0 => {
            let mut answer = Answer::status(429, r#"{"error":"slow down"}"#);
            answer.headers.push(("retry-after", "1".into()));
            answer
        }
        1 => Answer::status(503, "busy"),
        2 => {
            // Half a turn, then the connection closes without [DONE].
            let mut answer = Answer::sse(&tool_turn()[..2]);
            answer.pieces.pop();
            answer
        }
        _ => Answer::sse(&tool_turn()),
    })
    .await;
    let client = client(&server.base);
    let mut events = Vec::new();
    let started = Instant::now();
    let turn = client
        .turn(&[Message::user("go")], &[read_tool()], &CancellationToken::new(), &mut |e| {
            events.push(e)
        })
        .await
        .unwrap();
    assert_eq!(turn.attempts, 4);
    assert_eq!(turn.message.tool_calls.len(), 1);
    let restarts: Vec<(u32, Duration)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Restart { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect();
    // Retry-After (1 s) wins over the 50 ms backoff; then 100 ms, 200 ms.
    assert_eq!(
        restarts,
        [
            (1, Duration::from_secs(1)),
            (2, Duration::from_millis(100)),
            (3, Duration::from_millis(200))
        ]
    );
    assert!(started.elapsed() >= Duration::from_millis(1300), "the waits were honoured");
    assert_eq!(server.bodies.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn retries_end_with_the_last_error() {
    let server = server(|_, _| Answer::status(500, "down")).await;
    let client = client(&server.base);
    let error = client
        .turn(&[Message::user("go")], &[], &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap_err();
    assert_eq!(error.code(), "MODEL_HTTP_ERROR");
    assert_eq!(error.to_string(), "the model server answered HTTP 500: down");
    assert_eq!(server.bodies.lock().unwrap().len(), 4, "the first attempt and 3 retries");
}

#[tokio::test]
async fn cancellation_stops_a_turn_mid_stream() {
    let server = server(|_, _| {
        let mut answer = Answer::sse(&[
            json!({"choices": [{"delta": {"content": "Once upon"}}]}),
            json!({"choices": [{"delta": {"content": " a time"}, "finish_reason": "stop"}]}),
        ]);
        answer.pieces[1].0 = Duration::from_secs(30);
        answer
    })
    .await;
    let client = client(&server.base);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let started = Instant::now();
    let error = client
        .turn(&[Message::user("tell")], &[], &cancel, &mut |event| {
            if event == StreamEvent::Text("Once upon".into()) {
                trigger.cancel();
            }
        })
        .await
        .unwrap_err();
    assert_eq!(error.code(), "MODEL_CANCELLED");
    assert!(started.elapsed() < Duration::from_secs(10), "cancelled at once");
}
