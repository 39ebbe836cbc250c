//! `checkpoint`: named points in a session's log and going back to one (docs/tools.md).
//!
//! A checkpoint is nothing but a place in the log: a `checkpoint` call that names it, or the
//! start of an agent's turn (every `agent/run` record is one, named by its run id, so the own
//! agent has a checkpoint before each prompt without writing anything more). Restoring a
//! checkpoint undoes, as one change of the restoring call, every file change recorded after it —
//! the same undo as `revert` with `since`, from the first call after the checkpoint that changed
//! a file. The restore is itself a recorded call, so `revert` of it brings everything back.
//! An internal tool: editors and the command line call it, models are never offered it.

use crate::revert::{RevertOutput, history_of, undo};
use crate::workspace;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_contract::{History, Tool, ToolContext, ToolError};
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{ContentBlock, DiffMeta};

/// The tool's name.
pub const CHECKPOINT: &str = "checkpoint";

/// What to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CheckpointAction {
    /// Mark this point of the session as `name`.
    #[default]
    Create,
    /// Undo every file change recorded after checkpoint `name`.
    Restore,
    /// The session's checkpoints.
    List,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct CheckpointArgs {
    /// `create` (the default), `restore` or `list`.
    #[serde(default)]
    pub action: CheckpointAction,
    /// The checkpoint: a name given at `create`, or an agent turn's run id.
    #[serde(default)]
    pub name: Option<String>,
}

/// One checkpoint of the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointEntry {
    pub name: String,
    /// `named` (a `checkpoint` call) or `turn` (before an agent's turn).
    pub kind: String,
    /// The turn's prompt, for a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// How many calls after it changed files (what a restore would undo).
    pub changed_after: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointOutput {
    pub action: CheckpointAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For `list`: every checkpoint, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<CheckpointEntry>,
    /// For `restore`: what was undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<RevertOutput>,
}

pub struct CheckpointTool;

fn failure(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::typed("CheckpointError", code, message)
}

/// A checkpoint found in the history: its name, kind, prompt and place in the log.
struct Mark {
    name: String,
    kind: &'static str,
    prompt: Option<String>,
    seq: u64,
}

/// Every checkpoint of `history`, in log order.
fn marks(history: &History) -> Vec<Mark> {
    let mut marks: Vec<Mark> = history
        .calls
        .iter()
        .filter(|c| c.name == CHECKPOINT && c.completed)
        .filter(|c| {
            let action = c.arguments.get("action").and_then(Value::as_str);
            action.is_none_or(|a| a == "create")
        })
        .filter_map(|c| {
            let name = c.arguments.get("name").and_then(Value::as_str)?;
            Some(Mark { name: name.to_owned(), kind: "named", prompt: None, seq: c.seq })
        })
        .collect();
    marks.extend(history.turns.iter().map(|t| Mark {
        name: t.run_id.clone(),
        kind: "turn",
        prompt: t.prompt.clone(),
        seq: t.seq,
    }));
    marks.sort_by_key(|m| m.seq);
    marks
}

/// The calls after `seq` that changed a file, in log order.
fn changed_after<'a>(history: &'a History, seq: u64, own_call: &str) -> Vec<&'a str> {
    history
        .calls
        .iter()
        .filter(|c| c.seq > seq && c.call_id != own_call)
        .filter(|c| history.changes.iter().any(|ch| ch.call_id == c.call_id))
        .map(|c| c.call_id.as_str())
        .collect()
}

fn required_name(args: &CheckpointArgs) -> Result<String, ToolError> {
    match args.name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => Ok(name.to_owned()),
        _ => Err(failure("CHECKPOINT_NAME_REQUIRED", "a checkpoint needs a name")),
    }
}

impl Tool for CheckpointTool {
    type Args = CheckpointArgs;
    type Output = CheckpointOutput;

    fn name(&self) -> &str {
        CHECKPOINT
    }

