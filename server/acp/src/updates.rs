//! toolhost's cards and agent records as ACP `session/update`s (docs/acp.md): pure functions of
//! a card (or a logged record), so a live run and a `session/load` replay show a client the same
//! tool calls.
//!
//! A card's kind picks the ACP tool kind; its hunks become one `diff` content per hunk (the
//! client draws them, Zed with its own review); a command's output is text in a console fence;
//! a todo list is the session's `plan`, not a tool call; everything else shows the Native text the
//! model got.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallId, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;
use toolhost_protocol::card::{self, Card, CardKind, CardStatus, Hunk};
use toolhost_protocol::lsp_ext::ConversationRecord;
use toolhost_protocol::session_log::{AgentEndEvent, AgentMessageEvent, AgentRunEvent};

/// Text content sent to a client is cut here (a fetched page or a long search can be far
/// larger; the model's own copy is untouched and the log keeps it all).
pub const MAX_TEXT_CONTENT: usize = 64 * 1024;

/// The ACP kind of a card's kind.
pub fn tool_kind(kind: &CardKind) -> ToolKind {
    match kind {
        CardKind::Diff => ToolKind::Edit,
        CardKind::Read => ToolKind::Read,
        CardKind::Search => ToolKind::Search,
        CardKind::Terminal => ToolKind::Execute,
        CardKind::Fetch => ToolKind::Fetch,
        CardKind::Todo => ToolKind::Think,
        CardKind::Plan => ToolKind::SwitchMode,
        CardKind::Question | CardKind::Structured | CardKind::Generic | CardKind::Other(_) => {
            ToolKind::Other
        }
    }
}

/// Whether a card is shown as the session's plan rather than as a tool call.
pub fn is_plan(card: &Card) -> bool {
    card.kind == CardKind::Todo
}

fn status(card: &Card) -> ToolCallStatus {
    match card.status {
        CardStatus::Pending => ToolCallStatus::Pending,
        CardStatus::Completed => ToolCallStatus::Completed,
        CardStatus::Failed => ToolCallStatus::Failed,
    }
}

fn locations(card: &Card) -> Vec<ToolCallLocation> {
    card.locations
        .iter()
        .map(|l| {
            let line = u32::try_from(l.line).ok().filter(|line| *line > 0);
            ToolCallLocation::new(&l.path).line(line)
        })
        .collect()
}

/// Text content, cut at [`MAX_TEXT_CONTENT`] on a character boundary.
pub fn text(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(clip(text))))
}

fn clip(text: &str) -> String {
    if text.len() <= MAX_TEXT_CONTENT {
        return text.to_owned();
    }
    let mut end = MAX_TEXT_CONTENT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more bytes not shown]", &text[..end], text.len() - end)
}

