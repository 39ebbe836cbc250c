//! `apply_changes` (internal): bring changes made elsewhere — another session's worktree — into
//! this workspace, file by file and hunk by hunk (docs/tools.md).
//!
//! Each file comes with its text in the common ancestor (`base`, where the other side started)
//! and the other side's text now (`theirs`); the text here now is read through the workspace.
//! What only the other side changed is proposed; what both changed differently is a conflict,
//! listed with its three sides and left as it is here (never resolved silently). With `review`,
//! each file's proposed hunks are shown to the person (the editor's review, or the terminal's)
//! and only the accepted ones are written. Everything written is one change of this call, under
//! the journal `revert` uses, so one revert of this call takes it all back.
//! An internal tool: editors and the command line call it, models are never offered it.

use crate::diff::{Change, diff_meta_of_files};
use crate::replace_all::{Replacement, replace_all};
use crate::revert::history_of;
use crate::three_way::{Conflict, merge};
use crate::{fs_failure, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_contract::{ReviewHandle, ReviewRequest, ReviewVerdict, Tool, ToolContext, ToolError};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CallPresentation, CardKind, parse_patch};
use toolhost_protocol::lsp_ext::ToolAnnotations;

/// The tool's name.
pub const APPLY_CHANGES: &str = "apply_changes";

/// One file changed on the other side.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncomingFile {
    /// The file, relative to the workspace.
    pub path: String,
    /// Its text where the other side started (absent: it did not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Its text on the other side now (absent: the other side removed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theirs: Option<String>,
    /// Set when either side is not text: it is listed, never merged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_text: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyChangesArgs {
    /// Where the changes come from, as the person knows it (e.g. `worktree fix-1`).
    pub from: String,
    pub files: Vec<IncomingFile>,
    /// Show each file's hunks to the person and write only the accepted ones.
    #[serde(default)]
    pub review: Option<bool>,
}

