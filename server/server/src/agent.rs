//! toolhost's own agent in the binary (docs/agent.md): the `[agent]` settings, the permission
//! modes, the [`ToolRunner`] over the host (every call through the whole pipeline, so policies,
//! review, the session log and the cards apply as for any caller), and a run that records its
//! conversation in the session log.
//!
//! Permission modes are a pre-execute policy on the registry that only looks at calls the agent
//! made (their ids are registered for the call's duration): `ask` asks before every call that
//! changes something — file edits through the per-hunk review when an editor reviews, everything
//! else (and edits without a reviewing editor) through the question channel as Allow / Deny —;
//! `accept-edits` asks only for calls that reach beyond the workspace's files (`bash`, terminals,
//! MCP tools that are not read-only); `plan` puts the session in plan mode, so only read-only tools
//! run until `exit_plan_mode` is approved, then continues as `accept-edits`; `auto` never asks.

use crate::host::{Host, new_call_id};
use crate::interact::SessionQuestions;
use crate::review::SessionReviewHandle;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_agent::agent::{
    AgentEvent, AgentOptions, BoxFuture, CostBudget, RunOutcome, StopReason,
};
pub use toolhost_agent::model::Price;
use toolhost_agent::model::{Message, ModelClient, ModelConfig, ModelError, ToolSpec, Usage};
use toolhost_agent::{CompactionOptions, ToolOutcome, ToolRunner};
use toolhost_contract::{
    ApprovalChannel, ApprovalOutcome, CancellationToken, Execution, PreDecision, PreExecute,
    PreNext, QuestionError, QuestionRequest, ToolError, UserQuestions,
};
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::{Question, QuestionIntent, QuestionOption, ToolAnnotations};
use toolhost_protocol::session_log::{
    AgentCompactionEvent, AgentEndEvent, AgentRunEvent, AgentUsageEvent,
};

/// How much the agent may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Every call that changes something asks first.
    #[default]
    Ask,
    /// File edits in the workspace run; commands and other outside effects ask.
    AcceptEdits,
    /// Read-only tools only until the plan is approved (`exit_plan_mode`), then `accept-edits`.
    Plan,
    /// Nothing asks.
    Auto,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ask" => Some(PermissionMode::Ask),
            "accept-edits" => Some(PermissionMode::AcceptEdits),
            "plan" => Some(PermissionMode::Plan),
            "auto" => Some(PermissionMode::Auto),
            _ => None,
        }
    }
}

/// Who the cards of the own agent's calls name as the caller.
pub const CALLER: &str = "toolhost agent";

/// The default provider: DeepSeek's OpenAI-compatible API.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
pub const DEFAULT_API_KEY_ENV: &str = "DEEPSEEK_API_KEY";
/// DeepSeek's context window.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 128_000;

/// `[agent]`: the model, the permission mode and the run's bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSettings {
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key; `None` sends no key (a local server).
    pub api_key_env: Option<String>,
    /// Fields merged into every request (e.g. `thinking = {type = "enabled"}`).
    pub request: BTreeMap<String, Value>,
    pub mode: PermissionMode,
    pub max_turns: u32,
    pub token_budget: Option<u64>,
    /// US dollars after which no new request is made (counted at `price`; without one, none).
    pub cost_budget: Option<f64>,
    /// The model's context window in tokens (compaction starts at `compact_threshold` of it).
    pub context_limit: Option<u64>,
    pub compact_threshold: f64,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    pub price: Option<Price>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: DEFAULT_MODEL.to_owned(),
            api_key_env: Some(DEFAULT_API_KEY_ENV.to_owned()),
            request: BTreeMap::new(),
            mode: PermissionMode::Ask,
            max_turns: 50,
            token_budget: None,
            cost_budget: None,
            context_limit: Some(DEFAULT_CONTEXT_LIMIT),
            compact_threshold: 0.8,
            system_prompt: None,
            price: None,
        }
    }
}

