//! The loop (docs/agent.md): ask the model, run the tool calls it made, answer each with the
//! tool's Native text, repeat until the model answers without tool calls or a limit is reached.
//!
//! Scheduling of one turn's calls (docs/agent.md, "Scheduling"): calls start in the model's
//! order; consecutive calls the runner classifies as concurrency-safe run together (a rolling
//! pool of `max_parallel`), any other call is a barrier that runs alone after everything before
//! it finished. Answers go back in the model's order. A call's raw `arguments` text is parsed
//! here: empty means `{}`, text that is not JSON is passed on as a JSON string, so the registry
//! refuses it with its usual argument error and the model reads that as the tool's failure.
//! On cancellation started calls finish and every call not started is answered as aborted.

use crate::model::{Message, ModelClient, ModelError, StreamEvent, ToolCall, ToolSpec, Usage};
use futures::StreamExt;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use tokio_util::sync::CancellationToken;

/// A boxed future (the runner is a trait object).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What one tool call gave the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The Native text (a failure's text starts with `Error:`).
    pub text: String,
    pub is_error: bool,
}

/// The tools, as the binary provides them (the registry through the full pipeline: policies,
/// review, the session log and the cards).
pub trait ToolRunner: Send + Sync {
    /// The tools the model may call, in a stable order (prompt caching depends on it).
    fn tools(&self) -> Vec<ToolSpec>;
    /// Whether this call may overlap others of its turn.
    fn concurrency_safe(&self, name: &str, args: &Value) -> bool;
    /// Runs one call; `cancel` fires when the run is cancelled.
    fn call<'a>(
        &'a self,
        call_id: &'a str,
        name: &'a str,
        args: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, ToolOutcome>;
}

/// How a run is bounded.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    pub system_prompt: String,
    /// Model requests per run.
    pub max_turns: u32,
    /// Total tokens (as the server reports them) after which no new model request is made.
    pub token_budget: Option<u64>,
    /// Concurrency-safe calls of one turn that run at the same time.
    pub max_parallel: usize,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system_prompt: String::new(),
            max_turns: 50,
            token_budget: None,
            max_parallel: 10,
        }
    }
}

/// What the caller sees while a run goes.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    Model(StreamEvent),
    ToolStarted {
        call_id: String,
        name: String,
    },
    ToolFinished {
        call_id: String,
        name: String,
        is_error: bool,
    },
    /// One model request's usage.
    Usage(Usage),
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without tool calls.
    Answered,
    TurnLimit,
    TokenBudget,
    Cancelled,
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The model's last text (the answer when it answered).
    pub answer: Option<String>,
    pub stop: StopReason,
    /// Model requests made.
    pub turns: u32,
    /// Summed over the run.
    pub usage: Usage,
    /// The whole conversation, system prompt first.
    pub messages: Vec<Message>,
}

/// The text a call not started before cancellation is answered with.
pub const ABORTED_BEFORE_DISPATCH: &str = "Error: tool call aborted before dispatch";

/// A call's arguments from the model's raw text.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Runs `task` to its end.
pub async fn run(
    model: &ModelClient,
    tools: &dyn ToolRunner,
    options: &AgentOptions,
    task: &str,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<RunOutcome, ModelError> {
    let specs = tools.tools();
    let mut messages = Vec::new();
    if !options.system_prompt.is_empty() {
        messages.push(Message::system(options.system_prompt.clone()));
    }
    messages.push(Message::user(task));
    let mut usage = Usage::default();
    let mut turns = 0u32;
    let mut last_text: Option<String> = None;
    let finish =
        |stop, turns, usage, messages, answer| RunOutcome { answer, stop, turns, usage, messages };
    loop {
        if cancel.is_cancelled() {
            return Ok(finish(StopReason::Cancelled, turns, usage, messages, last_text));
        }
        if turns >= options.max_turns {
            return Ok(finish(StopReason::TurnLimit, turns, usage, messages, last_text));
        }
        if options.token_budget.is_some_and(|budget| usage.total_tokens >= budget) {
            return Ok(finish(StopReason::TokenBudget, turns, usage, messages, last_text));
        }
        turns += 1;
        let turn = match model
            .turn(&messages, &specs, cancel, &mut |event| on_event(AgentEvent::Model(event)))
            .await
        {
            Ok(turn) => turn,
            Err(ModelError::Cancelled) => {
                return Ok(finish(StopReason::Cancelled, turns, usage, messages, last_text));
            }
            Err(error) => return Err(error),
        };
        if let Some(turn_usage) = &turn.usage {
            usage.prompt_tokens += turn_usage.prompt_tokens;
            usage.completion_tokens += turn_usage.completion_tokens;
            usage.total_tokens += turn_usage.total_tokens;
            usage.cached_tokens += turn_usage.cached_tokens;
            on_event(AgentEvent::Usage(turn_usage.clone()));
        }
        last_text = turn.message.content.clone().filter(|t| !t.is_empty()).or(last_text);
        let calls = turn.message.tool_calls.clone();
        messages.push(turn.message);
        if calls.is_empty() {
            return Ok(finish(StopReason::Answered, turns, usage, messages, last_text));
        }
        let answers = run_calls(tools, options.max_parallel.max(1), &calls, cancel, on_event).await;
        for (call, answer) in calls.iter().zip(answers) {
            messages.push(Message::tool(call.id.clone(), answer.text));
        }
    }
}

/// Runs one turn's calls as the scheduling rule says; the outcomes in the calls' order.
async fn run_calls(
    tools: &dyn ToolRunner,
    max_parallel: usize,
    calls: &[ToolCall],
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Vec<ToolOutcome> {
    let parsed: Vec<Value> = calls.iter().map(|c| parse_arguments(&c.function.arguments)).collect();
    let mut outcomes = Vec::with_capacity(calls.len());
    let mut next = 0;
    while next < calls.len() {
        if cancel.is_cancelled() {
            for call in &calls[next..] {
                on_event(AgentEvent::ToolFinished {
                    call_id: call.id.clone(),
                    name: call.function.name.clone(),
                    is_error: true,
                });
                outcomes
                    .push(ToolOutcome { text: ABORTED_BEFORE_DISPATCH.to_owned(), is_error: true });
            }
            break;
        }
        // A run of consecutive concurrency-safe calls, or one call that is not.
        let mut end = next + 1;
        if tools.concurrency_safe(&calls[next].function.name, &parsed[next]) {
            while end < calls.len()
                && tools.concurrency_safe(&calls[end].function.name, &parsed[end])
            {
                end += 1;
            }
        }
        for call in &calls[next..end] {
            on_event(AgentEvent::ToolStarted {
                call_id: call.id.clone(),
                name: call.function.name.clone(),
            });
        }
        let group: Vec<ToolOutcome> =
            futures::stream::iter(calls[next..end].iter().zip(&parsed[next..end]))
                .map(|(call, args)| {
                    tools.call(&call.id, &call.function.name, args.clone(), cancel.clone())
                })
                .buffered(max_parallel)
                .collect()
                .await;
        for (call, outcome) in calls[next..end].iter().zip(group) {
            on_event(AgentEvent::ToolFinished {
                call_id: call.id.clone(),
                name: call.function.name.clone(),
                is_error: outcome.is_error,
            });
            outcomes.push(outcome);
        }
        next = end;
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_arguments_become_json_or_stay_text() {
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments("  "), json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_arguments(r#"{"a":"#), json!(r#"{"a":"#));
    }
}
