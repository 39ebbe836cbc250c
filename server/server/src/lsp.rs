//! `toolhost serve`: the LSP server (design.md §4).
//!
//! Layout of one connection:
//!
//! ```text
//! stdin ─▶ framing filter ─┬─ requests/notifications ─▶ queue ─▶ tower-lsp-server ─▶ output pump ─▶ stdout
//!                          └─ responses (to our requests) ─▶ the waiting server→client request
//! ```
//!
//! The filter caps frames and routes client responses directly, so a handler awaiting an editor
//! reply never starves the reader. Tool calls run as spawned tasks: a cancelled request
//! (`$/cancelRequest`) cancels the call's token, the body is still awaited and logged, and the
//! client gets `-32800`. On `exit`, stdin EOF or a dead client every call is cancelled, the server
//! waits at most 1.5 s, flushes the session log and exits (0 after `shutdown`, 1 otherwise).

use crate::config::{PartialConfig, Sources};
use crate::framing::{self, Frame, FrameReader, FramingError};
use crate::host::{Host, HostOptions, new_call_id};
use crate::session::{self, OpenedSession};
use futures::{FutureExt, SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use toolhost_contract::CancellationToken;
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::{
    CallToolParams, CallToolResult, ListSessionsParams, ListSessionsResult, ListToolsResult,
    ReplaySessionParams, ReplaySessionResult, methods,
};
use tower_lsp_server::gen_lsp_types as lsp;
use tower_lsp_server::jsonrpc::{Error as RpcError, ErrorCode, Response};
use tower_lsp_server::{Client, ClientSocket, LanguageServer, Loopback, LspService, Server};

/// How long exit waits for running calls before abandoning them.
pub const EXIT_GRACE: Duration = Duration::from_millis(1500);

/// Options of `toolhost serve`.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub session_dir: Option<PathBuf>,
    pub max_message_bytes: usize,
}

/// The `toolhost/card` notification.
enum CardNotification {}

impl lsp::Notification for CardNotification {
    type Params = Card;
    const METHOD: lsp::LspNotificationMethod<'static> =
        lsp::LspNotificationMethod::Custom(methods::CARD);
    const MESSAGE_DIRECTION: lsp::MessageDirection = lsp::MessageDirection::ServerToClient;
}

/// The editor as a capability of tool bodies: server→client requests over this connection. Client
/// replies are routed by the framing filter straight to the waiting request, so a body awaiting
/// one never blocks the reader or other handlers (style-and-reliability B.5, deadlock).
#[derive(Clone)]
pub struct EditorBridge {
    client: Client,
}

/// `$/cancelRequest` to the editor, for a server→client request we stopped waiting for.
enum CancelEditorRequest {}

impl lsp::Notification for CancelEditorRequest {
    type Params = Value;
    const METHOD: lsp::LspNotificationMethod<'static> =
        lsp::LspNotificationMethod::Custom("$/cancelRequest");
    const MESSAGE_DIRECTION: lsp::MessageDirection = lsp::MessageDirection::Both;
}

impl EditorBridge {
    /// Sends request `R` to the editor and awaits its reply. When `cancel` fires first the editor
    /// gets `$/cancelRequest` for it (so it can stop working on an answer nobody reads) and the
    /// result is `-32800`; the editor's late reply is then consumed and dropped.
    pub async fn request<R: lsp::Request>(
        &self,
        params: R::Params,
        cancel: &CancellationToken,
    ) -> Result<R::Result, RpcError> {
        use tower_lsp_server::jsonrpc::Request;
        let params = serde_json::to_value(params)
            .map_err(|e| internal(format!("cannot encode {} params: {e}", R::METHOD)))?;
        // Our own id (the framework's `send_request` hides it), so the cancellation can name it.
        let id = self.client.next_request_id();
        let request =
            Request::build(R::METHOD.as_str().to_owned()).id(id.clone()).params(params).finish();
        let mut client = self.client.clone();
        let reply = tokio::select! {
            reply = tower_service::Service::call(&mut client, request) => reply,
            () = cancel.cancelled() => {
                let id = serde_json::to_value(&id).unwrap_or(Value::Null);
                self.client.send_notification::<CancelEditorRequest>(json!({"id": id})).await;
                return Err(RpcError::request_cancelled());
            }
        };
        let Ok(Some(response)) = reply else {
            return Err(internal("the connection to the editor is closed"));
        };
        let (_, result) = response.into_parts();
        result.and_then(|value| {
            serde_json::from_value(value).map_err(|e| RpcError {
                code: ErrorCode::ParseError,
                message: format!("unexpected {} reply: {e}", R::METHOD).into(),
                data: None,
            })
        })
    }
}