impl AgentSettings {
    /// The model client's configuration; the key is read from its variable now.
    pub fn model_config(&self) -> ModelConfig {
        let mut config = ModelConfig::new(self.base_url.clone(), self.model.clone());
        config.api_key = self
            .api_key_env
            .as_deref()
            .filter(|name| !name.is_empty())
            .and_then(|name| std::env::var(name).ok())
            .filter(|key| !key.is_empty());
        config.extra = self.request.clone();
        config
    }

    /// Whether the key variable is named but not set (worth a warning: the server will refuse).
    pub fn missing_key(&self) -> Option<&str> {
        let name = self.api_key_env.as_deref().filter(|n| !n.is_empty())?;
        std::env::var(name).map_or(true, |v| v.is_empty()).then_some(name)
    }

    pub fn options(&self, root: &str) -> AgentOptions {
        AgentOptions {
            system_prompt: self.system_prompt.clone().unwrap_or_else(|| system_prompt(root)),
            max_turns: self.max_turns.max(1),
            token_budget: self.token_budget,
            cost_budget: self
                .cost_budget
                .zip(self.price)
                .map(|(usd, price)| CostBudget { usd, price }),
            max_parallel: 10,
            compaction: CompactionOptions {
                context_limit: self.context_limit,
                threshold: self.compact_threshold.clamp(0.1, 1.0),
                keep_recent_turns: 2,
            },
        }
    }
}

/// The built-in system prompt.
pub fn system_prompt(root: &str) -> String {
    format!(
        "You are toolhost's coding agent, working in the workspace at {root}. Use the tools to \
         look before you change anything: read a file before you edit it, search with grep and \
         glob, and ask the user with ask_user_question when a choice is theirs. Keep changes \
         small and focused on the task; say what you changed and why when you are done. Tool \
         results are the tools' own text; a result starting with \"Error:\" failed, and you may \
         correct the call and try again."
    )
}

type AnnotationsOf = Box<dyn Fn(&str) -> ToolAnnotations + Send + Sync>;

/// What a call asks before it runs, by mode and the tool's annotations.
fn needs_permission(mode: PermissionMode, annotations: ToolAnnotations) -> bool {
    if annotations.read_only {
        return false;
    }
    match mode {
        PermissionMode::Auto | PermissionMode::Plan => false,
        PermissionMode::AcceptEdits => !is_workspace_edit(annotations),
        PermissionMode::Ask => true,
    }
}

/// A change to the workspace's files (write, edit, revert): destructive, not open-world.
fn is_workspace_edit(annotations: ToolAnnotations) -> bool {
    annotations.destructive && !annotations.open_world
}

/// What is known of one running call of the agent.
#[derive(Clone)]
pub struct AgentCall {
    /// Its run's mode.
    pub mode: PermissionMode,
    /// Its run's depth: 1 for a top-level run, one more for each subagent level.
    pub depth: u32,
    /// Where the run's calls live among its caller's (a subagent's calls go in its nested scope).
    pub scope: Option<Arc<dyn CallScope>>,
}

/// The permission modes of the agent's running calls; a pre-execute policy of the registry.
pub struct AgentPermissions {
    /// Each running call of the agent.
    calls: Mutex<HashMap<String, AgentCall>>,
    annotations: AnnotationsOf,
    review: SessionReviewHandle,
}

impl AgentPermissions {
    pub fn new(annotations: AnnotationsOf, review: SessionReviewHandle) -> Self {
        AgentPermissions { calls: Mutex::new(HashMap::new()), annotations, review }
    }

