//! A scripted model API on 127.0.0.1 for the real-agent tests (the one thing that cannot exist
//! here is the model): a minimal HTTP/1.1 server that records every request and answers each
//! with what the test's script returns — usually a server-sent-event stream in the shape of the
//! Anthropic Messages or OpenAI Responses API. One request per connection (`Connection: close`).
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One recorded request.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the script answers.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(value: &Value) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    /// `events` as a server-sent-event stream (`event:` lines when a name is given).
    pub fn sse(events: &[(Option<&str>, Value)]) -> Reply {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(name) = name {
                body.push_str(&format!("event: {name}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Reply { status: 200, content_type: "text/event-stream", body: body.into_bytes() }
    }

    pub fn not_found() -> Reply {
        Reply { status: 404, content_type: "application/json", body: b"{}".to_vec() }
    }
}

pub type Script = dyn Fn(&Recorded) -> Reply + Send + Sync;

pub struct ModelServer {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl ModelServer {
    /// Listens on 127.0.0.1 (a free port) and answers with `script` until the process ends.
    pub fn start(script: Box<Script>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let script: Arc<Script> = Arc::from(script);
        let log = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                std::thread::spawn(move || {
                    let _ = serve(stream, &log, &*script);
                });
            }
        });
        ModelServer { port, requests }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Recorded>>, script: &Script) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let find = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if size == 0 {
                let mut end = String::new();
                reader.read_line(&mut end)?;
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            chunk.truncate(size);
            body.extend(chunk);
        }
    } else if let Some(len) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    }
    if find("content-encoding").is_some_and(|v| v.eq_ignore_ascii_case("zstd")) {
        // Not decoded here; recorded as sent.
    }
    let request = Recorded { method, path, headers, body };
    let reply = script(&request);
    log.lock().unwrap().push(request);
    let mut stream = stream;
    let reason = if reply.status == 200 { "OK" } else { "Error" };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    )?;
    stream.write_all(&reply.body)?;
    stream.flush()
}

// ---------------------------------------------------------------- Anthropic Messages

/// The Anthropic Messages stream of one assistant turn.
pub fn anthropic_turn(block: Value, stop_reason: &str) -> Reply {
    let start = json!({"type": "message_start", "message": {
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}});
    let (opening, delta) = match block["type"].as_str() {
        Some("tool_use") => (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        ),
        _ => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        ),
    };
    Reply::sse(&[
        (Some("message_start"), start),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": opening}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": 5}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])
}

/// How many tool results the conversation holds so far.
pub fn anthropic_tool_results(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .count()
}

// ---------------------------------------------------------------- OpenAI Responses

/// The OpenAI Responses stream of one output item.
pub fn responses_stream(item: Value) -> Reply {
    Reply::sse(&[
        (
            Some("response.created"),
            json!({"type": "response.created", "response": {"id": "resp_scripted"}}),
        ),
        (
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "item": item}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": {"id": "resp_scripted", "usage": {
                "input_tokens": 10, "input_tokens_details": null, "output_tokens": 5,
                "output_tokens_details": null, "total_tokens": 15}}}),
        ),
    ])
}

/// The function call outputs of the conversation so far.
pub fn codex_outputs(body: &Value) -> Vec<Value> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .cloned()
        .collect()
}
