//! `revert`: undo the file changes of an earlier call, or of every call since one, from the
//! session log alone (docs/tools.md, revert).
//!
//! Every write, edit and revert is recorded by the host as `fs/change` events holding blobs of the
//! exact bytes before and after (the `ChangeHistory` capability). Per file, a revert takes the
//! bytes the oldest selected change found (`target`) and checks that the file still holds what the
//! newest selected change left:
//! - it does: the target bytes go back verbatim (a created file is removed);
//! - it does not (someone edited it since): the reverse change is merged three-way (base = what
//!   the changes left, ours = the file now, theirs = the target); a conflict refuses the whole
//!   revert, naming the lines, and writes nothing.
//!
//! Several files are all or nothing: a journal is written durably before the first file changes
//! and removed after the last; a failure rolls back the files already done, and a crash is rolled
//! back by the host when it next opens the session. A revert is itself a call whose changes are
//! recorded, so it shows as a diff card, replays, and can be reverted in turn.

use crate::diff::diff_meta_of_files;
use crate::replace_all::{Replacement, replace_all};
use crate::{fs_failure, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use similar::TextMerge;
use std::collections::HashMap;
use std::path::Path;
use toolhost_contract::{History, HistoryError, HistoryHandle, Tool, ToolContext, ToolError};
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::session_log::FsChangeEvent;
use toolhost_protocol::{ContentBlock, DiffMeta};
use toolhost_workspace::{Workspace, content_version};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct RevertArgs {
    /// The id of an earlier call of this session whose file changes to undo.
    pub call_id: String,
    /// Undo every file change of the session from that call on (newest first), all or nothing.
    pub since: Option<bool>,
}

/// What a revert did to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RevertAction {
    /// The exact earlier bytes are back.
    Restored,
    /// The file did not exist before, so it was removed.
    Removed,
    /// The file had been removed and is back.
    Recreated,
    /// The file was edited since; the reverse change was merged into the current text.
    Merged,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevertedFile {
    /// The file, relative to the primary workspace root when inside it.
    pub path: String,
    pub action: RevertAction,
    /// The text before the revert (LF-normalized); null when there was no file or it is not text.
    pub before: Option<String>,
    /// The text after the revert (LF-normalized); null when the file was removed or is not text.
    pub after: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevertOutput {
    /// The call named in the arguments.
    pub call_id: String,
    pub since: bool,
    /// The calls whose changes were undone, newest first.
    pub reverted_calls: Vec<String>,
    pub files: Vec<RevertedFile>,
}

pub struct RevertTool;

fn failure(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::typed("RevertError", code, message)
}

pub(crate) fn history_failure(err: HistoryError) -> ToolError {
    failure(err.code(), err.to_string())
}

/// Per file: what the selected changes found first and left last.
struct NetChange {
    path: String,
    /// Blob of the bytes to go back to (`None`: the file did not exist).
    target: Option<String>,
    /// Blob of the bytes the newest change left (`None`: it removed the file).
    left: Option<String>,
}

/// The plan for one file, computed before anything is written.
struct FilePlan {
    real_path: String,
    display: String,
    current: Option<Vec<u8>>,
    next: Option<Vec<u8>>,
    action: RevertAction,
}

impl FilePlan {
    fn replacement(&self) -> Replacement {
        Replacement {
            real_path: self.real_path.clone(),
            current: self.current.clone(),
            next: self.next.clone(),
        }
    }
}

impl Tool for RevertTool {
    type Args = RevertArgs;
    type Output = RevertOutput;

    fn name(&self) -> &str {
        "revert"
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let call = args.get("call_id").and_then(Value::as_str).unwrap_or("");
        let since = args.get("since").and_then(Value::as_bool) == Some(true);
        let title = if since { format!("Revert since {call}") } else { format!("Revert {call}") };
        CallPresentation::new(CardKind::Diff, title)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        }
    }

    fn description(&self) -> String {
        "Undo the file changes of an earlier call of this session (a write, an edit or a revert), or \
         with since=true of every call from that one on. Restores the exact earlier bytes; a file \
         edited since gets the reverse change merged, and a conflict changes nothing."
            .to_owned()
    }

    async fn call(&self, args: RevertArgs, cx: ToolContext) -> Result<RevertOutput, ToolError> {
        crate::require_non_empty(&args.call_id, "call_id")?;
        let since = args.since == Some(true);
        let ws = workspace(&cx)?;
        let history = history_of(&cx)?;
        let recorded = history.history().await.map_err(history_failure)?;
        undo(&ws, &history, &recorded, cx.call_id(), &args.call_id, since).await
    }

    fn render(&self, _args: &RevertArgs, out: &RevertOutput) -> Vec<ContentBlock> {
        let mut text = if out.since {
            let calls = out.reverted_calls.len();
            let noun = if calls == 1 { "call" } else { "calls" };
            format!(
                "Reverted {calls} {noun} since {} ({}):",
                out.call_id,
                out.reverted_calls.join(", ")
            )
        } else {
            format!("Reverted {}:", out.call_id)
        };
        for file in &out.files {
            let verb = match file.action {
                RevertAction::Restored => "restored",
                RevertAction::Removed => "removed",
                RevertAction::Recreated => "recreated",
                RevertAction::Merged => {
                    "merged (the file was edited since; only that call's change was undone)"
                }
            };
            text.push_str(&format!("\n{verb} {}", file.path));
        }
        text.push_str("\nRead these files again before editing them.");
        vec![ContentBlock::text(text)]
    }

    fn presentation_meta(&self, _args: &RevertArgs, out: &RevertOutput) -> Option<Value> {
        serde_json::to_value(diff_meta_of(out)).ok()
    }
}

/// The diff card's meta of what a revert did.
pub(crate) fn diff_meta_of(out: &RevertOutput) -> DiffMeta {
    let files = out.files.iter();
    diff_meta_of_files(files.map(|f| (f.path.as_str(), f.before.as_deref(), f.after.as_deref())))
}

/// The session's change history, or why there is none.
pub(crate) fn history_of(cx: &ToolContext) -> Result<HistoryHandle, ToolError> {
    cx.capability::<HistoryHandle>().ok_or_else(|| {
        failure("REVERT_NO_SESSION", "this session keeps no log, so its changes cannot be undone")
    })
}

/// Undoes the changes of call `call_id` (with `since`, of every call from it on, except the
/// undoing call `own_call` itself) as a change of `own_call`, all or nothing.
pub(crate) async fn undo(
    ws: &Workspace,
    history: &HistoryHandle,
    recorded: &History,
    own_call: &str,
    call_id: &str,
    since: bool,
) -> Result<RevertOutput, ToolError> {
    let Some(start) = recorded.calls.iter().position(|c| c.call_id == call_id) else {
        return Err(failure(
            "REVERT_UNKNOWN_CALL",
            format!("there is no call \"{call_id}\" in this session"),
        ));
    };
    let selected: Vec<&str> = if since {
        recorded.calls[start..]
            .iter()
            .map(|c| c.call_id.as_str())
            .filter(|id| *id != own_call)
            .collect()
    } else {
        vec![call_id]
    };
    let changes: Vec<&FsChangeEvent> =
        recorded.changes.iter().filter(|c| selected.contains(&c.call_id.as_str())).collect();
    if changes.is_empty() {
        let what = if since {
            format!("no file changed since \"{call_id}\"")
        } else {
            format!("call \"{call_id}\" changed no file")
        };
        return Err(failure("REVERT_NO_CHANGES", format!("nothing to revert: {what}")));
    }
    if let Some(big) = changes.iter().find(|c| c.before_not_kept) {
        return Err(failure(
            "REVERT_NOT_RECORDED",
            format!(
                "cannot revert: {} was too large for its earlier content to be kept",
                display_of(ws, &big.path)
            ),
        ));
    }
    let mut reverted_calls: Vec<String> = Vec::new();
    for change in changes.iter().rev() {
        if !reverted_calls.contains(&change.call_id) {
            reverted_calls.push(change.call_id.clone());
        }
    }
    let plans = plan(ws, history.as_ref(), &net_changes(&changes)).await?;
    if plans.is_empty() {
        return Err(failure(
            "REVERT_NO_CHANGES",
            "nothing to revert: the files already hold what those calls found",
        ));
    }
    let replacements: Vec<Replacement> = plans.iter().map(FilePlan::replacement).collect();
    replace_all(ws, history.as_ref(), own_call, &replacements).await?;
    let files = plans
        .into_iter()
        .map(|p| RevertedFile {
            path: p.display,
            action: p.action,
            before: p.current.as_deref().and_then(text_of),
            after: p.next.as_deref().and_then(text_of),
        })
        .collect();
    Ok(RevertOutput { call_id: call_id.to_owned(), since, reverted_calls, files })
}

/// LF-normalized text of bytes that are text (UTF-8, no NUL, BOM dropped), as the diffs show it.
fn text_of(bytes: &[u8]) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Some(text.replace("\r\n", "\n"))
}

