//! `agent_step`: how a step of an agent the host runs over ACP — a tool of the agent's own that
//! writes to disk itself (its edit tool, its shell) — becomes a call with a card, a record and a
//! revert like any of toolhost's own (docs/acp.md, "Hosting ACP agents").
//!
//! The host starts one such call when the agent announces a tool call and feeds it what it
//! learns: the files the step names (its locations, the paths in its raw input), then how it
//! ended. The body looks at each named file before the step touches it, and once the step ended
//! records every file that changed as a change of this call — both sides kept — so the card is a
//! diff and `revert` undoes it. When the person accepted only some hunks of the step's proposed
//! edit, the file is left with exactly those (the step wrote the whole edit; the rest is undone
//! here, before the change is recorded). An internal tool: never listed, unknown to a model.

use crate::diff::{Change, diff_meta_of_files};
use crate::{crlf_to_lf, fs_failure};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_workspace::{Workspace, content_version};

/// The tool's name.
pub const AGENT_STEP: &str = "agent_step";

/// The most files one step's snapshot holds.
const MAX_FILES: usize = 64;
/// A file larger than this is not snapshotted (its change could not be shown or undone anyway).
const MAX_FILE_BYTES: u64 = 8 << 20;
/// The most bytes of one side of a file kept as text in the value.
const MAX_TEXT_BYTES: usize = 1 << 20;

/// What the host tells a running step.
#[derive(Debug)]
pub enum StepEvent {
    /// Files the step names (more may come as the agent streams its input).
    Paths(Vec<String>),
    /// The agent showed the edit it makes to `path` (`old_text` absent: a new file). When the
    /// file was first looked at only after the step wrote it (the agent acted before it said
    /// so), a whole-file `old_text` is what the file held before.
    Proposed { path: String, old_text: Option<String>, new_text: String },
    /// The person accepted part of the step's edit: the file must end as `content`.
    Reviewed { path: String, content: String },
    /// Answered once every event before it was taken in (the files named so far are looked at).
    Settled(tokio::sync::oneshot::Sender<()>),
    /// The step ended.
    End(StepEnd),
}

/// How a step ended, as the agent said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepEnd {
    pub status: StepStatus,
    /// The step's own output (its text content), if it reported any.
    pub output: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StepStatus {
    Completed,
    Failed,
    /// The step never ended: the agent's turn was cancelled or the agent went away.
    Cancelled,
}

mod baseline;

use baseline::Baseline;

/// The running steps' channels, by the step key the host gave the call, and each chat's
/// baseline of what git sees changed.
#[derive(Default)]
pub struct AgentSteps {
    waiting: Mutex<HashMap<String, mpsc::UnboundedReceiver<StepEvent>>>,
    baselines: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Baseline>>>>,
}

impl AgentSteps {
    /// Opens step `key`: the host sends its events on the returned sender, the call's body takes
    /// the receiver.
    pub fn open(&self, key: &str) -> mpsc::UnboundedSender<StepEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_owned(), rx);
        tx
    }

    /// A turn of `chat` begins in the workspace rooted at `root`: what git sees changed now is
    /// the baseline its steps' unnamed changes are found against (`baseline.rs`).
    pub async fn begin_turn(&self, chat: &str, root: &std::path::Path, ws: &Workspace) {
        let taken = Baseline::take(root, ws).await;
        let mut baselines = self.baselines.lock().unwrap_or_else(PoisonError::into_inner);
        match taken {
            Some(baseline) => {
                baselines.insert(chat.to_owned(), Arc::new(tokio::sync::Mutex::new(baseline)));
            }
            None => {
                baselines.remove(chat);
            }
        }
    }

    /// Chat `chat` is over: its baseline is dropped.
    pub fn end_chat(&self, chat: &str) {
        self.baselines.lock().unwrap_or_else(PoisonError::into_inner).remove(chat);
    }

    fn baseline(&self, chat: &str) -> Option<Arc<tokio::sync::Mutex<Baseline>>> {
        self.baselines.lock().unwrap_or_else(PoisonError::into_inner).get(chat).cloned()
    }

    /// The call of step `key` ended (or never ran): its events are dropped, so whoever waits
    /// for the step to take one in (`StepEvent::Settled`) waits no more.
    pub fn close(&self, key: &str) {
        self.take(key);
    }

    fn take(&self, key: &str) -> Option<mpsc::UnboundedReceiver<StepEvent>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(key)
    }
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStepArgs {
    /// The key the host opened the step under.
    pub step: String,
    /// The agent's title for the step.
    pub title: String,
    /// The agent's kind of step (`edit`, `execute`, `read`, …).
    #[serde(default)]
    pub kind: Option<String>,
    /// The files the step named when it started.
    #[serde(default)]
    pub paths: Vec<String>,
    /// The chat whose baseline finds the step's unnamed changes (absent: named files only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileOperation {
    Create,
    Update,
    Remove,
}