/// Connection-wide state shared by the backend and the transport.
pub struct ServerState {
    options: ServeOptions,
    host: OnceLock<Arc<Host>>,
    opened: OnceLock<OpenedSession>,
    shutdown_requested: AtomicBool,
    calls: Mutex<HashMap<String, CancellationToken>>,
    active: AtomicUsize,
    idle: Notify,
    /// Safe calls take it shared, every other call exclusively (design.md §3).
    barrier: Arc<tokio::sync::RwLock<()>>,
    /// Highest version seen per document (notifications may be handled out of order).
    versions: Mutex<HashMap<String, i32>>,
    lsp_provider: AtomicBool,
    client_pid: Mutex<Option<i32>>,
    /// Set by the client monitor when the client process is gone.
    client_died: AtomicBool,
    /// Fired to stop the connection (exit, EOF, fatal framing, dead client).
    stop: CancellationToken,
    /// Workspace changes seen by the watcher, for consumers that subscribe.
    watch_events: OnceLock<tokio::sync::broadcast::Sender<crate::watcher::WatchEvent>>,
}

impl ServerState {
    fn new(options: ServeOptions) -> Self {
        ServerState {
            options,
            host: OnceLock::new(),
            opened: OnceLock::new(),
            shutdown_requested: AtomicBool::new(false),
            calls: Mutex::new(HashMap::new()),
            active: AtomicUsize::new(0),
            idle: Notify::new(),
            barrier: Arc::new(tokio::sync::RwLock::new(())),
            versions: Mutex::new(HashMap::new()),
            lsp_provider: AtomicBool::new(false),
            client_pid: Mutex::new(None),
            client_died: AtomicBool::new(false),
            stop: CancellationToken::new(),
            watch_events: OnceLock::new(),
        }
    }

    /// Subscribes to the workspace watcher's events (after initialize).
    pub fn watch_events(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<crate::watcher::WatchEvent>> {
        self.watch_events.get().map(tokio::sync::broadcast::Sender::subscribe)
    }

    fn host(&self) -> Result<Arc<Host>, RpcError> {
        self.host.get().cloned().ok_or_else(|| RpcError {
            code: ErrorCode::ServerError(-32002),
            message: "server not initialized".into(),
            data: None,
        })
    }

    fn cancel_all(&self) {
        if let Ok(calls) = self.calls.lock() {
            for token in calls.values() {
                token.cancel();
            }
        }
    }

    async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.active.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// The LSP backend.
pub struct Backend {
    client: Client,
    state: Arc<ServerState>,
}

fn internal(message: impl Into<String>) -> RpcError {
    RpcError { code: ErrorCode::InternalError, message: message.into().into(), data: None }
}

fn invalid_params(message: impl Into<String>) -> RpcError {
    RpcError { code: ErrorCode::InvalidParams, message: message.into().into(), data: None }
}

/// Runs a handler future, turning a panic into an internal-error reply.
async fn guarded<T>(
    fut: impl std::future::Future<Output = Result<T, RpcError>>,
) -> Result<T, RpcError> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(res) => res,
        Err(_) => Err(internal("internal error: the request handler panicked")),
    }
}

fn uri_to_path(uri: &lsp::Uri) -> Option<PathBuf> {
    uri.to_file_path().ok()
}

