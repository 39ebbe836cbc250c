//! A hosted agent's tool calls as toolhost calls: each `tool_call` the agent announces starts an
//! `agent_step` call on the host (its card, its record, its changes recorded and revertible),
//! fed the files the step names as the agent streams them and, at the end, how it ended. The
//! agent's own tools write to disk themselves, so what the step names — its locations, the paths
//! in its raw input, words of a shell command that name a file — is what is looked at before
//! and after.

use super::UpdateSink;
use agent_client_protocol::v1::schema::{
    ContentBlock, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdateFields,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc, oneshot};
use toolhost_host::agent_steps::{AGENT_STEP, StepEnd, StepEvent, StepStatus};
use toolhost_host::{CallRequest, Host, Lane};

/// The most candidate paths taken from one raw input.
const MAX_CANDIDATES: usize = 64;

/// One step being recorded.
struct Step {
    /// The host call recording it.
    call_id: String,
    title: String,
    events: mpsc::UnboundedSender<StepEvent>,
    /// The step's text output so far (its `content` blocks).
    output: Vec<String>,
    /// The edits it proposes, by path: (old text, new text).
    proposals: Vec<(String, Option<String>, String)>,
}

/// The steps of one hosted session, by the agent's tool call id.
pub(crate) struct Steps {
    host: Arc<Host>,
    /// Shown on the cards as the caller.
    caller: String,
    /// Distinguishes this session's step keys from another's.
    prefix: String,
    running: Mutex<HashMap<String, Step>>,
    /// Announced calls that have not yet said what they do (see [`Steps::announced`]).
    pending: Mutex<HashMap<String, ToolCall>>,
    /// The tasks that follow each step's call to its end (and send its `toolResult`).
    following: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    sink: Mutex<Option<UpdateSink>>,
}

/// Closes a step's events when the task following its call ends.
struct CloseOnDrop {
    host: Arc<Host>,
    key: String,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.host.agent_steps().close(&self.key);
    }
}

