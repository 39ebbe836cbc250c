//! The host of one workspace and session: the registry with every tool and policy, the
//! capabilities tools reach the world through, and card building for each call.

use crate::config::Config;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_contract::lsp::LspHandle;
use toolhost_contract::spill::{GenericSpill, SpillHandle, TempDirSpillStore};
use toolhost_contract::{
    CallInput, CancellationToken, Capabilities, Finalized, Registry, RegistryConfig,
};
use toolhost_contract::{EventsHandle, HistoryHandle, ReviewHandle};
use toolhost_lsp_host::{FileChange, FileChangeKind, LspHost, LspHostConfig, ServerSpec};
use toolhost_protocol::card::{self, CallOrigin, CallPresentation, Card, CardOutcome};
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultEvent};
use toolhost_session::{SessionError, SessionLog};
use toolhost_workspace::{Ledger, Workspace, WorkspaceConfig, WriteOperation};

/// Why a host could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot open workspace {path}: {detail}")]
    Workspace { path: String, detail: String },
    #[error("cannot register tools: {0}")]
    Registration(#[from] toolhost_contract::RegistrationError),
    #[error("cannot write the session log: {0}")]
    Session(#[from] SessionError),
}

/// What the host needs besides the configuration.
pub struct HostOptions {
    /// Workspace roots; the first is primary (relative paths resolve against it).
    pub roots: Vec<PathBuf>,
    /// Extra read-only roots (the session's blob folder).
    pub read_only_roots: Vec<PathBuf>,
    pub session_id: Option<String>,
    /// The session's observation ledger.
    pub ledger: Arc<Ledger>,
    /// Where spills go (the session blob store; a private temp dir when `None`).
    pub spill: Option<SpillHandle>,
    /// The session log every call is appended to.
    pub session: Option<Arc<SessionLog>>,
}

/// A keyed cache over the session's blob store: the bytes are blobs, the key → blob index is a
/// pointer file per key beside them, so a resumed session (or the next `toolhost call
/// --session`) finds what an earlier process cached.
struct BlobStoreCache(toolhost_session::BlobStore);

impl toolhost_contract::BlobCache for BlobStoreCache {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.0.get_keyed(key).ok().flatten()
    }

    fn put(&self, key: &str, bytes: &[u8]) {
        if let Err(err) = self.0.put_keyed(key, bytes) {
            tracing::debug!("cache entry not stored: {err}");
        }
    }
}

/// A call with its presentation, ready to run.
pub struct PreparedCall {
    pub call_id: String,
    pub name: String,
    pub args: Value,
    pub presentation: CallPresentation,
    /// Who asks, when it is another program (an MCP client's name): shown on the cards and
    /// recorded in the log.
    pub caller: Option<String>,
    /// Who answers the call's questions first: the MCP client that made it, when it can
    /// elicit (otherwise the editor does).
    pub asker: Option<toolhost_contract::QuestionsHandle>,
}

impl PreparedCall {
    /// The call made on behalf of `caller`.
    pub fn by(mut self, caller: Option<String>) -> Self {
        self.caller = caller;
        self
    }

    /// The call's questions go to `asker` first.
    pub fn asked_through(mut self, asker: Option<toolhost_contract::QuestionsHandle>) -> Self {
        self.asker = asker;
        self
    }

    fn origin(&self) -> CallOrigin<'_> {
        CallOrigin::new(&self.call_id, &self.name).with_caller(self.caller.as_deref())
    }
}

/// One call's outcome as clients see it.
pub struct CallOutcome {
    pub call_id: String,
    pub finalized: Finalized,
    pub card: Card,
}

