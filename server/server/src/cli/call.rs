//! `toolhost call <tool> [args]`: one call through the full pipeline in a session (a new one, or
//! `--session`), its Native text (or `--json`) on stdout; a person at a terminal answers the
//! call's questions there. Also what `toolhost revert` prints.

use super::{Common, Failure, colored_card, load_config, open_host, open_session, workspace_root};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use toolhost_contract::QuestionsHandle;
use toolhost_host::session::OpenedSession;
use toolhost_host::{CallRequest, Host};
use toolhost_protocol::card::CardKind;
use toolhost_protocol::lsp_ext::CallToolResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tool name (see `toolhost tools`).
    tool: String,
    /// The arguments as a JSON object (default `{}`).
    args: Option<String>,
    #[command(flatten)]
    common: Common,
    /// Print `{sessionId, callId, result, card}` as JSON.
    #[arg(long)]
    json: bool,
    /// The JSON Schema `structured_output` validates against in this session's run (a new
    /// run starts when it differs from the session's current one).
    #[arg(long, value_name = "JSON_SCHEMA")]
    structured_schema: Option<String>,
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    let arguments = super::parse_args_text(args.args.as_deref())?;
    let schema = super::schema_flag(args.structured_schema)?;
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let opened = open_session(&config, &root, &args.common)?;
    let host = open_host(&config, &root, Some(&opened))?;
    answer_on_the_terminal(&host);
    if let Some(schema) = schema {
        host.interaction()
            .ensure_run(schema)
            .await
            .map_err(|e| Failure::usage(format!("--structured-schema: {e}")))?;
    }
    run_one_call(&host, &opened, CallRequest::new(args.tool, arguments), args.json).await
}

/// A person at a terminal answers the session's questions, and reviews its changes, there.
pub fn answer_on_the_terminal(host: &Host) {
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        let asker: QuestionsHandle = Arc::new(super::terminal_ask::TerminalAsker);
        host.questions().set_asker(Some(asker));
        host.review().set_reviewer(Some(Arc::new(super::terminal_review::TerminalReviewer)));
    }
}

/// Runs one call in `host` (its session `opened`), prints it as `toolhost call` does and returns
/// the exit code (1 when the tool failed).
pub async fn run_one_call(
    host: &Arc<Host>,
    opened: &OpenedSession,
    request: CallRequest,
    json: bool,
) -> Result<u8, Failure> {
    let outcome = match host.call(request) {
        Ok(handle) => handle.finish().await,
        Err(err) => Err(err),
    };
    // Language servers the call started stop (and are reaped) before the answer.
    host.shutdown().await;
    let outcome = outcome.map_err(|e| Failure::env(e.to_string()))?;
    opened.log.flush().await.map_err(|e| Failure::env(e.to_string()))?;
    print_call(
        CallToolResult {
            // Built before the fields it is built from move out.
            card: outcome.card(),
            session_id: host.session_id().map(str::to_owned),
            call_id: outcome.call_id,
            result: outcome.finalized.result,
        },
        json,
    )
}

/// Prints a call's Native text (and, on a terminal, a diff card in colour) or its JSON.
pub fn print_call(body: CallToolResult, json: bool) -> Result<u8, Failure> {
    let is_error = body.result.is_error();
    let mut stdout = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string(&body).map_err(|e| Failure::env(e.to_string()))?;
        let _ = writeln!(stdout, "{text}");
    } else {
        let text = toolhost_protocol::content::joined_text(body.result.content());
        let _ = writeln!(stdout, "{text}");
        if stdout.is_terminal() && body.card.kind == CardKind::Diff && !is_error {
            let _ = writeln!(stdout, "\n{}", colored_card(&body.card));
        }
    }
    Ok(u8::from(is_error))
}
