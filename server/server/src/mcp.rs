//! `toolhost mcp`: the MCP server over stdio (`toolhost-mcp`), with the backend it calls:
//!
//! - **attached**: when the editor's `toolhost serve` runs for this workspace, every call goes
//!   over the attach socket to the editor's registry (its dirty-buffer guard, editor-backed lsp
//!   provider, session and cards);
//! - **standalone** (no editor, or `--standalone`): the registry in this process, with a session
//!   of its own;
//! - if the editor goes away mid-session, the call in flight fails with a clear message (its
//!   outcome is unknown) and later calls run standalone, with a note in the new session's log —
//!   never a hang.
//!
//! Both offer the live session's transcript of cards as an MCP resource: the host in this process
//! tells every card as it happens (a listener), the editor's session is followed by its log.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use toolhost_attach::AttachClient;
use toolhost_contract::{BoxFuture, CancellationToken};
use toolhost_host::config::Config;
use toolhost_host::session::{self, OpenedSession};
use toolhost_host::{CallRequest, Host, Lane, new_call_id, open_host};
use toolhost_mcp::{Backend, BackendError, CallDone, Caller, ToolCall};
use toolhost_protocol::lsp_ext::{
    AttachParams, AttachResult, CallToolParams, CallToolResult, CallerInfo, ListToolsResult,
    ToolDescriptor, methods,
};

/// The registry in this process, with its own session.
pub struct LocalBackend {
    host: Arc<Host>,
    /// Keeps the session (its lock and writer) for the backend's lifetime.
    _opened: OpenedSession,
    /// Bumped on every card of the session (a call started or ended).
    cards: watch::Sender<u64>,
}

/// Counts the host's cards, so subscribers to the transcript hear of each.
struct CardCounter(watch::Sender<u64>);

impl toolhost_host::HostListener for CardCounter {
    fn card(&self, _card: &toolhost_protocol::card::Card) {
        self.0.send_modify(|n| *n += 1);
    }
    fn reads_cards(&self) -> bool {
        false
    }
    fn card_changed(&self) {
        self.0.send_modify(|n| *n += 1);
    }
}

/// The cards of the session logged at `log`, in log order (a damaged stretch is stepped over);
/// `None` when there is no such log.
fn replay_log(
    log: &Path,
    renderer: impl Fn(&str) -> Option<u32>,
) -> Result<Option<Vec<toolhost_protocol::card::Card>>, BackendError> {
    if !log.is_file() {
        return Ok(None);
    }
    let view = toolhost_session::read_session_salvaging(log)
        .map_err(|e| BackendError::Internal(e.to_string()))?;
    let cards = toolhost_session::replay_cards(&view, &view.header.cwd, renderer);
    Ok(Some(cards.into_iter().map(|c| c.card).collect()))
}

/// Where session `id` of the workspace at `root` keeps its log (`None` for an invalid id).
fn log_of(sessions_dir: &Path, root: &Path, id: &str) -> Option<PathBuf> {
    let key = session::workspace_key_of(root);
    let dir = toolhost_session::session_dir(sessions_dir, &key, id).ok()?;
    Some(dir.join(toolhost_session::LOG_FILE_NAME))
}

impl LocalBackend {
    /// Opens a session (`session_id`, or a new one) and the host for `root`.
    pub fn open(
        config: &Config,
        root: &Path,
        sessions_dir: &Path,
        session_id: Option<String>,
    ) -> Result<LocalBackend, String> {
        let (_, opened) = session::open_named(sessions_dir, root, session_id.as_deref())
            .map_err(|e| e.to_string())?;
        let host = open_host(config, root, Some(&opened)).map_err(|e| e.to_string())?;
        #[cfg(feature = "test-tools")]
        crate::test_tools::install(&host);
        let cards = watch::Sender::new(0);
        host.add_listener(Arc::new(CardCounter(cards.clone())));
        Ok(LocalBackend { host, _opened: opened, cards })
    }

