//! `toolhost checkpoint [NAME] [--restore NAME | --list] [--session ID|last]`: mark the session's
//! current point, list its checkpoints (named ones and the start of each agent turn), or restore
//! one — every file change after it undone as one recorded call, which `toolhost revert` of that
//! call undoes in turn. Runs in the editor's toolhost when it holds the session.

use super::revert::{InSession, run_in_session};
use super::{Common, Failure};
use serde_json::json;

/// The internal tool that keeps and restores checkpoints.
const CHECKPOINT: &str = "checkpoint";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The name of the checkpoint to create.
    #[arg(value_name = "NAME", conflicts_with_all = ["restore", "list"], required_unless_present_any = ["restore", "list"])]
    name: Option<String>,
    /// Restore this checkpoint (a name, or an agent turn's run id from --list).
    #[arg(long, value_name = "NAME", conflicts_with = "list")]
    restore: Option<String>,
    /// List the session's checkpoints.
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    common: Common,
    /// Print `{sessionId, callId, result, card}` as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let arguments = match (&args.name, &args.restore, args.list) {
        (_, _, true) => json!({"action": "list"}),
        (_, Some(name), _) => json!({"action": "restore", "name": name}),
        (Some(name), None, false) => json!({"action": "create", "name": name}),
        (None, None, false) => {
            return Err(Failure::usage("name a checkpoint, or --restore, or --list"));
        }
    };
    // `--session`, else the editor's session (or, with no editor open, the newest).
    let request = InSession {
        which: args.common.session.as_deref(),
        tool: CHECKPOINT,
        caller: "toolhost checkpoint",
    };
    run_in_session(&args.common, request, arguments, args.json).await
}