impl Backend {
    async fn do_initialize(
        &self,
        params: lsp::InitializeParams,
    ) -> Result<lsp::InitializeResult, RpcError> {
        let mut roots: Vec<PathBuf> = Vec::new();
        if let Some(lsp::WorkspaceFolders::WorkspaceFolderList(folders)) =
            &params.workspace_folders_initialize_params.workspace_folders
        {
            roots.extend(folders.iter().filter_map(|f| uri_to_path(&f.uri)));
        }
        #[allow(deprecated)]
        if roots.is_empty()
            && let Some(uri) = &params.root_uri
            && let Some(path) = uri_to_path(uri)
        {
            roots.push(path);
        }
        if roots.is_empty() {
            roots
                .push(std::env::current_dir().map_err(|e| internal(format!("no workspace: {e}")))?);
        }
        let primary = roots[0].clone();
        let init = PartialConfig::from_json(
            "initializationOptions",
            params.initialization_options.as_ref().unwrap_or(&Value::Null),
        )
        .map_err(|e| invalid_params(e.to_string()))?;
        let requested = init.session_id().map(str::to_owned);
        let mut sources = Sources::load(&primary, crate::config::user_config_path().as_deref())
            .map_err(|e| invalid_params(e.to_string()))?;
        sources.init_options = Some(init);
        let config = sources.resolve(&primary);
        for warning in &config.warnings {
            tracing::warn!("{warning}");
        }
        let sessions = session::sessions_dir(&config, self.state.options.session_dir.as_deref())
            .map_err(|e| internal(e.to_string()))?;
        let id = requested.unwrap_or_else(toolhost_session::new_session_id);
        let opened = session::open_session(&sessions, &primary, &id).map_err(|e| RpcError {
            code: ErrorCode::ServerError(-32001),
            message: format!("cannot open session {id}: {e}").into(),
            data: Some(json!({"code": e.code()})),
        })?;
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
        .map_err(|e| internal(e.to_string()))?;
        // Tool bodies reach the editor through this capability (the host is not shared yet).
        host.insert_capability(EditorBridge { client: self.client.clone() });
        let host = Arc::new(host);
        let _ = self
            .state
            .watch_events
            .set(crate::watcher::spawn(Arc::clone(&host), self.state.stop.clone()));
        let _ = self.state.host.set(host);
        let _ = self.state.opened.set(opened);
        let provider = params
            .capabilities
            .experimental
            .as_ref()
            .and_then(|e| e.pointer("/toolhost/lspProvider"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.state.lsp_provider.store(provider, Ordering::SeqCst);
        if provider && let Some(host) = self.state.host.get() {
            let bridge = EditorBridge { client: self.client.clone() };
            host.lsp().set_editor(Some(crate::editor_lsp::EditorLspProvider::handle(bridge)));
        }
        if let Ok(mut pid) = self.state.client_pid.lock() {
            *pid = params.process_id;
        }
        let result = json!({
            "capabilities": {
                "textDocumentSync": {"openClose": true, "change": 1, "save": {"includeText": false}},
                "executeCommandProvider": {"commands": [methods::CALL_TOOL_COMMAND]},
                "experimental": {"toolhost": {"version": env!("CARGO_PKG_VERSION"), "sessionId": id}}
            },
            "serverInfo": {"name": "toolhost", "version": env!("CARGO_PKG_VERSION")}
        });
        serde_json::from_value(result).map_err(|e| internal(e.to_string()))
    }

    /// Runs one tool call as a spawned task (so a cancelled request never abandons the body).
    async fn run_call(
        &self,
        name: String,
        arguments: Value,
        call_id: Option<String>,
    ) -> Result<CallToolResult, RpcError> {
        let host = self.state.host()?;
        let call_id = call_id.unwrap_or_else(new_call_id);
        let token = CancellationToken::new();
        {
            let mut calls = self.state.calls.lock().map_err(|_| internal("call table poisoned"))?;
            if calls.contains_key(&call_id) {
                return Err(invalid_params(format!("call id {call_id:?} is already running")));
            }
            calls.insert(call_id.clone(), token.clone());
        }
        // Dropping this handler future (on $/cancelRequest) cancels the call.
        let guard = token.clone().drop_guard();
        self.state.active.fetch_add(1, Ordering::SeqCst);
        let state = Arc::clone(&self.state);
        let client = self.client.clone();
        let task_id = call_id.clone();
        let task_host = Arc::clone(&host);
        let task = tokio::spawn(async move {
            let host = task_host;
            let safe = host.registry().concurrency_safe(&name, &arguments);
            let barrier = Arc::clone(&state.barrier);
            let outcome = {
                let _permit = if safe {
                    Permit::Shared(barrier.read_owned().await)
                } else {
                    Permit::Exclusive(barrier.write_owned().await)
                };
                client
                    .send_notification::<CardNotification>(
                        host.pending_card(&task_id, &name, &arguments),
                    )
                    .await;
                host.call(&task_id, &name, arguments, token).await
            };
            if let Ok(outcome) = &outcome {
                client.send_notification::<CardNotification>(outcome.card.clone()).await;
            }
            if let Ok(mut calls) = state.calls.lock() {
                calls.remove(&task_id);
            }
            if state.active.fetch_sub(1, Ordering::SeqCst) == 1 {
                state.idle.notify_waiters();
            }
            outcome
        });
        let joined = task.await;
        guard.disarm();
        let outcome = match joined {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(err)) => return Err(internal(err.to_string())),
            Err(err) => {
                return Err(internal(format!("internal error: the call task failed: {err}")));
            }
        };
        Ok(CallToolResult {
            session_id: host.session_id().map(str::to_owned),
            call_id: outcome.call_id,
            result: outcome.finalized.result,
            card: outcome.card,
        })
    }

    async fn list_tools(&self, _params: Value) -> Result<ListToolsResult, RpcError> {
        guarded(async {
            Ok(ListToolsResult { tools: self.state.host()?.registry().descriptors() })
        })
        .await
    }

    async fn call_tool(&self, params: CallToolParams) -> Result<CallToolResult, RpcError> {
        guarded(self.run_call(params.name, params.arguments, params.call_id)).await
    }

    async fn list_sessions(
        &self,
        params: ListSessionsParams,
    ) -> Result<ListSessionsResult, RpcError> {
        guarded(async {
            let host = self.state.host()?;
            let opened = self.state.opened.get().ok_or_else(|| internal("no session"))?;
            Ok(session::list(&opened.sessions_dir, host.root(), params.all))
        })
        .await
    }

    async fn replay_session(
        &self,
        params: ReplaySessionParams,
    ) -> Result<ReplaySessionResult, RpcError> {
        guarded(async {
            let host = self.state.host()?;
            let opened = self.state.opened.get().ok_or_else(|| internal("no session"))?;
            let path = if params.session_id == opened.log.id() {
                opened.log.log_path().to_path_buf()
            } else {
                let key = session::workspace_key_of(host.root());
                toolhost_session::session_dir(&opened.sessions_dir, &key, &params.session_id)
                    .map_err(|e| invalid_params(e.to_string()))?
                    .join(toolhost_session::LOG_FILE_NAME)
            };
            let calls = session::replay(host.registry(), &path).map_err(|e| RpcError {
                code: ErrorCode::ServerError(-32001),
                message: format!("cannot replay session {}: {e}", params.session_id).into(),
                data: Some(json!({"code": e.code()})),
            })?;
            Ok(ReplaySessionResult { cards: calls.into_iter().map(|c| c.card).collect() })
        })
        .await
    }

    /// Test-only (`test-tools` feature + TOOLHOST_TEST_TOOLS=1): a request handler that panics,
    /// to prove the `guarded` isolation every handler runs under.
    #[cfg(feature = "test-tools")]
    async fn test_panic(&self, _params: Value) -> Result<Value, RpcError> {
        guarded(async { crate::test_tools::panic_in_handler() }).await
    }

    fn track_document(&self, uri: &lsp::Uri, version: Option<i32>, buffer: Buffer<'_>) {
        let Ok(host) = self.state.host() else { return };
        let Some(path) = uri_to_path(uri) else { return };
        let key = uri.to_string();
        if let (Some(version), Ok(mut versions)) = (version, self.state.versions.lock()) {
            let last = versions.get(&key).copied().unwrap_or(i32::MIN);
            if version < last {
                return;
            }
            versions.insert(key.clone(), version);
        }
        let dirty = match buffer {
            Buffer::Text(text) => buffer_differs(&path, text),
            Buffer::Modified => true,
            Buffer::Unchanged => false,
            Buffer::Closed => {
                if let Ok(mut versions) = self.state.versions.lock() {
                    versions.remove(&key);
                }
                false
            }
        };
        host.workspace().dirty_buffers().set(path, dirty);
    }
}

/// What a document notification says about the editor's buffer.
enum Buffer<'a> {
    /// Its whole text (didOpen, full-sync didChange).
    Text(&'a str),
    /// Changed in a way whose text we cannot rebuild (an incremental change): never assume clean.
    Modified,
    /// A didChange without changes.
    Unchanged,
    Closed,
}

/// Whether an editor buffer's text differs from the file on disk. Editors drop a UTF-8 BOM
/// from buffer text, and an empty buffer of a file that does not exist yet (`""` or one line
/// ending) holds nothing to lose, so neither counts as unsaved.
fn buffer_differs(path: &std::path::Path, text: &str) -> bool {
    match std::fs::read(path) {
        Ok(disk) => {
            let disk = disk.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&disk);
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            disk != text.as_bytes()
        }
        Err(_) => !matches!(text, "" | "\n" | "\r\n"),
    }
}