    /// The cards of session `id`: this process's own session (flushed first, so the last call
    /// is in it), or another of the workspace from its log.
    async fn cards_of(
        &self,
        id: &str,
        sessions_dir: &Path,
    ) -> Result<Option<Vec<toolhost_protocol::card::Card>>, BackendError> {
        let log = match self.host.session() {
            Some(live) if live.id() == id => {
                live.flush().await.map_err(|e| BackendError::Internal(e.to_string()))?;
                live.log_path().to_path_buf()
            }
            _ => match log_of(sessions_dir, self.host.root(), id) {
                Some(log) => log,
                None => return Ok(None),
            },
        };
        let host = Arc::clone(&self.host);
        tokio::task::spawn_blocking(move || {
            let registry = host.registry();
            replay_log(&log, |tool| {
                registry.contains(tool).then(|| registry.renderer_version(tool))
            })
        })
        .await
        .map_err(|e| BackendError::Internal(e.to_string()))?
    }

    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Appends an ignorable event to the session log, in the background.
    fn note(&self, kind: &'static str, data: serde_json::Value) {
        if let Some(log) = self.host.session().cloned() {
            tokio::spawn(async move {
                let _ = log.append(kind, data, true).await;
            });
        }
    }
}

impl Backend for LocalBackend {
    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, BackendError>> {
        self.tools_for(None)
    }

    fn tools_for<'a>(
        &'a self,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ToolDescriptor>, BackendError>> {
        // The caller as its calls are labelled: another agent's session tools are not listed.
        let caller = caller.map(|c| c.name.as_str());
        Box::pin(async move { Ok(self.host.model_tools_of(self.host.mcp_presentation(), caller)) })
    }

    fn call(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<CallDone, BackendError>> {
        Box::pin(async move {
            // Each request in a lane of its own: the MCP client schedules its own calls (what it
            // sends at once it meant to overlap), and several agents may share one connection.
            let request = CallRequest::new(call.name, call.arguments)
                .in_lane(Lane::new())
                .by(call.caller.map(|c| c.name))
                .asked_through(call.questions)
                .following(call.output)
                .cancelled_by(cancel)
                .offered_as(self.host.mcp_presentation());
            let handle =
                self.host.call(request).map_err(|e| BackendError::Internal(e.to_string()))?;
            let outcome =
                handle.finish().await.map_err(|e| BackendError::Internal(e.to_string()))?;
            Ok(CallDone { call_id: outcome.call_id, result: outcome.finalized.result })
        })
    }

    fn tools_changed(&self) -> watch::Receiver<u64> {
        self.host.registry().changes()
    }

    fn client_seen(&self, caller: &Caller, protocol: &str, results: &str) {
        self.note(
            "mcp/client",
            json!({"name": caller.name, "version": caller.version, "protocolVersion": protocol,
                   "results": results, "attached": false}),
        );
    }
}

/// The editor's registry over the attach socket.
pub struct AttachedBackend {
    client: AttachClient,
    socket: PathBuf,
    /// The editor's workspace (the folder whose socket this is).
    root: PathBuf,
    /// The editor's session, once attached.
    session: std::sync::Mutex<Option<String>>,
    /// The caller this connection attached as, once it did (the first list or call attaches,
    /// and the client that introduces itself later attaches again before its call).
    attached_as: tokio::sync::Mutex<Option<String>>,
}

/// Who the calls come from before the MCP client said its name.
const UNNAMED_CALLER: &str = "mcp-client";

impl AttachedBackend {
    /// Connects to the socket (`None` when nothing listens there).
    pub async fn connect(socket: &Path, root: &Path) -> Option<AttachedBackend> {
        let client = AttachClient::connect(socket).await.ok()?;
        Some(AttachedBackend {
            client,
            socket: socket.to_owned(),
            root: root.to_owned(),
            session: std::sync::Mutex::new(None),
            attached_as: tokio::sync::Mutex::new(None),
        })
    }

    /// Attaches as `client` unless this connection already did; requests wait for it, so every
    /// call is labelled with the name the agent gave.
    async fn ensure_attached(
        &self,
        client: Option<&(Caller, String, String)>,
    ) -> Result<(), toolhost_jsonrpc::ErrorObject> {
        let mut attached_as = self.attached_as.lock().await;
        let name = client.map_or(UNNAMED_CALLER, |(caller, _, _)| caller.name.as_str());
        if attached_as.as_deref() == Some(name) {
            return Ok(());
        }
        let params = AttachParams {
            caller: CallerInfo {
                name: name.to_owned(),
                version: client.and_then(|(caller, _, _)| caller.version.clone()),
            },
            protocol_version: client
                .map(|(_, protocol, _)| protocol.clone())
                .filter(|p| !p.is_empty()),
            results: client.map(|(_, _, results)| results.clone()).filter(|r| !r.is_empty()),
        };
        let result = self
            .client
            .request::<_, AttachResult>(methods::ATTACH, &params, &CancellationToken::new())
            .await?;
        tracing::info!(
            session = result.session_id.as_deref().unwrap_or(""),
            caller = name,
            "attached to the editor's toolhost"
        );
        *attached_as = Some(name.to_owned());
        if let Ok(mut session) = self.session.lock() {
            session.clone_from(&result.session_id);
        }
        Ok(())
    }

