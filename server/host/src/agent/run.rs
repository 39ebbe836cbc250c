//! One run of the own agent on a host (docs/agent.md): the registry as its tools — each call a
//! host call on behalf of the agent, so policies, review, the session log and the cards apply as
//! for any caller (a subagent's calls are children of its `subagent` call) — and the run's
//! conversation recorded in the session log among the calls' own records.

use crate::call::CallRequest;
use crate::calls::Lane;
use crate::host::{Host, HostError, new_call_id};
use crate::permissions::AgentCall;
use crate::presentation::ToolPresentation;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_agent::agent::{AgentEvent, BoxFuture, RunOutcome, StopReason};
use toolhost_agent::model::{Message, ModelClient, ModelError, Price, ToolSpec, Usage};
use toolhost_agent::{AgentSettings, PermissionMode, ToolOutcome, ToolRunner};
use toolhost_contract::CancellationToken;
use toolhost_protocol::card::Card;
use toolhost_protocol::session_log::{
    AgentCompactionEvent, AgentEndEvent, AgentRunEvent, AgentUsageEvent,
};

/// What a run shows as it goes, beside the model's own stream.
#[derive(Clone, Debug)]
pub enum RunUpdate {
    /// A call started: its pending card.
    CallStarted { card: Card },
    /// A call ended: its final card and the Native text the model got.
    CallFinished { card: Card, text: String, is_error: bool },
}

/// A run's permission mode where its caller can change it while the run goes on (an ACP
/// client's `session/set_mode`); the run moves it from `plan` to `accept-edits` itself once the
/// plan is approved.
pub type SharedMode = Arc<Mutex<PermissionMode>>;

/// The registry as the agent's tools: each call is a host call on behalf of the agent.
struct HostRunner<'h> {
    host: &'h Arc<Host>,
    mode: SharedMode,
    caller: String,
    /// The `subagent` call a child run's calls belong to (they are its children).
    parent: Option<String>,
    /// 1 for a top-level run, one more per subagent level.
    depth: u32,
    /// The run's lane: its own turn's calls are ordered with each other, never with another
    /// run's or the editor's.
    lane: Lane,
    /// How the model is offered the tools.
    presentation: ToolPresentation,
    on_update: Box<dyn Fn(RunUpdate) + Send + Sync + 'h>,
}

impl HostRunner<'_> {
    /// The mode now (`plan` becomes `accept-edits` once the plan is approved).
    fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ToolRunner for HostRunner<'_> {
    fn tools(&self) -> Vec<ToolSpec> {
        // Sorted by name: the same order in every request; another caller's session tools are
        // not this run's.
        self.host
            .model_tools_of(self.presentation, Some(&self.caller))
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
            let request = CallRequest::new(name, args)
                .id(&call_id)
                .by(Some(self.caller.clone()))
                .child_of(self.parent.clone())
                .cancelled_by(cancel)
                .for_agent(AgentCall { mode, depth: self.depth })
                .in_lane(self.lane.clone())
                .offered_as(self.presentation);
            let failed = |err: HostError| {
                let mut failed = ToolOutcome::new(format!("Error: {err}"), true);
                failed.call_id = Some(call_id.clone());
                failed
            };
            let mut handle = match self.host.call(request) {
                Ok(handle) => handle,
                Err(err) => return failed(err),
            };
            if let Some(card) = handle.started().await {
                (self.on_update)(RunUpdate::CallStarted { card });
            }
            let outcome = match handle.finish().await {
                Ok(outcome) => outcome,
                Err(err) => return failed(err),
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
                card: outcome.card(),
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
    /// A subagent's run: the `subagent` call that started it and the run's depth.
    pub parent: Option<(String, u32)>,
    /// The mode as the caller keeps it (else the run keeps `settings.mode` to itself).
    pub mode: Option<SharedMode>,
    /// How the run's model is offered the tools (else the host's `[code] mode`).
    pub presentation: Option<ToolPresentation>,
}

/// A new run id.
pub fn new_run_id() -> String {
    format!("run_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// A new chat id (a chat: the runs of one conversation, the own agent's or a hosted one's).
pub fn new_chat_id() -> String {
    format!("chat_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
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
    host: &Arc<Host>,
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
            chat_id: None,
            agent_session: None,
        },
    );
    if settings.mode == PermissionMode::Plan && !host.interaction().plan_active() {
        host.interaction().set_plan_mode(Some(true)).await;
    }
    let options = settings.options(host.root_display());
    let runner = HostRunner {
        host,
        mode: request.mode.clone().unwrap_or_else(|| Arc::new(Mutex::new(settings.mode))),
        caller: request.caller.clone(),
        parent: request.parent.as_ref().map(|(call, _)| call.clone()),
        depth: request.parent.as_ref().map_or(1, |(_, depth)| (*depth).max(1)),
        lane: Lane::new(),
        presentation: request.presentation.unwrap_or_else(|| host.agent_presentation()),
        on_update: Box::new(on_update),
    };
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