/// A barrier permit, held (never read) until the call ends.
#[allow(dead_code)]
enum Permit {
    Shared(tokio::sync::OwnedRwLockReadGuard<()>),
    Exclusive(tokio::sync::OwnedRwLockWriteGuard<()>),
}

impl LanguageServer for Backend {
    async fn initialize(
        &self,
        params: lsp::InitializeParams,
    ) -> tower_lsp_server::jsonrpc::Result<lsp::InitializeResult> {
        guarded(self.do_initialize(params)).await
    }

    async fn shutdown(&self) -> tower_lsp_server::jsonrpc::Result<()> {
        self.state.shutdown_requested.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: lsp::DidOpenTextDocumentParams) {
        let doc = params.text_document;
        self.track_document(&doc.uri, Some(doc.version), Buffer::Text(&doc.text));
    }

    async fn did_change(&self, params: lsp::DidChangeTextDocumentParams) {
        // Full sync: the last whole-document change holds the text.
        let text = params.content_changes.iter().rev().find_map(|change| match change {
            lsp::TextDocumentContentChangeEvent::TextDocumentContentChangeWholeDocument(whole) => {
                Some(whole.text.as_str())
            }
            lsp::TextDocumentContentChangeEvent::TextDocumentContentChangePartial(_) => None,
        });
        let buffer = match text {
            Some(text) => Buffer::Text(text),
            None if params.content_changes.is_empty() => Buffer::Unchanged,
            None => Buffer::Modified,
        };
        let doc = &params.text_document;
        self.track_document(&doc.text_document_identifier.uri, Some(doc.version), buffer);
    }

