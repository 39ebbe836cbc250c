//! File tools: `read`, `write`, `edit`, `glob`, `grep` and `revert`, with replayable diff
//! metadata.
//!
//! Every tool reaches the filesystem only through the `Workspace` capability of its context
//! (confinement, atomic writes, the observation ledger). Native text is byte for byte what
//! docs/tools.md documents for byte; `render` and `presentation_meta` are pure functions of (args,
//! value).

mod agent_step;
mod apply_changes;
mod checkpoint;
pub mod diff;
mod edit;
mod glob;
mod grep;
mod limits;
mod present;
mod read;
mod replace_all;
mod revert;
mod review;
mod three_way;
mod write;

pub use agent_step::{
    AGENT_STEP, AgentStepArgs, AgentStepOutput, AgentStepTool, AgentSteps, FileOperation, StepEnd,
    StepEvent, StepFile, StepStatus,
};
pub use apply_changes::{
    APPLY_CHANGES, AppliedFile, ApplyChangesArgs, ApplyChangesOutput, ApplyChangesTool,
    ApplyOutcome, IncomingFile,
};
pub use checkpoint::{
    CHECKPOINT, CheckpointAction, CheckpointArgs, CheckpointEntry, CheckpointOutput, CheckpointTool,
};
pub use edit::{EditArgs, EditOutput, EditTool};
pub use glob::{GlobArgs, GlobOutput, GlobTool};
pub use grep::{GrepArgs, GrepMatchOut, GrepOutput, GrepTool};
pub use limits::{FsLimits, LimitsSection};
pub use read::{ReadArgs, ReadLine, ReadOutput, ReadTool, lang_of};
pub use revert::{RevertAction, RevertArgs, RevertOutput, RevertTool, RevertedFile};
pub use review::{RejectedHunk, ReviewRecord};
pub use three_way::{Conflict, Merge, merge};
pub use write::{WriteArgs, WriteOutput, WriteTool};

use toolhost_contract::{Disposer, Registrar, RegistrationError, ToolContext, ToolError};
use toolhost_workspace::{FsError, Workspace};

/// Registers the file tools (read, write, edit, glob, grep, revert, and the internal checkpoint
/// and apply_changes).
pub fn register(
    registry: &dyn Registrar,
    limits: FsLimits,
) -> Result<Vec<Disposer>, RegistrationError> {
    let disposers = vec![
        registry.register(ReadTool::new(limits.clone()))?,
        registry.register(WriteTool)?,
        registry.register(EditTool)?,
        registry.register(GlobTool::new(limits.clone()))?,
        registry.register(GrepTool::new(limits))?,
        registry.register(RevertTool)?,
        registry.register(CheckpointTool)?,
        registry.register(ApplyChangesTool)?,
    ];
    Ok(disposers)
}

/// The workspace capability (writing on behalf of this call, so the host can tie every change
/// to it), or a clear failure when the host provided none.
pub(crate) fn workspace(cx: &ToolContext) -> Result<Workspace, ToolError> {
    cx.capability::<Workspace>()
        .map(|ws| ws.for_call(cx.call_id()))
        .ok_or_else(|| ToolError::plain("the file tools require a workspace (none is configured)"))
}

/// A typed `FsError` failure, with the documented model-facing remedies appended.
pub(crate) fn fs_failure(err: FsError) -> ToolError {
    let code = err.code();
    let mut message = err.to_string();
    match code {
        "FS_STALE_VERSION" => message.push_str(" — re-read the file, then retry"),
        "FS_NOT_OBSERVED" => message.push_str(" — read the file, then retry"),
        _ => {}
    }
    ToolError::typed("FsError", code, message)
}

/// Seed-style "non-empty string" checks.
pub(crate) fn require_non_empty(value: &str, what: &str) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        return Err(ToolError::plain(format!("{what} must be a non-empty string")));
    }
    Ok(())
}

/// Normalizes CRLF to LF (lone `\r` stays content).
pub(crate) fn crlf_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Splits a leading UTF-8 BOM off `text`: `(bom, rest)` with `bom` empty when there is none.
pub(crate) fn strip_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    }
}