/// The path as the tool shows it: relative to the primary root when inside it.
fn display_of(ws: &Workspace, real_path: &str) -> String {
    let path = Path::new(real_path);
    let root = ws.primary_root();
    for base in [root.canonical(), root.path()] {
        if let Ok(rel) = path.strip_prefix(base)
            && !rel.as_os_str().is_empty()
        {
            return rel.to_string_lossy().into_owned();
        }
    }
    real_path.to_owned()
}

/// Collapses the selected changes per file, in order of each file's first change.
fn net_changes(changes: &[&FsChangeEvent]) -> Vec<NetChange> {
    let mut order: Vec<NetChange> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for change in changes {
        match index.get(change.path.as_str()) {
            Some(&i) => order[i].left = change.after.clone(),
            None => {
                index.insert(&change.path, order.len());
                order.push(NetChange {
                    path: change.path.clone(),
                    target: change.before.clone(),
                    left: change.after.clone(),
                });
            }
        }
    }
    order
}

async fn load(
    history: &dyn toolhost_contract::ChangeHistory,
    hash: Option<&String>,
) -> Result<Option<Vec<u8>>, ToolError> {
    match hash {
        Some(hash) => history.load(hash.clone()).await.map(Some).map_err(history_failure),
        None => Ok(None),
    }
}