    async fn did_save(&self, params: lsp::DidSaveTextDocumentParams) {
        let Ok(host) = self.state.host() else { return };
        if let Some(path) = uri_to_path(&params.text_document.uri) {
            host.workspace().dirty_buffers().set(path, false);
        }
    }

    async fn did_close(&self, params: lsp::DidCloseTextDocumentParams) {
        self.track_document(&params.text_document.uri, None, Buffer::Closed);
    }

    async fn execute_command(
        &self,
        params: lsp::ExecuteCommandParams,
    ) -> tower_lsp_server::jsonrpc::Result<Option<lsp::LspAny>> {
        guarded(async {
            if params.command != methods::CALL_TOOL_COMMAND {
                return Err(invalid_params(format!("unknown command {:?}", params.command)));
            }
            let mut args = params.arguments.unwrap_or_default().into_iter();
            let Some(Value::String(name)) = args.next() else {
                return Err(invalid_params(
                    "toolhost.callTool expects arguments [name, argumentsObject]",
                ));
            };
            let arguments = args.next().unwrap_or_else(|| json!({}));
            let result = self.run_call(name, arguments, None).await?;
            serde_json::to_value(result).map(Some).map_err(|e| internal(e.to_string()))
        })
        .await
    }
}

/// The loopback handed to the framework: server→client requests come from the socket; client
/// responses are routed by the framing filter, so the framework's own sink is never fed.
struct RoutedLoopback {
    requests: futures::stream::SplitStream<ClientSocket>,
}

