//! The model side of the agent: an OpenAI-compatible chat completions client that streams one
//! assistant turn (docs/agent.md).
//!
//! Why a thin client of our own: "OpenAI-compatible" servers differ in small ways, and the one
//! that matters most here — DeepSeek's `reasoning_content`, which must be sent back with every
//! assistant turn that made tool calls — is not in the common client crates' types. So the
//! messages are ours (serde), the request is one `POST <base>/chat/completions` with
//! `stream: true`, and the server-sent events are read with `eventsource-stream`.
//!
//! Streaming: `choices[0].delta` carries `content`, `reasoning_content` and `tool_calls`
//! fragments; a tool call's fragments share an `index` (its `id` and `name` come first, its
//! `arguments` in pieces), so calls are accumulated by index and may interleave. Usage comes
//! with the last chunk (`stream_options.include_usage`). The stream ends with `data: [DONE]`;
//! one that ends without it (or without a finish reason) is broken.
//!
//! Retries: a 429 or 5xx answer, a connection that fails, or a stream that breaks is retried
//! with exponential backoff, honouring `Retry-After` (seconds or an HTTP date is not parsed:
//! seconds only, capped); [`StreamEvent::Restart`] tells the caller to drop what it showed of
//! the broken attempt. Other 4xx answers are not retried. Cancellation stops waiting at once,
//! mid-request or mid-stream.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the conversation, as the chat completions API takes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// Text; `null` for an assistant turn that only made tool calls.
    pub content: Option<String>,
    /// The model's reasoning (DeepSeek with thinking on). Sent back for assistant turns that
    /// made tool calls, which DeepSeek requires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Message::plain(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::plain(Role::User, text)
    }

    /// The answer to tool call `call_id`: the tool's Native text.
    pub fn tool(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message { tool_call_id: Some(call_id.into()), ..Message::plain(Role::Tool, text) }
    }

    fn plain(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: Some(text.into()),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call the model made. `arguments` is the JSON text as the model wrote it (it may not
/// parse: the loop answers such a call with a tool failure).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The input JSON Schema.
    pub parameters: Value,
}

impl ToolSpec {
    fn wire(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// Token counts of one request, as the server reported them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    /// Prompt tokens served from the provider's cache (DeepSeek's `prompt_cache_hit_tokens`,
    /// OpenAI's `prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    fn from_wire(value: &Value) -> Usage {
        let number = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64);
        Usage {
            prompt_tokens: number("/prompt_tokens").unwrap_or(0),
            completion_tokens: number("/completion_tokens").unwrap_or(0),
            total_tokens: number("/total_tokens").unwrap_or(0),
            cached_tokens: number("/prompt_cache_hit_tokens")
                .or_else(|| number("/prompt_tokens_details/cached_tokens"))
                .unwrap_or(0),
        }
    }
}

/// Prices per million tokens, for the cost shown beside the token counts and the cost budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens not served from the provider's cache.
    pub input: f64,
    pub output: f64,
    /// Prompt tokens served from the cache (the input price when absent).
    pub cached_input: Option<f64>,
}

impl Price {
    /// What `usage` costs, in the price's currency (USD).
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let fresh = usage.prompt_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + usage.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// One assistant turn, streamed to its end.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// The assistant message to append to the conversation (text, reasoning, tool calls).
    pub message: Message,
    /// `stop`, `tool_calls`, `length`, … as the server said.
    pub finish_reason: String,
    pub usage: Option<Usage>,
    /// Attempts it took (1 without retries).
    pub attempts: u32,
}

/// What the caller sees while a turn streams.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    /// A tool call's name is known (its arguments are still streaming).
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    /// The attempt failed and is retried after `delay`: drop what it showed.
    Restart {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
}

/// Backoff for retried requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            initial_delay: Duration::from_millis(1000),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `retry` (1-based): `Retry-After` when the server gave one (capped
    /// by `max_delay`), else `initial_delay · 2^(retry−1)`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
            .min(self.max_delay);
        retry_after.map_or(backoff, |after| after.min(self.max_delay))
    }
}

/// Where the model is and how to ask it.
#[derive(Clone)]
pub struct ModelConfig {
    /// The API base, e.g. `https://api.deepseek.com` or `http://127.0.0.1:11434/v1`; requests go
    /// to `<base_url>/chat/completions`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …`; never logged (the `Debug` output hides it).
    pub api_key: Option<String>,
    /// Extra top-level request fields (e.g. `{"thinking": {"type": "enabled"}}`,
    /// `temperature`), merged into every request.
    pub extra: BTreeMap<String, Value>,
    pub retry: RetryPolicy,
    /// How long to wait for the answer's headers and then between two chunks.
    pub idle_timeout: Duration,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("extra", &self.extra)
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl ModelConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ModelConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            extra: BTreeMap::new(),
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Why a turn failed. Codes are stable (`ModelError`).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model request was cancelled")]
    Cancelled,
    /// A 4xx other than 429, or a 429/5xx still failing after the retries.
    #[error("the model server answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("cannot reach the model server: {0}")]
    Transport(String),
    /// The stream broke (and kept breaking through the retries).
    #[error("the model's answer stream broke: {0}")]
    Stream(String),
    #[error("the model server sent something that is not a chat completion chunk: {0}")]
    Malformed(String),
}