    fn lost() -> BackendError {
        BackendError::Unavailable(
            "the editor's toolhost went away while the call ran, so its outcome is unknown: \
             check the current state (for example, read the file again) before retrying"
                .to_owned(),
        )
    }
}

/// The editor's toolhost for `root` or, for an agent started in a subfolder, for the nearest
/// enclosing folder an editor has open.
async fn find_editor(root: &Path) -> Option<AttachedBackend> {
    for dir in root.ancestors() {
        let socket = toolhost_attach::socket_path(dir);
        if !socket.exists() {
            continue;
        }
        if let Some(attached) = AttachedBackend::connect(&socket, dir).await {
            if dir != root {
                tracing::info!(editor = %dir.display(), "attaching to the editor of an enclosing folder");
            }
            return Some(attached);
        }
    }
    None
}

/// The backend `toolhost mcp` serves: attached while the editor is there, standalone after.
pub struct McpBackend {
    config: Config,
    root: PathBuf,
    sessions_dir: PathBuf,
    session_id: Option<String>,
    attached: Mutex<Option<Arc<AttachedBackend>>>,
    local: tokio::sync::OnceCell<Arc<LocalBackend>>,
    /// Why later calls run standalone (logged in the standalone session once it exists).
    fallback_reason: Mutex<Option<String>>,
    /// Bumped on every tool change of whichever backend serves, and on switching.
    changes: watch::Sender<u64>,
    /// The MCP client as it introduced itself: (caller, protocol revision, result shape); the
    /// latest one, and each by name (an HTTP server's agents).
    client: Mutex<Option<(Caller, String, String)>>,
    clients: Mutex<std::collections::HashMap<String, (Caller, String, String)>>,
    /// The client whose calls go over `attached`; every other has a connection of its own in
    /// `others`, so the editor labels each call with the agent that made it.
    claimed: Mutex<Option<String>>,
    others: tokio::sync::Mutex<std::collections::HashMap<String, Arc<AttachedBackend>>>,
    /// Bumped whenever the editor's session log grows (its cards changed), once followed.
    editor_cards: tokio::sync::OnceCell<watch::Sender<u64>>,
}

/// How often the editor's session log is looked at for new cards while someone follows it.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl McpBackend {
    /// The skills of the workspace, offered as prompts (read afresh on every look-up).
    fn skills(&self) -> toolhost_host::skills::SkillDirs {
        toolhost_host::skills::SkillDirs::new(
            std::slice::from_ref(&self.root),
            &self.config.skill_dirs,
        )
    }

    /// Attaches to the editor's toolhost for `root` unless `standalone`.
    pub async fn new(
        config: Config,
        root: PathBuf,
        sessions_dir: PathBuf,
        session_id: Option<String>,
        standalone: bool,
    ) -> Arc<McpBackend> {
        let attached = if standalone { None } else { find_editor(&root).await.map(Arc::new) };
        let backend = Arc::new(McpBackend {
            config,
            root,
            sessions_dir,
            session_id,
            attached: Mutex::new(attached.clone()),
            local: tokio::sync::OnceCell::new(),
            fallback_reason: Mutex::new(None),
            changes: watch::Sender::new(0),
            client: Mutex::new(None),
            clients: Mutex::default(),
            claimed: Mutex::new(None),
            others: tokio::sync::Mutex::default(),
            editor_cards: tokio::sync::OnceCell::new(),
        });
        if let Some(attached) = attached {
            let mut changes = attached.client.tools_changed();
            let sender = backend.changes.clone();
            tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    sender.send_modify(|g| *g += 1);
                }
            });
        }
        backend
    }

    /// Stops what the standalone backend started (language servers) and flushes its session.
    pub async fn shutdown(&self) {
        if let Some(local) = self.local.get() {
            local.host.shutdown().await;
            if let Some(log) = local.host.session() {
                let _ = log.flush().await;
            }
        }
    }

    /// Whether calls currently go to the editor.
    pub fn is_attached(&self) -> bool {
        self.attached().is_some()
    }

    fn attached(&self) -> Option<Arc<AttachedBackend>> {
        let mut slot = self.attached.lock().ok()?;
        if slot.as_ref().is_some_and(|a| a.client.is_closed()) {
            *slot = None;
            if let Ok(mut reason) = self.fallback_reason.lock() {
                reason.get_or_insert_with(|| "the editor's toolhost went away".to_owned());
            }
            self.changes.send_modify(|g| *g += 1);
            tracing::warn!("the editor's toolhost went away; calls now run in this process");
        }
        slot.clone()
    }

    /// The standalone backend, opened on first use.
    async fn local(&self) -> Result<Arc<LocalBackend>, BackendError> {
        let local = self
            .local
            .get_or_try_init(|| async {
                let backend = LocalBackend::open(
                    &self.config,
                    &self.root,
                    &self.sessions_dir,
                    self.session_id.clone(),
                )
                .map_err(BackendError::Internal)?;
                let backend = Arc::new(backend);
                // The bridged MCP servers' tools are listed from the first tools/list on.
                backend.host.start_mcp_servers();
                if let Err(strict) = backend.host.mcp_ready().await {
                    return Err(BackendError::Internal(strict));
                }
                if let Some(reason) = self.fallback_reason.lock().ok().and_then(|r| r.clone()) {
                    backend.note("mcp/fallback", json!({"reason": reason}));
                }
                let client = self.client.lock().ok().and_then(|c| c.clone());
                if let Some((caller, protocol, results)) = client {
                    backend.client_seen(&caller, &protocol, &results);
                }
                let mut changes = backend.tools_changed();
                let sender = self.changes.clone();
                tokio::spawn(async move {
                    while changes.changed().await.is_ok() {
                        sender.send_modify(|g| *g += 1);
                    }
                });
                Ok::<_, BackendError>(backend)
            })
            .await?;
        Ok(Arc::clone(local))
    }
}

