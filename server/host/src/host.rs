//! The host of one workspace and session: the registry with every tool and policy, the
//! capabilities tools reach the world through, the running calls and the listeners that hear
//! about them. Calls run through `crate::call` (the one call path).

use crate::calls::CallTable;
use crate::config::Config;
use crate::events::{CallWatchers, HostEventSink, HostListener, Listeners};
use crate::history::{Recovery, SessionHistory};
use crate::interaction::{PlanModeGuard, RunCompleteGuard, SessionInteraction};
use crate::permissions::{AgentPermissions, QuestionApproval};
use crate::presentation::ToolPresentation;
use crate::questions::SessionQuestions;
use crate::review::{SessionReview, SessionReviewHandle};
use crate::tasks::ShellTasks;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_contract::lsp::LspHandle;
use toolhost_contract::spill::SpillHandle;
use toolhost_contract::{
    BlobCacheHandle, Capabilities, EventsHandle, HistoryHandle, InteractionHandle, MemoryBlobCache,
    QuestionsHandle, ReviewHandle, SkillsHandle, TasksHandle,
};
use toolhost_lsp_host::{FileChange, FileChangeKind, LspHost};
use toolhost_protocol::card::{self, CallOrigin, CallPresentation, Card, CardOutcome};
use toolhost_registry::{Finalized, Registry, RegistryConfig, SpillPolicy, TempDirSpillStore};
use toolhost_session::{SessionError, SessionLog};
use toolhost_workspace::{Ledger, Workspace, WorkspaceConfig, WriteOperation};