    /// Call `call_id` is the agent's, in `mode` at `depth` inside `scope`, until
    /// [`AgentPermissions::end`].
    pub fn begin(
        &self,
        call_id: &str,
        mode: PermissionMode,
        depth: u32,
        scope: Option<Arc<dyn CallScope>>,
    ) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), AgentCall { mode, depth, scope });
    }

    pub fn end(&self, call_id: &str) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(call_id);
    }

    /// The mode of the run that made call `call_id`; `None` when the agent did not make it.
    pub fn mode(&self, call_id: &str) -> Option<PermissionMode> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).get(call_id).map(|c| c.mode)
    }

    /// What is known of call `call_id`; `None` when the agent did not make it.
    pub fn call(&self, call_id: &str) -> Option<AgentCall> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).get(call_id).cloned()
    }
}

impl PreExecute for AgentPermissions {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        next: PreNext<'a>,
    ) -> BoxFuture<'a, Result<PreDecision, ToolError>> {
        Box::pin(async move {
            let decision = next.run().await?;
            let Some(mode) = self.mode(&exec.call_id) else { return Ok(decision) };
            if decision != PreDecision::Allow {
                return Ok(decision);
            }
            // A subagent's own calls ask in its run's mode; starting one asks nothing.
            if exec.name == crate::subagent::NAME {
                return Ok(decision);
            }
            let annotations = (self.annotations)(&exec.name);
            if !needs_permission(mode, annotations) {
                return Ok(decision);
            }
            // An edit shown hunk by hunk in the editor is the better question.
            if is_workspace_edit(annotations) && self.review.has_reviewer() {
                self.review.force_review(&exec.call_id);
                return Ok(decision);
            }
            Ok(PreDecision::Ask { reason: None })
        })
    }
}

/// The answer that lets a call run.
pub const ALLOW: &str = "Allow";
pub const DENY: &str = "Deny";

/// `ask` decisions answered on the session's question channel (the editor's `toolhost/askUser`
/// with intent `permission`, the terminal, an MCP client that elicits).
pub struct QuestionApproval {
    pub questions: Arc<SessionQuestions>,
    pub review: SessionReviewHandle,
}

impl ApprovalChannel for QuestionApproval {
    fn request<'a>(
        &'a self,
        exec: &'a Execution,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ApprovalOutcome, ToolError>> {
        Box::pin(async move {
            let title = self
                .review
                .call_label(&exec.call_id)
                .map_or_else(|| exec.name.clone(), |(title, _)| title);
            let mut question = format!("Allow the agent to run {title}?");
            if let Some(reason) = reason {
                question.push_str(&format!(" ({reason})"));
            }
            let request = QuestionRequest {
                call_id: exec.call_id.clone(),
                tool: exec.name.clone(),
                intent: QuestionIntent::Permission,
                questions: vec![Question {
                    id: "permission".to_owned(),
                    question,
                    header: Some("Permission".to_owned()),
                    options: vec![
                        QuestionOption {
                            label: ALLOW.to_owned(),
                            description: Some("run this call".to_owned()),
                        },
                        QuestionOption {
                            label: DENY.to_owned(),
                            description: Some("the agent is told you refused".to_owned()),
                        },
                    ],
                    multi_select: false,
                }],
                plan: None,
            };
            let answers = self.questions.ask(request, exec.caller_signal().clone()).await;
            Ok(match answers {
                Ok(answers) => {
                    let allowed = answers
                        .iter()
                        .any(|a| a.custom.is_none() && a.selected.iter().any(|s| s == ALLOW));
                    if allowed { ApprovalOutcome::AllowedOnce } else { ApprovalOutcome::Rejected }
                }
                Err(QuestionError::NoProvider(_)) => ApprovalOutcome::Unavailable,
                Err(_) => ApprovalOutcome::Cancelled,
            })
        })
    }
}

/// What a run shows as it goes, beside the model's own stream.
#[derive(Clone, Debug)]
pub enum RunUpdate {
    /// A call started: its pending card.
    CallStarted { card: Card },
    /// A call ended: its final card and the Native text the model got.
    CallFinished { card: Card, text: String, is_error: bool },
}

