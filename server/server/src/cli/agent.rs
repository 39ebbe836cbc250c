//! `toolhost agent "<task>"`: one run of toolhost's own agent in this process, headless. The
//! answer streams to stdout and each call's card is a line on stderr; with `--json` every event
//! is a JSON line on stdout instead (for scripts and CI). Ctrl-C cancels the run (calls already
//! started finish; the others are answered as aborted), and the exit code says how it ended: 0
//! answered (or recorded its structured value), 1 stopped before that or the model failed.

use crate::agent::{self as own_agent, AgentSettings, RunRequest, RunUpdate};
use crate::host::Host;
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use toolhost_agent::agent::{AgentEvent, StopReason};
use toolhost_agent::model::StreamEvent;
use toolhost_contract::CancellationToken;
use toolhost_protocol::card::CardStatus;

fn print_line(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

pub async fn run_headless(host: &Host, settings: AgentSettings, task: &str, json: bool) -> u8 {
    if let Some(name) = settings.missing_key() {
        eprintln!("toolhost: warning: {name} is not set: the model request is sent without a key");
    }
    if json {
        print_line(
            &json!({
                "type": "start", "sessionId": host.session_id(), "model": settings.model,
                "mode": settings.mode.as_str(),
            })
            .to_string(),
        );
    }
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    let interrupt = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("toolhost: stopping the run (Ctrl-C)");
            on_interrupt.cancel();
        }
    });
    // Whether the last text written to stdout ended its line.
    let open_line = Arc::new(Mutex::new(false));
    let text_line = Arc::clone(&open_line);
    let mut on_event = move |event: &AgentEvent| {
        if json {
            if let Some(line) = own_agent::event_json(event) {
                print_line(&line.to_string());
            }
            return;
        }
        match event {
            AgentEvent::Model(StreamEvent::Text(text)) => {
                let mut stdout = std::io::stdout().lock();
                let _ = write!(stdout, "{text}");
                let _ = stdout.flush();
                if let Ok(mut open) = text_line.lock() {
                    *open = !text.ends_with('\n');
                }
            }
            AgentEvent::Model(StreamEvent::Restart { attempt, delay, reason }) => eprintln!(
                "toolhost: model request failed ({reason}); retry {attempt} in {} ms",
                delay.as_millis()
            ),
            AgentEvent::Compacted(c) => eprintln!(
                "toolhost: conversation compacted ({} → {} tokens{}{})",
                c.tokens_before,
                c.tokens_after,
                if c.pruned > 0 { format!(", {} outputs pruned", c.pruned) } else { String::new() },
                if c.summary.is_some() { ", summarized" } else { "" },
            ),
            _ => {}
        }
    };
    let card_line = Arc::clone(&open_line);
    let on_update = move |update: RunUpdate| {
        if json {
            print_line(&own_agent::update_json(&update).to_string());
            return;
        }
        // A card starts on a line of its own.
        if let Ok(mut open) = card_line.lock()
            && *open
        {
            print_line("");
            *open = false;
        }
        match update {
            RunUpdate::CallStarted { card } => eprintln!("→ {}", card.title),
            RunUpdate::CallFinished { card, text, .. } => match card.status {
                CardStatus::Failed => {
                    let first = text.lines().next().unwrap_or_default();
                    eprintln!("✗ {}: {first}", card.title);
                }
                _ => eprintln!("✓ {}", card.title),
            },
        }
    };
    let request = RunRequest {
        settings: settings.clone(),
        prompt: task.to_owned(),
        history: None,
        caller: own_agent::CALLER.to_owned(),
        run_id: None,
        scope: None,
        parent: None,
        mode: None,
    };
    let report = own_agent::run(host, request, &cancel, &mut on_event, on_update).await;
    interrupt.abort();
    if json {
        print_line(&own_agent::end_json(&report, host.session_id()).to_string());
        return report.exit_code();
    }
    if open_line.lock().is_ok_and(|open| *open) {
        print_line("");
    }
    match &report.outcome {
        Ok(outcome) => {
            if let Some(value) = &report.structured {
                print_line(&serde_json::to_string_pretty(value).unwrap_or_default());
            }
            let why = match outcome.stop {
                StopReason::Answered | StopReason::Structured => None,
                StopReason::TurnLimit => Some(format!("the turn limit ({} turns)", outcome.turns)),
                StopReason::TokenBudget => Some("the token budget".to_owned()),
                StopReason::CostBudget => Some("the cost budget".to_owned()),
                StopReason::Cancelled => Some("cancellation".to_owned()),
            };
            if let Some(why) = why {
                eprintln!("toolhost: the run stopped at {why} before an answer");
            }
            eprintln!(
                "toolhost: {} turns, {}",
                outcome.turns,
                own_agent::usage_line(&outcome.usage, report.cost)
            );
        }
        Err(err) => eprintln!("toolhost: the model failed: {} ({})", err, err.code()),
    }
    report.exit_code()
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
                own_agent::usage_line(&usage, cost)
            ))
        }
        _ => None,
    }
}
