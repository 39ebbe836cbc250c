//! `LspHost`: the contract's `LspProvider` over a pool of stdio servers, plus the selection order
//! of docs/tools.md (lsp): a configured server for the file's extension, then the editor (when
//! the client offered `toolhost/lspQuery`), then a well-known server found on `PATH`.
//!
//! One instance per (server id, canonical workspace), started lazily and single-flighted under
//! the slot lock; queries are serialized per workspace (the wait is abortable) and distinct
//! workspaces run in parallel. A pooled instance that died is replaced (a crash counts against
//! the restart budget) and the query retried once. `shutdown_all` stops everything within a
//! budget; dropping the host SIGKILLs every process group.

use crate::error::LspHostError;
use crate::instance::{Instance, StartOptions};
use crate::servers::{ServerSpec, file_extension, find_candidate, find_program, well_known};
use crate::watch::FileChange;
use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::lsp::{LspAnswer, LspHandle, LspProvider, LspRequest, codes};
use toolhost_contract::{BoxFuture, ToolError};
use toolhost_jsonrpc::content_length::DEFAULT_CHILD_MAX_BODY as DEFAULT_MAX_MESSAGE_BYTES;

/// Settings of the pool.
#[derive(Clone, Debug)]
pub struct LspHostConfig {
    /// Configured servers (`[lsp.servers.*]` with a command), tried first.
    pub servers: Vec<ServerSpec>,
    /// Whether well-known servers on `PATH` are used.
    pub well_known: bool,
    /// The `PATH` used to find programs (`None`: the process's `PATH` at query time).
    pub path: Option<OsString>,
    /// Body cap of server messages.
    pub max_message_bytes: usize,
    /// How long a cancelled request may take to settle before the instance is torn down.
    pub kill_grace: Duration,
    /// Crash restarts allowed within `restart_window`.
    pub restart_budget: usize,
    pub restart_window: Duration,
    /// The default budget of [`LspHost::shutdown_all`].
    pub shutdown_budget: Duration,
}

impl Default for LspHostConfig {
    fn default() -> Self {
        LspHostConfig {
            servers: Vec::new(),
            well_known: true,
            path: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            kill_grace: Duration::from_secs(2),
            restart_budget: 3,
            restart_window: Duration::from_secs(300),
            shutdown_budget: Duration::from_millis(1000),
        }
    }
}

#[derive(Default)]
struct SlotState {
    instance: Option<Arc<Instance>>,
    crashes: VecDeque<Instant>,
}

type Slot = Arc<tokio::sync::Mutex<SlotState>>;

/// The stdio provider and server selector.
pub struct LspHost {
    config: LspHostConfig,
    specs: Vec<Arc<ServerSpec>>,
    well_known: Vec<(Arc<ServerSpec>, &'static [&'static str])>,
    editor: RwLock<Option<LspHandle>>,
    slots: Mutex<HashMap<(String, PathBuf), Slot>>,
    workspaces: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    live: Mutex<Vec<Weak<Instance>>>,
    closed: AtomicBool,
    started: AtomicUsize,
    /// Where the workspace's files are when not here: servers are started there.
    world: RwLock<Option<Arc<dyn toolhost_contract::ExecutionWorld>>>,
}

impl std::fmt::Debug for LspHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspHost")
            .field("servers", &self.specs.len())
            .field("started", &self.started())
            .finish()
    }
}

/// Which server (or the editor) answers a file.
enum Choice {
    Stdio { spec: Arc<ServerSpec>, program: Result<PathBuf, String>, language: String },
    Editor(LspHandle),
}

impl LspHost {
    pub fn new(config: LspHostConfig) -> Self {
        let specs = config.servers.iter().cloned().map(Arc::new).collect();
        let well_known = if config.well_known {
            well_known().into_iter().map(|(s, c)| (Arc::new(s), c)).collect()
        } else {
            Vec::new()
        };
        LspHost {
            config,
            specs,
            well_known,
            editor: RwLock::new(None),
            slots: Mutex::default(),
            workspaces: Mutex::default(),
            live: Mutex::default(),
            closed: AtomicBool::new(false),
            started: AtomicUsize::new(0),
            world: RwLock::new(None),
        }
    }

    /// Sets (or clears) the execution world servers run in: with one, a configured server's
    /// `command` and a well-known server's name are started there (its `PATH`, its files), and
    /// its locations are mapped back to this machine's root.
    pub fn set_world(&self, world: Option<Arc<dyn toolhost_contract::ExecutionWorld>>) {
        if let Ok(mut slot) = self.world.write() {
            *slot = world;
        }
    }

    fn world(&self) -> Option<Arc<dyn toolhost_contract::ExecutionWorld>> {
        self.world.read().ok().and_then(|w| w.clone())
    }

    /// Sets (or clears) the editor-backed provider, consulted after configured servers.
    pub fn set_editor(&self, provider: Option<LspHandle>) {
        if let Ok(mut editor) = self.editor.write() {
            *editor = provider;
        }
    }