/// What became of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApplyOutcome {
    /// Every proposed hunk was written.
    Applied,
    /// Some proposed hunks were written; the rest stays on the other side.
    Partial,
    /// The person rejected every hunk.
    Rejected,
    /// Nothing could be proposed: only conflicts.
    Conflicted,
    /// The file here already holds the other side's change.
    Unchanged,
    /// Not text: not merged.
    Skipped,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedFile {
    pub path: String,
    pub outcome: ApplyOutcome,
    /// Hunks proposed (the other side's changes that merge cleanly).
    pub hunks: usize,
    /// Indexes of the hunks written.
    pub accepted: Vec<usize>,
    /// Regions both sides changed differently: left as they are here.
    pub conflicts: Vec<Conflict>,
    /// The text here before (null: no file, or nothing written).
    pub before: Option<String>,
    /// The text written (null: removed, or nothing written).
    pub after: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyChangesOutput {
    pub from: String,
    pub files: Vec<AppliedFile>,
}

pub struct ApplyChangesTool;

fn failure(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::typed("ApplyError", code, message)
}

/// One file's plan before anything is written.
struct Plan {
    file: AppliedFile,
    real_path: String,
    current: Option<Vec<u8>>,
    next: Option<Option<Vec<u8>>>,
}

/// The text of bytes that are text (UTF-8 without NUL).
fn text_of(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok().filter(|t| !t.contains('\0'))
}

fn file(path: &str, outcome: ApplyOutcome) -> AppliedFile {
    AppliedFile {
        path: path.to_owned(),
        outcome,
        hunks: 0,
        accepted: Vec::new(),
        conflicts: Vec::new(),
        before: None,
        after: None,
    }
}

/// Asks about `ours → proposed`, whatever the session's review mode. `Ok(None)`: review was not
/// asked for.
async fn review(
    cx: &ToolContext,
    display: &str,
    ours: &str,
    proposed: &str,
    change: &Change<'_>,
) -> Result<Vec<usize>, ToolError> {
    let all: Vec<usize> = (0..change.hunk_count()).collect();
    let Some(gate) = cx.capability::<ReviewHandle>() else {
        return Err(failure(
            "REVIEW_UNAVAILABLE",
            "this session cannot ask for reviews; nothing was written",
        ));
    };
    let hunks =
        change.meta(display).patch.and_then(|p| parse_patch(display, &p)).unwrap_or_default();
    let request = ReviewRequest {
        call_id: cx.call_id().to_owned(),
        tool: APPLY_CHANGES.to_owned(),
        path: display.to_owned(),
        before: ours.to_owned(),
        after: proposed.to_owned(),
        hunks,
        required: true,
    };
    match gate.review(request, cx.signal().clone()).await {
        ReviewVerdict::NotAsked => Ok(all),
        ReviewVerdict::Decided { accepted, .. } => {
            let mut accepted: Vec<usize> =
                accepted.into_iter().filter(|i| *i < all.len()).collect();
            accepted.sort_unstable();
            accepted.dedup();
            Ok(accepted)
        }
        ReviewVerdict::Cancelled => Err(ToolError::aborted()),
        ReviewVerdict::Unavailable { .. } => Err(failure(
            "REVIEW_UNAVAILABLE",
            format!(
                "the changes to {display} need the user's review, but nobody who can review them is connected; nothing was written"
            ),
        )),
        ReviewVerdict::TimedOut { .. } => Err(failure(
            "REVIEW_TIMEOUT",
            format!("nobody reviewed the changes to {display} in time; nothing was written"),
        )),
    }
}

/// Decides one file: what is proposed, what conflicts, what the person accepted.
async fn plan(
    cx: &ToolContext,
    ws: &toolhost_workspace::Workspace,
    incoming: &IncomingFile,
    reviewed: bool,
) -> Result<Plan, ToolError> {
    let resolved = ws.resolve(&incoming.path).await.map_err(fs_failure)?;
    // Shown as given (relative to the workspace); the review names the file as cards do.
    let display = incoming.path.clone();
    let shown = resolved.display.clone();
    let real_path = resolved.real_path.to_string_lossy().into_owned();
    let current = ws.peek(&incoming.path).await.map_err(fs_failure)?;
    let plan = |file: AppliedFile, next: Option<Option<Vec<u8>>>| Plan {
        file,
        real_path: real_path.clone(),
        current: current.clone(),
        next,
    };
    let ours_text = match &current {
        Some(bytes) => match text_of(bytes) {
            Some(text) => Some(text.to_owned()),
            None => return Ok(plan(file(&display, ApplyOutcome::Skipped), None)),
        },
        None => None,
    };
    if incoming.not_text {
        return Ok(plan(file(&display, ApplyOutcome::Skipped), None));
    }
    if ours_text == incoming.theirs {
        return Ok(plan(file(&display, ApplyOutcome::Unchanged), None));
    }
    // Removed over there: removed here when here is as it was; else a conflict.
    let Some(theirs) = incoming.theirs.as_deref() else {
        let ours = ours_text.unwrap_or_default();
        if current.is_some() && incoming.base.as_deref() != Some(ours.as_str()) {
            let mut f = file(&display, ApplyOutcome::Conflicted);
            f.conflicts.push(Conflict {
                line: 1,
                lines: ours.lines().count(),
                ours,
                base: incoming.base.clone().unwrap_or_default(),
                theirs: String::new(),
            });
            return Ok(plan(f, None));
        }
        let mut f = file(&display, ApplyOutcome::Applied);
        f.hunks = 1;
        if reviewed {
            let change = Change::new(&ours, "");
            f.accepted = review(cx, &shown, &ours, "", &change).await?;
            if f.accepted.is_empty() {
                f.outcome = ApplyOutcome::Rejected;
                return Ok(plan(f, None));
            }
        } else {
            f.accepted = vec![0];
        }
        f.before = Some(ours);
        return Ok(plan(f, Some(None)));
    };
    if current.is_none() && incoming.base.is_some() {
        // Removed here, changed over there.
        let mut f = file(&display, ApplyOutcome::Conflicted);
        f.conflicts.push(Conflict {
            line: 0,
            lines: 0,
            ours: String::new(),
            base: incoming.base.clone().unwrap_or_default(),
            theirs: theirs.to_owned(),
        });
        return Ok(plan(f, None));
    }
    let ours = ours_text.clone().unwrap_or_default();
    let merged = merge(incoming.base.as_deref().unwrap_or(""), &ours, theirs);
    let change = Change::new(&ours, &merged.proposed);
    let mut f = file(&display, ApplyOutcome::Applied);
    f.hunks = change.hunk_count();
    f.conflicts = merged.conflicts;
    if f.hunks == 0 && current.is_some() {
        f.outcome = ApplyOutcome::Conflicted;
        return Ok(plan(f, None));
    }
    f.accepted = if reviewed {
        review(cx, &shown, &ours, &merged.proposed, &change).await?
    } else {
        (0..f.hunks).collect()
    };
    if f.accepted.is_empty() && f.hunks > 0 {
        f.outcome = ApplyOutcome::Rejected;
        return Ok(plan(f, None));
    }
    let written = if f.accepted.len() == f.hunks {
        merged.proposed.clone()
    } else {
        f.outcome = ApplyOutcome::Partial;
        change.apply(&f.accepted, &ours, &merged.proposed)
    };
    if !f.conflicts.is_empty() && f.outcome == ApplyOutcome::Applied {
        f.outcome = ApplyOutcome::Partial;
    }
    f.before = ours_text;
    f.after = Some(written.clone());
    Ok(plan(f, Some(Some(written.into_bytes()))))
}

impl Tool for ApplyChangesTool {
    type Args = ApplyChangesArgs;
    type Output = ApplyChangesOutput;

    fn name(&self) -> &str {
        APPLY_CHANGES
    }

    fn internal(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Bring changes made elsewhere (another session's worktree) into this workspace: what only \
         the other side changed is written (hunk by hunk after the person's review when asked), \
         what both sides changed differently is listed as a conflict and left as it is here. \
         Everything written is one change of this call."
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
        let from = args.get("from").and_then(Value::as_str).unwrap_or("elsewhere");
        CallPresentation::new(CardKind::Diff, format!("Apply changes from {from}"))
    }

    async fn call(
        &self,
        args: ApplyChangesArgs,
        cx: ToolContext,
    ) -> Result<ApplyChangesOutput, ToolError> {
        crate::require_non_empty(&args.from, "from")?;
        let ws = workspace(&cx)?;
        let history = history_of(&cx)?;
        let reviewed = args.review == Some(true);
        let mut plans = Vec::new();
        for incoming in &args.files {
            plans.push(plan(&cx, &ws, incoming, reviewed).await?);
        }
        let replacements: Vec<Replacement> = plans
            .iter()
            .filter_map(|p| {
                p.next.clone().map(|next| Replacement {
                    real_path: p.real_path.clone(),
                    current: p.current.clone(),
                    next,
                })
            })
            .collect();
        if !replacements.is_empty() {
            replace_all(&ws, history.as_ref(), cx.call_id(), &replacements).await?;
        }
        Ok(ApplyChangesOutput {
            from: args.from,
            files: plans.into_iter().map(|p| p.file).collect(),
        })
    }

    fn render(&self, _args: &ApplyChangesArgs, out: &ApplyChangesOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_text(out))]
    }

    fn presentation_meta(
        &self,
        _args: &ApplyChangesArgs,
        out: &ApplyChangesOutput,
    ) -> Option<Value> {
        let files = out.files.iter().filter(|f| f.before.is_some() || f.after.is_some());
        let meta = diff_meta_of_files(
            files.map(|f| (f.path.as_str(), f.before.as_deref(), f.after.as_deref())),
        );
        serde_json::to_value(meta).ok()
    }
}