impl McpBackend {
    /// The attached connection, attached as the current client; `None` when calls run here
    /// (standalone, or the editor went away before this request was sent).
    async fn editor(
        &self,
        caller: Option<&Caller>,
    ) -> Result<Option<Arc<AttachedBackend>>, BackendError> {
        let Some(primary) = self.attached() else { return Ok(None) };
        let client = caller
            .and_then(|c| self.clients.lock().ok().and_then(|all| all.get(&c.name).cloned()))
            .or_else(|| self.client.lock().ok().and_then(|c| c.clone()));
        let attached = self.connection(primary, client.as_ref()).await;
        match attached.ensure_attached(client.as_ref()).await {
            Ok(()) => Ok(Some(attached)),
            Err(_) if attached.client.is_closed() => {
                let _ = self.attached();
                Ok(None)
            }
            Err(err) => Err(BackendError::Internal(err.message)),
        }
    }

    /// The connection `client`'s calls go over: the first connection for the first client that
    /// named itself, one of its own for every other.
    async fn connection(
        &self,
        primary: Arc<AttachedBackend>,
        client: Option<&(Caller, String, String)>,
    ) -> Arc<AttachedBackend> {
        let Some((caller, _, _)) = client else { return primary };
        let mine = self.claimed.lock().is_ok_and(|mut claimed| {
            claimed.get_or_insert_with(|| caller.name.clone()) == &caller.name
        });
        if mine {
            return primary;
        }
        let mut others = self.others.lock().await;
        if let Some(other) = others.get(&caller.name).filter(|o| !o.client.is_closed()) {
            return Arc::clone(other);
        }
        match AttachedBackend::connect(&primary.socket, &primary.root).await {
            Some(other) => {
                let other = Arc::new(other);
                others.insert(caller.name.clone(), Arc::clone(&other));
                other
            }
            None => primary,
        }
    }
}

impl McpBackend {
    /// Follows the editor's session log: the sender is bumped whenever it grows (the editor's
    /// host writes every call's start and end there), until the editor goes away.
    async fn follow_editor_log(&self, log: PathBuf) -> &watch::Sender<u64> {
        self.editor_cards
            .get_or_init(|| async move {
                let sender = watch::Sender::new(0);
                let bump = sender.clone();
                tokio::spawn(async move {
                    let size = |log: &Path| std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
                    let mut last = size(&log);
                    // For the process's life (a stat every FOLLOW_EVERY, only while followed).
                    loop {
                        tokio::time::sleep(FOLLOW_EVERY).await;
                        if bump.receiver_count() == 0 {
                            continue;
                        }
                        let now = size(&log);
                        if now != last {
                            last = now;
                            bump.send_modify(|n| *n += 1);
                        }
                    }
                });
                sender
            })
            .await
    }
}

impl Backend for McpBackend {
    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, BackendError>> {
        self.tools_for(None)
    }

