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

use crate::model::{
    Message, ModelClient, ModelError, Price, Role, StreamEvent, ToolCall, ToolSpec, Usage,
};
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
    /// The host's id of the call (its card and log records), when it differs from the model's.
    pub call_id: Option<String>,
    /// The call concluded the run: `structured_output` recorded the caller's value, so no
    /// further model request is made.
    pub ends_run: bool,
}

impl ToolOutcome {
    pub fn new(text: impl Into<String>, is_error: bool) -> Self {
        ToolOutcome { text: text.into(), is_error, call_id: None, ends_run: false }
    }
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

/// When a long conversation is shortened (docs/agent.md, "Long conversations").
#[derive(Clone, Debug)]
pub struct CompactionOptions {
    /// The model's context window in tokens; `None` never compacts.
    pub context_limit: Option<u64>,
    /// The share of the window at which compaction starts.
    pub threshold: f64,
    /// Tool outputs of this many most recent assistant turns are never pruned.
    pub keep_recent_turns: usize,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions { context_limit: None, threshold: 0.8, keep_recent_turns: 2 }
    }
}

/// How a run is bounded.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    pub system_prompt: String,
    /// Model requests per run.
    pub max_turns: u32,
    /// Total tokens (as the server reports them) after which no new model request is made.
    pub token_budget: Option<u64>,
    /// The cost after which no new model request is made.
    pub cost_budget: Option<CostBudget>,
    /// Concurrency-safe calls of one turn that run at the same time.
    pub max_parallel: usize,
    pub compaction: CompactionOptions,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system_prompt: String::new(),
            max_turns: 50,
            token_budget: None,
            cost_budget: None,
            max_parallel: 10,
            compaction: CompactionOptions::default(),
        }
    }
}

/// Money a run may spend: once its usage costs `usd` at `price`, no new request is made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostBudget {
    pub usd: f64,
    pub price: Price,
}

/// What the caller sees while a run goes.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    Model(StreamEvent),
    /// A message joined the conversation (the prompt, an assistant turn, a tool's answer with
    /// the host's call id), in conversation order: what the session log records.
    Message {
        message: Message,
        call_id: Option<String>,
    },
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
    /// The conversation was shortened before a request.
    Compacted(Compaction),
}

/// One shortening of the conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// The estimated prompt tokens that triggered it.
    pub tokens_before: u64,
    /// Estimated prompt tokens afterwards.
    pub tokens_after: u64,
    /// Tool outputs replaced by a short notice.
    pub pruned: usize,
    /// The model's summary that replaced the earlier messages, when pruning was not enough.
    pub summary: Option<String>,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without tool calls.
    Answered,
    /// `structured_output` recorded the value the caller asked for.
    Structured,
    TurnLimit,
    TokenBudget,
    CostBudget,
    Cancelled,
}

impl StopReason {
    /// The name used in logs, events and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Answered => "answered",
            StopReason::Structured => "structured",
            StopReason::TurnLimit => "turn-limit",
            StopReason::TokenBudget => "token-budget",
            StopReason::CostBudget => "cost-budget",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The model's last text (the answer when it answered).
    pub answer: Option<String>,
    pub stop: StopReason,
    /// Model requests made (summaries for compaction included).
    pub turns: u32,
    /// Summed over the run.
    pub usage: Usage,
    /// The whole conversation, system prompt first (as it stands after any compaction).
    pub messages: Vec<Message>,
}

/// The text a call not started before cancellation is answered with.
pub const ABORTED_BEFORE_DISPATCH: &str = "Error: tool call aborted before dispatch";

/// What a pruned tool output is replaced with.
pub const PRUNED_OUTPUT: &str = "[This tool output was pruned to keep the conversation within \
                                 the context limit; run the tool again if you need it.]";

/// The request that asks the model to summarize the conversation before it is replaced.
pub const SUMMARY_REQUEST: &str = "The conversation is about to exceed the context limit and \
    will be replaced by your summary. Summarize it for yourself: the task, what was done (files \
    read and changed, commands run, decisions and their reasons), what is left to do, and \
    anything you must not forget. Answer with the summary only.";