/// What a caller holds while one of the agent's calls runs (dropped when it ends).
pub type ScopeGuard = Box<dyn Send>;

/// Where the agent's calls live among the caller's own: `toolhost serve` takes its barrier permit
/// (so an editor's or an attached agent's calls and the agent's never overlap unsafely) and lists
/// the call for `toolhost/cancelCall`. `enter` returns the token the call runs under (the agent's,
/// or a child the caller can cancel on its own) and a guard held until the call ends.
pub trait CallScope: Send + Sync {
    fn enter<'a>(
        &'a self,
        call_id: &'a str,
        concurrency_safe: bool,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, (CancellationToken, ScopeGuard)>;

    /// The scope of the calls of a subagent that one of this scope's calls started: listed and
    /// cancellable like the caller's own, but taking no barrier permit of their own — the
    /// `subagent` call holds one for as long as its child runs, and a child's exclusive call
    /// waiting for the barrier would wait on its own parent.
    fn nested(&self) -> Arc<dyn CallScope>;
}

/// A run's permission mode where its caller can change it while the run goes on (an ACP
/// client's `session/set_mode`); the run moves it from `plan` to `accept-edits` itself once the
/// plan is approved.
pub type SharedMode = Arc<Mutex<PermissionMode>>;

/// The registry as the agent's tools: each call is a host call on behalf of the agent.
pub struct HostRunner<'h> {
    host: &'h Host,
    mode: SharedMode,
    caller: String,
    scope: Option<Arc<dyn CallScope>>,
    /// 1 for a top-level run, one more per subagent level.
    depth: u32,
    on_update: Box<dyn Fn(RunUpdate) + Send + Sync + 'h>,
}

impl<'h> HostRunner<'h> {
    pub fn new(
        host: &'h Host,
        mode: PermissionMode,
        caller: impl Into<String>,
        on_update: impl Fn(RunUpdate) + Send + Sync + 'h,
    ) -> Self {
        HostRunner {
            host,
            mode: Arc::new(Mutex::new(mode)),
            caller: caller.into(),
            scope: None,
            depth: 1,
            on_update: Box::new(on_update),
        }
    }

    /// The run is a subagent `depth - 1` levels below a top-level run.
    pub fn at_depth(mut self, depth: u32) -> Self {
        self.depth = depth.max(1);
        self
    }

    /// The mode is `mode`, shared with the caller.
    pub fn sharing_mode(mut self, mode: Option<SharedMode>) -> Self {
        if let Some(mode) = mode {
            self.mode = mode;
        }
        self
    }

    /// Every call runs inside `scope`.
    pub fn within(mut self, scope: Option<Arc<dyn CallScope>>) -> Self {
        self.scope = scope;
        self
    }

    /// The mode now (`plan` becomes `accept-edits` once the plan is approved).
    pub fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ToolRunner for HostRunner<'_> {
    fn tools(&self) -> Vec<ToolSpec> {
        // Sorted by name: the same order in every request.
        self.host
            .registry()
            .descriptors()
            .into_iter()
            .map(|d| ToolSpec {
                name: d.name,
                description: d.description,
                parameters: d.input_schema,
            })
            .collect()
    }

    fn concurrency_safe(&self, name: &str, args: &Value) -> bool {
        self.host.registry().concurrency_safe(name, args)
    }