/// Tools, policies and capabilities for one workspace and session.
pub struct Host {
    registry: Registry,
    capabilities: Arc<Capabilities>,
    workspace: Workspace,
    root_display: String,
    session_id: Option<String>,
    session: Option<Arc<SessionLog>>,
    lsp: Arc<LspHost>,
    shell: Option<toolhost_tools_shell::ShellHandles>,
    watchers: crate::events::CallWatchers,
    /// Review mode of the session (`[review]`, `toolhost/setReview`).
    review: crate::review::SessionReviewHandle,
    /// Plan mode, the structured-output run and the todo list.
    interaction: Arc<crate::interact::SessionInteraction>,
    /// The question channel (MCP elicitation, the editor's `toolhost/askUser`).
    questions: Arc<crate::interact::SessionQuestions>,
    /// Set once an interrupted revert of the session was rolled back (or there was none).
    recovered: tokio::sync::OnceCell<()>,
    /// The MCP servers of `[mcp.servers.*]` and their tools (none started until
    /// [`Host::start_mcp_servers`] or a call names one of their tools).
    mcp: Option<Arc<toolhost_tools_mcp::McpBridge>>,
    /// The permission modes of the own agent's running calls (docs/agent.md).
    agent_permissions: Arc<crate::agent::AgentPermissions>,
    /// What `subagent` needs to start children (bound by [`Host::shared`]).
    subagents: Arc<crate::subagent::Subagents>,
}

/// Set in the environment of every stdio MCP server the bridge starts: a toolhost started that
/// way (`toolhost mcp` configured as a server) serves standalone and starts no MCP servers of
/// its own, so a configuration can never make servers start each other without end.
pub const BRIDGED_ENV: &str = "TOOLHOST_BRIDGED";

/// Whether this process was started by an MCP bridge.
pub fn started_by_bridge() -> bool {
    std::env::var_os(BRIDGED_ENV).is_some_and(|v| !v.is_empty())
}

/// The language-server pool for `[lsp.servers.*]`: only entries with a command (the trust rule
/// already stripped commands from untrusted sources) become stdio servers.
fn lsp_host(config: &Config) -> LspHost {
    let servers = config
        .lsp_servers
        .iter()
        .filter_map(|(id, server)| {
            let command = server.command.clone()?;
            let mut spec = ServerSpec::new(id.clone(), command).with_args(server.args.clone());
            spec.env = server.env.clone();
            for (ext, language) in &server.extensions {
                spec = spec.with_extension(ext, language);
            }
            spec.initialization_options = server.initialization_options.clone();
            spec.settings = server.settings.clone();
            Some(spec)
        })
        .collect();
    LspHost::new(LspHostConfig { servers, ..LspHostConfig::default() })
}

/// The bridge for `[mcp.servers.*]`, with no server started yet. None without servers, in a
/// process a bridge started ([`BRIDGED_ENV`]), or outside a tokio runtime.
fn mcp_bridge(
    config: &Config,
    registry: &Registry,
    roots: &[PathBuf],
    questions: &Arc<crate::interact::SessionQuestions>,
) -> Option<Arc<toolhost_tools_mcp::McpBridge>> {
    if config.mcp_servers.is_empty() {
        return None;
    }
    if started_by_bridge() {
        tracing::warn!(
            "MCP servers are not started: this toolhost was itself started by an MCP bridge"
        );
        return None;
    }
    if tokio::runtime::Handle::try_current().is_err() {
        tracing::warn!("MCP servers are not started: no async runtime");
        return None;
    }
    let questions: toolhost_contract::QuestionsHandle = questions.clone();
    let options =
        toolhost_tools_mcp::BridgeOptions { roots: roots.to_vec(), questions: Some(questions) };
    Some(Arc::new(toolhost_tools_mcp::McpBridge::idle(
        registry,
        config.mcp_servers.clone(),
        options,
    )))
}