/// The heading of the message that carries a summary into the shortened conversation.
pub const SUMMARY_HEADING: &str = "Summary of the conversation so far (earlier messages were \
                                   compacted to stay within the context limit):";

/// A call's arguments from the model's raw text.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Runs `task` to its end in a new conversation.
pub async fn run(
    model: &ModelClient,
    tools: &dyn ToolRunner,
    options: &AgentOptions,
    task: &str,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<RunOutcome, ModelError> {
    let mut history = Vec::new();
    if !options.system_prompt.is_empty() {
        history.push(Message::system(options.system_prompt.clone()));
    }
    continue_run(model, tools, options, history, task, cancel, on_event).await
}

/// Runs `prompt` to its end after `history` (an earlier conversation of the same chat, system
/// prompt first). Every message the run adds is reported with [`AgentEvent::Message`].
pub async fn continue_run(
    model: &ModelClient,
    tools: &dyn ToolRunner,
    options: &AgentOptions,
    history: Vec<Message>,
    prompt: &str,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<RunOutcome, ModelError> {
    let specs = tools.tools();
    let mut messages = history;
    let prompt = Message::user(prompt);
    on_event(AgentEvent::Message { message: prompt.clone(), call_id: None });
    messages.push(prompt);
    let mut usage = Usage::default();
    let mut turns = 0u32;
    let mut last_text: Option<String> = None;
    // The prompt tokens of the last request and how many messages it held: the base of the next
    // request's estimate.
    let mut measured: Option<(usize, u64)> = None;
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
        if options.cost_budget.is_some_and(|budget| budget.price.cost(&usage) >= budget.usd) {
            return Ok(finish(StopReason::CostBudget, turns, usage, messages, last_text));
        }
        if let Some(limit) = options.compaction.context_limit {
            let estimate = estimate_tokens(&messages, measured);
            if estimate as f64 >= limit as f64 * options.compaction.threshold {
                match compact(model, &mut messages, options, estimate, limit, cancel).await {
                    Ok((compaction, summary_usage)) => {
                        if let Some(summary_usage) = summary_usage {
                            turns += 1;
                            add_usage(&mut usage, &summary_usage);
                            on_event(AgentEvent::Usage(summary_usage));
                        }
                        measured = None;
                        on_event(AgentEvent::Compacted(compaction));
                    }
                    Err(ModelError::Cancelled) => {
                        return Ok(finish(
                            StopReason::Cancelled,
                            turns,
                            usage,
                            messages,
                            last_text,
                        ));
                    }
                    Err(error) => return Err(error),
                }
            }
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
            add_usage(&mut usage, turn_usage);
            measured =
                Some((messages.len(), turn_usage.prompt_tokens + turn_usage.completion_tokens));
            on_event(AgentEvent::Usage(turn_usage.clone()));
        }
        last_text = turn.message.content.clone().filter(|t| !t.is_empty()).or(last_text);
        let calls = turn.message.tool_calls.clone();
        on_event(AgentEvent::Message { message: turn.message.clone(), call_id: None });
        messages.push(turn.message);
        if calls.is_empty() {
            return Ok(finish(StopReason::Answered, turns, usage, messages, last_text));
        }
        let answers = run_calls(tools, options.max_parallel.max(1), &calls, cancel, on_event).await;
        let mut concluded = false;
        for (call, answer) in calls.iter().zip(answers) {
            concluded |= answer.ends_run && !answer.is_error;
            let message = Message::tool(call.id.clone(), answer.text);
            on_event(AgentEvent::Message { message: message.clone(), call_id: answer.call_id });
            messages.push(message);
        }
        if concluded {
            return Ok(finish(StopReason::Structured, turns, usage, messages, last_text));
        }
    }
}

fn add_usage(total: &mut Usage, turn: &Usage) {
    total.prompt_tokens += turn.prompt_tokens;
    total.completion_tokens += turn.completion_tokens;
    total.total_tokens += turn.total_tokens;
    total.cached_tokens += turn.cached_tokens;
}

/// Characters per token of the estimate for text the server has not counted yet.
const CHARS_PER_TOKEN: u64 = 4;

fn message_chars(message: &Message) -> u64 {
    let text = message.content.as_deref().map_or(0, str::len)
        + message.reasoning_content.as_deref().map_or(0, str::len)
        + message
            .tool_calls
            .iter()
            .map(|c| c.function.name.len() + c.function.arguments.len())
            .sum::<usize>();
    text as u64
}

/// The prompt tokens of the next request: what the server counted for the last one (and its
/// answer), plus an estimate of the messages added since; all estimated without a count.
pub fn estimate_tokens(messages: &[Message], measured: Option<(usize, u64)>) -> u64 {
    let (from, base) = match measured {
        Some((held, tokens)) if held <= messages.len() => (held, tokens),
        _ => (0, 0),
    };
    base + messages[from..].iter().map(message_chars).sum::<u64>().div_ceil(CHARS_PER_TOKEN)
}

/// Shortens the conversation: first the outputs of older tool calls are replaced by
/// [`PRUNED_OUTPUT`]; when that does not bring it under the threshold, the model summarizes the
/// conversation and everything after the first user message is replaced by the summary.
async fn compact(
    model: &ModelClient,
    messages: &mut Vec<Message>,
    options: &AgentOptions,
    estimate: u64,
    limit: u64,
    cancel: &CancellationToken,
) -> Result<(Compaction, Option<Usage>), ModelError> {
    let target = (limit as f64 * options.compaction.threshold) as u64;
    // Tool answers before the last `keep_recent_turns` assistant turns may go.
    let assistant_turns: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    let keep_from = assistant_turns
        .len()
        .checked_sub(options.compaction.keep_recent_turns)
        .and_then(|i| assistant_turns.get(i).copied())
        .unwrap_or(0);
    let mut pruned = 0;
    let mut saved = 0u64;
    for message in &mut messages[..keep_from] {
        if message.role == Role::Tool
            && message.content.as_deref().is_some_and(|c| c.len() > PRUNED_OUTPUT.len())
        {
            let before = message.content.as_deref().map_or(0, str::len) as u64;
            message.content = Some(PRUNED_OUTPUT.to_owned());
            saved += before - PRUNED_OUTPUT.len() as u64;
            pruned += 1;
        }
    }
    let after_pruning = estimate.saturating_sub(saved / CHARS_PER_TOKEN);
    if after_pruning < target {
        let compaction = Compaction {
            tokens_before: estimate,
            tokens_after: after_pruning,
            pruned,
            summary: None,
        };
        return Ok((compaction, None));
    }
    let mut request = messages.clone();
    request.push(Message::user(SUMMARY_REQUEST));
    let turn = model.turn(&request, &[], cancel, &mut |_| {}).await?;
    let summary = turn.message.content.unwrap_or_default();
    // The system prompt and the first user message stay; the summary stands for the rest.
    let head = messages.iter().position(|m| m.role == Role::User).map_or(messages.len(), |i| i + 1);
    messages.truncate(head);
    messages.push(Message::user(format!("{SUMMARY_HEADING}\n\n{summary}")));
    let tokens_after = estimate_tokens(messages, None);
    let compaction =
        Compaction { tokens_before: estimate, tokens_after, pruned, summary: Some(summary) };
    Ok((compaction, turn.usage))
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
                outcomes.push(ToolOutcome::new(ABORTED_BEFORE_DISPATCH, true));
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
        // Built before the await (a future does nothing until polled): a closure kept in the
        // stream would make this future not `Send` for every lifetime, and callers spawn it.
        let pending: Vec<BoxFuture<'_, ToolOutcome>> = calls[next..end]
            .iter()
            .zip(&parsed[next..end])
            .map(|(call, args)| {
                tools.call(&call.id, &call.function.name, args.clone(), cancel.clone())
            })
            .collect();
        let group: Vec<ToolOutcome> =
            futures::stream::iter(pending).buffered(max_parallel).collect().await;
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