    fn editor(&self) -> Option<LspHandle> {
        self.editor.read().ok().and_then(|e| e.clone())
    }

    /// How many server processes were spawned so far.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// Process ids (= process group ids) of the instances alive now.
    pub fn live_pids(&self) -> Vec<i32> {
        self.live_instances().iter().filter(|i| i.is_alive()).filter_map(|i| i.pid()).collect()
    }

    /// Passes file changes to every running language server whose watchers want them, so a
    /// pooled server never answers from text it read before the change.
    pub fn files_changed(&self, changes: &[FileChange]) {
        if changes.is_empty() {
            return;
        }
        for instance in self.live_instances() {
            instance.files_changed(changes);
        }
    }

    fn live_instances(&self) -> Vec<Arc<Instance>> {
        let mut live = self.live.lock().map(|l| l.clone()).unwrap_or_default();
        live.retain(|w| w.strong_count() > 0);
        live.iter().filter_map(Weak::upgrade).collect()
    }

    fn path_var(&self) -> Option<OsString> {
        self.config.path.clone().or_else(|| std::env::var_os("PATH"))
    }

    fn choose(&self, path: &Path) -> Option<Choice> {
        let ext = file_extension(path)?;
        if self.world().is_some() {
            return self.choose_in_world(&ext);
        }
        let path_var = self.path_var();
        for spec in &self.specs {
            if let Some(language) = spec.language_for(&ext) {
                let program = find_program(&spec.command, path_var.as_deref())
                    .ok_or_else(|| "not found on PATH".to_owned());
                let language = language.to_owned();
                return Some(Choice::Stdio { spec: Arc::clone(spec), program, language });
            }
        }
        if let Some(editor) = self.editor() {
            return Some(Choice::Editor(editor));
        }
        self.well_known_choice(&ext, path_var.as_ref())
    }

    /// The server for `ext` in a world: a configured one's command, else the first name of a
    /// well-known one — looked up there when started (this machine's `PATH` says nothing about
    /// the world's, and the editor's servers see this machine's files).
    fn choose_in_world(&self, ext: &str) -> Option<Choice> {
        for spec in &self.specs {
            if let Some(language) = spec.language_for(ext) {
                let program = Ok(PathBuf::from(&spec.command));
                let language = language.to_owned();
                return Some(Choice::Stdio { spec: Arc::clone(spec), program, language });
            }
        }
        for (spec, candidates) in &self.well_known {
            let Some(language) = spec.language_for(ext) else { continue };
            let Some(name) = candidates.iter().find(|c| !c.ends_with('*')) else { continue };
            let (program, language) = (Ok(PathBuf::from(name)), language.to_owned());
            return Some(Choice::Stdio { spec: Arc::clone(spec), program, language });
        }
        None
    }

    fn well_known_choice(&self, ext: &str, path_var: Option<&OsString>) -> Option<Choice> {
        for (spec, candidates) in &self.well_known {
            let Some(language) = spec.language_for(ext) else { continue };
            let found = candidates
                .iter()
                .find_map(|c| find_candidate(c, path_var.map(OsString::as_os_str)));
            if let Some(program) = found {
                let language = language.to_owned();
                return Some(Choice::Stdio {
                    spec: Arc::clone(spec),
                    program: Ok(program),
                    language,
                });
            }
        }
        None
    }

    fn workspace_lock(&self, root: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.workspaces.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(map.entry(root.to_path_buf()).or_default())
    }

    fn slot(&self, id: &str, root: &Path) -> Slot {
        let mut map = match self.slots.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(map.entry((id.to_owned(), root.to_path_buf())).or_default())
    }