impl ModelError {
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::Cancelled => "MODEL_CANCELLED",
            ModelError::Http { .. } => "MODEL_HTTP_ERROR",
            ModelError::Transport(_) => "MODEL_UNREACHABLE",
            ModelError::Stream(_) => "MODEL_STREAM_BROKEN",
            ModelError::Malformed(_) => "MODEL_MALFORMED",
        }
    }
}

/// One attempt's failure: retried or final.
enum Attempt {
    Retry { reason: String, retry_after: Option<Duration>, last: ModelError },
    Fatal(ModelError),
}

/// The chat completions client.
pub struct ModelClient {
    config: ModelConfig,
    http: reqwest::Client,
}

impl ModelClient {
    pub fn new(config: ModelConfig) -> Result<Self, ModelError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ModelError::Transport(e.to_string()))?;
        Ok(ModelClient { config, http })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The request body of one turn (tools in the given order: the caller keeps it stable, as
    /// prompt caching depends on it).
    pub fn request_body(&self, messages: &[Message], tools: &[ToolSpec]) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.iter().map(ToolSpec::wire).collect());
        }
        if let Value::Object(map) = &mut body {
            for (key, value) in &self.config.extra {
                map.insert(key.clone(), value.clone());
            }
        }
        body
    }

    /// Streams one assistant turn; `on_event` sees text, reasoning and tool-call starts as they
    /// arrive (and a restart when an attempt is retried).
    pub async fn turn(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ModelError> {
        let body = self.request_body(messages, tools);
        let mut retry = 0u32;
        loop {
            let attempt = tokio::select! {
                attempt = self.attempt(&body, on_event) => attempt,
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            match attempt {
                Ok(mut turn) => {
                    turn.attempts = retry + 1;
                    return Ok(turn);
                }
                Err(Attempt::Fatal(error)) => return Err(error),
                Err(Attempt::Retry { reason, retry_after, last }) => {
                    retry += 1;
                    if retry > self.config.retry.max_retries {
                        return Err(last);
                    }
                    let delay = self.config.retry.delay(retry, retry_after);
                    tracing::warn!(attempt = retry, ?delay, %reason, "model request retried");
                    on_event(StreamEvent::Restart { attempt: retry, delay, reason });
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => return Err(ModelError::Cancelled),
                    }
                }
            }
        }
    }

    async fn attempt(
        &self,
        body: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, Attempt> {
        let url = format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'));
        let mut request = self.http.post(&url).json(body).header("accept", "text/event-stream");
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let idle = self.config.idle_timeout;
        let response = match tokio::time::timeout(idle, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                let error = ModelError::Transport(e.to_string());
                return Err(Attempt::Retry {
                    reason: e.to_string(),
                    retry_after: None,
                    last: error,
                });
            }
            Err(_) => {
                let error = ModelError::Transport(format!("no answer within {} s", idle.as_secs()));
                return Err(Attempt::Retry {
                    reason: error.to_string(),
                    retry_after: None,
                    last: error,
                });
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = response.text().await.unwrap_or_default();
            let body: String = text.chars().take(500).collect();
            let error = ModelError::Http { status: status.as_u16(), body };
            return if status.as_u16() == 429 || status.is_server_error() {
                Err(Attempt::Retry {
                    reason: format!("HTTP {}", status.as_u16()),
                    retry_after,
                    last: error,
                })
            } else {
                Err(Attempt::Fatal(error))
            };
        }
        let mut events = response.bytes_stream().eventsource();
        let mut accumulated = Accumulator::default();
        loop {
            let next = match tokio::time::timeout(idle, events.next()).await {
                Ok(next) => next,
                Err(_) => {
                    let error = ModelError::Stream(format!("no chunk within {} s", idle.as_secs()));
                    return Err(Attempt::Retry {
                        reason: error.to_string(),
                        retry_after: None,
                        last: error,
                    });
                }
            };
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(e)) => {
                    let error = ModelError::Stream(e.to_string());
                    return Err(Attempt::Retry {
                        reason: e.to_string(),
                        retry_after: None,
                        last: error,
                    });
                }
                None => {
                    let error = ModelError::Stream("it ended before [DONE]".to_owned());
                    return Err(Attempt::Retry {
                        reason: error.to_string(),
                        retry_after: None,
                        last: error,
                    });
                }
            };
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                return accumulated.finish().map_err(Attempt::Fatal);
            }
            let chunk: Value = serde_json::from_str(data)
                .map_err(|e| Attempt::Fatal(ModelError::Malformed(format!("{e}: {data}"))))?;
            if let Some(error) = chunk.get("error") {
                // Some servers report a failure inside the stream.
                let error = ModelError::Stream(error.to_string());
                return Err(Attempt::Retry {
                    reason: error.to_string(),
                    retry_after: None,
                    last: error,
                });
            }
            accumulated.add(&chunk, on_event);
        }
    }
}