    fn call<'a>(
        &'a self,
        _model_call_id: &'a str,
        name: &'a str,
        args: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let call_id = new_call_id();
            let mode = self.mode();
            let prepared = self.host.prepare(&call_id, name, args).by(Some(self.caller.clone()));
            let safe = self.host.registry().concurrency_safe(&prepared.name, &prepared.args);
            let (cancel, held) = match &self.scope {
                Some(scope) => scope.enter(&call_id, safe, cancel).await,
                None => (cancel, Box::new(()) as ScopeGuard),
            };
            (self.on_update)(RunUpdate::CallStarted { card: self.host.pending_card(&prepared) });
            let permissions = self.host.agent_permissions();
            permissions.begin(&call_id, mode, self.depth, self.scope.clone());
            let outcome = self.host.run(prepared, cancel).await;
            permissions.end(&call_id);
            drop(held);
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(err) => {
                    let mut failed = ToolOutcome::new(format!("Error: {err}"), true);
                    failed.call_id = Some(call_id);
                    return failed;
                }
            };
            let is_error = outcome.finalized.result.is_error();
            let text = toolhost_protocol::content::joined_text(outcome.finalized.result.content());
            // The plan was approved: the run goes on as `accept-edits` (before the update, so
            // whoever shows the mode sees the change with the call that made it).
            if mode == PermissionMode::Plan && !self.host.interaction().plan_active() {
                let mut current = self.mode.lock().unwrap_or_else(PoisonError::into_inner);
                if *current == PermissionMode::Plan {
                    *current = PermissionMode::AcceptEdits;
                }
            }
            (self.on_update)(RunUpdate::CallFinished {
                card: outcome.card,
                text: text.clone(),
                is_error,
            });
            let mut answer = ToolOutcome::new(text, is_error);
            answer.call_id = Some(call_id);
            answer.ends_run = !is_error && self.host.interaction().structured_state().recorded;
            answer
        })
    }
}

/// Where a run's records go: the session log, in order with the calls around them.
struct Recorder<'h> {
    host: &'h Host,
    run_id: String,
    price: Option<Price>,
}

impl Recorder<'_> {
    fn record(&self, kind: &str, data: impl serde::Serialize) {
        let Some(log) = self.host.session() else { return };
        let data = match serde_json::to_value(data) {
            Ok(data) => data,
            Err(err) => {
                tracing::warn!(kind, %err, "cannot record the agent's conversation");
                return;
            }
        };
        if let Err(err) = log.enqueue(kind, data, true) {
            tracing::warn!(kind, %err, "cannot record the agent's conversation");
        }
    }

    fn event(&self, event: &AgentEvent) {
        use toolhost_agent::log as records;
        match event {
            AgentEvent::Message { message, call_id } => self.record(
                records::AGENT_MESSAGE,
                records::message_record(&self.run_id, message, call_id.as_deref()),
            ),
            AgentEvent::Usage(usage) => self.record(
                records::AGENT_USAGE,
                AgentUsageEvent {
                    run_id: self.run_id.clone(),
                    tokens: records::tokens(usage),
                    cost: self.price.map(|p| p.cost(usage)),
                },
            ),
            AgentEvent::Compacted(compaction) => self.record(
                records::AGENT_COMPACTION,
                AgentCompactionEvent {
                    run_id: self.run_id.clone(),
                    tokens_before: compaction.tokens_before,
                    tokens_after: compaction.tokens_after,
                    pruned: compaction.pruned,
                    summary: compaction.summary.clone(),
                },
            ),
            AgentEvent::Model(_)
            | AgentEvent::ToolStarted { .. }
            | AgentEvent::ToolFinished { .. } => {}
        }
    }
}

/// A run to do.
pub struct RunRequest {
    pub settings: AgentSettings,
    pub prompt: String,
    /// An earlier conversation this prompt continues (system prompt first), and its run id.
    pub history: Option<(String, Vec<Message>)>,
    /// Who the cards name as the caller.
    pub caller: String,
    /// The run's id when the caller names it before the run starts (its updates carry it).
    pub run_id: Option<String>,
    /// Where each call runs among the caller's own (see [`CallScope`]).
    pub scope: Option<Arc<dyn CallScope>>,
    /// A subagent's run: the `subagent` call that started it and the run's depth.
    pub parent: Option<(String, u32)>,
    /// The mode as the caller keeps it (else the run keeps `settings.mode` to itself).
    pub mode: Option<SharedMode>,
}

