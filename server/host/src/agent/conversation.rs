//! A run's conversation rebuilt from the session log's `agent/*` records: what the model would
//! see next when a chat continues after the editor restarted the server, or a session is loaded.

use serde_json::Value;
use std::collections::HashMap;
use toolhost_agent::model::Message;
use toolhost_protocol::session_log::{AgentCompactionEvent, AgentRunEvent};

/// The conversation run `run_id` of the session logged at `log` left, rebuilt from its `agent/*`
/// records (see [`conversation_in`]). `None` when the log has no such run.
pub fn conversation_from_log(
    log: &std::path::Path,
    run_id: &str,
) -> Result<Option<Vec<Message>>, toolhost_session::SessionError> {
    let view = toolhost_session::read_session(log)?;
    let records: Vec<(&str, &Value)> =
        view.conversation.iter().map(|(_, kind, data)| (kind.as_str(), data)).collect();
    Ok(conversation_in(&records, run_id))
}

/// Every conversation record (`agent/*`) of the log at `log` as (kind, data), in log order.
pub fn records_from_log(
    log: &std::path::Path,
) -> Result<Vec<(String, Value)>, toolhost_session::SessionError> {
    let view = toolhost_session::read_session(log)?;
    Ok(view.conversation.into_iter().map(|(_, kind, data)| (kind, data)).collect())
}

/// The conversation run `run_id` left, from a session's `agent/*` records (kind, data) in log
/// order: the runs it continued (oldest first), then its own — as the model would see it next.
/// `None` when there is no such run.
pub fn conversation_in(records: &[(&str, &Value)], run_id: &str) -> Option<Vec<Message>> {
    use toolhost_agent::log::{self as records_log, Replayed};
    use toolhost_protocol::session_log::AgentMessageEvent;
    // Which run continued which.
    let mut continues: HashMap<String, Option<String>> = HashMap::new();
    for (kind, data) in records {
        if *kind == records_log::AGENT_RUN
            && let Ok(run) = serde_json::from_value::<AgentRunEvent>((*data).clone())
        {
            continues.insert(run.run_id, run.continues);
        }
    }
    if !continues.contains_key(run_id) {
        return None;
    }
    let mut chain = vec![run_id.to_owned()];
    while let Some(Some(earlier)) = chain.last().and_then(|r| continues.get(r)) {
        if chain.contains(earlier) {
            break;
        }
        chain.push(earlier.clone());
    }
    let mut messages = Vec::new();
    let mut compactions = Vec::new();
    for (kind, data) in records {
        let run = data.get("runId").and_then(Value::as_str).unwrap_or_default();
        if !chain.iter().any(|r| r == run) {
            continue;
        }
        if *kind == records_log::AGENT_MESSAGE
            && let Ok(message) = serde_json::from_value::<AgentMessageEvent>((*data).clone())
        {
            messages.push(Some(message));
            compactions.push(None);
        } else if *kind == records_log::AGENT_COMPACTION
            && let Ok(compaction) = serde_json::from_value::<AgentCompactionEvent>((*data).clone())
        {
            messages.push(None);
            compactions.push(Some(compaction));
        }
    }
    let replayed = messages.iter().zip(&compactions).filter_map(|pair| match pair {
        (Some(message), _) => Some(Replayed::Message(message)),
        (None, Some(compaction)) => Some(Replayed::Compaction(compaction)),
        (None, None) => None,
    });
    Some(records_log::rebuild(replayed))
}
