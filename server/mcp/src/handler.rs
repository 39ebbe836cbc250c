//! The MCP `ServerHandler` over the dynamic registry: one hand-written handler, not a macro per
//! tool, because tools come and go at run time (`tools/list_changed`).
//!
//! - `tools/list`: every tool sorted by name, its input schema, its own annotations, its output
//!   schema when the client gets structured results, and the configured `_meta`.
//! - `tools/call`: one direct call through the backend's whole pipeline. An unknown tool is a
//!   JSON-RPC error; everything else — invalid arguments included — is a result, `isError` for
//!   failures. A cancelled request (`notifications/cancelled`) cancels the call; rmcp drops its
//!   answer. When the client sent a `progressToken`, a running call reports progress every
//!   [`PROGRESS_EVERY`], so clients that time out idle calls keep waiting.
//! - resources ([`crate::resources`]): a `resource_link` beside every spill path a result names,
//!   `resources/list`, `resources/templates/list`, `resources/read`, and `resources/subscribe`
//!   (or a 2026-07-28 `subscriptions/listen` naming the uri) to the live session's transcript.

use crate::backend::{Backend, BackendError, Caller, ToolCall};
use crate::config::McpConfig;
use crate::elicit::{McpAsker, Suspended, input_request};
use crate::resources::Resources;
use crate::results::{Shape, output_is_wrapped, published_output_schema, shape_for, to_mcp_result};
use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ServerCapabilities,
    SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_protocol::lsp_ext::ToolDescriptor;

/// The longest output line a progress message quotes (characters).
const MAX_PROGRESS_LINE: usize = 200;

/// How often a running call reports progress to a client that asked for it.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// The protocol revisions toolhost speaks.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

/// The tools as last listed, per registry generation and caller (a session tool is listed to
/// the agent that defined it only).
struct ToolCache {
    generation: u64,
    caller: Option<String>,
    tools: Arc<Vec<ToolDescriptor>>,
}

/// toolhost's MCP server.
pub struct McpServer {
    backend: Arc<dyn Backend>,
    config: McpConfig,
    cache: Mutex<Option<ToolCache>>,
    /// Clients already recorded (name, protocol), so each is logged once.
    seen: Mutex<HashSet<(String, String)>>,
    /// Whether the legacy `notifications/tools/list_changed` watcher runs.
    watching: std::sync::atomic::AtomicBool,
    /// Calls waiting for a retried `tools/call` with the answer to their question (2026-07-28).
    suspended: Suspended<CallOutcome>,
    /// Over HTTP: the numbers sessions are labelled with (`claude-code #2`).
    numbers: Option<Arc<SessionNumbers>>,
    /// `logging/setLevel`: the least severe level the client wants as `notifications/message`
    /// (rank of [`rmcp::model::LoggingLevel`]); warnings until it says otherwise.
    log_level: std::sync::atomic::AtomicU8,
    resources: Resources,
    /// `resources/subscribe`: the task sending each subscribed uri's updates.
    subscriptions: Mutex<HashMap<String, tokio::task::AbortHandle>>,
}

impl Drop for McpServer {
    fn drop(&mut self) {
        if let Ok(subscriptions) = self.subscriptions.lock() {
            subscriptions.values().for_each(tokio::task::AbortHandle::abort);
        }
    }
}

/// Numbers the HTTP sessions of one server in the order they first call, so each agent's cards
/// say which session made them even when several agents have the same name.
#[derive(Default)]
pub struct SessionNumbers {
    by_session: Mutex<HashMap<String, u64>>,
}

impl SessionNumbers {
    /// The number of session `id` (1, 2, …).
    pub fn number(&self, id: &str) -> u64 {
        let Ok(mut numbers) = self.by_session.lock() else { return 0 };
        let next = numbers.len() as u64 + 1;
        *numbers.entry(id.to_owned()).or_insert(next)
    }
}

type CallOutcome = Result<crate::backend::CallDone, BackendError>;

/// How this request's client can be asked questions.
enum Asking {
    /// It cannot (no form elicitation): the editor, if any, is asked instead.
    No,
    /// `elicitation/create` while the call waits.
    Request,
    /// An input-required result, answered on the retried request (2026-07-28).
    InputRequired,
}