/// A new run id.
pub fn new_run_id() -> String {
    format!("run_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// A finished run with what the caller reports.
pub struct RunReport {
    pub run_id: String,
    pub outcome: Result<RunOutcome, ModelError>,
    pub cost: Option<f64>,
    /// The value `structured_output` recorded.
    pub structured: Option<Value>,
}

impl RunReport {
    /// How the run ended: the `agent/end` record, and what an editor's prompt is answered.
    pub fn end_event(&self) -> AgentEndEvent {
        let (turns, usage, answer) = match &self.outcome {
            Ok(o) => (o.turns, o.usage.clone(), o.answer.clone()),
            Err(_) => (0, Usage::default(), None),
        };
        AgentEndEvent {
            run_id: self.run_id.clone(),
            stop: self.stop_name().to_owned(),
            turns,
            usage: toolhost_agent::log::tokens(&usage),
            cost: self.cost,
            answer,
            structured: self.structured.clone(),
            error: self.outcome.as_ref().err().map(|e| format!("{}: {e}", e.code())),
        }
    }

    pub fn stop_name(&self) -> &'static str {
        match &self.outcome {
            Ok(outcome) => outcome.stop.as_str(),
            Err(_) => "failed",
        }
    }

    /// 0 when the run answered (or recorded its structured value), else 1.
    pub fn exit_code(&self) -> u8 {
        match &self.outcome {
            Ok(o) if matches!(o.stop, StopReason::Answered | StopReason::Structured) => 0,
            _ => 1,
        }
    }
}

/// Runs the agent on `host` to its end: the conversation and its usage are recorded in the
/// session log (`agent/*` records among the calls' own), `on_event` sees the model's stream and
/// `on_update` the cards.
pub async fn run(
    host: &Host,
    request: RunRequest,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(&AgentEvent) + Send),
    on_update: impl Fn(RunUpdate) + Send + Sync,
) -> RunReport {
    use toolhost_agent::log as records;
    let run_id = request.run_id.clone().unwrap_or_else(new_run_id);
    let settings = &request.settings;
    let recorder = Recorder { host, run_id: run_id.clone(), price: settings.price };
    let continues = request.history.as_ref().map(|(id, _)| id.clone());
    recorder.record(
        records::AGENT_RUN,
        AgentRunEvent {
            run_id: run_id.clone(),
            model: settings.model.clone(),
            mode: settings.mode.as_str().to_owned(),
            continues,
            parent_call_id: request.parent.as_ref().map(|(call, _)| call.clone()),
        },
    );
    if settings.mode == PermissionMode::Plan && !host.interaction().plan_active() {
        host.interaction().set_plan_mode(Some(true)).await;
    }
    let options = settings.options(host.root_display());
    let runner = HostRunner::new(host, settings.mode, request.caller.clone(), on_update)
        .sharing_mode(request.mode.clone())
        .within(request.scope.clone())
        .at_depth(request.parent.as_ref().map_or(1, |(_, depth)| *depth));
    let outcome = match ModelClient::new(settings.model_config()) {
        Ok(model) => {
            let mut events = |event: AgentEvent| {
                recorder.event(&event);
                on_event(&event);
            };
            let history = match request.history {
                Some((_, history)) => history,
                None => {
                    // The system prompt is part of the recorded conversation.
                    let mut history = Vec::new();
                    if !options.system_prompt.is_empty() {
                        let system = Message::system(options.system_prompt.clone());
                        events(AgentEvent::Message { message: system.clone(), call_id: None });
                        history.push(system);
                    }
                    history
                }
            };
            toolhost_agent::agent::continue_run(
                &model,
                &runner,
                &options,
                history,
                &request.prompt,
                cancel,
                &mut events,
            )
            .await
        }
        Err(err) => Err(err),
    };
    let structured = host.interaction().structured_state().value;
    let structured = match &outcome {
        Ok(o) if o.stop == StopReason::Structured => structured,
        _ => None,
    };
    let usage = outcome.as_ref().map(|o| o.usage.clone()).unwrap_or_default();
    let cost = settings.price.map(|p| p.cost(&usage));
    let report = RunReport { run_id, outcome, cost, structured };
    recorder.record(records::AGENT_END, report.end_event());
    if let Some(log) = host.session()
        && let Err(err) = log.flush().await
    {
        tracing::warn!(%err, "cannot record the end of the agent's run");
    }
    report
}

