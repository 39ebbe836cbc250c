//! The request and notification handlers of `toolhost serve`: the LSP lifecycle (`initialize`,
//! `shutdown`), toolhost's methods (`toolhost/listTools`, `toolhost/callTool`,
//! `toolhost/listSessions`, `toolhost/replaySession`, `workspace/executeCommand`), document
//! tracking and cancellation. Requests run as tasks under a panic guard (a panic is an
//! internal-error reply, never a dead server); their answers go out through the outbox.

use super::routes::{EditorAsker, EditorListener, EditorReviewer};
use super::{Phase, ServerState};
use crate::editor_lsp::EditorLspProvider;
use futures::FutureExt;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_contract::lsp::file_uri_path;
use toolhost_contract::{CancellationToken, QuestionsHandle};
use toolhost_host::config::{PartialConfig, Sources};
use toolhost_host::{CallRequest, Host, HostOptions, session};
use toolhost_jsonrpc::message::{self, ErrorObject, Id, Notification, Request, codes};
use toolhost_protocol::lsp_ext::{
    CallToolParams, CallToolResult, CancelCallParams, CancelCallResult, ListSessionsParams,
    ListSessionsResult, ListToolsResult, ReplaySessionParams, ReplaySessionResult, methods,
};

fn invalid_request(reason: &str) -> ErrorObject {
    ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {reason}"))
}

/// Typed params; toolhost's own methods read a missing or null `params` as `{}`.
fn params<P: DeserializeOwned>(
    params: Option<Value>,
    empty_object: bool,
) -> Result<P, ErrorObject> {
    let value = match params {
        None | Some(Value::Null) if empty_object => json!({}),
        None => return Err(ErrorObject::invalid_params("Invalid params: missing params")),
        Some(value) => value,
    };
    serde_json::from_value(value)
        .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
}

