//! The conversation as session-log records: each message the loop adds becomes an
//! `agent/message` record, and a chat resumed from the log gets its conversation back from
//! those records (with any compaction applied), so the model sees what it saw before.

use crate::agent::SUMMARY_HEADING;
use crate::model::{FunctionCall, Message, Role, ToolCall, Usage};
use toolhost_protocol::session_log::{
    AgentCompactionEvent, AgentMessageEvent, AgentTokens, AgentToolCall,
};

/// Event type names of the agent's records (all written `ignorable`: a reader that does not
/// know them skips them).
pub const AGENT_RUN: &str = "agent/run";
pub const AGENT_MESSAGE: &str = "agent/message";
pub const AGENT_USAGE: &str = "agent/usage";
pub const AGENT_COMPACTION: &str = "agent/compaction";
pub const AGENT_END: &str = "agent/end";

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The record of `message` in run `run_id`; `call_id` names the card of a tool's answer.
pub fn message_record(run_id: &str, message: &Message, call_id: Option<&str>) -> AgentMessageEvent {
    AgentMessageEvent {
        run_id: run_id.to_owned(),
        role: role_name(message.role).to_owned(),
        content: message.content.clone(),
        reasoning: message.reasoning_content.clone(),
        tool_calls: message
            .tool_calls
            .iter()
            .map(|c| AgentToolCall {
                id: c.id.clone(),
                name: c.function.name.clone(),
                arguments: c.function.arguments.clone(),
            })
            .collect(),
        tool_call_id: message.tool_call_id.clone(),
        call_id: call_id.map(str::to_owned),
    }
}

/// The message a record holds (`None` for an unknown role).
pub fn message_from_record(record: &AgentMessageEvent) -> Option<Message> {
    let role = match record.role.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => return None,
    };
    Some(Message {
        role,
        content: record.content.clone(),
        reasoning_content: record.reasoning.clone(),
        tool_calls: record
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                kind: "function".to_owned(),
                function: FunctionCall { name: c.name.clone(), arguments: c.arguments.clone() },
            })
            .collect(),
        tool_call_id: record.tool_call_id.clone(),
    })
}

/// Token counts as the log keeps them.
pub fn tokens(usage: &Usage) -> AgentTokens {
    AgentTokens {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
        cached_tokens: usage.cached_tokens,
    }
}

/// One record of a conversation being rebuilt, in log order.
pub enum Replayed<'a> {
    Message(&'a AgentMessageEvent),
    Compaction(&'a AgentCompactionEvent),
}

/// The conversation the records leave, as the model would see it next: messages in order, a
/// compaction applied where it happened (pruned outputs stay whole here: pruning is redone
/// when needed; a summary replaces what followed the first user message).
pub fn rebuild<'a>(records: impl IntoIterator<Item = Replayed<'a>>) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    for record in records {
        match record {
            Replayed::Message(record) => messages.extend(message_from_record(record)),
            Replayed::Compaction(AgentCompactionEvent { summary: Some(summary), .. }) => {
                let head = messages
                    .iter()
                    .position(|m| m.role == Role::User)
                    .map_or(messages.len(), |i| i + 1);
                messages.truncate(head);
                messages.push(Message::user(format!("{SUMMARY_HEADING}\n\n{summary}")));
            }
            Replayed::Compaction(_) => {}
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_survives_its_record() {
        let message = Message {
            role: Role::Assistant,
            content: None,
            reasoning_content: Some("because".into()),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                kind: "function".into(),
                function: FunctionCall { name: "read".into(), arguments: "{\"a\"".into() },
            }],
            tool_call_id: None,
        };
        let record = message_record("run", &message, None);
        assert_eq!(message_from_record(&record), Some(message));
    }

    #[test]
    fn a_summary_replaces_what_followed_the_first_prompt() {
        let records = [
            message_record("r", &Message::system("sys"), None),
            message_record("r", &Message::user("task"), None),
            message_record("r", &Message::tool("c1", "long output"), Some("call_1")),
        ];
        let compaction = AgentCompactionEvent {
            run_id: "r".into(),
            tokens_before: 10,
            tokens_after: 2,
            pruned: 0,
            summary: Some("did things".into()),
        };
        let after = message_record("r", &Message::user("next"), None);
        let rebuilt = rebuild(
            records
                .iter()
                .map(Replayed::Message)
                .chain([Replayed::Compaction(&compaction), Replayed::Message(&after)]),
        );
        let texts: Vec<&str> = rebuilt.iter().filter_map(|m| m.content.as_deref()).collect();
        assert_eq!(texts, ["sys", "task", &format!("{SUMMARY_HEADING}\n\ndid things"), "next"]);
    }
}