/// The conversation run `run_id` of the session logged at `log` left, rebuilt from its `agent/*`
/// records (see [`conversation_in`]). `None` when the log has no such run.
pub fn conversation_from_log(
    log: &std::path::Path,
    run_id: &str,
) -> Result<Option<Vec<Message>>, toolhost_session::SessionError> {
    let view = toolhost_session::read_session(log)?;
    let records: Vec<(&str, &Value)> =
        view.conversation.iter().map(|(_, kind, data)| (kind.as_str(), data)).collect();
    Ok(conversation_in(&records, run_id))
}

/// The conversation run `run_id` left, from a session's `agent/*` records (kind, data) in log
/// order: the runs it continued (oldest first), then its own — as the model would see it next.
/// `None` when there is no such run.
pub fn conversation_in(records: &[(&str, &Value)], run_id: &str) -> Option<Vec<Message>> {
    use toolhost_agent::log::{self as records_log, Replayed};
    use toolhost_protocol::session_log::AgentMessageEvent;
    // Which run continued which.
    let mut continues: HashMap<String, Option<String>> = HashMap::new();
    for (kind, data) in records {
        if *kind == records_log::AGENT_RUN
            && let Ok(run) = serde_json::from_value::<AgentRunEvent>((*data).clone())
        {
            continues.insert(run.run_id, run.continues);
        }
    }
    if !continues.contains_key(run_id) {
        return None;
    }
    let mut chain = vec![run_id.to_owned()];
    while let Some(Some(earlier)) = chain.last().and_then(|r| continues.get(r)) {
        if chain.contains(earlier) {
            break;
        }
        chain.push(earlier.clone());
    }
    let mut messages = Vec::new();
    let mut compactions = Vec::new();
    for (kind, data) in records {
        let run = data.get("runId").and_then(Value::as_str).unwrap_or_default();
        if !chain.iter().any(|r| r == run) {
            continue;
        }
        if *kind == records_log::AGENT_MESSAGE
            && let Ok(message) = serde_json::from_value::<AgentMessageEvent>((*data).clone())
        {
            messages.push(Some(message));
            compactions.push(None);
        } else if *kind == records_log::AGENT_COMPACTION
            && let Ok(compaction) = serde_json::from_value::<AgentCompactionEvent>((*data).clone())
        {
            messages.push(None);
            compactions.push(Some(compaction));
        }
    }
    let replayed = messages.iter().zip(&compactions).filter_map(|pair| match pair {
        (Some(message), _) => Some(Replayed::Message(message)),
        (None, Some(compaction)) => Some(Replayed::Compaction(compaction)),
        (None, None) => None,
    });
    Some(records_log::rebuild(replayed))
}

/// The JSON line `toolhost agent --json` prints for an event of the model's stream or the run.
pub fn event_json(event: &AgentEvent) -> Option<Value> {
    use toolhost_agent::model::StreamEvent;
    Some(match event {
        AgentEvent::Model(StreamEvent::Text(text)) => json!({"type": "text", "text": text}),
        AgentEvent::Model(StreamEvent::Reasoning(text)) => {
            json!({"type": "reasoning", "text": text})
        }
        AgentEvent::Model(StreamEvent::Restart { attempt, delay, reason }) => json!({
            "type": "retry", "attempt": attempt, "delayMs": delay.as_millis() as u64,
            "reason": reason,
        }),
        AgentEvent::Usage(usage) => json!({
            "type": "usage", "promptTokens": usage.prompt_tokens,
            "completionTokens": usage.completion_tokens, "totalTokens": usage.total_tokens,
            "cachedTokens": usage.cached_tokens,
        }),
        AgentEvent::Compacted(c) => json!({
            "type": "compaction", "tokensBefore": c.tokens_before, "tokensAfter": c.tokens_after,
            "pruned": c.pruned, "summarized": c.summary.is_some(),
        }),
        AgentEvent::Model(StreamEvent::ToolCallStarted { .. })
        | AgentEvent::Message { .. }
        | AgentEvent::ToolStarted { .. }
        | AgentEvent::ToolFinished { .. } => return None,
    })
}

