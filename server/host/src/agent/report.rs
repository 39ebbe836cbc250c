//! How a run is reported to people and programs: the JSON lines of `toolhost agent --json` (and
//! the editor's `toolhost/agentUpdate`), the one-line usage summary, and a logged record as
//! `toolhost replay` prints it.

use crate::agent::{RunReport, RunUpdate};
use serde_json::{Value, json};
use toolhost_agent::agent::AgentEvent;
use toolhost_agent::model::Usage;

/// The JSON line `toolhost agent --json` prints for an event of the model's stream or the run.
pub fn event_json(event: &AgentEvent) -> Option<Value> {
    use toolhost_agent::model::StreamEvent;
    Some(match event {
        AgentEvent::Model(StreamEvent::Text(text)) => json!({"type": "text", "text": text}),
        AgentEvent::Model(StreamEvent::Reasoning(text)) => {
            json!({"type": "reasoning", "text": text})
        }
        AgentEvent::Model(StreamEvent::Restart { attempt, delay, reason }) => json!({
            "type": "retry", "attempt": attempt, "delayMs": delay.as_millis() as u64,
            "reason": reason,
        }),
        AgentEvent::Usage(usage) => json!({
            "type": "usage", "promptTokens": usage.prompt_tokens,
            "completionTokens": usage.completion_tokens, "totalTokens": usage.total_tokens,
            "cachedTokens": usage.cached_tokens,
        }),
        AgentEvent::Compacted(c) => json!({
            "type": "compaction", "tokensBefore": c.tokens_before, "tokensAfter": c.tokens_after,
            "pruned": c.pruned, "summarized": c.summary.is_some(),
        }),
        AgentEvent::Model(StreamEvent::ToolCallStarted { .. })
        | AgentEvent::Message { .. }
        | AgentEvent::ToolStarted { .. }
        | AgentEvent::ToolFinished { .. } => return None,
    })
}

/// The JSON line of a card update.
pub fn update_json(update: &RunUpdate) -> Value {
    match update {
        RunUpdate::CallStarted { card } => {
            json!({"type": "toolCall", "callId": card.call_id, "name": card.tool, "card": card})
        }
        RunUpdate::CallFinished { card, text, is_error } => json!({
            "type": "toolResult", "callId": card.call_id, "name": card.tool, "isError": is_error,
            "text": text, "card": card,
        }),
    }
}

/// The closing JSON line.
pub fn end_json(report: &RunReport, session_id: Option<&str>) -> Value {
    let (turns, usage, answer) = match &report.outcome {
        Ok(o) => (o.turns, o.usage.clone(), o.answer.clone()),
        Err(_) => (0, Usage::default(), None),
    };
    let mut end = json!({
        "type": "end", "runId": report.run_id, "sessionId": session_id,
        "stop": report.stop_name(), "turns": turns, "answer": answer,
        "usage": {
            "promptTokens": usage.prompt_tokens, "completionTokens": usage.completion_tokens,
            "totalTokens": usage.total_tokens, "cachedTokens": usage.cached_tokens,
        },
    });
    if let Some(cost) = report.cost {
        end["cost"] = json!(cost);
    }
    if let Some(value) = &report.structured {
        end["structured"] = value.clone();
    }
    if let Err(err) = &report.outcome {
        end["error"] = json!({"code": err.code(), "message": err.to_string()});
    }
    end
}

/// One line of token use: `1,234 tokens in (1,000 cached), 56 out · $0.0012`.
pub fn usage_line(usage: &Usage, cost: Option<f64>) -> String {
    let mut line = format!("{} tokens in", usage.prompt_tokens);
    if usage.cached_tokens > 0 {
        line.push_str(&format!(" ({} cached)", usage.cached_tokens));
    }
    line.push_str(&format!(", {} out", usage.completion_tokens));
    if let Some(cost) = cost {
        line.push_str(&format!(" · ${cost:.4}"));
    }
    line
}

/// How `toolhost replay` prints an agent record: the prompts and answers, compactions and the
/// run's end (tool answers are the cards themselves; usage is summed at the end).
pub fn record_text(record: &toolhost_protocol::lsp_ext::ConversationRecord) -> Option<String> {
    let data = &record.data;
    let text = |key: &str| data.get(key).and_then(serde_json::Value::as_str);
    match record.kind.as_str() {
        "agent/run" => Some(format!(
            "── agent run {} · {} · {} mode",
            text("runId")?,
            text("model").unwrap_or("?"),
            text("mode").unwrap_or("?")
        )),
        "agent/message" => {
            let content = text("content").filter(|c| !c.is_empty())?;
            match text("role")? {
                "user" => Some(format!("> {}", content.replace('\n', "\n> "))),
                "assistant" => Some(content.to_owned()),
                _ => None,
            }
        }
        "agent/compaction" => Some(format!(
            "── conversation compacted ({} → {} tokens){}",
            data.get("tokensBefore")?,
            data.get("tokensAfter")?,
            if data.get("summary").is_some_and(|s| !s.is_null()) { ", summarized" } else { "" }
        )),
        "agent/end" => {
            let usage = data.get("usage")?;
            let number =
                |key: &str| usage.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
            let usage = toolhost_agent::model::Usage {
                prompt_tokens: number("promptTokens"),
                completion_tokens: number("completionTokens"),
                total_tokens: number("totalTokens"),
                cached_tokens: number("cachedTokens"),
            };
            let cost = data.get("cost").and_then(serde_json::Value::as_f64);
            Some(format!(
                "── run ended: {} after {} turns, {}",
                text("stop")?,
                data.get("turns")?,
                usage_line(&usage, cost)
            ))
        }
        _ => None,
    }
}