fn hunk_list(indexes: &[usize]) -> String {
    indexes.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ")
}

/// The Native text: a line per file, each conflict with the other side's lines.
pub fn render_text(out: &ApplyChangesOutput) -> String {
    let mut text = format!("Applied changes from {}:", out.from);
    for f in &out.files {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let line = match f.outcome {
            ApplyOutcome::Applied => {
                format!("applied {} ({} hunk{})", f.path, f.hunks, plural(f.hunks))
            }
            ApplyOutcome::Partial if f.accepted.len() == f.hunks => {
                format!("applied {} ({} hunk{})", f.path, f.hunks, plural(f.hunks))
            }
            ApplyOutcome::Partial => format!(
                "partly applied {} (hunk{} {} of {}; the rest stays there)",
                f.path,
                plural(f.accepted.len()),
                hunk_list(&f.accepted),
                f.hunks
            ),
            ApplyOutcome::Rejected => format!("rejected {} (nothing written)", f.path),
            ApplyOutcome::Conflicted => format!("not applied {} (only conflicts)", f.path),
            ApplyOutcome::Unchanged => format!("unchanged {} (already the same here)", f.path),
            ApplyOutcome::Skipped => format!("skipped {} (not text)", f.path),
        };
        text.push('\n');
        text.push_str(&line);
        if !f.conflicts.is_empty() {
            let n = f.conflicts.len();
            text.push_str(&format!("; {n} conflict{} left as it is here", plural(n)));
        }
        for c in &f.conflicts {
            let place = match c.lines {
                0 => format!("after line {}", c.line),
                1 => format!("line {}", c.line),
                n => format!("lines {}-{}", c.line, c.line + n - 1),
            };
            text.push_str(&format!(
                "\n  conflict at {place}: both sides changed it. The other side has:\n"
            ));
            for l in c.theirs.lines() {
                text.push_str("  | ");
                text.push_str(l);
                text.push('\n');
            }
            if c.theirs.is_empty() {
                text.push_str("  | (nothing: removed)\n");
            }
            text.pop();
        }
    }
    text
}