impl Host {
    pub fn new(config: &Config, options: HostOptions) -> Result<Self, HostError> {
        let primary = options.roots.first().cloned().unwrap_or_else(|| PathBuf::from("."));
        let mut roots = options.roots.clone();
        roots.extend(config.extra_roots.iter().cloned());
        let ws_config = WorkspaceConfig {
            roots,
            read_only_roots: options.read_only_roots.clone(),
            protected: config.protected.clone(),
        };
        let workspace = Workspace::new(ws_config)
            .map_err(|e| HostError::Workspace {
                path: primary.display().to_string(),
                detail: e.to_string(),
            })?
            .with_ledger(Arc::clone(&options.ledger));
        let root_display = workspace.primary_root().path().display().to_string();
        let registry = Registry::new(RegistryConfig::default());
        if config.spill_max_inline_bytes > 0 {
            registry.add_post_execute(
                Arc::new(GenericSpill::new(config.spill_max_inline_bytes as usize)),
                true,
            );
        }
        let _ = toolhost_tools_fs::register(&registry, config.limits.clone())?;
        let _ = toolhost_tools_nav::register(&registry, toolhost_tools_nav::NavLimits::default())?;
        let _ = toolhost_tools_interact::register(&registry, config.interact)?;
        // The web tools build their own HTTP clients from `[web]` (the SSRF guard's allow list
        // and proxy came through the trust rule); docs/design.md, ARCHITECTURE.md invariants.
        let _ = toolhost_tools_web::register(&registry, config.web.clone())?;
        let shell = if config.shell_enabled {
            let mut shell = config.shell.clone();
            // Confined commands start through this very binary (`toolhost sandbox-exec`).
            shell.sandbox_launcher = std::env::current_exe().ok();
            let (_, handles) = toolhost_tools_shell::register(&registry, shell)?;
            Some(handles)
        } else {
            None
        };
        let lsp = Arc::new(lsp_host(config));
        // Pooled language servers hear about every write, so the next `lsp` query never answers
        // from text read before it (external changes come from the watcher).
        let pool = Arc::downgrade(&lsp);
        workspace.on_write(Arc::new(move |event| {
            let Some(pool) = pool.upgrade() else { return };
            let kind = match event.operation {
                WriteOperation::Create => FileChangeKind::Created,
                WriteOperation::Update => FileChangeKind::Changed,
                WriteOperation::Remove => FileChangeKind::Deleted,
            };
            pool.files_changed(&[FileChange { path: event.real_path.to_path_buf(), kind }]);
        }));
        // Test-only tools: compiled in with the `test-tools` feature, registered only when the
        // process also runs with TOOLHOST_TEST_TOOLS=1.
        #[cfg(feature = "test-tools")]
        if crate::test_tools::enabled() {
            crate::test_tools::register(&registry)?;
        }
        let spill: SpillHandle =
            options.spill.unwrap_or_else(|| Arc::new(TempDirSpillStore::new()));
        let lsp_handle: LspHandle = lsp.clone();
        // Live output has no client until the editor connects (`set_editor_events`); notices
        // still reach the session log.
        let watchers = crate::events::CallWatchers::default();
        let events: EventsHandle = Arc::new(crate::events::HostEventSink::new(
            None,
            options.session.clone(),
            watchers.clone(),
        ));
        let mut capabilities = Capabilities::new()
            .with::<Workspace>(workspace.clone())
            .with::<SpillHandle>(spill)
            .with::<LspHandle>(lsp_handle)
            .with::<EventsHandle>(events);
        let review = Arc::new(crate::review::SessionReview::new(config.review, watchers.clone()));
        let review_handle: ReviewHandle = review.clone();
        capabilities.insert(review_handle);
        let interaction = Arc::new(crate::interact::SessionInteraction::new(
            options.session.clone(),
            config.plan_active,
        ));
        let interaction_handle: toolhost_contract::InteractionHandle = interaction.clone();
        capabilities.insert(interaction_handle);
        let questions =
            Arc::new(crate::interact::SessionQuestions::new(Arc::clone(&review), watchers.clone()));
        let questions_handle: toolhost_contract::QuestionsHandle = questions.clone();
        capabilities.insert(questions_handle);
        let skills: toolhost_contract::SkillsHandle =
            Arc::new(crate::skills::SkillDirs::new(&options.roots, &config.skill_dirs));
        capabilities.insert(skills);
        // `web_fetch`'s page cache: the session's blob store, or memory without a session.
        let cache: toolhost_contract::BlobCacheHandle = match &options.session {
            Some(log) => Arc::new(BlobStoreCache(log.blobs().clone())),
            None => Arc::new(toolhost_contract::MemoryBlobCache::new()),
        };
        capabilities.insert(cache);
        let mcp = mcp_bridge(config, &registry, &options.roots, &questions);
        // The own agent's permission modes: its calls may ask first, on the question channel.
        let agent_permissions = Arc::new(crate::agent::AgentPermissions::new(
            Box::new(registry.annotations_lookup()),
            Arc::clone(&review),
        ));
        registry.add_pre_execute(agent_permissions.clone());
        registry.set_approval_channel(Some(Arc::new(crate::agent::QuestionApproval {
            questions: Arc::clone(&questions),
            review: Arc::clone(&review),
        })));
        registry.add_guard(Arc::new(crate::interact::RunCompleteGuard(Arc::clone(&interaction))));
        registry.add_guard(Arc::new(crate::interact::PlanModeGuard {
            state: Arc::clone(&interaction),
            annotations: Box::new(registry.annotations_lookup()),
        }));
        // `subagent` runs the own agent again, so it exists only when a model is reachable.
        let subagents = Arc::new(crate::subagent::Subagents::new(config.agent.clone()));
        if crate::subagent::Subagents::available(&config.agent) {
            let _ = registry.register(crate::subagent::SubagentTool(Arc::clone(&subagents)))?;
        }
        // With a session, every change is recorded with its exact bytes, and `revert` can undo it.
        if let Some(log) = &options.session {
            crate::history::record_changes(&workspace, log);
            let history: HistoryHandle =
                Arc::new(crate::history::SessionHistory::new(Arc::clone(log)));
            capabilities.insert(history);
        }
        Ok(Host {
            registry,
            capabilities: Arc::new(capabilities),
            workspace,
            root_display,
            session_id: options.session_id,
            session: options.session,
            lsp,
            shell,
            watchers,
            recovered: tokio::sync::OnceCell::new(),
            review,
            interaction,
            questions,
            mcp,
            agent_permissions,
            subagents,
        })
    }