/// How long an announced call that says nothing about itself waits for its input before its
/// card is made anyway.
const ANNOUNCED_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether a tool call says what it does: its input, its files, its content or its end.
fn telling(call: &ToolCall) -> bool {
    let input = match &call.raw_input {
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    input
        || !call.locations.is_empty()
        || !call.content.is_empty()
        || matches!(call.status, ToolCallStatus::Completed | ToolCallStatus::Failed)
}

impl Steps {
    pub(crate) fn new(host: Arc<Host>, caller: String, prefix: String) -> Self {
        Steps {
            host,
            caller,
            prefix,
            running: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            following: Mutex::new(Vec::new()),
            sink: Mutex::new(None),
        }
    }

    /// A turn begins: what git sees changed now is what the turn's steps are measured against
    /// for the changes they do not name.
    pub(crate) async fn begin_turn(&self) {
        let host = &self.host;
        host.agent_steps().begin_turn(&self.prefix, host.root(), host.workspace()).await;
    }

    /// Where the steps' `toolCall` / `toolResult` updates go (the prompt running now).
    pub(crate) fn set_sink(&self, sink: Option<UpdateSink>) {
        *self.sink.lock().unwrap_or_else(PoisonError::into_inner) = sink;
    }

    /// The host call recording the agent's tool call `id`, if it runs.
    pub(crate) fn call_of(&self, id: &str) -> Option<String> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.get(id).map(|step| step.call_id.clone())
    }

    /// The agent announced a tool call. Its step — and card — starts once the call says what
    /// it does (an agent's first announcement is often a bare "Edit", its input streamed after),
    /// when a permission request names it, or after [`ANNOUNCED_WAIT`].
    pub(crate) fn announced(self: &Arc<Self>, call: &ToolCall) {
        let id = call.tool_call_id.0.to_string();
        let known = self.running.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&id)
            || self.pending.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&id);
        if known || telling(call) {
            self.start(call);
            return;
        }
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), call.clone());
        let steps = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(ANNOUNCED_WAIT).await;
            steps.start_pending(&id);
        });
    }

    /// Starts the step of a call announced earlier, if it is still waiting.
    pub(crate) fn start_pending(self: &Arc<Self>, id: &str) {
        let call = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        if let Some(call) = call {
            self.start(&call);
        }
    }

    /// Starts the step of tool call `call` (an update when it runs already).
    pub(crate) fn start(self: &Arc<Self>, call: &ToolCall) {
        let id = call.tool_call_id.0.to_string();
        if self.running.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&id) {
            // Announced twice: the second is an update.
            let fields = ToolCallUpdateFields::new()
                .status(call.status)
                .title(call.title.clone())
                .content(call.content.clone())
                .locations(call.locations.clone());
            let fields = match &call.raw_input {
                Some(raw) => fields.raw_input(raw.clone()),
                None => fields,
            };
            self.updated(&id, &fields);
            return;
        }
        let paths = named_paths(
            self.host.root(),
            call.locations.iter().map(|l| l.path.to_string_lossy().into_owned()),
            call.raw_input.as_ref(),
        );
        let key = format!("{}:{id}", self.prefix);
        let events = self.host.agent_steps().open(&key);
        let arguments = json!({
            "step": key,
            "title": call.title,
            "kind": kind_name(call),
            "paths": paths,
            "chat": self.prefix,
        });
        let request = CallRequest::new(AGENT_STEP, arguments)
            .by(Some(self.caller.clone()))
            .in_lane(Lane::new());
        let handle = match self.host.call(request) {
            Ok(handle) => handle,
            Err(err) => {
                tracing::warn!(%err, "cannot record the agent's step");
                return;
            }
        };
        let call_id = handle.call_id().to_owned();
        let step = Step {
            call_id: call_id.clone(),
            title: call.title.clone(),
            events,
            output: Vec::new(),
            proposals: Vec::new(),
        };
        self.running.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), step);
        // The turn that started the step hears its end, even after it answered.
        let sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let send = move |update: Value| {
            if let Some(sink) = &sink {
                sink(update);
            }
        };
        let title = call.title.clone();
        let host = Arc::clone(&self.host);
        let following = tokio::spawn(async move {
            let mut handle = handle;
            // However the call ends — even refused before its body took the step's events —
            // nothing waits on them afterwards.
            let _closed = CloseOnDrop { host, key };
            if let Some(card) = handle.started().await {
                send(
                    json!({"type": "toolCall", "callId": card.call_id, "name": title, "card": card}),
                );
            }
            let finished = handle.finish().await;
            match finished {
                Ok(outcome) => {
                    let card = outcome.card();
                    let result = &outcome.finalized.result;
                    let text: String = result
                        .content()
                        .iter()
                        .filter_map(|block| block.as_text())
                        .collect::<Vec<_>>()
                        .join("\n");
                    send(json!({
                        "type": "toolResult",
                        "callId": card.call_id,
                        "name": title,
                        "isError": result.is_error(),
                        "text": text,
                        "card": card,
                    }));
                }
                Err(err) => tracing::warn!(%err, "the agent's step was not recorded"),
            }
        });
        self.following.lock().unwrap_or_else(PoisonError::into_inner).push(following);
        if matches!(call.status, ToolCallStatus::Completed | ToolCallStatus::Failed) {
            let fields =
                ToolCallUpdateFields::new().status(call.status).content(call.content.clone());
            self.updated(&id, &fields);
        }
    }

    /// The agent updated tool call `id`: more paths, more output, or its end.
    pub(crate) fn updated(self: &Arc<Self>, id: &str, fields: &ToolCallUpdateFields) {
        let told = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            match pending.get_mut(id) {
                Some(call) => {
                    call.update(fields.clone());
                    telling(call).then(|| pending.remove(id)).flatten()
                }
                None => None,
            }
        };
        if let Some(call) = told {
            self.start(&call);
            return;
        }
        if self.pending.lock().unwrap_or_else(PoisonError::into_inner).contains_key(id) {
            return;
        }
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(step) = running.get_mut(id) else { return };
        let locations = fields.locations.iter().flatten();
        let paths = named_paths(
            self.host.root(),
            locations.map(|l| l.path.to_string_lossy().into_owned()),
            fields.raw_input.as_ref(),
        );
        if !paths.is_empty() {
            let _ = step.events.send(StepEvent::Paths(paths));
        }
        if let Some(title) = &fields.title {
            step.title.clone_from(title);
        }
        if let Some(content) = &fields.content {
            step.output = content.iter().filter_map(content_text).collect();
        }
        let status = match fields.status {
            Some(ToolCallStatus::Completed) => StepStatus::Completed,
            Some(ToolCallStatus::Failed) => StepStatus::Failed,
            _ => return,
        };
        if let Some(step) = running.remove(id) {
            let output = (!step.output.is_empty()).then(|| step.output.join("\n"));
            let _ = step.events.send(StepEvent::End(StepEnd { status, output }));
        }
    }

    /// The agent showed the edit tool call `id` makes (its `diff` content): kept for review,
    /// and the files watched.
    pub(crate) fn proposed(&self, id: &str, content: &[ToolCallContent]) {
        let diffs = super::link::diffs_of(content);
        if diffs.is_empty() {
            return;
        }
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(step) = running.get_mut(id) else { return };
        let paths = named_paths(self.host.root(), diffs.iter().map(|d| d.0.clone()), None);
        if !paths.is_empty() {
            let _ = step.events.send(StepEvent::Paths(paths));
        }
        for (path, old_text, new_text) in &diffs {
            let _ = step.events.send(StepEvent::Proposed {
                path: path.clone(),
                old_text: old_text.clone(),
                new_text: new_text.clone(),
            });
        }
        step.proposals = diffs;
    }

    /// The edits tool call `id` proposes: (path, old text, new text).
    pub(crate) fn proposals(&self, id: &str) -> Vec<(String, Option<String>, String)> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.get(id).map(|s| s.proposals.clone()).unwrap_or_default()
    }

    /// Sends `event` to the step of tool call `id` and waits until its body has taken in every
    /// event before it (the files named so far are looked at): the agent may act on its tool
    /// call as soon as it is answered.
    pub(crate) async fn settle(&self, id: &str, event: Option<StepEvent>) {
        let (tx, rx) = oneshot::channel();
        {
            let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(step) = running.get(id) else { return };
            if let Some(event) = event {
                let _ = step.events.send(event);
            }
            let _ = step.events.send(StepEvent::Settled(tx));
        }
        let _ = rx.await;
    }

    /// Waits until every step's call ended and its `toolResult` was sent (at most `limit`), so
    /// a turn's answer comes after its steps' results.
    pub(crate) async fn finished(&self, limit: std::time::Duration) {
        let following: Vec<_> =
            self.following.lock().unwrap_or_else(PoisonError::into_inner).drain(..).collect();
        let _ = tokio::time::timeout(limit, futures::future::join_all(following)).await;
    }

    /// The prompt ended (or the agent went away): every step still open ends `cancelled`.
    pub(crate) fn end_all(self: &Arc<Self>) {
        let waiting: Vec<String> =
            self.pending.lock().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect();
        for id in waiting {
            self.start_pending(&id);
        }
        let steps: Vec<Step> = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for step in steps {
            let end = StepEnd { status: StepStatus::Cancelled, output: None };
            let _ = step.events.send(StepEvent::End(end));
        }
    }
}