/// Handles one request (on the reader thread: only bookkeeping here, the work is spawned).
pub(super) fn request(state: &Arc<ServerState>, request: Request) {
    let Request { id, method, params: raw } = request;
    let phase = state.phase();
    if phase == Phase::ShutDown {
        return state.outbox.send_error(&id, &invalid_request("the server is shutting down"));
    }
    if method == "initialize" {
        if phase != Phase::Uninitialized {
            return state
                .outbox
                .send_error(&id, &invalid_request("initialize was already received"));
        }
        // Set before the task exists, so its own transition to Initialized is never undone.
        state.set_phase(Phase::Initializing);
        let task_state = Arc::clone(state);
        let started = spawn(state, id, async move {
            let result = initialize(&task_state, raw).await;
            if result.is_err() {
                task_state.set_phase(Phase::Uninitialized);
            }
            result
        });
        if !started {
            state.set_phase(Phase::Uninitialized);
        }
        return;
    }
    if phase != Phase::Initialized {
        return state.outbox.send_error(
            &id,
            &ErrorObject::new(codes::SERVER_NOT_INITIALIZED, "server not initialized"),
        );
    }
    let task_state = Arc::clone(state);
    match method.as_str() {
        "shutdown" => {
            state.set_phase(Phase::ShutDown);
            match message::encode_result(&id, &Value::Null) {
                Ok(body) => state.outbox.send(body),
                Err(err) => state.outbox.send_error(&id, &ErrorObject::internal(err.to_string())),
            }
        }
        methods::LIST_TOOLS => {
            spawn(state, id, async move {
                Ok(ListToolsResult { tools: task_state.host()?.registry().descriptors() })
            });
        }
        methods::CALL_TOOL => {
            spawn(state, id, async move {
                let p: CallToolParams = params(raw, true)?;
                let request =
                    CallRequest { call_id: p.call_id, ..CallRequest::new(p.name, p.arguments) };
                run_call(&task_state, request).await
            });
        }
        methods::AGENT_PROMPT => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::AgentPromptParams = params(raw, false)?;
                super::agent::prompt(&task_state, p).await
            });
        }
        methods::LIST_AGENTS => {
            spawn(state, id, async move { super::hosted::list(&task_state) });
        }
        methods::AGENT_OPTIONS => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::AgentOptionsParams = params(raw, true)?;
                super::hosted::options(&task_state, p).await
            });
        }
        methods::AGENT_SET_OPTION => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::AgentSetOptionParams = params(raw, true)?;
                super::hosted::set_option(&task_state, p).await
            });
        }
        methods::SET_REVIEW => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::SetReviewParams = params(raw, true)?;
                Ok(task_state.host()?.review().update(&p))
            });
        }
        methods::SET_PLAN_MODE => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::SetPlanModeParams = params(raw, true)?;
                Ok(task_state.host()?.interaction().set_plan_mode(p.active).await)
            });
        }
        methods::STRUCTURED_OUTPUT => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::StructuredOutputParams = params(raw, true)?;
                task_state
                    .host()?
                    .interaction()
                    .structured(p)
                    .await
                    .map_err(ErrorObject::invalid_params)
            });
        }
        methods::MCP_SERVERS => {
            spawn(state, id, async move {
                let servers = task_state.host()?.mcp_status();
                Ok(toolhost_protocol::lsp_ext::McpServersResult { servers })
            });
        }
        methods::CANCEL_CALL => {
            spawn(state, id, async move {
                let p: CancelCallParams = params(raw, false)?;
                Ok(CancelCallResult { cancelled: task_state.host()?.cancel_call(&p.call_id) })
            });
        }
        methods::LIST_SESSIONS => {
            spawn(state, id, async move {
                let p: ListSessionsParams = params(raw, true)?;
                let mut list = list_sessions(&task_state, p)?;
                list.worktrees = super::worktrees::infos(&task_state).await?;
                Ok(list)
            });
        }
        methods::WORKTREE_NEW => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::WorktreeNewParams = params(raw, true)?;
                super::worktrees::new(&task_state, p).await
            });
        }
        methods::WORKTREE_APPLY => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::WorktreeApplyParams = params(raw, false)?;
                super::worktrees::apply(&task_state, p).await
            });
        }
        methods::WORKTREE_DISCARD => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::WorktreeDiscardParams = params(raw, false)?;
                super::worktrees::discard(&task_state, p).await
            });
        }
        methods::WATCH_SESSION => {
            spawn(state, id, async move {
                let p: toolhost_protocol::lsp_ext::WatchSessionParams = params(raw, true)?;
                super::worktrees::watch(&task_state, p)
            });
        }
        methods::REPLAY_SESSION => {
            spawn(state, id, async move {
                let p: ReplaySessionParams = params(raw, true)?;
                replay_session(&task_state, p).await
            });
        }
        "workspace/executeCommand" => {
            spawn(state, id, async move { execute_command(&task_state, raw).await });
        }
        #[cfg(feature = "test-tools")]
        crate::test_tools::PANIC_METHOD if crate::test_tools::enabled() => {
            spawn(state, id, async move { crate::test_tools::panic_in_handler() });
        }
        _ => state.outbox.send_error(
            &id,
            &ErrorObject::new(codes::METHOD_NOT_FOUND, format!("Method not found: {method}")),
        ),
    }
}

/// Runs `work` as a task answering request `id`: its result, its error, `-32800` when the
/// client cancels it first, or an internal error when it panics. Returns `false` (and answers
/// `-32600`) when a request with the same id is still running.
fn spawn<T, F>(state: &Arc<ServerState>, id: Id, work: F) -> bool
where
    T: Serialize + Send + 'static,
    F: Future<Output = Result<T, ErrorObject>> + Send + 'static,
{
    let token = CancellationToken::new();
    {
        let Ok(mut requests) = state.requests.lock() else { return false };
        if requests.contains_key(&id) {
            drop(requests);
            state.outbox.send_error(&id, &invalid_request(&format!("request id {id} is in use")));
            return false;
        }
        requests.insert(id.clone(), token.clone());
    }
    let state = Arc::clone(state);
    state.runtime.clone().spawn(async move {
        let outcome = tokio::select! {
            outcome = AssertUnwindSafe(work).catch_unwind() => Some(outcome),
            () = token.cancelled() => None,
        };
        if let Ok(mut requests) = state.requests.lock() {
            requests.remove(&id);
        }
        let body = match outcome {
            None => message::encode_error(&id, &ErrorObject::cancelled()),
            Some(Err(_)) => message::encode_error(
                &id,
                &ErrorObject::internal("internal error: the request handler panicked"),
            ),
            Some(Ok(Err(error))) => message::encode_error(&id, &error),
            Some(Ok(Ok(value))) => message::encode_result(&id, &value).unwrap_or_else(|e| {
                message::encode_error(
                    &id,
                    &ErrorObject::internal(format!("unencodable result: {e}")),
                )
            }),
        };
        state.outbox.send(body);
    });
    true
}