/// One file the step changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepFile {
    pub path: String,
    pub operation: FileOperation,
    /// The text before (LF-normalized; null for a new file, or bytes that are not text or too
    /// large to show).
    pub before: Option<String>,
    /// The text after (null for a removed file, or not text, or too large).
    pub after: Option<String>,
    /// Hunks of the step's edit the person rejected, undone after the step wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_hunks: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStepOutput {
    pub status: StepStatus,
    pub files: Vec<StepFile>,
    /// What the step reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// The tool; its calls wait for the events of the step they were opened for.
pub struct AgentStepTool {
    steps: Arc<AgentSteps>,
}

impl AgentStepTool {
    pub fn new(steps: Arc<AgentSteps>) -> Self {
        AgentStepTool { steps }
    }
}

/// A file as the step found it.
struct Snapshot {
    before: Option<Vec<u8>>,
}

async fn snapshot(
    ws: &Workspace,
    taken: &mut BTreeMap<String, Snapshot>,
    paths: impl IntoIterator<Item = String>,
) {
    for path in paths {
        if taken.len() >= MAX_FILES {
            return;
        }
        // Only paths in the workspace; each once, as it was when first named.
        let Ok(resolved) = ws.resolve(&path).await else { continue };
        let key = resolved.real_path.to_string_lossy().into_owned();
        if taken.contains_key(&key) {
            continue;
        }
        // A directory, or a file too large to show or undo, is not looked at.
        if let Ok(before) = ws.disk_bytes_within(&key, MAX_FILE_BYTES).await {
            taken.insert(key, Snapshot { before });
        }
    }
}

fn text_of(bytes: Option<&[u8]>) -> Option<String> {
    let bytes = bytes?;
    if bytes.len() > MAX_TEXT_BYTES {
        return None;
    }
    std::str::from_utf8(bytes).ok().map(crlf_to_lf)
}

impl Tool for AgentStepTool {
    type Args = AgentStepArgs;
    type Output = AgentStepOutput;

    fn name(&self) -> &str {
        AGENT_STEP
    }

    fn internal(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "A step of an agent the host runs over ACP, made with the agent's own tool; its changes \
         to the workspace are recorded as this call's."
            .to_owned()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { read_only: false, destructive: true, idempotent: false, open_world: true }
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let title = args.get("title").and_then(Value::as_str).unwrap_or("Agent step");
        let mut presentation = CallPresentation::new(CardKind::Diff, title);
        let paths = args.get("paths").and_then(Value::as_array);
        for path in paths.into_iter().flatten().filter_map(Value::as_str).take(8) {
            presentation = presentation.with_location(path, 1);
        }
        presentation
    }

