//! Diff metadata of write/edit results: per-hunk `FileDiff`s plus the lossless unified `patch`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One hunk of a change, in the widely used `{path, oldText, newText}` shape plus unified-diff
/// numbers.
///
/// Context lines go to both sides, removed lines to `oldText`, added lines to `newText`; each side
/// is its lines joined by `\n` without a trailing newline. `oldText` is null iff the hunk has no
/// old-side lines. `oldStart`/`newStart` are 1-based; a side with no lines has start = the line
/// before it (possibly 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: String,
    pub old_text: Option<String>,
    pub new_text: String,
    pub old_start: u64,
    pub old_lines: u64,
    pub new_start: u64,
    pub new_lines: u64,
}

/// The `meta` of write and edit: `diffs` (one per hunk) and `patch`, the whole change as a unified
/// diff with `--- a/<path>` / `+++ b/<path>` headers. A write whose diff basis was declined has
/// `diffs: []` and no `patch`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiffMeta {
    pub diffs: Vec<FileDiff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}
