//! A scripted chat completions server on 127.0.0.1 for the agent's tests: request n (from 0)
//! is answered with what the test's script returns for it — an SSE stream of chunks, or a
//! status — and every request body is recorded. One request per connection.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One scripted answer.
#[derive(Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// Body pieces written one after another, each after its pause.
    pub pieces: Vec<(Duration, String)>,
}

impl Answer {
    pub fn sse(chunks: &[Value]) -> Answer {
        let mut pieces: Vec<(Duration, String)> =
            chunks.iter().map(|c| (Duration::ZERO, format!("data: {c}\n\n"))).collect();
        pieces.push((Duration::ZERO, "data: [DONE]\n\n".to_owned()));
        Answer { status: 200, headers: vec![("content-type", "text/event-stream".into())], pieces }
    }

    /// A turn that calls tools (model call ids `call_0`, `call_1`, …), after some reasoning when
    /// given.
    pub fn calling(calls: &[(&str, &str)], reasoning: Option<&str>, prompt_tokens: u64) -> Answer {
        let fragments: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"index": i, "id": format!("call_{i}"), "type": "function",
                       "function": {"name": name, "arguments": args}})
            })
            .collect();
        let mut chunks = Vec::new();
        if let Some(reasoning) = reasoning {
            chunks.push(json!({"choices": [{"delta": {"reasoning_content": reasoning}}]}));
        }
        chunks.push(
            json!({"choices": [{"delta": {"tool_calls": fragments}, "finish_reason": "tool_calls"}]}),
        );
        chunks.push(json!({"choices": [], "usage": {"prompt_tokens": prompt_tokens,
            "completion_tokens": 10, "total_tokens": prompt_tokens + 10,
            "prompt_cache_hit_tokens": 50}}));
        Answer::sse(&chunks)
    }

    /// A final answer streamed in pieces, then its usage.
    pub fn answering(pieces: &[&str], prompt_tokens: u64, completion_tokens: u64) -> Answer {
        let mut chunks: Vec<Value> =
            pieces.iter().map(|p| json!({"choices": [{"delta": {"content": p}}]})).collect();
        chunks.push(json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}));
        chunks.push(json!({"choices": [], "usage": {"prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}}));
        Answer::sse(&chunks)
    }

    pub fn status(status: u16, body: &str) -> Answer {
        Answer {
            status,
            headers: vec![("content-type", "application/json".into())],
            pieces: vec![(Duration::ZERO, body.to_owned())],
        }
    }
}

/// The first user message of a request body: tells a subagent's requests from its parent's.
pub fn first_prompt(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().find(|m| m["role"] == "user");
    user.and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
}

/// The request body carries a tool result (the turn after a call).
pub fn has_tool_answer(body: &Value) -> bool {
    body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool")
}

/// The text of the last tool result in a request body.
pub fn last_tool_result(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().rfind(|m| m["role"] == "tool");
    tool.and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
}

/// Answers request n with `script(n, body)`; records every body.
pub struct Server {
    pub base: String,
    pub bodies: Arc<Mutex<Vec<Value>>>,
    /// Per answered request, in the order answers ended: when its body had arrived and when its
    /// answer was written (the loop-overhead bench measures the gaps).
    pub times: Arc<Mutex<Vec<(Instant, Instant)>>>,
}

pub async fn server(script: impl Fn(usize, &Value) -> Answer + Send + Sync + 'static) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}/v1", listener.local_addr().unwrap().port());
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
    let script = Arc::new(script);
    let seen = Arc::clone(&bodies);
    let times: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let timed = Arc::clone(&times);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (seen, script, timed) =
                (Arc::clone(&seen), Arc::clone(&script), Arc::clone(&timed));
            tokio::spawn(async move {
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                let (head_end, length) = loop {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                    if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, length);
                    }
                };
                while data.len() < head_end + length {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                }
                let arrived = Instant::now();
                let body: Value = serde_json::from_slice(&data[head_end..]).unwrap_or(Value::Null);
                let n = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(body.clone());
                    seen.len() - 1
                };
                let answer = script(n, &body);
                let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", answer.status);
                for (name, value) in &answer.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for (pause, piece) in answer.pieces {
                    tokio::time::sleep(pause).await;
                    if stream.write_all(piece.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = stream.flush().await;
                }
                let _ = stream.shutdown().await;
                timed.lock().unwrap().push((arrived, Instant::now()));
            });
        }
    });
    Server { base, bodies, times }
}
