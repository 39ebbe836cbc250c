//! The tool registry: the registered tools by name, the policy lists, the approval channel,
//! the resolver of names not registered yet, and dispatch through the pipeline.

use crate::execution::{CallInput, Finalized};
use crate::pipeline::{Policies, Tools, dispatch};
use crate::policy::{
    ApprovalChannel, ExecuteWrapper, Guard, PostExecute, PreExecute, ResultObserver,
};
use crate::timeout::TimeoutWrapper;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use toolhost_contract::tool::ErasedTool;
use toolhost_contract::{
    Disposer, RawTool, Registrar, RegistrationError, Tool, ToolDef, UnknownToolResolver,
};
use toolhost_protocol::CallPresentation;
use toolhost_protocol::lsp_ext::{ToolAnnotations, ToolDescriptor};

/// Registry settings.
#[derive(Clone, Debug)]
pub struct RegistryConfig {
    /// Install the timeout policy (a `tools/execute` wrapper enforcing each tool's deadline).
    pub timeout_policy: bool,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig { timeout_policy: true }
    }
}

struct Registered {
    id: u64,
    tool: Arc<dyn ErasedTool>,
}

struct RegistryInner {
    tools: RwLock<BTreeMap<String, Registered>>,
    /// Bumped whenever the set of tools changes (for `tools/list_changed`).
    generation: tokio::sync::watch::Sender<u64>,
    pre: RwLock<Vec<Arc<dyn PreExecute>>>,
    guards: RwLock<Vec<Arc<dyn Guard>>>,
    wrappers: RwLock<Vec<Arc<dyn ExecuteWrapper>>>,
    post: RwLock<Vec<Arc<dyn PostExecute>>>,
    observers: RwLock<Vec<Arc<dyn ResultObserver>>>,
    approval: RwLock<Option<Arc<dyn ApprovalChannel>>>,
    resolvers: RwLock<Vec<Arc<dyn UnknownToolResolver>>>,
    next_id: AtomicU64,
}

impl Default for RegistryInner {
    fn default() -> Self {
        RegistryInner {
            tools: RwLock::default(),
            generation: tokio::sync::watch::Sender::new(0),
            pre: RwLock::default(),
            guards: RwLock::default(),
            wrappers: RwLock::default(),
            post: RwLock::default(),
            observers: RwLock::default(),
            approval: RwLock::default(),
            resolvers: RwLock::default(),
            next_id: AtomicU64::new(0),
        }
    }
}

fn snapshot<T: Clone>(lock: &RwLock<Vec<T>>) -> Vec<T> {
    lock.read().map(|v| v.clone()).unwrap_or_default()
}

fn push<T>(lock: &RwLock<Vec<T>>, item: T) {
    if let Ok(mut v) = lock.write() {
        v.push(item);
    }
}

impl Tools for RegistryInner {
    fn resolve(&self, name: &str) -> Option<Arc<dyn ErasedTool>> {
        self.tools.read().ok()?.get(name).map(|r| Arc::clone(&r.tool))
    }
}

impl RegistryInner {
    fn policies(&self) -> Policies {
        Policies {
            pre: snapshot(&self.pre),
            guards: snapshot(&self.guards),
            wrappers: snapshot(&self.wrappers),
            post: snapshot(&self.post),
            observers: snapshot(&self.observers),
            approval: self.approval.read().ok().and_then(|a| a.clone()),
        }
    }

    fn remove(&self, name: &str, id: u64) {
        let Ok(mut tools) = self.tools.write() else { return };
        if tools.get(name).is_some_and(|r| r.id == id) {
            tools.remove(name);
            drop(tools);
            self.generation.send_modify(|g| *g += 1);
        }
    }
}

/// The registry of tools and policies.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new(RegistryConfig::default())
    }
}

impl Registrar for Registry {
    fn add(&self, tool: ToolDef) -> Result<Disposer, RegistrationError> {
        let tool = tool.into_erased();
        let name = tool.name().to_owned();
        let mut tools =
            self.inner.tools.write().map_err(|_| RegistrationError::Duplicate(name.clone()))?;
        if tools.contains_key(&name) {
            return Err(RegistrationError::Duplicate(name));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        tools.insert(name.clone(), Registered { id, tool });
        drop(tools);
        self.inner.generation.send_modify(|g| *g += 1);
        let registry: Weak<RegistryInner> = Arc::downgrade(&self.inner);
        Ok(Disposer::new(move || {
            if let Some(inner) = registry.upgrade() {
                inner.remove(&name, id);
            }
        }))
    }
}

impl Registry {
    pub fn new(config: RegistryConfig) -> Self {
        let registry = Registry { inner: Arc::default() };
        if config.timeout_policy {
            registry.add_execute_wrapper(Arc::new(TimeoutWrapper));
        }
        registry
    }

    /// Registers a typed tool.
    pub fn register<T: Tool>(&self, tool: T) -> Result<Disposer, RegistrationError> {
        self.add(ToolDef::typed(tool)?)
    }

    /// Registers a raw (dynamic) tool.
    pub fn register_raw(&self, tool: RawTool) -> Result<Disposer, RegistrationError> {
        self.add(ToolDef::raw(tool)?)
    }

    /// Adds a pre-execute listener (after the existing ones, i.e. further inside).
    pub fn add_pre_execute(&self, listener: Arc<dyn PreExecute>) {
        push(&self.inner.pre, listener);
    }