    /// The host behind an `Arc`, as every caller keeps it: `subagent` can start children then.
    pub fn shared(self) -> Arc<Host> {
        let host = Arc::new(self);
        host.subagents.bind(&host);
        host
    }

    /// The capabilities every call's context carries.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// The shell's background jobs (none when `[shell]` is off).
    pub fn shell_jobs(&self) -> Option<Arc<toolhost_tools_shell::JobRegistry>> {
        self.shell.as_ref().map(|shell| Arc::clone(&shell.jobs))
    }

    /// Starts the MCP servers that start with the host (not `startup = "lazy"` ones).
    pub fn start_mcp_servers(&self) {
        if let Some(bridge) = &self.mcp {
            bridge.launch_eager();
        }
    }

    /// Starts every MCP server, lazy ones too (a full tool list, a status probe).
    pub fn start_all_mcp_servers(&self) {
        if let Some(bridge) = &self.mcp {
            bridge.launch_all();
        }
    }

    /// Waits until every started MCP server finished its first connection attempt; Err names
    /// the `fail_on_startup_error` servers that failed.
    pub async fn mcp_ready(&self) -> Result<(), String> {
        match &self.mcp {
            Some(bridge) => bridge.ready().await,
            None => Ok(()),
        }
    }

    /// Every configured MCP server's state.
    pub fn mcp_status(&self) -> Vec<toolhost_tools_mcp::ServerStatus> {
        self.mcp.as_ref().map(|b| b.status()).unwrap_or_default()
    }

    /// The bridge, to follow its changes.
    pub fn mcp_bridge(&self) -> Option<&Arc<toolhost_tools_mcp::McpBridge>> {
        self.mcp.as_ref()
    }

