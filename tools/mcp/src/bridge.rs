//! One supervisor task per configured server: connect (a child process through the process
//! helper, or streamable HTTP), list the tools (every page), register them as one generation,
//! re-sync on `tools/list_changed` (the task's own queue serializes syncs), and reconnect with
//! backoff when an established connection closes. Calls go to whatever connection is current.

use crate::client::{BridgeClient, ElicitRoutes, InFlight, ProgressRoutes};
use crate::config::{McpServerConfig, McpTransport, expand_env, scrubbed_env};
use crate::naming::public_name;
use crate::result::{self, CallOutcome};
use crate::tap::{ListingTap, TaskRequired};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{
    Disposer, EventsHandle, QuestionsHandle, RawTool, Registrar, ToolContext, ToolError,
};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, CardKind};

/// How long connecting and the first `tools/list` may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a server's stderr is kept for status and error messages.
const STDERR_TAIL: usize = 2048;

/// What `toolhost mcp-servers` and `toolhost/mcpServers` show of one server.
pub use toolhost_protocol::lsp_ext::McpServerStatus as ServerStatus;

/// The bridge's view of the host: roots for `roots/list` and stdio working directories, and
/// who answers a server's questions when no call of it is running.
#[derive(Clone, Default)]
pub struct BridgeOptions {
    pub roots: Vec<PathBuf>,
    pub questions: Option<QuestionsHandle>,
}

/// Every configured server's supervisor.
pub struct McpBridge {
    servers: Vec<Arc<Server>>,
    changes: Arc<watch::Sender<u64>>,
}

impl McpBridge {
    /// Starts one supervisor per server that is not lazy (on the current tokio runtime).
    /// Tools appear in `registry` as each server's first sync completes; [`McpBridge::ready`]
    /// waits for that. Lazy servers start with [`McpBridge::launch_for_tool`] or
    /// [`McpBridge::launch_all`].
    pub fn start<R: Registrar + Clone + 'static>(
        registry: &R,
        servers: Vec<McpServerConfig>,
        options: BridgeOptions,
    ) -> Self {
        let bridge = McpBridge::idle(registry, servers, options);
        bridge.launch_eager();
        bridge
    }

    /// Starts every server that is not lazy.
    pub fn launch_eager(&self) {
        for server in &self.servers {
            if !server.config.lazy {
                server.launch();
            }
        }
    }

    /// Every server known but none started (a one-shot `toolhost call` starts only the server
    /// its tool belongs to).
    pub fn idle<R: Registrar + Clone + 'static>(
        registry: &R,
        servers: Vec<McpServerConfig>,
        options: BridgeOptions,
    ) -> Self {
        let registry: Arc<dyn Registrar> = Arc::new(registry.clone());
        // The HTTP transport's client needs a TLS provider even for plain http URLs.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let roots = Arc::new(options.roots);
        let changes = Arc::new(watch::channel(0u64).0);
        let servers = servers
            .into_iter()
            .map(|config| {
                let elicit =
                    ElicitRoutes { in_flight: Vec::new(), fallback: options.questions.clone() };
                Arc::new(Server::new(
                    config,
                    Arc::clone(&registry),
                    Arc::clone(&roots),
                    Arc::clone(&changes),
                    elicit,
                ))
            })
            .collect();
        McpBridge { servers, changes }
    }

    /// Starts every server not started yet.
    pub fn launch_all(&self) {
        for server in &self.servers {
            server.launch();
        }
    }

    /// Starts the server a public tool name belongs to (`mcp__<server>__…`; the longest
    /// matching server name wins) and returns its name; `None` when no server's tools are
    /// named like that.
    pub fn launch_for_tool(&self, public: &str) -> Option<String> {
        let rest = public.strip_prefix("mcp__")?;
        let server = self
            .servers
            .iter()
            .filter(|s| {
                rest.strip_prefix(s.config.name.as_str()).is_some_and(|r| r.starts_with("__"))
            })
            .max_by_key(|s| s.config.name.len())?;
        server.launch();
        Some(server.config.name.clone())
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// A receiver that sees a new value whenever a server's state or tool list changed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Waits until every started server finished its first connection attempt. Err names the
    /// servers marked `fail_on_startup_error` that could not start.
    pub async fn ready(&self) -> Result<(), String> {
        let mut strict_failures = Vec::new();
        for server in &self.servers {
            if !server.launched.load(Ordering::SeqCst) {
                continue;
            }
            let mut started = server.started.subscribe();
            let _ = started.wait_for(|done| *done).await;
            if server.config.fail_on_startup_error
                && let Some(status) = Some(server.status())
                && status.state == "failed"
            {
                strict_failures.push(format!(
                    "MCP server \"{}\" failed to start: {}",
                    status.name,
                    status.error.unwrap_or_default()
                ));
            }
        }
        if strict_failures.is_empty() { Ok(()) } else { Err(strict_failures.join("; ")) }
    }

    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Stops every server (its process group is terminated and reaped) and unregisters its tools.
    pub async fn shutdown(&self) {
        for server in &self.servers {
            server.shutdown.cancel();
        }
        for server in &self.servers {
            // A server never started has nothing to stop (and never will start now).
            if !server.launched.load(Ordering::SeqCst) {
                continue;
            }
            let mut stopped = server.stopped.subscribe();
            let _ = tokio::time::timeout(Duration::from_secs(5), stopped.wait_for(|s| *s)).await;
        }
    }
}

