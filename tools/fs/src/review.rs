//! Review before writing (docs/tools.md, "Review"): when the session's review mode is on, `write`
//! and `edit` show their change hunk by hunk through the host's `ReviewGate` and write only the
//! hunks the person accepted. The decision becomes part of the canonical value (`review`), so the
//! Native text that tells the model which hunks were rejected, and why, replays from the log.

use crate::diff::Change;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_contract::{ReviewHandle, ReviewRequest, ReviewVerdict, ToolContext, ToolError};
use toolhost_protocol::card::parse_patch;
use toolhost_protocol::lsp_ext::ReviewFallback;

/// A hunk the person rejected, by its place in the text before the change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RejectedHunk {
    /// Index into the hunks the review showed (0-based).
    pub index: usize,
    /// First line (1-based) and number of lines the hunk covers in the text before.
    pub line: usize,
    pub lines: usize,
}

/// How the person decided, as recorded in the value of a reviewed write or edit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewRecord {
    /// Hunks shown.
    pub hunks: usize,
    /// Indexes of the hunks written.
    pub accepted: Vec<usize>,
    /// The hunks not written.
    pub rejected: Vec<RejectedHunk>,
    /// The person's comment for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Set when nobody reviewed the change and the configured fallback wrote it: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreviewed: Option<String>,
}

/// What to write after a review.
pub(crate) enum Reviewed {
    /// Review is off: write the whole change, record nothing.
    NotAsked,
    /// Write the accepted hunks (all of them, or some) and record the decision.
    Write { accepted: Vec<usize>, record: ReviewRecord },
}

impl Reviewed {
    /// Whether every hunk is to be written.
    pub(crate) fn is_whole(&self, change: &Change<'_>) -> bool {
        match self {
            Reviewed::NotAsked => true,
            Reviewed::Write { accepted, .. } => accepted.len() == change.hunk_count(),
        }
    }

    pub(crate) fn accepted(&self) -> &[usize] {
        match self {
            Reviewed::NotAsked => &[],
            Reviewed::Write { accepted, .. } => accepted,
        }
    }

    pub(crate) fn record(self) -> Option<ReviewRecord> {
        match self {
            Reviewed::NotAsked => None,
            Reviewed::Write { record, .. } => Some(record),
        }
    }
}

/// The session's review gate, when it reviews changes now.
pub(crate) fn gate(cx: &ToolContext) -> Option<ReviewHandle> {
    cx.capability::<ReviewHandle>().filter(|g| g.is_on(cx.call_id()))
}

fn review_error(code: &str, message: String) -> ToolError {
    ToolError::typed("ReviewError", code, message)
}

/// Asks for a review of `before` → `after` (LF-normalized) when the session reviews changes.
/// Fails when everything was rejected, nobody could or did answer and the fallback denies, or the
/// call was cancelled while waiting.
pub(crate) async fn ask(
    cx: &ToolContext,
    tool: &str,
    display: &str,
    hunk_path: &str,
    change: &Change<'_>,
    before: &str,
    after: &str,
) -> Result<Reviewed, ToolError> {
    let Some(gate) = gate(cx) else {
        return Ok(Reviewed::NotAsked);
    };
    if change.hunk_count() == 0 {
        return Ok(Reviewed::NotAsked);
    }
    let hunks = change
        .meta(hunk_path)
        .patch
        .and_then(|patch| parse_patch(hunk_path, &patch))
        .unwrap_or_default();
    let request = ReviewRequest {
        call_id: cx.call_id().to_owned(),
        tool: tool.to_owned(),
        path: display.to_owned(),
        before: before.to_owned(),
        after: after.to_owned(),
        hunks,
        required: false,
    };
    let all: Vec<usize> = (0..change.hunk_count()).collect();
    let unreviewed = |why: String| {
        let record = ReviewRecord {
            hunks: all.len(),
            accepted: all.clone(),
            rejected: Vec::new(),
            comment: None,
            unreviewed: Some(why),
        };
        Ok(Reviewed::Write { accepted: all.clone(), record })
    };
    match gate.review(request, cx.signal().clone()).await {
        ReviewVerdict::NotAsked => Ok(Reviewed::NotAsked),
        ReviewVerdict::Cancelled => Err(ToolError::aborted()),
        ReviewVerdict::Unavailable { fallback: ReviewFallback::Accept } => {
            unreviewed("no editor that can review changes is connected".to_owned())
        }
        ReviewVerdict::Unavailable { fallback: ReviewFallback::Deny } => Err(review_error(
            "REVIEW_UNAVAILABLE",
            format!(
                "this change to {display} needs the user's review, but no editor that can review it is connected; nothing was written"
            ),
        )),
        ReviewVerdict::TimedOut { after_ms, fallback: ReviewFallback::Accept } => {
            unreviewed(format!("nobody reviewed it within {}", seconds(after_ms)))
        }
        ReviewVerdict::TimedOut { after_ms, fallback: ReviewFallback::Deny } => Err(review_error(
            "REVIEW_TIMEOUT",
            format!(
                "the user did not review this change to {display} within {}; nothing was written",
                seconds(after_ms)
            ),
        )),
        ReviewVerdict::Decided { accepted, comment } => {
            let mut accepted: Vec<usize> =
                accepted.into_iter().filter(|i| *i < all.len()).collect();
            accepted.sort_unstable();
            accepted.dedup();
            if accepted.is_empty() {
                let mut message =
                    format!("the user rejected this change to {display}; nothing was written");
                if let Some(comment) = comment.as_deref().filter(|c| !c.trim().is_empty()) {
                    message.push_str(&format!(". Their comment: {comment}"));
                }
                return Err(review_error("REVIEW_REJECTED", message));
            }
            let rejected = all
                .iter()
                .filter(|i| !accepted.contains(i))
                .map(|&index| {
                    let (line, lines) = change.old_lines_of(index).unwrap_or((0, 0));
                    RejectedHunk { index, line, lines }
                })
                .collect();
            let comment = comment.filter(|c| !c.trim().is_empty());
            let record = ReviewRecord {
                hunks: all.len(),
                accepted: accepted.clone(),
                rejected,
                comment,
                unreviewed: None,
            };
            Ok(Reviewed::Write { accepted, record })
        }
    }
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{ms} ms") }
}

/// The lines a reviewed write or edit adds to its Native text (none when it was not reviewed).
pub(crate) fn render_record(record: Option<&ReviewRecord>) -> String {
    let Some(record) = record else { return String::new() };
    let mut text = String::new();
    if let Some(why) = &record.unreviewed {
        text.push_str(&format!("\nThis change was written without review: {why}."));
        return text;
    }
    if record.rejected.is_empty() {
        text.push_str(&format!(
            "\nThe user reviewed this change and accepted all {} hunk{}.",
            record.hunks,
            if record.hunks == 1 { "" } else { "s" }
        ));
    } else {
        let rejected: Vec<String> = record
            .rejected
            .iter()
            .map(|h| {
                let place = match h.lines {
                    0 => format!("after line {}", h.line),
                    1 => format!("line {}", h.line),
                    n => format!("lines {}-{}", h.line, h.line + n - 1),
                };
                format!("hunk {} ({place} of the original)", h.index + 1)
            })
            .collect();
        text.push_str(&format!(
            "\nThe user reviewed this change and rejected {} of {} hunks: {}. Only the accepted hunks were written; the rejected parts of the file are unchanged.",
            record.rejected.len(),
            record.hunks,
            rejected.join(", ")
        ));
    }
    if let Some(comment) = &record.comment {
        text.push_str(&format!("\nUser comment: {comment}"));
    }
    text
}