    /// Rolls back a multi-file revert that a crash interrupted in this session (its journal),
    /// once per host; every call waits for it, so nothing runs on a half-reverted workspace.
    /// Returns what this invocation did (`None` when an earlier one already ran).
    pub async fn recover(&self) -> Option<Result<crate::history::Recovery, String>> {
        let mut outcome = None;
        self.recovered
            .get_or_init(|| async {
                let result = match &self.session {
                    Some(log) => crate::history::recover_journal(&self.workspace, log)
                        .await
                        .map_err(|e| e.to_string()),
                    None => Ok(crate::history::Recovery::Nothing),
                };
                match &result {
                    Ok(crate::history::Recovery::RolledBack { call_id, files }) => tracing::warn!(
                        call_id,
                        files,
                        "rolled back a revert that was interrupted before it finished"
                    ),
                    Ok(crate::history::Recovery::Nothing) => {}
                    Err(err) => tracing::error!("{err}"),
                }
                outcome = Some(result);
            })
            .await;
        outcome
    }

    /// The language-server pool behind the `lsp` tool: `set_editor` installs the editor-backed
    /// provider; `shutdown_all().await` stops every server (bounded, ≤ 1 s) at exit.
    pub fn lsp(&self) -> &Arc<LspHost> {
        &self.lsp
    }