/// Handles one notification, in order, on the reader thread (`exit` never gets here).
pub(super) fn notification(state: &Arc<ServerState>, note: Notification) {
    let params = note.params.unwrap_or(Value::Null);
    if note.method == "$/cancelRequest" {
        if let Some(id) = params.get("id").and_then(Id::from_value)
            && let Ok(requests) = state.requests.lock()
            && let Some(token) = requests.get(&id)
        {
            token.cancel();
        }
        return;
    }
    if note.method == "initialized" {
        state.client_initialized.send_replace(true);
        return;
    }
    // Before initialize every notification but `exit` is dropped; afterwards only document
    // changes matter.
    if let Some(host) = state.host.get() {
        state.documents.notification(host.workspace(), &note.method, params);
    }
}

#[derive(Deserialize)]
struct WorkspaceFolder {
    uri: String,
}

/// The members of `initialize` params toolhost reads; the rest may be anything.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    process_id: Option<i32>,
    #[serde(default)]
    root_uri: Option<String>,
    #[serde(default)]
    workspace_folders: Option<Vec<WorkspaceFolder>>,
    capabilities: Map<String, Value>,
    #[serde(default)]
    initialization_options: Option<Value>,
}

async fn initialize(state: &Arc<ServerState>, raw: Option<Value>) -> Result<Value, ErrorObject> {
    let params: InitializeParams = params(raw, false)?;
    let mut roots: Vec<PathBuf> = params
        .workspace_folders
        .iter()
        .flatten()
        .filter_map(|folder| file_uri_path(&folder.uri))
        .collect();
    if roots.is_empty()
        && let Some(path) = params.root_uri.as_deref().and_then(file_uri_path)
    {
        roots.push(path);
    }
    if roots.is_empty() {
        let cwd = std::env::current_dir()
            .map_err(|e| ErrorObject::internal(format!("no workspace: {e}")))?;
        roots.push(cwd);
    }
    let primary = roots[0].clone();
    let init = PartialConfig::from_json(
        "initializationOptions",
        params.initialization_options.as_ref().unwrap_or(&Value::Null),
    )
    .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
    let requested = init.session_id().map(str::to_owned);
    let mut sources = Sources::load(&primary, toolhost_host::config::user_config_path().as_deref())
        .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
    sources.init_options = Some(init);
    let config = sources.resolve(&primary);
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let _ = state.agent_settings.set(config.agent.clone());
    let _ = state.acp_settings.set(config.acp.clone());
    let sessions = config
        .sessions_dir(state.options.session_dir.as_deref())
        .map_err(|e| ErrorObject::internal(e.to_string()))?;
    // A window on a worktree session's folder continues that session (unless it is in use).
    let worktree = requested
        .is_none()
        .then(|| toolhost_host::worktree::of_root(&sessions, &primary))
        .flatten()
        .filter(|w| !toolhost_host::worktree::in_use(&sessions, w));
    let id = requested
        .or(worktree.map(|w| w.session_id))
        .unwrap_or_else(toolhost_session::new_session_id);
    let opened = session::open_session(&sessions, &primary, &id).map_err(|e| {
        ErrorObject::new(-32001, format!("cannot open session {id}: {e}"))
            .with_data(json!({"code": e.code()}))
    })?;
    #[allow(unused_mut)] // test tools add a capability
    let mut host = Host::new(
        &config,
        HostOptions {
            roots,
            read_only_roots: vec![opened.blob_dir()],
            session_id: Some(id.clone()),
            ledger: Arc::clone(&opened.ledger),
            spill: Some(opened.spill()),
            session: Some(Arc::clone(&opened.log)),
        },
    )
    .map_err(|e| ErrorObject::internal(e.to_string()))?;
    // Test tools reach the editor through this capability (the host is not shared yet).
    #[cfg(feature = "test-tools")]
    if crate::test_tools::enabled() {
        host.insert_capability(state.editor.clone());
        crate::test_tools::install(&host);
    }
    // The editor hears every call's cards, live output and the notices.
    host.add_listener(Arc::new(EditorListener(state.editor.clone())));
    let provider = params
        .capabilities
        .get("experimental")
        .and_then(|e| e.pointer("/toolhost/lspProvider"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if provider {
        host.lsp().set_editor(Some(EditorLspProvider::handle(state.editor.clone())));
    }
    let reviews = params
        .capabilities
        .get("experimental")
        .and_then(|e| e.pointer("/toolhost/review"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if reviews {
        host.review().set_reviewer(Some(Arc::new(EditorReviewer(state.editor.clone()))));
    }
    let asks = params
        .capabilities
        .get("experimental")
        .and_then(|e| e.pointer("/toolhost/askUser"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if asks {
        let asker: QuestionsHandle = Arc::new(EditorAsker(state.editor.clone()));
        host.questions().set_asker(Some(asker));
    }
    host.restore_session_state(&opened.report);
    let host =
        toolhost_host::share(host, &config).map_err(|e| ErrorObject::internal(e.to_string()))?;
    // MCP servers start with the session; the editor hears of every change of their state.
    host.start_mcp_servers();
    if let Some(bridge) = host.mcp_bridge() {
        let mut changes = bridge.subscribe();
        let (editor, stop) = (state.editor.clone(), state.stop.clone());
        let watched = Arc::downgrade(&host);
        let mut initialized = state.client_initialized.subscribe();
        tokio::spawn(async move {
            // Nothing goes out before the client said `initialized`; then the current state
            // first, and every change after it.
            tokio::select! {
                ready = initialized.wait_for(|ready| *ready) => if ready.is_err() { return },
                () = stop.cancelled() => return,
            }
            changes.mark_changed();
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { break },
                    () = stop.cancelled() => break,
                }
                // Bursts (a server's state and its tools) become one notification.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                changes.mark_unchanged();
                let Some(host) = watched.upgrade() else { break };
                let servers = host.mcp_status();
                editor.notify(
                    methods::MCP_SERVERS_CHANGED,
                    &toolhost_protocol::lsp_ext::McpServersResult { servers },
                );
            }
        });
    }
    // A revert a crash interrupted is rolled back now, not at the first call.
    let recovering = Arc::clone(&host);
    tokio::spawn(async move { recovering.recover().await });
    let _ = state
        .watch_events
        .set(toolhost_host::watcher::spawn(Arc::clone(&host), state.stop.clone()));
    let socket = toolhost_attach::socket_path(host.root());
    let _ = state.host.set(Arc::clone(&host));
    let _ = state.opened.set(opened);
    // `toolhost mcp` of the same workspace attaches here (the host is in place by now). Bound
    // before the initialize result, so an agent started after it finds the editor.
    let bound =
        toolhost_attach::server::listen(Arc::clone(&host), state.stop.clone(), socket).await;
    if let Ok(mut slot) = state.attach_socket.lock() {
        *slot = bound;
    }
    if let Ok(mut pid) = state.client_pid.lock() {
        *pid = params.process_id;
    }
    // Initialized before the result is written, so a client that waits for the result never
    // sees a spurious -32002.
    state.set_phase(Phase::Initialized);
    Ok(json!({
        "capabilities": {
            "textDocumentSync": {"openClose": true, "change": 1, "save": {"includeText": false}},
            "executeCommandProvider": {"commands": [methods::CALL_TOOL_COMMAND]},
            "experimental": {"toolhost": {"version": env!("CARGO_PKG_VERSION"), "sessionId": id}}
        },
        "serverInfo": {"name": "toolhost", "version": env!("CARGO_PKG_VERSION")}
    }))
}

/// Runs one tool call through the host (the one call path) and answers with its result and
/// final card. A cancelled request drops the handle, which cancels the call; its body is still
/// awaited to its end and logged.
pub(super) async fn run_call(
    state: &Arc<ServerState>,
    request: CallRequest,
) -> Result<CallToolResult, ErrorObject> {
    let host = state.host()?;
    let handle = host.call(request).map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
    let outcome = handle.finish().await.map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(CallToolResult {
        // Built before the fields it is built from move out.
        card: outcome.card(),
        session_id: host.session_id().map(str::to_owned),
        call_id: outcome.call_id,
        result: outcome.finalized.result,
    })
}

fn list_sessions(
    state: &ServerState,
    params: ListSessionsParams,
) -> Result<ListSessionsResult, ErrorObject> {
    let host = state.host()?;
    let opened = state.opened.get().ok_or_else(|| ErrorObject::internal("no session"))?;
    Ok(session::list(&opened.sessions_dir, host.root(), params.all))
}

async fn replay_session(
    state: &ServerState,
    params: ReplaySessionParams,
) -> Result<ReplaySessionResult, ErrorObject> {
    let host = state.host()?;
    let opened = state.opened.get().ok_or_else(|| ErrorObject::internal("no session"))?;
    let path = if params.session_id == opened.log.id() {
        // A read-only call's result may still be queued (batched durability writes it just
        // after the answer): the live session's replay includes every call already answered.
        if let Err(err) = opened.log.flush().await {
            tracing::warn!(%err, "cannot flush the session log before its replay");
        }
        opened.log.log_path().to_path_buf()
    } else if let Some(log) = super::worktrees::log_of(state, &params.session_id) {
        log
    } else {
        let key = session::workspace_key_of(host.root());
        toolhost_session::session_dir(&opened.sessions_dir, &key, &params.session_id)
            .map_err(|e| ErrorObject::invalid_params(e.to_string()))?
            .join(toolhost_session::LOG_FILE_NAME)
    };
    // A damaged log replays what can be read; the result says what was skipped.
    let replayed = session::replay_salvaging(host.registry(), &path).map_err(|e| {
        ErrorObject::new(-32001, format!("cannot replay session {}: {e}", params.session_id))
            .with_data(json!({"code": e.code()}))
    })?;
    let damage = session::damage_notice(&params.session_id, &replayed.skipped).map(|notice| {
        let skipped = replayed
            .skipped
            .iter()
            .map(|s| toolhost_protocol::lsp_ext::SkippedRecords {
                line: s.line as u64,
                lines: s.lines as u64,
                offset: s.offset,
                bytes: s.bytes,
                reason: s.reason.clone(),
            })
            .collect();
        toolhost_protocol::lsp_ext::LogDamage { notice, skipped }
    });
    Ok(ReplaySessionResult {
        cards: replayed.cards.into_iter().map(|c| c.card).collect(),
        conversation: replayed.conversation,
        damage,
    })
}

#[derive(Deserialize)]
struct ExecuteCommandParams {
    command: String,
    #[serde(default)]
    arguments: Option<Vec<Value>>,
}

async fn execute_command(
    state: &Arc<ServerState>,
    raw: Option<Value>,
) -> Result<CallToolResult, ErrorObject> {
    let params: ExecuteCommandParams = params(raw, false)?;
    if params.command != methods::CALL_TOOL_COMMAND {
        return Err(ErrorObject::invalid_params(format!("unknown command {:?}", params.command)));
    }
    let mut args = params.arguments.unwrap_or_default().into_iter();
    let Some(Value::String(name)) = args.next() else {
        return Err(ErrorObject::invalid_params(
            "toolhost.callTool expects arguments [name, argumentsObject]",
        ));
    };
    let arguments = args.next().unwrap_or_else(|| json!({}));
    run_call(state, CallRequest::new(name, arguments)).await
}