/// One hunk as the old and new text of the lines it covers; no old text for a hunk that only
/// adds (a new file).
pub fn hunk_diff(root: &str, hunk: &Hunk) -> Diff {
    let side = |ops: [&str; 2]| {
        hunk.lines
            .iter()
            .filter(|l| ops.contains(&l.op.as_str()))
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let old =
        (hunk.old_lines > 0 || hunk.lines.iter().any(|l| l.op == "-")).then(|| side([" ", "-"]));
    Diff::new(card::absolute_path(root, &hunk.path), side([" ", "+"])).old_text(old)
}

/// A command's output as the client shows it: the command, its output and how it ended.
fn terminal_text(card: &Card) -> Option<String> {
    let view = card.terminal.as_ref()?;
    let mut out = format!("```console\n$ {}\n{}", view.command, view.output);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("```\n");
    if view.timed_out {
        out.push_str("timed out\n");
    }
    match (&view.signal, view.exit_code) {
        (Some(signal), _) => out.push_str(&format!("killed by {signal}")),
        (None, Some(code)) => out.push_str(&format!("exit code {code}")),
        (None, None) => {}
    }
    Some(out)
}

/// What a card shows inside its tool call.
pub fn content(root: &str, card: &Card) -> Vec<ToolCallContent> {
    if let Some(hunks) = card.hunks.as_ref().filter(|h| !h.is_empty()) {
        let mut content: Vec<ToolCallContent> =
            hunks.iter().map(|h| ToolCallContent::from(hunk_diff(root, h))).collect();
        if card.status == CardStatus::Failed && !card.text.is_empty() {
            content.push(text(&card.text));
        }
        return content;
    }
    if card.status == CardStatus::Pending {
        return match (&card.kind, &card.data) {
            (CardKind::Plan, Some(data)) => {
                plan_text(data).map(|p| vec![text(&p)]).unwrap_or_default()
            }
            _ => Vec::new(),
        };
    }
    if card.status == CardStatus::Completed {
        match card.kind {
            // The location says what was read; the client opens the file itself.
            CardKind::Read => return Vec::new(),
            CardKind::Terminal => {
                if let Some(out) = terminal_text(card) {
                    return vec![text(&out)];
                }
            }
            _ => {}
        }
    }
    if card.text.is_empty() { Vec::new() } else { vec![text(&card.text)] }
}

fn plan_text(data: &Value) -> Option<String> {
    data.get("plan").and_then(Value::as_str).map(str::to_owned)
}

/// The tool call a started call shows (its pending card: the proposed diff, where it points).
pub fn started(root: &str, card: &Card) -> ToolCall {
    ToolCall::new(ToolCallId::new(card.call_id.as_str()), card.title.clone())
        .kind(tool_kind(&card.kind))
        .status(ToolCallStatus::Pending)
        .content(content(root, card))
        .locations(locations(card))
        .meta(toolhost_meta(card))
}

/// `_meta.toolhost` of a card: `parentCallId` of a call made under another (a program's nested
/// call, a workflow's agent), its `group` (`{phase?, label?}`: a workflow child's phase and label)
/// and, once known, its `usage` (`{tokens, cost?}`), so a client that knows them can draw the
/// call inside its parent's, grouped by phase; others show it as a call.
fn toolhost_meta(card: &Card) -> Option<serde_json::Map<String, serde_json::Value>> {
    let mut toolhost = serde_json::Map::new();
    if let Some(parent) = &card.parent_call_id {
        toolhost.insert("parentCallId".to_owned(), serde_json::json!(parent));
    }
    if let Some(group) = card.group.as_ref().and_then(|g| serde_json::to_value(g).ok()) {
        toolhost.insert("group".to_owned(), group);
    }
    if let Some(usage) = card.usage.as_ref().and_then(|u| serde_json::to_value(u).ok()) {
        toolhost.insert("usage".to_owned(), usage);
    }
    if toolhost.is_empty() {
        return None;
    }
    let mut meta = serde_json::Map::new();
    meta.insert("toolhost".to_owned(), serde_json::Value::Object(toolhost));
    Some(meta)
}

/// The update a finished call sends: its status and final content.
pub fn finished(root: &str, card: &Card) -> ToolCallUpdate {
    ToolCallUpdate::new(
        ToolCallId::new(card.call_id.as_str()),
        ToolCallUpdateFields::new()
            .status(status(card))
            .title(card.title.clone())
            .content(content(root, card))
            .locations(locations(card))
            .raw_output(card.data.clone()),
    )
    .meta(toolhost_meta(card))
}

/// The whole tool call of a finished card (a replay).
pub fn replayed(root: &str, card: &Card) -> ToolCall {
    ToolCall::new(ToolCallId::new(card.call_id.as_str()), card.title.clone())
        .kind(tool_kind(&card.kind))
        .status(status(card))
        .content(content(root, card))
        .locations(locations(card))
        .raw_output(card.data.clone())
        .meta(toolhost_meta(card))
}

/// The session's plan from a todo card (`todo_write`'s list).
pub fn plan(card: &Card) -> Option<Plan> {
    let todos = card.data.as_ref()?.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|todo| {
            let content = todo.get("content")?.as_str()?;
            let status = match todo.get("status")?.as_str()? {
                "completed" => PlanEntryStatus::Completed,
                "in_progress" => PlanEntryStatus::InProgress,
                _ => PlanEntryStatus::Pending,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect();
    Some(Plan::new(entries))
}

/// The plan a finished todo card sets (a todo call that failed has none: it shows as a call).
fn finished_plan(card: &Card) -> Option<Plan> {
    (is_plan(card) && card.status == CardStatus::Completed).then(|| plan(card)).flatten()
}

/// What a finished call sends: the plan it set, else its tool call's last update — or, for a
/// todo call that set no plan (never announced as a call when it started), the whole call.
pub fn finished_update(root: &str, card: &Card) -> SessionUpdate {
    match finished_plan(card) {
        Some(plan) => SessionUpdate::Plan(plan),
        None if is_plan(card) => SessionUpdate::ToolCall(replayed(root, card)),
        None => SessionUpdate::ToolCallUpdate(finished(root, card)),
    }
}

/// Context used and the window's size, with the session's cost so far when prices are known.
pub fn usage(used: u64, size: u64, cost: Option<f64>) -> SessionUpdate {
    SessionUpdate::UsageUpdate(UsageUpdate::new(used, size).cost(cost.map(|c| Cost::new(c, "USD"))))
}

pub fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text.into()))
}

pub fn agent_thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text.into()))
}