    /// Adds a capability (e.g. the LSP server's `EditorBridge`) to a host that is not yet
    /// shared. Returns `false` (and adds nothing) if calls still hold the capability map.
    pub fn insert_capability<T: Clone + Send + Sync + 'static>(&mut self, value: T) -> bool {
        match Arc::get_mut(&mut self.capabilities) {
            Some(capabilities) => {
                capabilities.insert(value);
                true
            }
            None => false,
        }
    }

    /// Stops every background job and terminal (the connection is going away). Their process
    /// groups are terminated and reaped by their own tasks; `toolhost_process::terminate_all`
    /// backs it up.
    pub fn stop_shell(&self) {
        if let Some(shell) = &self.shell {
            shell.stop_all();
        }
    }

    /// The session's review mode: its settings, and the editor that answers reviews.
    pub fn review(&self) -> &crate::review::SessionReviewHandle {
        &self.review
    }

    /// Plan mode, the structured-output run and the todo list of the session.
    pub fn interaction(&self) -> &Arc<crate::interact::SessionInteraction> {
        &self.interaction
    }

    /// The permission modes of the own agent's running calls.
    pub fn agent_permissions(&self) -> &Arc<crate::agent::AgentPermissions> {
        &self.agent_permissions
    }

    /// The session's question channel.
    pub fn questions(&self) -> &Arc<crate::interact::SessionQuestions> {
        &self.questions
    }

    /// Restores what a resumed session's log says about plan mode and the structured run.
    pub fn restore_session_state(&self, report: &toolhost_session::OpenReport) {
        self.interaction.restore(&report.view.state);
    }

    /// Who follows the live output of running calls (MCP clients, for their progress).
    pub fn call_watchers(&self) -> &crate::events::CallWatchers {
        &self.watchers
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The primary root as cards show it.
    pub fn root_display(&self) -> &str {
        &self.root_display
    }

    pub fn root(&self) -> &Path {
        self.workspace.primary_root().path()
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    pub fn session(&self) -> Option<&Arc<SessionLog>> {
        self.session.as_ref()
    }

    /// A call about to run: its presentation is computed once (the tool's declaration) and used
    /// for the pending card, the `tool/call` event and the final card.
    pub fn prepare(&self, call_id: &str, name: &str, args: Value) -> PreparedCall {
        let presentation = self.registry.present_call(name, &args);
        PreparedCall {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            args,
            presentation,
            caller: None,
            asker: None,
        }
    }

    /// The card shown while a call runs.
    pub fn pending_card(&self, call: &PreparedCall) -> Card {
        card::build(call.origin(), &call.presentation, &self.root_display, CardOutcome::Pending)
    }

    /// Runs one direct call through the full pipeline and builds its card. With a session, the
    /// call is logged: `tool/call` before (on disk before the body runs, unless the tool is
    /// read-only, whose start is committed together with its result), `tool/result` after,
    /// durable before this returns.
    pub async fn run(
        &self,
        call: PreparedCall,
        signal: CancellationToken,
    ) -> Result<CallOutcome, HostError> {
        let PreparedCall { call_id, name, args, mut presentation, caller, asker } = call;
        self.recover().await;
        // A lazy MCP server starts when a call first names one of its tools.
        if let Some(bridge) = &self.mcp
            && name.starts_with("mcp__")
            && !self.registry.contains(&name)
            && bridge.launch_for_tool(&name).is_some()
        {
            let _ = bridge.ready().await;
            presentation = self.registry.present_call(&name, &args);
        }
        if let Some(log) = &self.session {
            let event = ToolCallEvent {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: args.clone(),
                card: Some(presentation.clone()),
                caller: caller.clone(),
            };
            if self.registry.annotations(&name).read_only {
                log.enqueue_tool_call(&event)?;
            } else {
                log.append_tool_call(&event).await?;
            }
        }
        let input = CallInput {
            call_id: call_id.clone(),
            name: name.clone(),
            arguments: args,
            parent: None,
            session_id: self.session_id.clone(),
            signal,
            capabilities: Arc::clone(&self.capabilities),
        };
        let started = std::time::Instant::now();
        self.review.begin_call(&call_id, &presentation.title, caller.as_deref());
        if let Some(asker) = asker {
            self.questions.route(&call_id, asker);
        }
        let finalized = self.registry.dispatch(input).await;
        self.questions.unroute(&call_id);
        self.review.end_call(&call_id);
        tracing::info!(
            tool = name,
            call_id,
            status = if finalized.result.is_error() { "failed" } else { "completed" },
            code = finalized
                .result
                .error()
                .and_then(|e| e.info.as_ref())
                .map_or("", |i| i.code.as_str()),
            ms = started.elapsed().as_millis() as u64,
            "tool call"
        );
        if let Some(log) = &self.session {
            log.append_tool_result(&ToolResultEvent {
                call_id: call_id.clone(),
                name: name.clone(),
                content: finalized.result.content().to_vec(),
                is_error: finalized.result.is_error(),
                error: finalized.result.error().and_then(|e| e.info.clone()),
                meta: finalized.result.meta().cloned(),
                renderer_version: finalized.renderer_version,
            })
            .await?;
        }
        // Plan approval and a structured value take effect only with a successful result.
        self.interaction.settle(&call_id, !finalized.result.is_error()).await;
        let card = card::build(
            CallOrigin::new(&call_id, &name).with_caller(caller.as_deref()),
            &presentation,
            &self.root_display,
            CardOutcome::Done {
                content: finalized.result.content(),
                is_error: finalized.result.is_error(),
                meta: finalized.result.meta(),
            },
        );
        Ok(CallOutcome { call_id, finalized, card })
    }

    /// [`Host::prepare`] then [`Host::run`].
    pub async fn call(
        &self,
        call_id: &str,
        name: &str,
        args: Value,
        signal: CancellationToken,
    ) -> Result<CallOutcome, HostError> {
        let call = self.prepare(call_id, name, args);
        self.run(call, signal).await
    }

    /// Stops the shell's jobs and terminals and every language server this host started (bounded
    /// by the pool's shutdown budget) and waits for the servers to be reaped. Call it before the
    /// host goes away.
    pub async fn shutdown(&self) {
        self.stop_shell();
        if let Some(bridge) = &self.mcp {
            bridge.shutdown().await;
        }
        self.lsp.shutdown_all().await;
    }
}

/// A fresh call id.
pub fn new_call_id() -> String {
    format!("call_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}