/// Why a host could not be set up, or a call could not run.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot open workspace {path}: {detail}")]
    Workspace { path: String, detail: String },
    #[error("cannot register tools: {0}")]
    Registration(#[from] toolhost_contract::RegistrationError),
    #[error("cannot write the session log: {0}")]
    Session(#[from] SessionError),
    #[error("call id {0:?} is already running")]
    DuplicateCall(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl HostError {
    /// A stable code for the error.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::Workspace { .. } => "HOST_WORKSPACE",
            HostError::Registration(_) => "HOST_REGISTRATION",
            HostError::Session(_) => "HOST_SESSION_LOG",
            HostError::DuplicateCall(_) => "HOST_DUPLICATE_CALL",
            HostError::Internal(_) => "HOST_INTERNAL",
        }
    }
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

/// One call's outcome as clients see it. Its card is built when asked for ([`CallOutcome::card`]):
/// a front end that shows none (MCP) never pays for the card of a big result.
pub struct CallOutcome {
    pub call_id: String,
    pub finalized: Finalized,
    pub(crate) tool: String,
    pub(crate) presentation: CallPresentation,
    pub(crate) caller: Option<String>,
    pub(crate) parent: Option<String>,
    pub(crate) root: String,
}

impl CallOutcome {
    /// The call's final card.
    pub fn card(&self) -> Card {
        let origin = CallOrigin::new(&self.call_id, &self.tool)
            .with_caller(self.caller.as_deref())
            .with_parent(self.parent.as_deref());
        card::build(
            origin,
            &self.presentation,
            &self.root,
            CardOutcome::Done {
                content: self.finalized.result.content(),
                is_error: self.finalized.result.is_error(),
                meta: self.finalized.result.meta(),
            },
        )
    }
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
    watchers: CallWatchers,
    listeners: Listeners,
    calls: CallTable,
    /// The `tool/call` records being synced while their bodies run (see `record_gate.rs`).
    record_gates: Arc<crate::record_gate::RecordGates>,
    /// Review mode of the session (`[review]`, `toolhost/setReview`).
    review: SessionReviewHandle,
    /// Plan mode, the structured-output run and the todo list.
    interaction: Arc<SessionInteraction>,
    /// The question channel (MCP elicitation, the editor's `toolhost/askUser`).
    questions: Arc<SessionQuestions>,
    /// Set once an interrupted revert of the session was rolled back (or there was none).
    recovered: tokio::sync::OnceCell<()>,
    /// The MCP servers of `[mcp.servers.*]` and their tools (none started until
    /// [`Host::start_mcp_servers`] or a call names one of their tools).
    mcp: Option<Arc<toolhost_tools_mcp::McpBridge>>,
    /// The permission modes of the own agent's running calls (docs/agent.md).
    agent_permissions: Arc<AgentPermissions>,
    /// How models calling through this host are offered the tools (`[code] mode`; unset: each
    /// front end's default).
    presentation: Option<ToolPresentation>,
    /// Who defined each session tool: only that caller is offered it.
    session_tool_owners: crate::session_tools_owners::Owners,
    /// The steps of agents hosted over ACP being recorded (`agent_step` calls).
    agent_steps: Arc<toolhost_tools_fs::AgentSteps>,
}

/// Set in the environment of every stdio MCP server the bridge starts: a toolhost started that
/// way (`toolhost mcp` configured as a server) serves standalone and starts no MCP servers of
/// its own, so a configuration can never make servers start each other without end.
pub const BRIDGED_ENV: &str = "TOOLHOST_BRIDGED";

/// Whether this process was started by an MCP bridge.
pub fn started_by_bridge() -> bool {
    std::env::var_os(BRIDGED_ENV).is_some_and(|v| !v.is_empty())
}

/// The bridge for `[mcp.servers.*]`, with no server started yet, installed as the registry's
/// resolver of tool names nothing provides yet. None without servers, in a process a bridge
/// started ([`BRIDGED_ENV`]), or outside a tokio runtime.
fn mcp_bridge(
    config: &Config,
    registry: &Registry,
    roots: &[PathBuf],
    questions: &Arc<SessionQuestions>,
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
    let questions: QuestionsHandle = questions.clone();
    let options =
        toolhost_tools_mcp::BridgeOptions { roots: roots.to_vec(), questions: Some(questions) };
    let bridge = Arc::new(toolhost_tools_mcp::McpBridge::idle(
        registry,
        config.mcp_servers.clone(),
        options,
    ));
    registry.add_resolver(bridge.clone());
    Some(bridge)
}

/// Tells pooled language servers about every write, so the next `lsp` query never answers from
/// text read before it (external changes come from the watcher).
fn feed_language_servers(workspace: &Workspace, lsp: &Arc<LspHost>) {
    let pool = Arc::downgrade(lsp);
    workspace.on_write(Arc::new(move |event| {
        let Some(pool) = pool.upgrade() else { return };
        let kind = match event.operation {
            WriteOperation::Create => FileChangeKind::Created,
            WriteOperation::Update => FileChangeKind::Changed,
            WriteOperation::Remove => FileChangeKind::Deleted,
        };
        pool.files_changed(&[FileChange { path: event.real_path.to_path_buf(), kind }]);
    }));
}

impl Host {
    pub fn new(config: &Config, options: HostOptions) -> Result<Self, HostError> {
        if let Some(log) = &options.session {
            log.set_durability(config.session_durability);
        }
        let primary = options.roots.first().cloned().unwrap_or_else(|| PathBuf::from("."));
        let mut roots = options.roots.clone();
        roots.extend(config.fs.extra_roots.iter().cloned());
        let ws_config = WorkspaceConfig {
            roots,
            read_only_roots: options.read_only_roots.clone(),
            protected: config.fs.protected.clone(),
        };
        let workspace = Workspace::new(ws_config)
            .map_err(|e| HostError::Workspace {
                path: primary.display().to_string(),
                detail: e.to_string(),
            })?
            .with_ledger(Arc::clone(&options.ledger));
        let world = config.world.open(workspace.primary_root().path()).map_err(|detail| {
            HostError::Workspace { path: primary.display().to_string(), detail }
        })?;
        let world: Option<Arc<dyn toolhost_contract::ExecutionWorld>> =
            world.map(|w| w as Arc<dyn toolhost_contract::ExecutionWorld>);
        workspace.set_world(world.clone());
        let root_display = workspace.primary_root().path().display().to_string();
        let registry = Registry::new(RegistryConfig::default());
        // Outermost: it bounds what every other listener finally accepted.
        registry.add_post_execute(
            Arc::new(SpillPolicy::new(config.spill_max_inline_bytes as usize)),
            true,
        );
        let _ = toolhost_tools_fs::register(&registry, config.limits.clone())?;
        let agent_steps = Arc::new(toolhost_tools_fs::AgentSteps::default());
        let _ =
            registry.register(toolhost_tools_fs::AgentStepTool::new(Arc::clone(&agent_steps)))?;
        let _ = toolhost_tools_nav::register(&registry, toolhost_tools_nav::NavLimits::default())?;
        let _ = toolhost_tools_interact::register(&registry, config.interact)?;
        // The web tools build their own HTTP clients from `[web]` (the SSRF guard's allow list
        // and proxy came through the trust rule); docs/design.md, ARCHITECTURE.md invariants.
        let _ = toolhost_tools_web::register(&registry, config.web.clone())?;
        let shell = if config.shell.enabled {
            let mut shell = config.shell.clone();
            // Confined commands start through this very binary (`toolhost sandbox-exec`).
            shell.sandbox_launcher = std::env::current_exe().ok();
            let (_, handles) = toolhost_tools_shell::register(&registry, shell)?;
            Some(handles)
        } else {
            None
        };
        // Only entries with a command (the trust rule already dropped untrusted ones) start.
        let lsp =
            Arc::new(LspHost::new(toolhost_lsp_host::config::pool_config(&config.lsp_servers)));
        // Language servers run where the files are.
        lsp.set_world(world.clone());
        feed_language_servers(&workspace, &lsp);
        let spill: SpillHandle =
            options.spill.unwrap_or_else(|| Arc::new(TempDirSpillStore::new()));
        let lsp_handle: LspHandle = lsp.clone();
        let (watchers, listeners) = (CallWatchers::default(), Listeners::default());
        let events: EventsHandle = Arc::new(HostEventSink::new(
            options.session.clone(),
            watchers.clone(),
            listeners.clone(),
        ));
        let mut capabilities = Capabilities::new()
            .with::<Workspace>(workspace.clone())
            .with::<SpillHandle>(spill)
            .with::<LspHandle>(lsp_handle)
            .with::<EventsHandle>(events);
        let review = Arc::new(SessionReview::new(config.review, watchers.clone()));
        capabilities.insert::<ReviewHandle>(review.clone());
        let interaction =
            Arc::new(SessionInteraction::new(options.session.clone(), config.plan_active));
        capabilities.insert::<InteractionHandle>(interaction.clone());
        let questions = Arc::new(SessionQuestions::new(Arc::clone(&review), watchers.clone()));
        capabilities.insert::<QuestionsHandle>(questions.clone());
        let skills: SkillsHandle =
            Arc::new(crate::skills::SkillDirs::new(&options.roots, &config.skill_dirs));
        capabilities.insert(skills);
        // `web_fetch`'s page cache: the session's blob store, or memory without a session.
        let cache: BlobCacheHandle = match &options.session {
            Some(log) => Arc::new(BlobStoreCache(log.blobs().clone())),
            None => Arc::new(MemoryBlobCache::new()),
        };
        capabilities.insert(cache);
        let mcp = mcp_bridge(config, &registry, &options.roots, &questions);
        if let Some(shell) = &shell {
            let tasks: TasksHandle = Arc::new(ShellTasks::new(Arc::clone(&shell.jobs)));
            capabilities.insert(tasks);
        }
        // The own agent's permission modes: its calls may ask first, on the question channel.
        let agent_permissions = Arc::new(AgentPermissions::new(Arc::clone(&review)));
        registry.add_pre_execute(agent_permissions.clone());
        registry.set_approval_channel(Some(Arc::new(QuestionApproval {
            questions: Arc::clone(&questions),
            review: Arc::clone(&review),
        })));
        registry.add_guard(Arc::new(RunCompleteGuard(Arc::clone(&interaction))));
        registry.add_guard(Arc::new(PlanModeGuard(Arc::clone(&interaction))));
        // With a session, every change is recorded with its exact bytes, and `revert` can undo it.
        let record_gates = Arc::new(crate::record_gate::RecordGates::default());
        if let Some(log) = &options.session {
            crate::history::record_changes(&workspace, log);
            // After the history's keeper, so a replace waits for the record and the bytes.
            record_gates.install(&workspace);
            let history: HistoryHandle = Arc::new(SessionHistory::new(Arc::clone(log)));
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
            listeners,
            calls: CallTable::default(),
            record_gates,
            recovered: tokio::sync::OnceCell::new(),
            review,
            interaction,
            questions,
            mcp,
            agent_permissions,
            presentation: config.code.mode.map(Into::into),
            session_tool_owners: crate::session_tools_owners::Owners::default(),
            agent_steps,
        })
    }

    /// Where the steps of an agent hosted over ACP are fed to their `agent_step` calls.
    pub fn agent_steps(&self) -> &Arc<toolhost_tools_fs::AgentSteps> {
        &self.agent_steps
    }

    /// Adds a capability (e.g. an editor connection for test tools) to a host that is not yet
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

    /// The capabilities every call's context carries.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    pub(crate) fn capabilities_handle(&self) -> &Arc<Capabilities> {
        &self.capabilities
    }

    /// A front end that hears every call's cards, live output and the session's notices.
    pub fn add_listener(&self, listener: Arc<dyn HostListener>) {
        self.listeners.add(listener);
    }

    pub(crate) fn listeners(&self) -> &Listeners {
        &self.listeners
    }

    /// The running calls.
    /// How the own agent's model is offered the tools: `[code] mode`, by default `native`
    /// (every request carries the tool list, and `run_code`'s declares every tool).
    pub fn agent_presentation(&self) -> ToolPresentation {
        self.presentation.unwrap_or(ToolPresentation::Native)
    }

    /// How an MCP agent's model is offered the tools: `[code] mode`, by default `both` (the
    /// agent lists the tools once and picks `run_code` when a program saves it turns).
    pub fn mcp_presentation(&self) -> ToolPresentation {
        self.presentation.unwrap_or(ToolPresentation::Both)
    }

    pub(crate) fn calls(&self) -> &CallTable {
        &self.calls
    }

    /// Cancels running call `call_id` (a card's Stop) and its children; `false` when no such
    /// call runs.
    pub fn cancel_call(&self, call_id: &str) -> bool {
        self.calls.cancel(call_id)
    }

    /// Whether call `call_id` runs now.
    pub fn call_running(&self, call_id: &str) -> bool {
        self.calls.running(call_id)
    }

    /// Cancels every running call (the front end is going away).
    pub fn cancel_all_calls(&self) {
        self.calls.cancel_all();
    }

    /// Waits until no call runs.
    pub async fn calls_idle(&self) {
        self.calls.idle().await;
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
    pub async fn recover(&self) -> Option<Result<Recovery, String>> {
        let mut outcome = None;
        self.recovered
            .get_or_init(|| async {
                let result = match &self.session {
                    Some(log) => crate::history::recover_journal(&self.workspace, log)
                        .await
                        .map_err(|e| e.to_string()),
                    None => Ok(Recovery::Nothing),
                };
                match &result {
                    Ok(Recovery::RolledBack { call_id, files }) => tracing::warn!(
                        call_id,
                        files,
                        "rolled back a revert that was interrupted before it finished"
                    ),
                    Ok(Recovery::Nothing) => {}
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

    /// Stops every background job and terminal (the connection is going away). Their process
    /// groups are terminated and reaped by their own tasks; `toolhost_process::terminate_all`
    /// backs it up.
    pub fn stop_shell(&self) {
        if let Some(shell) = &self.shell {
            shell.stop_all();
        }
    }

    /// The session's review mode: its settings, and the editor that answers reviews.
    pub fn review(&self) -> &SessionReviewHandle {
        &self.review
    }

    /// Plan mode, the structured-output run and the todo list of the session.
    pub fn interaction(&self) -> &Arc<SessionInteraction> {
        &self.interaction
    }

    /// The permission modes of the own agent's running calls.
    pub fn agent_permissions(&self) -> &Arc<AgentPermissions> {
        &self.agent_permissions
    }

    /// Who defined each session tool (the caller it is offered to).
    pub fn session_tool_owners(&self) -> &crate::session_tools_owners::Owners {
        &self.session_tool_owners
    }

    /// The tools a model of `caller` is offered ([`Host::model_tools`]) without the session
    /// tools another caller defined.
    pub fn model_tools_of(
        &self,
        presentation: ToolPresentation,
        caller: Option<&str>,
    ) -> Vec<toolhost_protocol::lsp_ext::ToolDescriptor> {
        let mut tools = self.model_tools(presentation);
        tools.retain(|tool| self.session_tool_owners.visible(&tool.name, caller));
        tools
    }

    /// The session's question channel.
    pub fn questions(&self) -> &Arc<SessionQuestions> {
        &self.questions
    }

    /// Restores what a resumed session's log says about plan mode and the structured run.
    pub fn restore_session_state(&self, report: &toolhost_session::OpenReport) {
        self.interaction.restore(&report.view.state);
    }

    /// Who follows the live output of running calls (MCP clients, for their progress).
    pub fn call_watchers(&self) -> &CallWatchers {
        &self.watchers
    }

    /// The records of calls whose bodies run while their record is synced.
    pub(crate) fn record_gates(&self) -> &Arc<crate::record_gate::RecordGates> {
        &self.record_gates
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