/// What a `session/load` shows: the conversation's records and the cards, in the order they
/// were made. Subagents' conversations stay inside their `subagent` call; the system prompt and
/// tool results (the cards show those) are not repeated.
pub fn replay(
    root: &str,
    cards: &[Card],
    records: &[ConversationRecord],
    context_size: u64,
) -> Vec<SessionUpdate> {
    let child_runs: std::collections::HashSet<String> = records
        .iter()
        .filter(|r| r.kind == "agent/run")
        .filter_map(|r| serde_json::from_value::<AgentRunEvent>(r.data.clone()).ok())
        .filter(|run| run.parent_call_id.is_some())
        .map(|run| run.run_id)
        .collect();
    let mut cost = 0.0;
    let mut priced = false;
    let mut record_updates = |record: &ConversationRecord, out: &mut Vec<SessionUpdate>| {
        let run = record.data.get("runId").and_then(Value::as_str).unwrap_or_default();
        if child_runs.contains(run) {
            return;
        }
        match record.kind.as_str() {
            "agent/message" => {
                let Ok(message) = serde_json::from_value::<AgentMessageEvent>(record.data.clone())
                else {
                    return;
                };
                match message.role.as_str() {
                    "user" => {
                        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
                            out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                                text.into(),
                            )));
                        }
                    }
                    "assistant" => {
                        if let Some(reasoning) = message.reasoning.filter(|t| !t.is_empty()) {
                            out.push(agent_thought(&reasoning));
                        }
                        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
                            out.push(agent_text(&text));
                        }
                    }
                    _ => {}
                }
            }
            "agent/usage" => {
                let count = |name: &str| record.data.get(name).and_then(Value::as_u64).unwrap_or(0);
                if let Some(c) = record.data.get("cost").and_then(Value::as_f64) {
                    cost += c;
                    priced = true;
                }
                out.push(usage(
                    count("promptTokens") + count("completionTokens"),
                    context_size,
                    priced.then_some(cost),
                ));
            }
            "agent/end" => {
                if let Ok(end) = serde_json::from_value::<AgentEndEvent>(record.data.clone())
                    && let Some(error) = end.error
                {
                    out.push(agent_text(&format!("\n\n(the run failed: {error})")));
                }
            }
            _ => {}
        }
    };
    let mut out = Vec::new();
    for record in records.iter().filter(|r| r.after_call.is_none()) {
        record_updates(record, &mut out);
    }
    for card in cards {
        out.push(match finished_plan(card) {
            Some(plan) => SessionUpdate::Plan(plan),
            None => SessionUpdate::ToolCall(replayed(root, card)),
        });
        for record in records.iter().filter(|r| r.after_call.as_deref() == Some(&card.call_id)) {
            record_updates(record, &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_protocol::card::{CardLocation, HunkLine, TerminalView};

    fn card(kind: CardKind, status: CardStatus) -> Card {
        Card {
            call_id: "call_1".into(),
            tool: "edit".into(),
            caller: None,
            parent_call_id: None,
            group: None,
            usage: None,
            status,
            kind,
            title: "Edit a.txt".into(),
            text: String::new(),
            rendered: String::new(),
            locations: vec![CardLocation { path: "/w/a.txt".into(), line: 2 }],
            hunks: None,
            stats: None,
            read: None,
            search: None,
            terminal: None,
            data: None,
        }
    }

    fn line(op: &str, text: &str) -> HunkLine {
        HunkLine { op: op.into(), text: text.into() }
    }

    fn wire(value: impl serde::Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }

    #[test]
    fn a_workflow_child_carries_its_parent_group_and_usage_in_meta() {
        use toolhost_protocol::card::{CardGroup, CardUsage};
        let mut child = card(CardKind::Generic, CardStatus::Pending);
        child.parent_call_id = Some("call_run".into());
        child.group = CardGroup::of(Some("draft".into()), Some("a".into()));
        let meta = |value: Value| value["_meta"]["toolhost"].clone();
        assert_eq!(
            meta(wire(started("/w", &child))),
            json!({"parentCallId": "call_run", "group": {"phase": "draft", "label": "a"}})
        );
        child.status = CardStatus::Completed;
        child.usage = Some(CardUsage { tokens: 305, cost: None });
        let done = json!({"parentCallId": "call_run", "group": {"phase": "draft", "label": "a"},
            "usage": {"tokens": 305}});
        assert_eq!(meta(wire(finished("/w", &child))), done);
        assert_eq!(meta(wire(replayed("/w", &child))), done);
        // A call of its own carries none.
        assert_eq!(
            wire(finished("/w", &card(CardKind::Read, CardStatus::Completed)))["_meta"],
            Value::Null
        );
    }

    #[test]
    fn an_edit_shows_one_diff_per_hunk_with_absolute_paths() {
        let mut edit = card(CardKind::Diff, CardStatus::Completed);
        edit.hunks = Some(vec![
            Hunk::new(
                "a.txt",
                (1, 2),
                (1, 2),
                vec![line(" ", "one"), line("-", "two"), line("+", "2")],
            ),
            Hunk::new("b/new.txt", (0, 0), (1, 1), vec![line("+", "fresh")]),
        ]);
        let update = wire(finished("/w", &edit));
        assert_eq!(update["status"], "completed");
        assert_eq!(
            update["content"],
            json!([
                {"type": "diff", "path": "/w/a.txt", "oldText": "one\ntwo", "newText": "one\n2"},
                {"type": "diff", "path": "/w/b/new.txt", "newText": "fresh"},
            ])
        );
        assert_eq!(update["locations"], json!([{"path": "/w/a.txt", "line": 2}]));
    }

    #[test]
    fn a_command_shows_its_output_and_exit_code_as_text() {
        let mut run = card(CardKind::Terminal, CardStatus::Completed);
        run.terminal = Some(TerminalView {
            command: "make".into(),
            description: None,
            cwd: None,
            output: "built\n".into(),
            exit_code: Some(2),
            signal: None,
            timed_out: false,
            spill_paths: Vec::new(),
        });
        let call = wire(replayed("/w", &run));
        assert_eq!(call["kind"], "execute");
        assert_eq!(
            call["content"][0]["content"]["text"],
            "```console\n$ make\nbuilt\n```\nexit code 2"
        );
    }

    #[test]
    fn a_todo_list_is_the_plan() {
        let mut todo = card(CardKind::Todo, CardStatus::Completed);
        todo.data = Some(json!({"todos": [
            {"content": "read", "status": "completed"},
            {"content": "edit", "status": "in_progress"},
            {"content": "test", "status": "pending"},
        ]}));
        let update = wire(finished_update("/w", &todo));
        assert_eq!(update["sessionUpdate"], "plan");
        let statuses: Vec<&str> = update["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["completed", "in_progress", "pending"]);
    }

    #[test]
    fn a_failed_call_shows_its_error_and_long_text_is_cut() {
        let mut failed = card(CardKind::Read, CardStatus::Failed);
        failed.text = "Error: no such file".into();
        assert_eq!(
            wire(finished("/w", &failed))["content"][0]["content"]["text"],
            "Error: no such file"
        );
        let long = "é".repeat(MAX_TEXT_CONTENT);
        let ToolCallContent::Content(c) = text(&long) else { panic!("text") };
        let ContentBlock::Text(t) = c.content else { panic!("text") };
        assert!(t.text.len() < long.len() && t.text.ends_with("more bytes not shown]"));
    }

    #[test]
    fn replay_interleaves_the_conversation_with_the_cards_and_skips_subagents() {
        let record = |kind: &str, data: Value, after: Option<&str>| ConversationRecord {
            seq: 0,
            kind: kind.into(),
            data,
            after_call: after.map(str::to_owned),
        };
        let records = vec![
            record("agent/run", json!({"runId": "r1", "model": "m", "mode": "ask"}), None),
            record(
                "agent/message",
                json!({"runId": "r1", "role": "system", "content": "sys"}),
                None,
            ),
            record(
                "agent/message",
                json!({"runId": "r1", "role": "user", "content": "fix it"}),
                None,
            ),
            record(
                "agent/run",
                json!({"runId": "r2", "model": "m", "mode": "ask", "parentCallId": "call_1"}),
                Some("call_1"),
            ),
            record(
                "agent/message",
                json!({"runId": "r2", "role": "assistant", "content": "child"}),
                Some("call_1"),
            ),
            record(
                "agent/message",
                json!({"runId": "r1", "role": "assistant", "content": "Done."}),
                Some("call_1"),
            ),
            record(
                "agent/usage",
                json!({"runId": "r1", "promptTokens": 10, "completionTokens": 5, "totalTokens": 15, "cost": 0.5}),
                Some("call_1"),
            ),
        ];
        let cards = vec![card(CardKind::Diff, CardStatus::Completed)];
        let kinds: Vec<Value> = replay("/w", &cards, &records, 100)
            .into_iter()
            .map(|u| {
                let u = wire(u);
                json!([
                    u["sessionUpdate"],
                    u.get("content").and_then(|c| c.get("text")).or(u.get("used"))
                ])
            })
            .collect();
        assert_eq!(
            kinds,
            [
                json!(["user_message_chunk", "fix it"]),
                json!(["tool_call", null]),
                json!(["agent_message_chunk", "Done."]),
                json!(["usage_update", 15]),
            ]
        );
    }
}