fn asking(context: &RequestContext<RoleServer>) -> Asking {
    let form = context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    if !form {
        return Asking::No;
    }
    let modern = context.protocol_version().is_some_and(|v| v.as_str() >= "2026-07-28");
    if modern { Asking::InputRequired } else { Asking::Request }
}

fn caller_of(info: Option<Implementation>) -> Option<Caller> {
    info.map(|info| Caller { name: info.name, version: Some(info.version) })
}

impl McpServer {
    pub fn new(backend: Arc<dyn Backend>, config: McpConfig) -> Self {
        McpServer {
            backend,
            config,
            cache: Mutex::new(None),
            seen: Mutex::new(HashSet::new()),
            watching: std::sync::atomic::AtomicBool::new(false),
            suspended: Suspended::default(),
            numbers: None,
            log_level: std::sync::atomic::AtomicU8::new(WARNING_RANK),
            resources: Resources::default(),
            subscriptions: Mutex::new(HashMap::new()),
        }
    }

    /// Labels each HTTP session's caller with its number (see [`SessionNumbers`]).
    pub fn numbering_sessions(mut self, numbers: Arc<SessionNumbers>) -> Self {
        self.numbers = Some(numbers);
        self
    }

    /// `caller` as this request's session labels it: `<name> #<n>` for an HTTP session.
    fn labelled(&self, caller: Caller, context: &RequestContext<RoleServer>) -> Caller {
        let session = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|id| id.to_str().ok());
        match (&self.numbers, session) {
            (Some(numbers), Some(id)) => {
                Caller { name: format!("{} #{}", caller.name, numbers.number(id)), ..caller }
            }
            _ => caller,
        }
    }

    /// The tools `caller` is offered, listed again only when the registry changed.
    async fn tools(&self, caller: Option<&Caller>) -> Result<Arc<Vec<ToolDescriptor>>, McpError> {
        let generation = *self.backend.tools_changed().borrow();
        let name = caller.map(|c| c.name.clone());
        if let Ok(cache) = self.cache.lock()
            && let Some(cache) = cache.as_ref()
            && cache.generation == generation
            && cache.caller == name
        {
            return Ok(Arc::clone(&cache.tools));
        }
        let tools = Arc::new(
            self.backend
                .tools_for(caller)
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?,
        );
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some(ToolCache { generation, caller: name, tools: Arc::clone(&tools) });
        }
        Ok(tools)
    }

    /// The shape this request's client gets; records a client the first time it is seen.
    fn shape(&self, context: &RequestContext<RoleServer>) -> (Shape, Option<Caller>) {
        let caller = caller_of(context.client_info());
        let shape = shape_for(self.config.results, caller.as_ref().map(|c| c.name.as_str()));
        let caller = caller.map(|caller| self.labelled(caller, context));
        if let Some(caller) = &caller {
            let protocol = context.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            let first = self
                .seen
                .lock()
                .map(|mut seen| seen.insert((caller.name.clone(), protocol.clone())))
                .unwrap_or(false);
            if first {
                self.backend.client_seen(caller, &protocol, shape.as_str());
            }
        }
        (shape, caller)
    }

    /// The `_meta` a tool is listed with: the `"*"` entry, then the tool's own, merged.
    fn tool_meta(&self, name: &str) -> Option<Map<String, Value>> {
        let mut meta = Map::new();
        for key in ["*", name] {
            if let Some(entries) = self.config.tool_meta.get(key) {
                meta.extend(entries.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        (!meta.is_empty()).then_some(meta)
    }

    fn listed(&self, tool: &ToolDescriptor, shape: Shape) -> Tool {
        let input = match &tool.input_schema {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let a = tool.annotations;
        let annotations = ToolAnnotations::new()
            .read_only(a.read_only)
            .destructive(a.destructive)
            .idempotent(a.idempotent)
            .open_world(a.open_world);
        let mut listed = Tool::new_with_raw(
            tool.name.clone(),
            Some(Cow::Owned(tool.description.clone())),
            Arc::new(input),
        )
        .with_annotations(annotations);
        if shape == Shape::Structured {
            let (schema, _) = published_output_schema(&tool.output_schema);
            listed = listed.with_raw_output_schema(Arc::new(schema));
        }
        if let Some(meta) = self.tool_meta(&tool.name) {
            listed = listed.with_meta(meta.into());
        }
        listed
    }

    /// Waits for a running call: its result, or its next question — then the call is parked and
    /// the client gets an input-required result to answer on a retried request.
    async fn drive(
        &self,
        mut task: tokio::task::JoinHandle<CallOutcome>,
        mut questions: tokio::sync::mpsc::UnboundedReceiver<crate::elicit::PendingQuestion>,
        cancel: toolhost_contract::CancellationToken,
        context: &RequestContext<RoleServer>,
        shape: Shape,
        wrapped: bool,
    ) -> CallToolResponse {
        let outcome = tokio::select! {
            outcome = &mut task => outcome,
            Some(pending) = questions.recv() => {
                let handle = self.suspended.park(task, questions, pending.answer, cancel);
                let mut requests = rmcp::model::InputRequests::new();
                requests.insert("answer".to_owned(), input_request(pending.form));
                return rmcp::model::InputRequiredResult::new(Some(requests), Some(handle)).into();
            }
            () = context.ct.cancelled() => {
                cancel.cancel();
                task.await
            }
        };
        let result = match outcome {
            Ok(Ok(done)) => {
                let mut result = to_mcp_result(done.result, shape, wrapped, &done.call_id);
                self.resources.link(&mut result);
                result
            }
            Ok(Err(err)) => {
                self.warn(&context.peer, err.to_string()).await;
                CallToolResult::error(vec![McpContent::text(format!("Error: {err}"))])
            }
            Err(err) => CallToolResult::error(vec![McpContent::text(format!(
                "Error: internal error: the call task failed: {err}"
            ))]),
        };
        result.into()
    }

    /// Starts sending `notifications/tools/list_changed` to a legacy-lifecycle peer (once).
    fn watch_tools(&self, peer: rmcp::service::Peer<RoleServer>) {
        if self.watching.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let mut changes = self.backend.tools_changed();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        });
    }
}

/// The rank of `warning` among the logging levels (debug is 0).
#[allow(deprecated)]
const WARNING_RANK: u8 = rmcp::model::LoggingLevel::Warning as u8;

impl McpServer {
    /// Tells the client about a problem of the server's own (not a tool's failure, which is the
    /// call's result) as `notifications/message`, when its level asks for warnings.
    #[allow(deprecated)]
    async fn warn(&self, peer: &rmcp::service::Peer<RoleServer>, text: String) {
        if self.log_level.load(std::sync::atomic::Ordering::Relaxed) > WARNING_RANK {
            return;
        }
        let param = rmcp::model::LoggingMessageNotificationParam::new(
            rmcp::model::LoggingLevel::Warning,
            Value::String(text),
        )
        .with_logger("toolhost");
        let _ = peer.notify_logging_message(param).await;
    }
}

/// The last non-empty line of a call's live output, bounded for a progress message.
fn last_line(text: &str) -> Option<String> {
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    Some(match line.char_indices().nth(MAX_PROGRESS_LINE) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    })
}