/// Decides every file before anything is written; any conflict refuses the whole revert.
async fn plan(
    ws: &Workspace,
    history: &dyn toolhost_contract::ChangeHistory,
    net: &[NetChange],
) -> Result<Vec<FilePlan>, ToolError> {
    let mut plans = Vec::new();
    let mut conflicts: Vec<String> = Vec::new();
    for change in net {
        let display = display_of(ws, &change.path);
        let current = ws.peek(&change.path).await.map_err(fs_failure)?;
        let current_version = current.as_deref().map(content_version);
        let target = load(history, change.target.as_ref()).await?;
        if current_version == change.target {
            continue; // Already what the call found.
        }
        if current_version == change.left {
            let action = match (&current, &target) {
                (Some(_), None) => RevertAction::Removed,
                (None, Some(_)) => RevertAction::Recreated,
                _ => RevertAction::Restored,
            };
            plans.push(FilePlan {
                real_path: change.path.clone(),
                display,
                current,
                next: target,
                action,
            });
            continue;
        }
        // Changed since: merge the reverse change into what is there now.
        let left = load(history, change.left.as_ref()).await?;
        match merge(left.as_deref(), current.as_deref(), target.as_deref()) {
            Ok(merged) => plans.push(FilePlan {
                real_path: change.path.clone(),
                display,
                current,
                next: Some(merged),
                action: RevertAction::Merged,
            }),
            Err(why) => conflicts.push(format!("{display} {why}")),
        }
    }
    if !conflicts.is_empty() {
        return Err(failure(
            "REVERT_CONFLICT",
            format!(
                "cannot revert: the files were changed since, and undoing conflicts with those changes: {}; nothing was written",
                conflicts.join("; ")
            ),
        ));
    }
    Ok(plans)
}

/// Three-way merge of the reverse change: base = what the change left, ours = the file now,
/// theirs = what the change found. `Err` says why it cannot merge, naming lines of the file now.
fn merge(
    left: Option<&[u8]>,
    current: Option<&[u8]>,
    target: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let (Some(left), Some(current), Some(target)) = (left, current, target) else {
        return Err(match current {
            None => "was removed since".to_owned(),
            Some(_) => "was created or removed by those calls and edited since".to_owned(),
        });
    };
    let as_text = |bytes: &[u8]| {
        std::str::from_utf8(bytes).ok().filter(|t| !t.contains('\0')).map(str::to_owned)
    };
    let (Some(base), Some(ours), Some(theirs)) = (as_text(left), as_text(current), as_text(target))
    else {
        return Err("is not text, so the edits made since cannot be merged".to_owned());
    };
    let merged = TextMerge::from_lines(base.as_str(), ours.as_str(), theirs.as_str());
    if merged.is_conflicted() {
        let ranges: Vec<String> = merged
            .conflicts()
            .map(|region| {
                let lines = region.ours_range();
                match lines.len() {
                    0 => format!("after line {}", lines.start),
                    1 => format!("line {}", lines.start + 1),
                    _ => format!("lines {}-{}", lines.start + 1, lines.end),
                }
            })
            .collect();
        return Err(format!("conflicts at {}", ranges.join(", ")));
    }
    Ok(merged.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_undoes_only_the_change_when_the_file_was_edited_elsewhere() {
        let found = b"a\nb\nc\nd\ne\n";
        let left = b"a\nB\nc\nd\ne\n";
        let now = b"a\nB\nc\nd\nE\n";
        assert_eq!(merge(Some(left), Some(now), Some(found)).unwrap(), b"a\nb\nc\nd\nE\n");
    }

    #[test]
    fn merge_conflict_names_the_lines_of_the_file_now() {
        let found = b"a\nb\nc\n";
        let left = b"a\nB\nc\n";
        let now = b"a\nX\nY\nc\n";
        let why = merge(Some(left), Some(now), Some(found)).unwrap_err();
        assert_eq!(why, "conflicts at lines 2-3");
    }

    #[test]
    fn merge_refuses_binary_and_removed_files() {
        assert!(merge(Some(b"a\0"), Some(b"b\0"), Some(b"c\0")).unwrap_err().contains("not text"));
        assert_eq!(merge(Some(b"a"), None, Some(b"b")).unwrap_err(), "was removed since");
    }

    #[test]
    fn net_change_spans_the_oldest_before_and_the_newest_after() {
        let change = |call: &str, before: Option<&str>, after: Option<&str>| FsChangeEvent {
            call_id: call.to_owned(),
            path: "/w/a".to_owned(),
            before: before.map(str::to_owned),
            after: after.map(str::to_owned),
            before_not_kept: false,
        };
        let (one, two) = (change("c1", None, Some("h1")), change("c2", Some("h1"), Some("h2")));
        let net = net_changes(&[&one, &two]);
        assert_eq!(net.len(), 1);
        assert_eq!((net[0].target.as_deref(), net[0].left.as_deref()), (None, Some("h2")));
    }
}