    fn internal(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Mark the session's current point as a named checkpoint, list the checkpoints (named ones \
         and the start of each agent turn), or restore one: every file change after it is undone \
         as one change of this call, which can itself be reverted."
            .to_owned()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        }
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("");
        match args.get("action").and_then(Value::as_str) {
            Some("restore") => {
                CallPresentation::new(CardKind::Diff, format!("Restore checkpoint {name}"))
            }
            Some("list") => CallPresentation::new(CardKind::Generic, "Checkpoints"),
            _ => CallPresentation::new(CardKind::Generic, format!("Checkpoint {name}")),
        }
    }

    async fn call(
        &self,
        args: CheckpointArgs,
        cx: ToolContext,
    ) -> Result<CheckpointOutput, ToolError> {
        let history = history_of(&cx)?;
        match args.action {
            CheckpointAction::Create => {
                let name = required_name(&args)?;
                Ok(CheckpointOutput {
                    action: args.action,
                    name: Some(name),
                    checkpoints: Vec::new(),
                    restored: None,
                })
            }
            CheckpointAction::List => {
                let recorded = history.history().await.map_err(crate::revert::history_failure)?;
                let checkpoints = marks(&recorded)
                    .into_iter()
                    .map(|m| CheckpointEntry {
                        changed_after: changed_after(&recorded, m.seq, cx.call_id()).len() as u32,
                        name: m.name,
                        kind: m.kind.to_owned(),
                        prompt: m.prompt,
                    })
                    .collect();
                Ok(CheckpointOutput {
                    action: args.action,
                    name: None,
                    checkpoints,
                    restored: None,
                })
            }
            CheckpointAction::Restore => {
                let name = required_name(&args)?;
                let ws = workspace(&cx)?;
                let recorded = history.history().await.map_err(crate::revert::history_failure)?;
                // The latest checkpoint of that name.
                let Some(mark) = marks(&recorded).into_iter().rev().find(|m| m.name == name) else {
                    return Err(failure(
                        "CHECKPOINT_UNKNOWN",
                        format!("there is no checkpoint \"{name}\" in this session"),
                    ));
                };
                let after = changed_after(&recorded, mark.seq, cx.call_id());
                let Some(first) = after.first() else {
                    return Err(failure(
                        "CHECKPOINT_NOTHING_CHANGED",
                        format!("no file changed since checkpoint \"{name}\""),
                    ));
                };
                let restored = undo(&ws, &history, &recorded, cx.call_id(), first, true).await?;
                Ok(CheckpointOutput {
                    action: args.action,
                    name: Some(name),
                    checkpoints: Vec::new(),
                    restored: Some(restored),
                })
            }
        }
    }

    fn render(&self, _args: &CheckpointArgs, out: &CheckpointOutput) -> Vec<ContentBlock> {
        let name = out.name.as_deref().unwrap_or("");
        let text = match out.action {
            CheckpointAction::Create => format!("Checkpoint {name} created."),
            CheckpointAction::List if out.checkpoints.is_empty() => {
                "No checkpoints in this session.".to_owned()
            }
            CheckpointAction::List => {
                let mut text = String::from("Checkpoints (oldest first):");
                for c in &out.checkpoints {
                    let about = match &c.prompt {
                        Some(prompt) => format!(" before the turn \"{prompt}\""),
                        None if c.kind == "turn" => " before an agent turn".to_owned(),
                        None => String::new(),
                    };
                    let noun = if c.changed_after == 1 { "call" } else { "calls" };
                    text.push_str(&format!(
                        "\n{}{about}: {} {noun} changed files since",
                        c.name, c.changed_after
                    ));
                }
                text
            }
            CheckpointAction::Restore => {
                let mut text = format!("Restored checkpoint {name}");
                if let Some(restored) = &out.restored {
                    let calls = restored.reverted_calls.len();
                    let noun = if calls == 1 { "call" } else { "calls" };
                    text.push_str(&format!(
                        ": undid {calls} {noun} ({})",
                        restored.reverted_calls.join(", ")
                    ));
                    for file in &restored.files {
                        text.push_str(&format!("\n{}", file.path));
                    }
                }
                text.push_str("\nRevert this call to bring the changes back.");
                text
            }
        };
        vec![ContentBlock::text(text)]
    }

    fn presentation_meta(&self, _args: &CheckpointArgs, out: &CheckpointOutput) -> Option<Value> {
        let restored = out.restored.as_ref()?;
        let meta: DiffMeta = crate::revert::diff_meta_of(restored);
        serde_json::to_value(meta).ok()
    }
}