/// Reports progress every [`PROGRESS_EVERY`] until dropped, with the last line the call printed
/// (a `bash` command's output) when there is one.
fn progress_ticker(
    context: &RequestContext<RoleServer>,
    tool: &str,
    mut live: tokio::sync::mpsc::UnboundedReceiver<String>,
) -> Option<tokio::task::JoinHandle<()>> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    let tool = tool.to_owned();
    Some(tokio::spawn(async move {
        let started = Instant::now();
        let mut ticks = 0u32;
        let mut latest: Option<String> = None;
        loop {
            tokio::time::sleep(PROGRESS_EVERY).await;
            while let Ok(text) = live.try_recv() {
                if let Some(line) = last_line(&text) {
                    latest = Some(line);
                }
            }
            ticks += 1;
            let seconds = started.elapsed().as_secs();
            let mut param = ProgressNotificationParam::new(token.clone(), f64::from(ticks));
            param.message = Some(match &latest {
                Some(line) => format!("{tool}: running for {seconds} s — {line}"),
                None => format!("{tool}: running for {seconds} s"),
            });
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    }))
}

impl ServerHandler for McpServer {
    // Logging is deprecated in 2026-07-28, but clients of the earlier revisions still probe it.
    #[allow(deprecated)]
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        let mut capabilities = capabilities;
        if let Some(resources) = capabilities.resources.as_mut() {
            // Only the live session's transcript is listed, for the server's whole life.
            resources.list_changed = Some(false);
        }
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolhost runs the editor's tools: read, write, edit, glob, grep, lsp and more. \
                 Every call shows up as a card in the editor, edits are atomic and an edit \
                 requires a read of the file first.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        let caller = Caller {
            name: request.client_info.name.clone(),
            version: Some(request.client_info.version.clone()),
        };
        let shape = shape_for(self.config.results, Some(&caller.name));
        let protocol = result.protocol_version.to_string();
        // Over HTTP the session has no number before this answer: its first request records it.
        let first = self.numbers.is_none()
            && self
                .seen
                .lock()
                .map(|mut seen| seen.insert((caller.name.clone(), protocol.clone())))
                .unwrap_or(false);
        if first {
            self.backend.client_seen(&caller, &protocol, shape.as_str());
        }
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch_tools(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let (shape, caller) = self.shape(&context);
        let tools = self.tools(caller.as_ref()).await?;
        Ok(ListToolsResult::with_all_items(tools.iter().map(|t| self.listed(t, shape)).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (shape, caller) = self.shape(&context);
        let tools = self.tools(caller.as_ref()).await?;
        let Some(tool) = tools.iter().find(|t| t.name == request.name) else {
            return Err(McpError::invalid_params(
                format!("unknown tool \"{}\"", request.name),
                None,
            ));
        };
        let wrapped = shape == Shape::Structured && output_is_wrapped(&tool.output_schema);
        let (output, live) = tokio::sync::mpsc::unbounded_channel();
        // A retried request answers the question of a parked call.
        if let Some(handle) = request.request_state.as_deref() {
            let Some(parked) = self.suspended.take(handle) else {
                return Err(McpError::invalid_params(
                    "unknown or expired requestState: the call it belonged to has ended",
                    None,
                ));
            };
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("answer"))
                .map(|v| {
                    serde_json::from_value::<rmcp::model::ElicitResult>(v.clone()).map_err(|e| {
                        toolhost_contract::QuestionError::Cancelled(format!(
                            "unreadable answer: {e}"
                        ))
                    })
                })
                .unwrap_or_else(|| {
                    Err(toolhost_contract::QuestionError::Cancelled(
                        "the client retried without an answer".to_owned(),
                    ))
                });
            let _ = parked.answer.send(answer);
            let ticker = progress_ticker(&context, &request.name, live);
            let response = self
                .drive(parked.task, parked.questions, parked.cancel, &context, shape, wrapped)
                .await;
            if let Some(ticker) = ticker {
                ticker.abort();
            }
            return Ok(response);
        }
        // Arguments that were not an object travel in `_meta` (crate::edges): the pipeline
        // answers them INVALID_ARGS like any other front end would.
        let raw = request
            .meta
            .as_ref()
            .and_then(|m| m.get(crate::edges::RAW_ARGUMENTS_KEY))
            .or_else(|| context.meta.get(crate::edges::RAW_ARGUMENTS_KEY))
            .cloned();
        let arguments = match (raw, request.arguments) {
            (_, Some(object)) => Value::Object(object),
            (Some(raw), None) => raw,
            (None, None) => Value::Object(Map::new()),
        };
        let ticker = progress_ticker(&context, &request.name, live);
        let (deferred, questions) = tokio::sync::mpsc::unbounded_channel();
        let asker: Option<toolhost_contract::QuestionsHandle> = match asking(&context) {
            Asking::No => None,
            Asking::Request => Some(Arc::new(McpAsker::Request(context.peer.clone()))),
            Asking::InputRequired => Some(Arc::new(McpAsker::InputRequired(deferred))),
        };
        let call = ToolCall {
            name: request.name.to_string(),
            arguments,
            caller,
            output: Some(output),
            questions: asker,
        };
        // Its own task: a call waiting for an answer outlives this request (2026-07-28).
        let cancel = toolhost_contract::CancellationToken::new();
        let backend = Arc::clone(&self.backend);
        let task_cancel = cancel.clone();
        let task = tokio::spawn(async move { backend.call(call, task_cancel).await });
        let response = self.drive(task, questions, cancel, &context, shape, wrapped).await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        Ok(response)
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level.store(request.level as u8, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        let prompts = self
            .backend
            .prompts()
            .into_iter()
            .map(|p| rmcp::model::Prompt::new(p.name, Some(p.description), None))
            .collect();
        Ok(rmcp::model::ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        match self.backend.prompt(&request.name) {
            Ok(Some(text)) => {
                let message = rmcp::model::PromptMessage::new_text(rmcp::model::Role::User, text);
                let description = self
                    .backend
                    .prompts()
                    .into_iter()
                    .find(|p| p.name == request.name)
                    .map(|p| p.description);
                let mut result = rmcp::model::GetPromptResult::new(vec![message]);
                if let Some(description) = description {
                    result = result.with_description(description);
                }
                Ok(result.into())
            }
            Ok(None) => {
                Err(McpError::invalid_params(format!("unknown prompt \"{}\"", request.name), None))
            }
            Err(err) => Err(McpError::internal_error(err, None)),
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The tool list and session transcripts change here (only the live session's does:
        // another's subscription simply never fires).
        let transcripts: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| crate::resources::transcript_id(uri).is_some())
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        if requested.tools_list_changed == Some(true) {
            accepted.tools_list_changed = Some(true);
        }
        if !transcripts.is_empty() {
            accepted.resource_subscriptions = Some(transcripts);
        }
        (accepted != SubscriptionFilter::new()).then_some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut tools = self.backend.tools_changed();
        let tools_wanted = context.accepted().tools_list_changed == Some(true);
        // rmcp acknowledges the subscription before it calls this: a change in between would
        // be missed. The client is owed a notification for any change since the list it has.
        let now = *tools.borrow_and_update();
        let listed = self.cache.lock().ok().and_then(|cache| cache.as_ref().map(|c| c.generation));
        if tools_wanted
            && listed.is_some_and(|listed| listed != now)
            && context.sink().notify_tool_list_changed().await.is_err()
        {
            return Ok(());
        }
        let live = self.backend.live_session().await;
        let uris: Vec<String> = context
            .accepted()
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| {
                live.as_deref().is_some_and(|id| crate::resources::transcript_id(uri) == Some(id))
            })
            .cloned()
            .collect();
        let mut cards = self.backend.cards_changed().await;
        let mut cards_open = !uris.is_empty();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = tools.changed(), if tools_wanted => {
                    if changed.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                changed = cards.changed(), if cards_open => {
                    if changed.is_err() {
                        cards_open = false;
                        continue;
                    }
                    for uri in &uris {
                        if context.sink().notify_resource_updated(uri.clone()).await.is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let listed = self.resources.list(self.backend.as_ref()).await;
        Ok(rmcp::model::ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(Resources::templates()))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        self.resources.read(self.backend.as_ref(), &request.uri).await.map(Into::into)
    }

    // Deprecated for 2026-07-28 (`subscriptions/listen`), still what earlier clients send.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.subscribable(self.backend.as_ref(), &request.uri).await?;
        let Ok(mut subscriptions) = self.subscriptions.lock() else { return Ok(()) };
        if subscriptions.get(&request.uri).is_some_and(|task| !task.is_finished()) {
            return Ok(());
        }
        let backend = Arc::clone(&self.backend);
        let (peer, uri) = (context.peer.clone(), request.uri.clone());
        let task = tokio::spawn(async move {
            let mut cards = backend.cards_changed().await;
            while cards.changed().await.is_ok() {
                let update = rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone());
                if peer.notify_resource_updated(update).await.is_err() {
                    return;
                }
            }
        });
        subscriptions.insert(request.uri, task.abort_handle());
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Some(task) = self.subscriptions.lock().ok().and_then(|mut s| s.remove(&request.uri))
        {
            task.abort();
        }
        Ok(())
    }
}

/// The configured `_meta` per tool name (`"*"`: every tool).
pub type ToolMeta = BTreeMap<String, Map<String, Value>>;
