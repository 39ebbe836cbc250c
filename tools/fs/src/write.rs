//! `write`: create or overwrite a file, verbatim and atomically (docs/tools.md, write).

use crate::diff::{Change, diff_meta};
use crate::review::{self, ReviewRecord};
use crate::{crlf_to_lf, fs_failure, require_non_empty, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock, DiffMeta};
use toolhost_workspace::WriteOperation;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The file to write, relative to the workspace or absolute.
    pub file_path: String,
    /// The complete new content, written verbatim.
    pub content: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Operation {
    Create,
    Update,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WriteOutput {
    pub path: String,
    pub operation: Operation,
    /// The replaced text (LF-normalized), or null when there was none or it is no diff basis.
    pub before: Option<String>,
    /// The written text, LF-normalized.
    pub after: String,
    /// How the person decided, when the session reviews changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
}

pub struct WriteTool;

impl Tool for WriteTool {
    type Args = WriteArgs;
    type Output = WriteOutput;

    fn name(&self) -> &str {
        "write"
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        crate::present::write(args)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { read_only: false, destructive: true, idempotent: true, open_world: false }
    }

    /// Its one change is the workspace write (its keepers are asked first).
    fn changes_only_through_workspace(&self) -> bool {
        true
    }

    fn description(&self) -> String {
        "Create a file or replace its whole content, written verbatim and atomically. Overwriting an \
         existing file requires reading it first in this session; prefer edit for small changes."
            .to_owned()
    }

    async fn call(&self, args: WriteArgs, cx: ToolContext) -> Result<WriteOutput, ToolError> {
        require_non_empty(&args.file_path, "file_path")?;
        let ws = workspace(&cx)?;
        let mut content = args.content.clone();
        let mut after = crlf_to_lf(&args.content);
        let mut reviewed = None;
        if review::gate(&cx).is_some() {
            // Checked before asking, so the person never reviews a write that cannot happen; the
            // write re-checks under the file's lock (the file may change while they decide).
            let current = ws.check_write(&args.file_path).await.map_err(fs_failure)?;
            let display = ws.resolve_display(&args.file_path).await.map_err(fs_failure)?;
            // A file that is not text is shown as replaced whole.
            let raw = current.and_then(|b| String::from_utf8(b).ok()).unwrap_or_default();
            // Reviewed without a BOM; the lines a partial write keeps are the file's own bytes.
            let before = crlf_to_lf(crate::strip_bom(&raw).1);
            let change = Change::new(&before, &after);
            let decision =
                review::ask(&cx, "write", &display, &args.file_path, &change, &before, &after)
                    .await?;
            if !decision.is_whole(&change) {
                let accepted = decision.accepted();
                content = change.apply(accepted, &raw, &args.content);
                after = change.apply(accepted, &before, &after);
            }
            reviewed = decision.record();
        }
        let outcome =
            ws.write_file(&args.file_path, content.as_bytes()).await.map_err(fs_failure)?;
        Ok(WriteOutput {
            path: outcome.display,
            operation: match outcome.operation {
                WriteOperation::Create => Operation::Create,
                WriteOperation::Update | WriteOperation::Remove => Operation::Update,
            },
            before: outcome.before.map(|b| crate::strip_bom(&b).1.to_owned()),
            after,
            review: reviewed,
        })
    }

    fn render(&self, _args: &WriteArgs, out: &WriteOutput) -> Vec<ContentBlock> {
        let verb = match out.operation {
            Operation::Create => "Created file",
            Operation::Update => "Updated file",
        };
        vec![ContentBlock::text(format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n{verb}\n</content>{}",
            out.path,
            review::render_record(out.review.as_ref())
        ))]
    }

    fn presentation_meta(&self, args: &WriteArgs, out: &WriteOutput) -> Option<Value> {
        // No basis (a create, or a declined one): `diffs: []`, and cards fall back to the
        // argument-derived whole-file view.
        let meta = match &out.before {
            Some(before) => diff_meta(&args.file_path, before, &out.after),
            None => DiffMeta { diffs: Vec::new(), patch: None },
        };
        serde_json::to_value(meta).ok()
    }
}
