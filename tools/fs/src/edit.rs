//! `edit`: replace a literal string in a file that was read in this session (docs/tools.md, edit).
//!
//! Line endings are normalized for matching and written back in the file's majority style; a
//! UTF-8 BOM is kept on write-back (a deliberate departure, docs/design.md §10); it is
//! not part of `before`/`after`.

use crate::diff::{Change, diff_meta};
use crate::review::{self, ReviewRecord};
use crate::{crlf_to_lf, fs_failure, require_non_empty, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock};
use toolhost_workspace::{FsError, Op};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The file to edit, relative to the workspace or absolute.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    pub replace_all: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EditOutput {
    pub path: String,
    /// The file's text before the edit, LF-normalized.
    pub before: String,
    /// The file's text after the edit, LF-normalized.
    pub after: String,
    /// How the person decided, when the session reviews changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
}

pub struct EditTool;

/// CRLF when the first 4096 chars hold more CRLF than bare LF endings.
fn uses_crlf(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect();
    let crlf = head.matches("\r\n").count();
    let lf = head.matches('\n').count() - crlf;
    crlf > lf
}

impl Tool for EditTool {
    type Args = EditArgs;
    type Output = EditOutput;

    fn name(&self) -> &str {
        "edit"
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        crate::present::edit(args)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        }
    }

    /// Its one change is the workspace write (its keepers are asked first).
    fn changes_only_through_workspace(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Replace an exact string in a file that was read in this session. old_string must match exactly \
         once unless replace_all is true. Line endings are matched and preserved."
            .to_owned()
    }

    async fn call(&self, args: EditArgs, cx: ToolContext) -> Result<EditOutput, ToolError> {
        require_non_empty(&args.file_path, "file_path")?;
        if args.old_string.is_empty() {
            return Err(ToolError::plain("old_string must be a non-empty string"));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::plain("old_string and new_string must differ"));
        }
        let ws = workspace(&cx)?;
        let txn = ws.begin_edit(&args.file_path).await.map_err(fs_failure)?;
        let display = txn.display().to_owned();
        // The BOM is kept on write-back but is no part of the text being matched or diffed.
        let (bom, text) = crate::strip_bom(txn.text());
        let crlf = uses_crlf(text);
        let before = crlf_to_lf(text);
        let old = crlf_to_lf(&args.old_string);
        let new = crlf_to_lf(&args.new_string);
        let count = before.matches(old.as_str()).count();
        if count == 0 {
            return Err(ToolError::typed(
                "FsError",
                "FS_EDIT_NOT_FOUND",
                format!("old_string was not found in \"{display}\""),
            ));
        }
        if count > 1 && args.replace_all != Some(true) {
            return Err(ToolError::typed(
                "FsError",
                "FS_AMBIGUOUS_EDIT",
                format!(
                    "old_string matched {count} times in \"{display}\"; provide a more specific old_string or set replace_all to true"
                ),
            ));
        }
        let after = before.replace(old.as_str(), &new);
        let body = if crlf { after.replace('\n', "\r\n") } else { after.clone() };
        if review::gate(&cx).is_none() {
            let bytes = format!("{bom}{body}");
            txn.commit(bytes.into_bytes()).await.map_err(fs_failure)?;
            return Ok(EditOutput { path: display, before, after, review: None });
        }
        // Under review: the file's lock is not held while the person decides (a read of the file
        // must not wait for them); the edit starts over afterwards and requires the same version.
        let (bom, raw, version) = (bom.to_owned(), text.to_owned(), txn.version().to_owned());
        drop(txn);
        let change = Change::new(&before, &after);
        let reviewed =
            review::ask(&cx, "edit", &display, &args.file_path, &change, &before, &after).await?;
        let txn = ws.begin_edit(&args.file_path).await.map_err(fs_failure)?;
        if txn.version() != version {
            return Err(fs_failure(FsError::Changed { op: Op::Edit, path: display }));
        }
        let (written, bytes) = if reviewed.is_whole(&change) {
            (after, format!("{bom}{body}"))
        } else {
            let accepted = reviewed.accepted();
            (
                change.apply(accepted, &before, &after),
                format!("{bom}{}", change.apply(accepted, &raw, &body)),
            )
        };
        txn.commit(bytes.into_bytes()).await.map_err(fs_failure)?;
        Ok(EditOutput { path: display, before, after: written, review: reviewed.record() })
    }

    fn render(&self, args: &EditArgs, out: &EditOutput) -> Vec<ContentBlock> {
        let text = if args.replace_all == Some(true) {
            format!(
                "The file {} has been updated. All occurrences were successfully replaced.",
                out.path
            )
        } else {
            format!("The file {} has been updated successfully.", out.path)
        };
        vec![ContentBlock::text(text + &review::render_record(out.review.as_ref()))]
    }

    fn presentation_meta(&self, args: &EditArgs, out: &EditOutput) -> Option<Value> {
        serde_json::to_value(diff_meta(&args.file_path, &out.before, &out.after)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_line_ending() {
        assert!(uses_crlf("a\r\nb\r\nc\n"));
        assert!(!uses_crlf("a\r\nb\nc\n"));
        assert!(!uses_crlf("abc"));
    }
}