fn kind_name(call: &ToolCall) -> String {
    serde_json::to_value(call.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".to_owned())
}

fn content_text(content: &ToolCallContent) -> Option<String> {
    match content {
        ToolCallContent::Content(c) => match &c.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The files a step names: its locations, then every string of its raw input that is a path and
/// the words of each string (a shell command's arguments) that look like one — relative to the
/// workspace or absolute inside it. Only names that can be files: no option, no glob.
pub(crate) fn named_paths(
    root: &std::path::Path,
    locations: impl Iterator<Item = String>,
    raw_input: Option<&Value>,
) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |candidate: &str| {
        let candidate = candidate.trim_matches(|c: char| "'\"`,;()".contains(c));
        if candidate.is_empty()
            || candidate.starts_with('-')
            || candidate.contains(['*', '?', '$', '{', '}', '\n', '|', '&', '<', '>'])
            || candidate.len() > 4096
            || found.len() >= MAX_CANDIDATES
        {
            return;
        }
        let path = std::path::Path::new(candidate);
        if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return;
        }
        let absolute = if path.is_absolute() { path.to_path_buf() } else { root.join(path) };
        if !absolute.starts_with(root) {
            return;
        }
        // A word that names nothing yet must at least look like a file name to be watched for
        // creation.
        let exists = absolute.is_file();
        if !exists
            && (!(candidate.contains('.') || candidate.contains('/'))
                || candidate.ends_with('/')
                || !absolute.parent().is_some_and(std::path::Path::is_dir))
        {
            return;
        }
        if absolute.is_dir() {
            return;
        }
        let text = absolute.to_string_lossy().into_owned();
        if !found.contains(&text) {
            found.push(text);
        }
    };
    for location in locations {
        add(&location);
    }
    let mut strings = Vec::new();
    if let Some(raw) = raw_input {
        collect_strings(raw, &mut strings);
    }
    for text in strings {
        add(&text);
        if text.contains(char::is_whitespace) {
            for word in text.split(|c: char| c.is_whitespace() || c == '=') {
                add(word);
            }
        }
    }
    found
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.len() <= 64 * 1024 => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_command_names_the_files_it_edits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(root.join("b.txt"), "x\n").expect("write");
        let raw = json!({
            "command": "sed -i 's/x/y/g' b.txt && sed 's/a/b/' b.txt > out.log",
            "timeout": 5
        });
        let paths = named_paths(root, std::iter::empty(), Some(&raw));
        let names: Vec<String> = paths
            .iter()
            .map(|p| std::path::Path::new(p).file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["b.txt", "out.log"], "{paths:?}");
    }

    #[test]
    fn paths_outside_the_workspace_are_not_watched() {
        let dir = tempfile::tempdir().expect("temp dir");
        let raw = json!({"file_path": "/etc/passwd", "other": "../up.txt"});
        assert!(named_paths(dir.path(), std::iter::empty(), Some(&raw)).is_empty());
    }
}