impl Drop for McpBridge {
    fn drop(&mut self) {
        for server in &self.servers {
            server.shutdown.cancel();
        }
    }
}

struct Connection {
    peer: Peer<RoleClient>,
    protocol_version: Option<String>,
}

struct Server {
    config: McpServerConfig,
    registry: Arc<dyn Registrar>,
    roots: Arc<Vec<PathBuf>>,
    launched: AtomicBool,
    changes: Arc<watch::Sender<u64>>,
    elicit: Arc<Mutex<ElicitRoutes>>,
    /// What the listing said about `execution.taskSupport` (stdio servers).
    task_required: TaskRequired,
    connection: RwLock<Option<Arc<Connection>>>,
    generation: Mutex<Vec<Disposer>>,
    tool_names: Mutex<Vec<String>>,
    status: Mutex<(&'static str, Option<String>, u32)>,
    progress: ProgressRoutes,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    shutdown: CancellationToken,
    started: watch::Sender<bool>,
    stopped: watch::Sender<bool>,
}

/// Why a connection ended.
enum Ended {
    Closed,
    Shutdown,
}

impl Server {
    fn new(
        config: McpServerConfig,
        registry: Arc<dyn Registrar>,
        roots: Arc<Vec<PathBuf>>,
        changes: Arc<watch::Sender<u64>>,
        elicit: ElicitRoutes,
    ) -> Self {
        Server {
            config,
            registry,
            roots,
            launched: AtomicBool::new(false),
            changes,
            elicit: Arc::new(Mutex::new(elicit)),
            task_required: TaskRequired::default(),
            connection: RwLock::new(None),
            generation: Mutex::new(Vec::new()),
            tool_names: Mutex::new(Vec::new()),
            status: Mutex::new(("idle", None, 0)),
            progress: ProgressRoutes::default(),
            stderr_tail: Arc::default(),
            shutdown: CancellationToken::new(),
            started: watch::channel(false).0,
            stopped: watch::channel(false).0,
        }
    }

