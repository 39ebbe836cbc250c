//! `toolhost revert <session> --call <id> [--since]`: undo a call's file changes (or every
//! change from that call on). When the editor's `toolhost serve` holds the session, the revert
//! runs there, over the attach socket, so the editor's unsaved buffers are respected and its
//! card shows up in the editor ([`run_in_session`], which `toolhost checkpoint` uses too).

use super::call::{print_call, run_one_call};
use super::{Common, Failure, load_config, open_host, sessions_dir, workspace_root};
use serde_json::{Value, json};
use std::path::Path;
use toolhost_contract::CancellationToken;
use toolhost_host::CallRequest;
use toolhost_host::session;
use toolhost_protocol::lsp_ext::{
    AttachParams, AttachResult, CallToolParams, CallToolResult, CallerInfo, methods,
};

/// The tool that undoes recorded changes.
const REVERT: &str = "revert";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id (see `toolhost sessions`), or `last`.
    #[arg(value_name = "SESSION")]
    which: String,
    /// The call whose changes to undo (a card's call id).
    #[arg(long = "call", value_name = "CALL_ID")]
    call: String,
    /// Undo every change of the session from that call on.
    #[arg(long)]
    since: bool,
    #[command(flatten)]
    common: Common,
    /// Print `{sessionId, callId, result, card}` as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let mut arguments = json!({ "call_id": args.call });
    if args.since {
        arguments["since"] = Value::Bool(true);
    }
    let request = InSession { which: Some(&args.which), tool: REVERT, caller: "toolhost revert" };
    run_in_session(&args.common, request, arguments, args.json).await
}

/// One call on a session, by whoever holds it.
pub(super) struct InSession<'a> {
    /// The session id, or `last`; absent: the session of the editor's toolhost serving this
    /// workspace, else the workspace's newest.
    pub which: Option<&'a str>,
    pub tool: &'a str,
    /// Who the call is made by, when the editor's toolhost makes it.
    pub caller: &'a str,
}

/// Makes the call on the session: here when nobody holds it, else in the editor's toolhost
/// that does (over the attach socket, so the editor's unsaved buffers are respected and the
/// card shows up there).
pub(super) async fn run_in_session(
    common: &Common,
    request: InSession<'_>,
    arguments: Value,
    json: bool,
) -> Result<u8, Failure> {
    let root = workspace_root(common)?;
    let config = load_config(&root)?;
    let sessions = sessions_dir(&config, common)?;
    if request.which.is_none()
        && toolhost_attach::AttachClient::connect(&toolhost_attach::socket_path(&root))
            .await
            .is_ok()
    {
        return call_in_editor(&root, &request, arguments, json).await;
    }
    let which = request.which.unwrap_or(session::LAST_SESSION);
    match session::open_named(&sessions, &root, Some(which)) {
        Ok((_, opened)) => {
            let host = open_host(&config, &root, Some(&opened))?;
            super::call::answer_on_the_terminal(&host);
            run_one_call(&host, &opened, CallRequest::new(request.tool, arguments), json).await
        }
        // The editor's toolhost holds the session: ask it to make the call there.
        Err(toolhost_session::SessionError::Locked(_)) => {
            call_in_editor(&root, &request, arguments, json).await
        }
        Err(e) => Err(Failure::env(e.to_string())),
    }
}

async fn call_in_editor(
    root: &Path,
    request: &InSession<'_>,
    arguments: Value,
    json: bool,
) -> Result<u8, Failure> {
    let which = request.which.unwrap_or("the editor's");
    let locked = || {
        Failure::env(format!(
            "session {which} is in use by another toolhost that does not serve this workspace's editor"
        ))
    };
    let socket = toolhost_attach::socket_path(root);
    let client = toolhost_attach::AttachClient::connect(&socket).await.map_err(|_| locked())?;
    let never = CancellationToken::new();
    let params = AttachParams {
        caller: CallerInfo { name: request.caller.to_owned(), version: None },
        protocol_version: None,
        results: None,
    };
    let attached: AttachResult = client
        .request(methods::ATTACH, &params, &never)
        .await
        .map_err(|e| Failure::env(e.message))?;
    if request.which.is_some() && attached.session_id.as_deref() != request.which {
        return Err(locked());
    }
    let params = CallToolParams {
        name: request.tool.to_owned(),
        arguments,
        call_id: None,
        can_ask: false,
        model_facing: false,
    };
    let body: CallToolResult = client
        .request(methods::CALL_TOOL, &params, &never)
        .await
        .map_err(|e| Failure::env(e.message))?;
    print_call(body, json)
}