impl Loopback for RoutedLoopback {
    type RequestStream = futures::stream::SplitStream<ClientSocket>;
    type ResponseSink = futures::sink::Drain<Response>;

    fn split(self) -> (Self::RequestStream, Self::ResponseSink) {
        (self.requests, futures::sink::drain())
    }
}

type SharedStdout = Arc<tokio::sync::Mutex<tokio::io::Stdout>>;

async fn write_error(stdout: &SharedStdout, id: Value, code: i64, message: &str) {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut out = stdout.lock().await;
    let _ = framing::write_frame(&mut *out, body.to_string().as_bytes()).await;
}

/// What ended the connection.
enum Ending {
    Eof,
    Exit,
    Fatal(String),
    ClientDied,
}

/// Serves one LSP connection over stdio and returns the process exit code.
pub async fn serve(options: ServeOptions) -> u8 {
    let max_body = options.max_message_bytes;
    let state = Arc::new(ServerState::new(options));
    let (service, socket) = {
        let state = Arc::clone(&state);
        let builder = LspService::build(move |client| Backend { client, state })
            .custom_method(methods::LIST_TOOLS, Backend::list_tools)
            .custom_method(methods::CALL_TOOL, Backend::call_tool)
            .custom_method(methods::LIST_SESSIONS, Backend::list_sessions)
            .custom_method(methods::REPLAY_SESSION, Backend::replay_session);
        // Test-only hook: a panicking request handler (feature `test-tools` + env gate).
        #[cfg(feature = "test-tools")]
        let builder = if crate::test_tools::enabled() {
            builder.custom_method(crate::test_tools::PANIC_METHOD, Backend::test_panic)
        } else {
            builder
        };
        builder.finish()
    };
    let (mut responses, requests) = StreamExt::split(socket);
    let stdout: SharedStdout = Arc::new(tokio::sync::Mutex::new(tokio::io::stdout()));
    let (to_server_write, to_server_read) = tokio::io::duplex(1 << 20);
    let (from_server_write, from_server_read) = tokio::io::duplex(1 << 20);

    // Output pump: whole frames from the framework to stdout, interleaved safely with ours.
    let pump = {
        let stdout = Arc::clone(&stdout);
        tokio::spawn(async move {
            let mut frames = FrameReader::new(from_server_read, usize::MAX);
            while let Ok(Some(Frame::Body(body))) = frames.next().await {
                let mut out = stdout.lock().await;
                if framing::write_frame(&mut *out, &body).await.is_err() {
                    break;
                }
            }
        })
    };

    // Inbound queue: the reader never waits on the framework's request processing.
    let (queue_tx, mut queue_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(10_000);
    let feeder = tokio::spawn(async move {
        let mut writer = to_server_write;
        while let Some(body) = queue_rx.recv().await {
            if framing::write_frame(&mut writer, &body).await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });

    // The framing filter.
    let reader = {
        let stdout = Arc::clone(&stdout);
        let stop = state.stop.clone();
        let state_for_reader = Arc::clone(&state);
        tokio::spawn(async move {
            let mut frames = FrameReader::new(stdin_pipe(), max_body);
            let ending = loop {
                match frames.next().await {
                    Ok(None) => break Ending::Eof,
                    Ok(Some(Frame::Oversized(len))) => {
                        let message = format!(
                            "message body of {len} bytes exceeds the {max_body}-byte limit"
                        );
                        write_error(&stdout, Value::Null, -32600, &message).await;
                    }
                    Ok(Some(Frame::Body(body))) => {
                        // Bodies the framework cannot decode are answered here and never
                        // forwarded: tower-lsp-server's reader (tokio-util `FramedRead`) ends its
                        // input stream after the first decode error, which would end the
                        // connection (B.5: reply and keep going).
                        let Ok(value) = serde_json::from_slice::<Value>(&body) else {
                            write_error(&stdout, Value::Null, -32700, "Parse error").await;
                            continue;
                        };
                        if framing::is_response(&value) {
                            if let Ok(response) = serde_json::from_value::<Response>(value.clone())
                            {
                                let _ = responses.send(response).await;
                            }
                            continue;
                        }
                        let initialized = state_for_reader.host.get().is_some();
                        if let Err((id, code, message)) = screen_message(&value, initialized) {
                            write_error(&stdout, id, code, &message).await;
                            continue;
                        }
                        let is_exit = value.get("method").and_then(Value::as_str) == Some("exit");
                        let body = normalize_params(Some(value), body);
                        if queue_tx.send(body).await.is_err() {
                            break Ending::Eof;
                        }
                        if is_exit {
                            break Ending::Exit;
                        }
                    }
                    Err(FramingError::Fatal(reason)) => break Ending::Fatal(reason),
                    Err(FramingError::Io(err)) => break Ending::Fatal(err.to_string()),
                }
            };
            stop.cancel();
            ending
        })
    };

    let _monitor = spawn_client_monitor(Arc::clone(&state));
    let server = Server::new(to_server_read, from_server_write, RoutedLoopback { requests })
        .concurrency_level(256)
        .serve(service);
    tokio::select! {
        () = server => {}
        () = state.stop.cancelled() => {}
    }
    // Wind down: cancel every call, give them EXIT_GRACE, flush the log. Language servers stop
    // meanwhile, within the same grace (their groups are SIGKILLed when the host drops anyway).
    state.cancel_all();
    let lsp = state.host.get().map(|host| Arc::clone(host.lsp()));
    let lsp_down = async move {
        if let Some(lsp) = lsp {
            lsp.shutdown_all().await;
        }
    };
    let _ =
        tokio::time::timeout(EXIT_GRACE, futures::future::join(state.wait_idle(), lsp_down)).await;
    if let Some(opened) = state.opened.get() {
        let _ = tokio::time::timeout(Duration::from_millis(500), opened.log.flush()).await;
    }
    // Why the connection ended. Not from `is_finished()` polls: the reader fires `stop` just
    // before it returns, and the monitor also returns on `stop`, so polling raced (a fatal
    // header or `exit` after `shutdown` could be reported as a dead client, exit code 1).
    let ending = if state.client_died.load(Ordering::SeqCst) {
        Ending::ClientDied
    } else {
        match tokio::time::timeout(Duration::from_millis(200), reader).await {
            Ok(Ok(ending)) => ending,
            Ok(Err(_)) => Ending::Eof,
            Err(_) => Ending::Exit,
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        let _ = feeder.await;
        let _ = pump.await;
    })
    .await;
    {
        let mut out = stdout.lock().await;
        let _ = out.flush().await;
    }
    match ending {
        Ending::Fatal(reason) => {
            eprintln!("toolhost: closing the connection: {reason}");
            1
        }
        Ending::ClientDied => {
            eprintln!("toolhost: the client process died");
            1
        }
        Ending::Exit | Ending::Eof => {
            if state.shutdown_requested.load(Ordering::SeqCst) && matches!(ending, Ending::Exit) {
                0
            } else {
                1
            }
        }
    }
}

/// Checks that a parsed body is a request or notification the framework can decode (an object
/// with `jsonrpc: "2.0"`, a string `method`, and an id that is a number, string or null) and
/// will answer. On failure: the id to answer with (the request's own if usable, else null), the
/// error code and the message.
///
/// Before a successful `initialize` every other request is answered -32002, whatever its method
/// (LSP: "for a request the response should be an error with code -32002"); the framework would
/// answer an unknown one -32601. The flag is set before the initialize result is written, so a
/// client that waits for that result never sees a spurious -32002.
fn screen_message(value: &Value, initialized: bool) -> Result<(), (Value, i64, String)> {
    use serde::Deserialize as _;
    let invalid = |id: Value, reason: &str| (id, -32600, format!("Invalid request: {reason}"));
    let Value::Object(map) = value else {
        let what =
            if value.is_array() { "batch arrays are not supported" } else { "not an object" };
        return Err(invalid(Value::Null, what));
    };
    let id = match map.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(id @ Value::Number(n)) if n.is_i64() => id.clone(),
        _ => Value::Null,
    };
    let Some(method) = map.get("method").and_then(Value::as_str) else {
        return Err(invalid(id, "missing method"));
    };
    tower_lsp_server::jsonrpc::Request::deserialize(value)
        .map_err(|e| invalid(id.clone(), &e.to_string()))?;
    if !initialized && method != "initialize" && map.contains_key("id") {
        return Err((id, -32002, "server not initialized".to_owned()));
    }
    // The framework drops its "method not found" answer for every `$/` method, requests
    // included, which would leave such a request unanswered forever. LSP: a `$/` request that
    // is not handled is answered MethodNotFound.
    if method.starts_with("$/") && method != "$/cancelRequest" && map.contains_key("id") {
        return Err((id, -32601, format!("Method not found: {method}")));
    }
    Ok(())
}

/// Parameterless custom methods accept a missing or null `params` as `{}`, whatever the client
/// library sends for "no params".
fn normalize_params(parsed: Option<Value>, body: Vec<u8>) -> Vec<u8> {
    let Some(Value::Object(mut map)) = parsed else { return body };
    let custom =
        map.get("method").and_then(Value::as_str).is_some_and(|m| m.starts_with("toolhost/"));
    if custom && map.get("params").is_none_or(Value::is_null) {
        map.insert("params".to_owned(), json!({}));
        return serde_json::to_vec(&Value::Object(map)).unwrap_or(body);
    }
    body
}

/// Stdin, read on a dedicated OS thread and piped in. `tokio::io::stdin()` reads on the
/// runtime's blocking pool and that read cannot be cancelled, so when the server stops while the
/// editor keeps its end open (a dead client process, a fatal frame) dropping the runtime would
/// wait for the read forever. A plain thread blocked in `read` does not hold up the exit.
fn stdin_pipe() -> tokio::io::DuplexStream {
    let (mut tx, rx) = tokio::io::duplex(256 * 1024);
    let runtime = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut stdin = std::io::stdin().lock();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = match stdin.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("toolhost: cannot read from the client: {e}");
                    break;
                }
            };
            if runtime.block_on(tx.write_all(&chunk[..n])).is_err() {
                break;
            }
        }
        // Dropping `tx` is the end of input for the reader.
    });
    rx
}

/// Watches the client's process id (from initialize) and stops the server when it dies.
fn spawn_client_monitor(state: Arc<ServerState>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = state.stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            let pid = state.client_pid.lock().ok().and_then(|p| *p);
            if let Some(pid) = pid.filter(|p| *p > 0)
                && let Some(pid) = rustix::process::Pid::from_raw(pid)
                && rustix::process::test_kill_process(pid)
                    .is_err_and(|e| e == rustix::io::Errno::SRCH)
            {
                state.client_died.store(true, Ordering::SeqCst);
                state.stop.cancel();
                return;
            }
        }
    })
}