    fn tools_for<'a>(
        &'a self,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ToolDescriptor>, BackendError>> {
        Box::pin(async move {
            // Over the caller's own connection: the editor lists what that agent is offered.
            if let Some(attached) = self.editor(caller).await? {
                let listed = attached
                    .client
                    .request::<_, ListToolsResult>(
                        methods::LIST_TOOLS,
                        &json!({}),
                        &CancellationToken::new(),
                    )
                    .await;
                match listed {
                    Ok(list) => return Ok(list.tools),
                    Err(_) if attached.client.is_closed() => {
                        let _ = self.attached();
                    }
                    Err(err) => return Err(BackendError::Internal(err.message)),
                }
            }
            self.local().await?.tools_for(caller).await
        })
    }

    fn call(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<CallDone, BackendError>> {
        Box::pin(async move {
            if let Some(attached) = self.editor(call.caller.as_ref()).await? {
                // Our own call id, so the editor's live output for it finds its way back here.
                let call_id = new_call_id();
                if let Some(output) = call.output.clone() {
                    attached.client.watch(&call_id, output);
                }
                // Questions of the call come back here when our client can answer them.
                if let Some(asker) = call.questions.clone() {
                    attached.client.answer_questions(&call_id, asker);
                }
                let params = CallToolParams {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    call_id: Some(call_id.clone()),
                    can_ask: call.questions.is_some(),
                    model_facing: true,
                };
                let result = attached
                    .client
                    .request::<_, CallToolResult>(methods::CALL_TOOL, &params, &cancel)
                    .await;
                attached.client.unwatch(&call_id);
                return match result {
                    Ok(result) => Ok(CallDone { call_id: result.call_id, result: result.result }),
                    Err(_) if attached.client.is_closed() => {
                        let _ = self.attached();
                        Err(AttachedBackend::lost())
                    }
                    Err(err) => Err(BackendError::Internal(err.message)),
                };
            }
            self.local().await?.call(call, cancel).await
        })
    }

    fn tools_changed(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn prompts(&self) -> Vec<toolhost_mcp::PromptEntry> {
        // Prompts are for people: a skill with `user-invocable: false` is not offered.
        self.skills()
            .user_skills()
            .into_iter()
            .map(|s| toolhost_mcp::PromptEntry { name: s.name, description: s.description })
            .collect()
    }

    fn prompt(&self, name: &str) -> Result<Option<String>, String> {
        // The same envelope the `skill` tool gives the model.
        self.skills().prompt(name)
    }

    fn live_session(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            if let Ok(Some(attached)) = self.editor(None).await {
                return attached.session.lock().ok().and_then(|s| s.clone());
            }
            let local = self.local().await.ok()?;
            local.host.session_id().map(str::to_owned)
        })
    }

    fn session_cards(
        &self,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<Vec<toolhost_protocol::card::Card>>, BackendError>> {
        let id = id.to_owned();
        Box::pin(async move {
            if let Ok(Some(attached)) = self.editor(None).await {
                let Some(log) = log_of(&self.sessions_dir, &attached.root, &id) else {
                    return Ok(None);
                };
                // The editor's registry is in its process: replayed cards keep what was logged.
                return tokio::task::spawn_blocking(move || replay_log(&log, |_| None))
                    .await
                    .map_err(|e| BackendError::Internal(e.to_string()))?;
            }
            self.local().await?.cards_of(&id, &self.sessions_dir).await
        })
    }

    fn cards_changed(&self) -> BoxFuture<'_, watch::Receiver<u64>> {
        Box::pin(async move {
            if let Ok(Some(attached)) = self.editor(None).await {
                let session = attached.session.lock().ok().and_then(|s| s.clone());
                let log = session.and_then(|id| log_of(&self.sessions_dir, &attached.root, &id));
                if let Some(log) = log {
                    return self.follow_editor_log(log).await.subscribe();
                }
            }
            match self.local().await {
                Ok(local) => local.cards.subscribe(),
                Err(_) => watch::channel(0).1,
            }
        })
    }

    fn client_seen(&self, caller: &Caller, protocol: &str, results: &str) {
        let client = (caller.clone(), protocol.to_owned(), results.to_owned());
        if let Ok(mut all) = self.clients.lock() {
            all.insert(caller.name.clone(), client.clone());
        }
        if let Ok(mut slot) = self.client.lock() {
            *slot = Some(client);
        }
        // An attached connection attaches under this name before its next request; a
        // standalone session records the client now.
        if self.attached().is_none()
            && let Some(local) = self.local.get()
        {
            local.client_seen(caller, protocol, results);
        }
    }
}