    /// The whole query (selection, then the chosen provider).
    pub async fn query_request(
        &self,
        request: &LspRequest,
        cancel: &CancellationToken,
    ) -> Result<LspAnswer, ToolError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(LspHostError::Disposed.into());
        }
        let no_provider = || LspHostError::NoProvider(request.display.clone()).into();
        match self.choose(&request.path) {
            None => Err(no_provider()),
            Some(Choice::Editor(editor)) => match editor.query(request, cancel).await {
                // The editor has no server for this file: fall back to a well-known one, and
                // without one report it exactly as if no editor had been asked.
                Err(err) if err.code() == Some(codes::UNAVAILABLE) => {
                    let ext = file_extension(&request.path).unwrap_or_default();
                    match self.well_known_choice(&ext, self.path_var().as_ref()) {
                        Some(Choice::Stdio { spec, program, language }) => self
                            .stdio(spec, program, &language, request, cancel)
                            .await
                            .map_err(Into::into),
                        _ => Err(no_provider()),
                    }
                }
                other => other,
            },
            Some(Choice::Stdio { spec, program, language }) => {
                self.stdio(spec, program, &language, request, cancel).await.map_err(Into::into)
            }
        }
    }

    async fn stdio(
        &self,
        spec: Arc<ServerSpec>,
        program: Result<PathBuf, String>,
        language: &str,
        request: &LspRequest,
        cancel: &CancellationToken,
    ) -> Result<LspAnswer, LspHostError> {
        let program = program.map_err(|detail| LspHostError::Spawn {
            id: spec.id.clone(),
            command: spec.command.clone(),
            detail,
        })?;
        let root = &request.workspace_root;
        let lock = self.workspace_lock(root);
        let _serialized = tokio::select! {
            guard = lock.lock_owned() => guard,
            () = cancel.cancelled() => return Err(LspHostError::Aborted),
        };
        let slot = self.slot(&spec.id, root);
        let mut retried = false;
        loop {
            let (instance, reused) = self.acquire(&slot, &spec, &program, root, cancel).await?;
            let result = instance.query(request, language, cancel, self.config.kill_grace).await;
            match result {
                Err(err) if err.is_transport() => {
                    self.release_dead(&slot, &instance).await;
                    if reused && !retried && !cancel.is_cancelled() {
                        retried = true;
                        continue;
                    }
                    return Err(err);
                }
                other => {
                    if !instance.is_alive() {
                        self.release_dead(&slot, &instance).await;
                    }
                    return other;
                }
            }
        }
    }

    /// Drops a dead instance from its slot, recording a crash if it died by itself.
    async fn release_dead(&self, slot: &Slot, instance: &Arc<Instance>) {
        let mut state = slot.lock().await;
        if state.instance.as_ref().is_some_and(|i| Arc::ptr_eq(i, instance)) {
            state.instance = None;
            if instance.crashed() {
                state.crashes.push_back(Instant::now());
            }
        }
    }

    /// The slot's live instance, or a fresh one (single-flight: the slot lock is held while
    /// starting). Returns whether the instance was pooled before this query.
    async fn acquire(
        &self,
        slot: &Slot,
        spec: &Arc<ServerSpec>,
        program: &Path,
        root: &Path,
        cancel: &CancellationToken,
    ) -> Result<(Arc<Instance>, bool), LspHostError> {
        let mut state = tokio::select! {
            state = slot.lock() => state,
            () = cancel.cancelled() => return Err(LspHostError::Aborted),
        };
        if let Some(instance) = &state.instance {
            if instance.is_alive() {
                return Ok((Arc::clone(instance), true));
            }
            if instance.crashed() {
                state.crashes.push_back(Instant::now());
            }
            state.instance = None;
        }
        let window = self.config.restart_window;
        while state.crashes.front().is_some_and(|t| t.elapsed() > window) {
            state.crashes.pop_front();
        }
        if state.crashes.len() > self.config.restart_budget {
            return Err(LspHostError::RestartBudget {
                id: spec.id.clone(),
                crashes: state.crashes.len(),
                window_secs: window.as_secs(),
            });
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(LspHostError::Disposed);
        }
        self.started.fetch_add(1, Ordering::SeqCst);
        let world = self.world();
        let options = StartOptions {
            program,
            root,
            max_message_bytes: self.config.max_message_bytes,
            world: world.as_ref(),
        };
        let started = Instance::start(Arc::clone(spec), options, cancel).await;
        let instance = match started {
            Ok(instance) => instance,
            Err(err) => {
                if err.is_transport() {
                    state.crashes.push_back(Instant::now());
                }
                return Err(err);
            }
        };
        if let Ok(mut live) = self.live.lock() {
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&instance));
        }
        if self.closed.load(Ordering::SeqCst) {
            instance.kill(LspHostError::Disposed);
            return Err(LspHostError::Disposed);
        }
        state.instance = Some(Arc::clone(&instance));
        Ok((instance, false))
    }

    /// Stops every server within the configured shutdown budget; later queries fail with
    /// `LSP_DISPOSED`. Call it once on exit.
    pub async fn shutdown_all(&self) {
        self.shutdown_within(self.config.shutdown_budget).await;
    }

    /// Stops every server within `budget` (graceful `shutdown`/`exit`, then SIGTERM, then
    /// SIGKILL of each process group).
    pub async fn shutdown_within(&self, budget: Duration) {
        self.closed.store(true, Ordering::SeqCst);
        let instances = self.live_instances();
        let slots: Vec<Slot> =
            self.slots.lock().map(|s| s.values().cloned().collect()).unwrap_or_default();
        for slot in slots {
            if let Ok(mut state) = slot.try_lock() {
                state.instance = None;
            }
        }
        let mut tasks = tokio::task::JoinSet::new();
        for instance in &instances {
            let instance = Arc::clone(instance);
            tasks.spawn(async move { instance.shutdown(budget).await });
        }
        let all = async { while tasks.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(budget + Duration::from_millis(100), all).await;
        for instance in instances {
            instance.kill(LspHostError::Disposed);
        }
    }
}

impl LspProvider for LspHost {
    fn query<'a>(
        &'a self,
        request: &'a LspRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<LspAnswer, ToolError>> {
        Box::pin(self.query_request(request, cancel))
    }
}