    pub fn add_guard(&self, guard: Arc<dyn Guard>) {
        push(&self.inner.guards, guard);
    }

    pub fn add_execute_wrapper(&self, wrapper: Arc<dyn ExecuteWrapper>) {
        push(&self.inner.wrappers, wrapper);
    }

    /// Adds a post-execute listener; `prepend` makes it the outermost.
    pub fn add_post_execute(&self, listener: Arc<dyn PostExecute>, prepend: bool) {
        if let Ok(mut v) = self.inner.post.write() {
            if prepend {
                v.insert(0, listener);
            } else {
                v.push(listener);
            }
        }
    }

    pub fn add_result_observer(&self, observer: Arc<dyn ResultObserver>) {
        push(&self.inner.observers, observer);
    }

    pub fn set_approval_channel(&self, channel: Option<Arc<dyn ApprovalChannel>>) {
        if let Ok(mut a) = self.inner.approval.write() {
            *a = channel;
        }
    }

    /// Adds a resolver asked about names no tool has yet (an MCP server started on first use).
    pub fn add_resolver(&self, resolver: Arc<dyn UnknownToolResolver>) {
        push(&self.inner.resolvers, resolver);
    }

    /// Makes `name` available if it is not registered but a resolver can provide it; returns
    /// whether it is registered now.
    pub async fn resolve_unknown(&self, name: &str) -> bool {
        if self.contains(name) {
            return true;
        }
        for resolver in snapshot(&self.inner.resolvers) {
            if resolver.resolve(name).await && self.contains(name) {
                return true;
            }
        }
        false
    }

    /// Runs one call through the whole pipeline.
    pub async fn dispatch(&self, input: CallInput) -> Finalized {
        let policies = self.inner.policies();
        dispatch(&*self.inner, &policies, input).await
    }

    /// Name, description and schemas of every tool, sorted by name.
    pub fn descriptors(&self) -> Vec<ToolDescriptor> {
        self.descriptors_except(None)
    }

    /// [`Registry::descriptors`] without the tool `except` — whose description is not even
    /// asked for: the code-mode tool's description lists the other tools' descriptors.
    pub fn descriptors_except(&self, except: Option<&str>) -> Vec<ToolDescriptor> {
        // Descriptions are asked for outside the lock: a description may list tools again.
        let listed: Vec<_> = match self.inner.tools.read() {
            Ok(tools) => tools
                .iter()
                .filter(|(name, r)| Some(name.as_str()) != except && !r.tool.internal())
                .map(|(_, r)| Arc::clone(&r.tool))
                .collect(),
            Err(_) => return Vec::new(),
        };
        listed
            .into_iter()
            .map(|tool| ToolDescriptor {
                name: tool.name().to_owned(),
                description: tool.description(),
                input_schema: tool.input_schema().raw().clone(),
                output_schema: tool.output_schema().raw().clone(),
                annotations: tool.annotations(),
            })
            .collect()
    }

    /// A receiver that sees a new value whenever a tool is registered or removed (an MCP
    /// server's `notifications/tools/list_changed`).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.inner.resolve(name).is_some()
    }

    /// Whether a call may overlap other concurrency-safe calls (unknown tools: no).
    pub fn concurrency_safe(&self, name: &str, args: &Value) -> bool {
        self.inner.resolve(name).is_some_and(|t| t.concurrency_safe(args))
    }

    /// How a call of `name` looks before it has a result (the generic card for an unknown tool).
    pub fn present_call(&self, name: &str, args: &Value) -> CallPresentation {
        match self.inner.resolve(name) {
            Some(tool) => tool.present_call(args),
            None => CallPresentation::generic(name),
        }
    }

    /// What a tool says about its effects (MCP's defaults for an unknown tool).
    pub fn annotations(&self, name: &str) -> ToolAnnotations {
        self.inner.resolve(name).map(|t| t.annotations()).unwrap_or_default()
    }

    /// Whether every change a call of `name` makes goes through the workspace's write path (see
    /// `Tool::changes_only_through_workspace`; unknown tools: no).
    pub fn changes_only_through_workspace(&self, name: &str) -> bool {
        self.inner.resolve(name).is_some_and(|t| t.changes_only_through_workspace())
    }

    /// Whether `name` is one of the host's internal tools (`Tool::internal`: never listed, unknown
    /// to a model's call).
    pub fn internal(&self, name: &str) -> bool {
        self.inner.resolve(name).is_some_and(|t| t.internal())
    }

    /// A way to look up tools' annotations that does not keep the registry alive (for guards
    /// the registry itself holds): MCP's defaults once the registry is gone.
    pub fn annotations_lookup(&self) -> impl Fn(&str) -> ToolAnnotations + Send + Sync + 'static {
        let inner = Arc::downgrade(&self.inner);
        move |name| {
            inner
                .upgrade()
                .and_then(|inner| inner.resolve(name))
                .map(|t| t.annotations())
                .unwrap_or_default()
        }
    }

    /// The renderer version of a tool (0 if unknown).
    pub fn renderer_version(&self, name: &str) -> u32 {
        self.inner.resolve(name).map_or(0, |t| t.renderer_version())
    }

    /// Violations of `args` against the tool's input schema (for clients validating early).
    pub fn argument_violations(&self, name: &str, args: &Value) -> Option<Vec<String>> {
        self.inner.resolve(name).map(|t| t.input_schema().violations(args, "arguments"))
    }
}