    async fn call(
        &self,
        args: AgentStepArgs,
        cx: ToolContext,
    ) -> Result<AgentStepOutput, ToolError> {
        let plain = cx
            .capability::<Workspace>()
            .ok_or_else(|| ToolError::plain("an agent step requires a workspace"))?;
        let ws = plain.for_call(cx.call_id());
        let Some(mut events) = self.steps.take(&args.step) else {
            return Err(ToolError::typed(
                "AgentStepError",
                "AGENT_STEP_UNKNOWN",
                format!(
                    "no agent step {} is running (these calls are made by the host)",
                    args.step
                ),
            ));
        };
        let mut taken = BTreeMap::new();
        snapshot(&ws, &mut taken, args.paths.iter().cloned()).await;
        let mut reviewed: HashMap<String, String> = HashMap::new();
        let mut proposed: HashMap<String, (Option<String>, String)> = HashMap::new();
        let end = loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = cx.signal().cancelled() => None,
            };
            match event {
                Some(StepEvent::Paths(paths)) => snapshot(&ws, &mut taken, paths).await,
                Some(StepEvent::Reviewed { path, content }) => {
                    if let Ok(resolved) = ws.resolve(&path).await {
                        let key = resolved.real_path.to_string_lossy().into_owned();
                        snapshot(&ws, &mut taken, [key.clone()]).await;
                        reviewed.insert(key, content);
                    }
                }
                Some(StepEvent::Proposed { path, old_text, new_text }) => {
                    if let Ok(resolved) = ws.resolve(&path).await {
                        let key = resolved.real_path.to_string_lossy().into_owned();
                        proposed.insert(key, (old_text, new_text));
                    }
                }
                Some(StepEvent::Settled(done)) => {
                    let _ = done.send(());
                }
                Some(StepEvent::End(end)) => break end,
                None => break StepEnd { status: StepStatus::Cancelled, output: None },
            }
        };
        // What the step changed without naming it (git's view against the turn's baseline).
        let baseline = args.chat.as_deref().and_then(|chat| self.steps.baseline(chat));
        let mut baseline = match &baseline {
            Some(baseline) => Some(baseline.lock().await),
            None => None,
        };
        if let Some(baseline) = baseline.as_mut() {
            let named: Vec<String> = taken.keys().cloned().collect();
            let covered = |key: &str| named.iter().any(|k| k == key);
            for (key, before) in baseline.changes(&ws, &covered).await {
                if taken.len() >= MAX_FILES {
                    break;
                }
                taken.insert(key, Snapshot { before });
            }
        }
        let mut files = Vec::new();
        for (path, mut snap) in taken {
            // Looked at too late: the file already held the proposed whole text.
            if let Some((old, new)) = proposed.get(&path)
                && snap.before.as_deref() == Some(new.as_bytes())
                && old.as_deref() != Some(new.as_str())
            {
                snap.before = old.clone().map(String::into_bytes);
            }
            let mut rejected_hunks = None;
            if let Some(content) = reviewed.get(&path) {
                rejected_hunks =
                    leave_reviewed(&plain, &path, snap.before.as_deref(), content).await?;
            }
            let now =
                ws.record_external_change(&path, snap.before.clone()).await.map_err(fs_failure)?;
            if let Some(baseline) = baseline.as_mut() {
                baseline.moved_on(&path, now.clone());
            }
            if now == snap.before {
                continue;
            }
            let operation = match (&snap.before, &now) {
                (None, _) => FileOperation::Create,
                (Some(_), None) => FileOperation::Remove,
                (Some(_), Some(_)) => FileOperation::Update,
            };
            let display = match ws.resolve(&path).await {
                Ok(resolved) => resolved.display,
                Err(_) => path,
            };
            files.push(StepFile {
                path: display,
                operation,
                before: text_of(snap.before.as_deref()),
                after: text_of(now.as_deref()),
                rejected_hunks,
            });
        }
        if files.is_empty() && end.status != StepStatus::Completed {
            let what = match end.status {
                StepStatus::Failed => "failed",
                _ => "did not finish",
            };
            let detail = end.output.map(|o| format!(": {o}")).unwrap_or_default();
            return Err(ToolError::plain(format!("the agent's step {what}{detail}")));
        }
        Ok(AgentStepOutput { status: end.status, files, output: end.output })
    }

    fn render(&self, _args: &AgentStepArgs, out: &AgentStepOutput) -> Vec<ContentBlock> {
        let mut text = String::new();
        for file in &out.files {
            let verb = match file.operation {
                FileOperation::Create => "Created",
                FileOperation::Update => "Updated",
                FileOperation::Remove => "Removed",
            };
            text.push_str(&format!("{verb} {}", file.path));
            if let Some(rejected) = file.rejected_hunks {
                text.push_str(&format!(" ({rejected} rejected hunk(s) undone)"));
            }
            text.push('\n');
        }
        if let Some(output) = &out.output {
            text.push_str(output);
        }
        if text.is_empty() {
            text.push_str("No file changed.");
        }
        vec![ContentBlock::text(text.trim_end().to_owned())]
    }

    fn presentation_meta(&self, _args: &AgentStepArgs, out: &AgentStepOutput) -> Option<Value> {
        let files = out.files.iter();
        let meta = diff_meta_of_files(
            files.map(|f| (f.path.as_str(), f.before.as_deref(), f.after.as_deref())),
        );
        if meta.diffs.is_empty() {
            return None;
        }
        serde_json::to_value(meta).ok()
    }
}

/// Leaves `path` holding `content` — the hunks of the step's edit the person accepted — when
/// the step wrote more; says how many hunks were undone. A file changed otherwise since (it no
/// longer holds what the step's full edit would make of it) is left alone.
async fn leave_reviewed(
    plain: &Workspace,
    path: &str,
    before: Option<&[u8]>,
    content: &str,
) -> Result<Option<u32>, ToolError> {
    let now = plain.disk_bytes(path).await.map_err(fs_failure)?;
    let Some(now) = now else { return Ok(None) };
    if now == content.as_bytes() {
        return Ok(None);
    }
    let before_text = before.and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("");
    let now_text = String::from_utf8_lossy(&now).into_owned();
    let written = Change::new(before_text, &now_text).hunk_count();
    let kept = Change::new(before_text, content).hunk_count();
    // `restore` checks the version under the path lock, so a write racing this one wins.
    plain
        .restore(path, Some(&content_version(&now)), Some(content.as_bytes()))
        .await
        .map_err(fs_failure)?;
    Ok(Some(written.saturating_sub(kept) as u32))
}