/// The JSON line of a card update.
pub fn update_json(update: &RunUpdate) -> Value {
    match update {
        RunUpdate::CallStarted { card } => {
            json!({"type": "toolCall", "callId": card.call_id, "name": card.tool, "card": card})
        }
        RunUpdate::CallFinished { card, text, is_error } => json!({
            "type": "toolResult", "callId": card.call_id, "name": card.tool, "isError": is_error,
            "text": text, "card": card,
        }),
    }
}

/// The closing JSON line.
pub fn end_json(report: &RunReport, session_id: Option<&str>) -> Value {
    let (turns, usage, answer) = match &report.outcome {
        Ok(o) => (o.turns, o.usage.clone(), o.answer.clone()),
        Err(_) => (0, Usage::default(), None),
    };
    let mut end = json!({
        "type": "end", "runId": report.run_id, "sessionId": session_id,
        "stop": report.stop_name(), "turns": turns, "answer": answer,
        "usage": {
            "promptTokens": usage.prompt_tokens, "completionTokens": usage.completion_tokens,
            "totalTokens": usage.total_tokens, "cachedTokens": usage.cached_tokens,
        },
    });
    if let Some(cost) = report.cost {
        end["cost"] = json!(cost);
    }
    if let Some(value) = &report.structured {
        end["structured"] = value.clone();
    }
    if let Err(err) = &report.outcome {
        end["error"] = json!({"code": err.code(), "message": err.to_string()});
    }
    end
}

/// One line of token use: `1,234 tokens in (1,000 cached), 56 out · $0.0012`.
pub fn usage_line(usage: &Usage, cost: Option<f64>) -> String {
    let mut line = format!("{} tokens in", usage.prompt_tokens);
    if usage.cached_tokens > 0 {
        line.push_str(&format!(" ({} cached)", usage.cached_tokens));
    }
    line.push_str(&format!(", {} out", usage.completion_tokens));
    if let Some(cost) = cost {
        line.push_str(&format!(" · ${cost:.4}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_ask_for_what_they_promise() {
        let read = ToolAnnotations { read_only: true, ..ToolAnnotations::default() };
        let edit =
            ToolAnnotations { destructive: true, open_world: false, ..ToolAnnotations::default() };
        let bash = ToolAnnotations { destructive: true, open_world: true, ..Default::default() };
        let other = ToolAnnotations::default();
        for (mode, expect) in [
            (PermissionMode::Ask, [false, true, true, true]),
            (PermissionMode::AcceptEdits, [false, false, true, true]),
            (PermissionMode::Plan, [false, false, false, false]),
            (PermissionMode::Auto, [false, false, false, false]),
        ] {
            let got = [read, edit, bash, other].map(|a| needs_permission(mode, a));
            assert_eq!(got, expect, "{mode:?}");
        }
    }

    #[test]
    fn cost_counts_cached_prompt_tokens_at_their_price() {
        let price = Price { input: 0.28, output: 0.42, cached_input: Some(0.028) };
        let usage = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 1_000_000,
            total_tokens: 2_000_000,
            cached_tokens: 500_000,
        };
        assert!((price.cost(&usage) - (0.14 + 0.014 + 0.42)).abs() < 1e-9);
    }
}