/// A tool call being assembled from its fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// The turn as its chunks arrive.
#[derive(Default)]
struct Accumulator {
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl Accumulator {
    fn add(&mut self, chunk: &Value, on_event: &mut (dyn FnMut(StreamEvent) + Send)) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage::from_wire(usage));
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else { return };
        if let Some(text) = delta.get("reasoning_content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.reasoning.push_str(text);
            on_event(StreamEvent::Reasoning(text.to_owned()));
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            on_event(StreamEvent::Text(text.to_owned()));
        }
        for (position, fragment) in
            delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            // Servers that omit `index` send one call per chunk in order.
            let index = fragment
                .get("index")
                .and_then(Value::as_u64)
                .map_or(position, |i| usize::try_from(i).unwrap_or(position));
            let call = self.calls.entry(index).or_default();
            if let Some(id) = fragment.get("id").and_then(Value::as_str)
                && !id.is_empty()
            {
                call.id = id.to_owned();
            }
            if let Some(name) = fragment.pointer("/function/name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(arguments) = fragment.pointer("/function/arguments").and_then(Value::as_str)
            {
                call.arguments.push_str(arguments);
            }
            if !call.announced && !call.name.is_empty() {
                call.announced = true;
                on_event(StreamEvent::ToolCallStarted {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
        }
    }

    fn finish(self) -> Result<Turn, ModelError> {
        let finish_reason = self.finish_reason.ok_or_else(|| {
            ModelError::Malformed("the stream ended without a finish reason".to_owned())
        })?;
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(index, call)| ToolCall {
                // A server that sends no id still gets distinct ones (the answers refer to them).
                id: if call.id.is_empty() { format!("call_{index}") } else { call.id },
                kind: "function".to_owned(),
                function: FunctionCall { name: call.name, arguments: call.arguments },
            })
            .collect();
        let message = Message {
            role: Role::Assistant,
            content: (!self.text.is_empty() || tool_calls.is_empty()).then_some(self.text),
            reasoning_content: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls,
            tool_call_id: None,
        };
        Ok(Turn { message, finish_reason, usage: self.usage, attempts: 1 })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn chunks(values: &[Value]) -> Turn {
        let mut accumulated = Accumulator::default();
        let mut seen = Vec::new();
        for value in values {
            accumulated.add(value, &mut |e| seen.push(e));
        }
        accumulated.finish().unwrap()
    }

    #[test]
    fn interleaved_tool_call_fragments_are_joined_by_index() {
        let turn = chunks(&[
            json!({"choices": [{"delta": {"reasoning_content": "look "}}]}),
            json!({"choices": [{"delta": {"reasoning_content": "first"}}]}),
            json!({"choices": [{"delta": {"tool_calls": [
                {"index": 0, "id": "a", "type": "function", "function": {"name": "grep", "arguments": ""}},
                {"index": 1, "id": "b", "type": "function", "function": {"name": "read", "arguments": "{\"file"}}
            ]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"pattern\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"arguments": "_path\":\"a\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "prompt_cache_hit_tokens": 8}}),
        ]);
        assert_eq!(turn.finish_reason, "tool_calls");
        assert_eq!(turn.message.content, None);
        assert_eq!(turn.message.reasoning_content.as_deref(), Some("look first"));
        let calls: Vec<(&str, &str, &str)> = turn
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.function.name.as_str(), c.function.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [("a", "grep", r#"{"pattern":"x"}"#), ("b", "read", r#"{"file_path":"a"}"#)]
        );
        assert_eq!(
            turn.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                total_tokens: 15,
                cached_tokens: 8
            })
        );
    }

    #[test]
    fn reasoning_is_sent_back_with_the_assistant_turn() {
        let turn = chunks(&[
            json!({"choices": [{"delta": {"reasoning_content": "because"}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        let wire = serde_json::to_value(&turn.message).unwrap();
        assert_eq!(
            wire,
            json!({"role": "assistant", "content": null, "reasoning_content": "because",
                   "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        );
        let answer = serde_json::to_value(Message::tool("c1", "text")).unwrap();
        assert_eq!(answer, json!({"role": "tool", "content": "text", "tool_call_id": "c1"}));
    }

    #[test]
    fn retry_after_wins_over_backoff_but_is_capped() {
        let policy = RetryPolicy {
            max_retries: 4,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        };
        assert_eq!(policy.delay(1, None), Duration::from_millis(100));
        assert_eq!(policy.delay(3, None), Duration::from_millis(400));
        assert_eq!(policy.delay(2, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(600))), Duration::from_secs(5));
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let mut config = ModelConfig::new("http://127.0.0.1:1", "m");
        config.api_key = Some("sk-secret".to_owned());
        assert!(!format!("{config:?}").contains("sk-secret"));
    }
}