    /// Starts the supervisor once.
    fn launch(self: &Arc<Self>) {
        if self.shutdown.is_cancelled() {
            return;
        }
        if !self.launched.swap(true, Ordering::SeqCst) {
            self.set_state("starting", None, 0);
            tokio::spawn(Arc::clone(self).supervise());
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn set_state(&self, state: &'static str, error: Option<String>, attempts: u32) {
        if let Ok(mut status) = self.status.lock() {
            *status = (state, error, attempts);
        }
        self.changed();
    }

    fn status(&self) -> ServerStatus {
        let (state, error, attempts) =
            self.status.lock().map(|s| s.clone()).unwrap_or(("failed", None, 0));
        let protocol_version = self
            .connection
            .read()
            .ok()
            .and_then(|c| c.as_ref().and_then(|c| c.protocol_version.clone()));
        ServerStatus {
            name: self.config.name.clone(),
            transport: self.config.transport.kind().to_owned(),
            state: state.to_owned(),
            tools: self.tool_names.lock().map(|t| t.clone()).unwrap_or_default(),
            protocol_version,
            error,
            attempts,
        }
    }

    fn stderr_note(&self) -> String {
        let tail = self.stderr_tail.lock().map(|t| t.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&tail);
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        if last.is_empty() { String::new() } else { format!(" (stderr: {last})") }
    }

    /// The supervisor: first connection, then reconnects until the budget or shutdown.
    async fn supervise(self: Arc<Self>) {
        let policy = self.config.reconnect;
        let mut attempts = 0u32;
        let mut first = true;
        loop {
            let connected = self.connect_and_serve(first, attempts).await;
            if first {
                self.started.send_replace(true);
            }
            first = false;
            match connected {
                Ok((Ended::Shutdown, _)) => break,
                Ok((Ended::Closed, lived)) => {
                    if lived >= policy.max_delay {
                        attempts = 0;
                    }
                    if !policy.enabled {
                        self.unregister();
                        self.set_state(
                            "failed",
                            Some(format!("the connection closed{}", self.stderr_note())),
                            attempts,
                        );
                        break;
                    }
                }
                Err(error) if attempts == 0 && self.connection_never_established() => {
                    // Only an established connection is retried.
                    self.set_state("failed", Some(error), 0);
                    break;
                }
                Err(error) => {
                    tracing::warn!(server = %self.config.name, %error, "MCP reconnect failed");
                }
            }
            attempts += 1;
            if attempts > policy.max_attempts {
                self.unregister();
                self.set_state(
                    "failed",
                    Some(format!(
                        "gave up after {} reconnect attempts{}",
                        policy.max_attempts,
                        self.stderr_note()
                    )),
                    attempts - 1,
                );
                break;
            }
            self.set_state("reconnecting", None, attempts);
            tokio::select! {
                () = tokio::time::sleep(policy.delay(attempts)) => {}
                () = self.shutdown.cancelled() => break,
            }
        }
        if let Ok(mut conn) = self.connection.write() {
            *conn = None;
        }
        if self.shutdown.is_cancelled() {
            self.unregister();
            let state = self.status().state;
            if state != "failed" {
                self.set_state("stopped", None, 0);
            }
        }
        self.started.send_replace(true);
        self.stopped.send_replace(true);
    }

    fn connection_never_established(&self) -> bool {
        self.tool_names.lock().map(|t| t.is_empty()).unwrap_or(true)
            && self.status().state == "starting"
    }

    /// One connection's life. Ok with how it ended and how long it lived; Err when it could
    /// not be established.
    async fn connect_and_serve(
        self: &Arc<Self>,
        first: bool,
        attempts: u32,
    ) -> Result<(Ended, Duration), String> {
        let (resync_tx, mut resync_rx) = mpsc::unbounded_channel();
        let client = BridgeClient {
            roots: Arc::clone(&self.roots),
            resync: resync_tx,
            progress: Arc::clone(&self.progress),
            elicit: Arc::clone(&self.elicit),
            server: self.config.name.clone(),
        };
        let (running, group) = tokio::select! {
            connected = tokio::time::timeout(CONNECT_TIMEOUT, self.connect(client)) => match connected {
                Ok(result) => result?,
                Err(_) => return Err(format!("no answer to initialize within {} s{}", CONNECT_TIMEOUT.as_secs(), self.stderr_note())),
            },
            () = self.shutdown.cancelled() => return Ok((Ended::Shutdown, Duration::ZERO)),
        };
        let since = Instant::now();
        let peer = running.peer().clone();
        let protocol_version = peer.peer_info().map(|info| info.protocol_version.to_string());
        let connection = Arc::new(Connection { peer: peer.clone(), protocol_version });
        if let Ok(mut current) = self.connection.write() {
            *current = Some(Arc::clone(&connection));
        }
        let cancel = running.cancellation_token();
        let mut closed = tokio::spawn(async move {
            let _ = running.waiting().await;
        });
        let synced = match tokio::time::timeout(CONNECT_TIMEOUT, self.sync(&peer)).await {
            Ok(result) => result,
            Err(_) => {
                Err(format!("no answer to tools/list within {} s", CONNECT_TIMEOUT.as_secs()))
            }
        };
        match synced {
            Ok(()) => {
                self.set_state("ready", None, 0);
                self.started.send_replace(true);
            }
            Err(error) if first => {
                cancel.cancel();
                stop_group(group).await;
                return Err(error);
            }
            // A reconnect whose listing failed keeps the previous tools (calls reach the new
            // connection) and says why in the status.
            Err(error) => self.set_state("ready", Some(error), attempts),
        }
        let ended = loop {
            tokio::select! {
                _ = &mut closed => break Ended::Closed,
                Some(()) = resync_rx.recv() => {
                    // Coalesce a burst of notifications into one sync.
                    while resync_rx.try_recv().is_ok() {}
                    if let Err(error) = self.sync(&peer).await {
                        tracing::warn!(server = %self.config.name, %error, "MCP tool re-sync failed; the previous tools stay");
                    }
                }
                () = self.shutdown.cancelled() => break Ended::Shutdown,
            }
        };
        if let Ok(mut current) = self.connection.write() {
            *current = None;
        }
        cancel.cancel();
        stop_group(group).await;
        Ok((ended, since.elapsed()))
    }

    async fn connect(
        &self,
        client: BridgeClient,
    ) -> Result<
        (
            rmcp::service::RunningService<RoleClient, BridgeClient>,
            Option<toolhost_process::ChildGroup>,
        ),
        String,
    > {
        match &self.config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .env_clear()
                    .envs(scrubbed_env(std::env::vars(), env))
                    // A toolhost started as a server starts no servers of its own (no loops).
                    .env("TOOLHOST_BRIDGED", "1")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                if let Some(dir) = cwd.as_ref().or(self.roots.first()) {
                    cmd.current_dir(dir);
                }
                let mut group =
                    toolhost_process::spawn(cmd, toolhost_process::SpawnOptions::default())
                        .map_err(|e| format!("cannot start {command}: {e}"))?;
                let (Some(stdout), Some(stdin)) = (group.take_stdout(), group.take_stdin()) else {
                    return Err("the child's pipes are missing".to_owned());
                };
                if let Some(mut stderr) = group.take_stderr() {
                    let tail = Arc::clone(&self.stderr_tail);
                    let name = self.config.name.clone();
                    // Drained continuously so a chatty server never blocks on a full pipe;
                    // only the last bytes are kept.
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 8192];
                        while let Ok(n) = stderr.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            tracing::trace!(server = %name, "stderr: {}", String::from_utf8_lossy(&buf[..n]));
                            if let Ok(mut kept) = tail.lock() {
                                kept.extend_from_slice(&buf[..n]);
                                let excess = kept.len().saturating_sub(STDERR_TAIL);
                                kept.drain(..excess);
                            }
                        }
                    });
                }
                let stdout = ListingTap::new(stdout, Arc::clone(&self.task_required));
                match client.serve((stdout, stdin)).await {
                    Ok(running) => Ok((running, Some(group))),
                    Err(e) => {
                        group.terminate(Duration::from_millis(500)).await;
                        Err(format!("initialize failed: {e}{}", self.stderr_note()))
                    }
                }
            }
            McpTransport::Http { url, headers } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let mut custom = std::collections::HashMap::new();
                for (name, template) in headers {
                    let value = expand_env(template, |v| std::env::var(v).ok())
                        .map_err(|e| format!("header {name}: {e}"))?;
                    let name = reqwest::header::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header {name}: {e}"))?;
                    let value = reqwest::header::HeaderValue::try_from(value)
                        .map_err(|e| format!("header {name}: {e}"))?;
                    custom.insert(name, value);
                }
                // No proxy from the environment: the URL is reached as configured.
                let http = reqwest::Client::builder()
                    .no_proxy()
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::with_client(http, config);
                let running = client
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialize failed at {url}: {e}"))?;
                Ok((running, None))
            }
        }
    }

    /// Lists every tool and swaps the registered generation. A duplicate public name fails the
    /// sync and keeps the previous generation; a registry conflict rolls back to no tools.
    async fn sync(self: &Arc<Self>, peer: &Peer<RoleClient>) -> Result<(), String> {
        let listed = peer.list_all_tools().await.map_err(|e| format!("tools/list failed: {e}"))?;
        let mut seen = HashSet::new();
        let mut tools = Vec::new();
        for tool in listed {
            let raw = tool.name.to_string();
            let public = public_name(&self.config.name, &raw);
            if !seen.insert(public.clone()) {
                return Err(format!("two tools share the public name \"{public}\""));
            }
            let advertised = tool.output_schema.as_ref().map(|s| Value::Object((**s).clone()));
            let (output_schema, _) = result::output_schema(&public, advertised.as_ref());
            let input_schema = Value::Object((*tool.input_schema).clone());
            let description = tool.description.as_deref().unwrap_or("").to_owned();
            let annotations =
                tool.annotations.as_ref().map_or_else(ToolAnnotations::default, |a| {
                    ToolAnnotations {
                        read_only: a.read_only_hint.unwrap_or(false),
                        destructive: a.destructive_hint.unwrap_or(true),
                        idempotent: a.idempotent_hint.unwrap_or(false),
                        open_world: a.open_world_hint.unwrap_or(true),
                    }
                });
            tools.push((public, raw, description, input_schema, output_schema, annotations));
        }
        let previous =
            self.generation.lock().map(|mut g| std::mem::take(&mut *g)).unwrap_or_default();
        for disposer in previous {
            disposer.dispose();
        }
        let mut registered = Vec::new();
        let mut names = Vec::new();
        for (public, raw, description, input_schema, output_schema, annotations) in tools {
            let tool =
                self.raw_tool(&public, raw, description, input_schema, output_schema, annotations);
            match self.registry.register_raw(tool) {
                Ok(disposer) => {
                    registered.push(disposer);
                    names.push(public);
                }
                Err(error) => {
                    for disposer in registered {
                        disposer.dispose();
                    }
                    if let Ok(mut t) = self.tool_names.lock() {
                        t.clear();
                    }
                    return Err(format!("cannot register {public}: {error}"));
                }
            }
        }
        if let Ok(mut g) = self.generation.lock() {
            *g = registered;
        }
        if let Ok(mut t) = self.tool_names.lock() {
            *t = names;
        }
        self.changed();
        Ok(())
    }

    fn unregister(&self) {
        let previous =
            self.generation.lock().map(|mut g| std::mem::take(&mut *g)).unwrap_or_default();
        for disposer in previous {
            disposer.dispose();
        }
        if let Ok(mut t) = self.tool_names.lock() {
            t.clear();
        }
        self.changed();
    }

    fn raw_tool(
        self: &Arc<Self>,
        public: &str,
        raw: String,
        description: String,
        input_schema: Value,
        output_schema: Value,
        annotations: ToolAnnotations,
    ) -> RawTool {
        let server = Arc::downgrade(self);
        let server_name = self.config.name.clone();
        let render_raw = raw.clone();
        let (card_server, card_tool) = (server_name.clone(), raw.clone());
        let (meta_server, meta_tool) = (server_name.clone(), raw.clone());
        let mut tool = RawTool::new(public)
            .with_description(description)
            .with_input_schema(input_schema)
            .with_output_schema(output_schema)
            .with_annotations(annotations)
            .with_execute(move |args, cx| {
                let server = server.upgrade();
                let raw = raw.clone();
                async move {
                    match server {
                        Some(server) => server.call(&raw, args, cx).await,
                        None => Err(ToolError::plain("the MCP server was removed")),
                    }
                }
            })
            .with_render(move |_, value| result::render(&render_raw, value))
            .with_presentation_meta(move |_, value| {
                let mut meta = json!({"server": meta_server, "tool": meta_tool});
                if let Some(structured) = value.get("structuredContent") {
                    meta["structuredContent"] = structured.clone();
                }
                Some(meta)
            })
            .with_present_call(move |_| {
                let mut presentation = CallPresentation::new(
                    CardKind::Other("mcp".to_owned()),
                    format!("{card_server} · {card_tool}"),
                );
                presentation.data = Some(json!({"server": card_server, "tool": card_tool}));
                presentation
            });
        // MCP servers validate their own arguments (their schemas may use anything).
        tool.validate_args = false;
        tool
    }

    /// One `tools/call` with the raw name: cancellation and the timeout send
    /// `notifications/cancelled`; progress is routed to the call's live output.
    async fn call(&self, raw: &str, args: Value, cx: ToolContext) -> Result<Value, ToolError> {
        let name = &self.config.name;
        if self.task_required.lock().is_ok_and(|t| t.get(raw) == Some(&true)) {
            return Err(ToolError::plain(format!(
                "Tool \"{raw}\" requires task-based execution, which this bridge does not support"
            )));
        }
        let connection = self.connection.read().ok().and_then(|c| c.clone());
        let Some(connection) = connection else {
            let status = self.status();
            return Err(ToolError::plain(format!(
                "MCP server \"{name}\" is not connected ({}{})",
                status.state,
                status.error.map(|e| format!(": {e}")).unwrap_or_default()
            )));
        };
        let mut params = CallToolRequestParams::new(raw.to_owned());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            _ => return Err(ToolError::plain("MCP tool arguments must be a JSON object")),
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // A question the server asks while this call runs goes to the call's question channel
        // (routed before the request leaves: a server may ask at once).
        // A question still open when the call ends (answered, timed out) is withdrawn.
        let asking = cx.signal().child_token();
        let questions = cx.capability::<QuestionsHandle>();
        if let (Some(questions), Ok(mut routes)) = (questions, self.elicit.lock()) {
            routes.in_flight.push(InFlight {
                call_id: cx.call_id().to_owned(),
                tool: public_name(name, raw),
                questions,
                signal: asking.clone(),
            });
        }
        let sent = connection
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| ToolError::plain(format!("MCP server \"{name}\": {e}")));
        let answer = match sent {
            Ok(handle) => self.await_answer(handle, raw, &cx).await,
            Err(error) => Err(error),
        };
        if let Ok(mut routes) = self.elicit.lock() {
            routes.in_flight.retain(|c| c.call_id != cx.call_id());
        }
        asking.cancel();
        answer
    }

    async fn await_answer(
        &self,
        handle: rmcp::service::RequestHandle<RoleClient>,
        raw: &str,
        cx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let name = &self.config.name;
        let peer = handle.peer.clone();
        let request_id = handle.id.clone();
        let token = handle.progress_token.clone();
        if let Some(events) = cx.capability::<EventsHandle>()
            && let Ok(mut router) = self.progress.lock()
        {
            router.route(token.clone(), cx.call_id().to_owned(), events);
        }
        let timeout = self.config.tool_call_timeout;
        let answer = tokio::select! {
            answer = handle.await_response() => Some(answer),
            () = cx.signal().cancelled() => None,
            () = tokio::time::sleep(timeout) => {
                if let Ok(mut router) = self.progress.lock() {
                    router.unroute(&token);
                }
                let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(request_id), Some("timed out".into()))).await;
                return Err(ToolError::plain(format!(
                    "MCP server \"{name}\" did not answer {raw} within {} ms",
                    timeout.as_millis()
                )));
            }
        };
        if let Ok(mut router) = self.progress.lock() {
            router.unroute(&token);
        }
        let Some(answer) = answer else {
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(
                    Some(request_id),
                    Some("cancelled by the caller".into()),
                ))
                .await;
            return Err(ToolError::aborted());
        };
        let raw_result = match answer {
            Ok(ServerResult::CallToolResult(result)) => serde_json::to_value(result)
                .map_err(|e| ToolError::plain(format!("cannot read the result: {e}")))?,
            Ok(ServerResult::CustomResult(custom)) => custom.0,
            Ok(_) => {
                return Err(ToolError::plain(format!(
                    "MCP server \"{name}\" answered tools/call {raw} with something that is not a tool result"
                )));
            }
            Err(e) => return Err(ToolError::plain(format!("MCP server \"{name}\": {e}"))),
        };
        match result::canonical(raw, raw_result) {
            CallOutcome::Value(value) => Ok(value),
            CallOutcome::ToolError(text) => Err(ToolError::plain(text)),
            CallOutcome::Invalid(detail) => Err(ToolError::plain(format!(
                "MCP server \"{name}\" returned an invalid result for {raw}: {detail}"
            ))),
        }
    }
}

async fn stop_group(group: Option<toolhost_process::ChildGroup>) {
    if let Some(group) = group {
        group.terminate(Duration::from_millis(500)).await;
    }
}
