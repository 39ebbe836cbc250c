//! The one call path. Every front end — an editor's `toolhost/callTool`, an MCP agent (here or
//! over the attach socket), an ACP client's prompt, the own agent, a subagent, a program's nested
//! calls — runs a tool by building a [`CallRequest`] and calling [`Host::call`]; the host owns
//! everything around the pipeline:
//!
//! 1. the call is listed under its id (duplicate ids are refused) with a token of its own: a
//!    child of the caller's cancellation, or of its parent call's (see `calls.rs`);
//! 2. a name no tool has yet is offered to the registry's resolvers (an MCP server started on
//!    first use); arguments the tool's schema does not declare are dropped (or, where it forbids
//!    them, cut down to a note for the `INVALID_ARGS` failure) and oversized ones replaced, so
//!    no bulk reaches a card, the log or the tool (see [`crate::arguments`]); then the call's
//!    presentation is computed — once, for every card and the log;
//! 3. a top-level call waits for its turn at its caller's lane's barrier (a child runs under its
//!    parent's permit; a cancelled call gives its permit back at once);
//! 4. the pending card goes to every listener and to the handle;
//! 5. `tool/call` is recorded (on disk before the body runs, unless the tool is read-only, whose
//!    start is committed with its result), with the caller, the parent and the caller's
//!    group (in the recorded presentation);
//! 6. for the call's duration: its live output goes to the follower, its questions to its route,
//!    the review knows its title and caller, the own agent's permission policy knows its mode;
//! 7. the pipeline runs; `tool/result` is recorded and synced (a read-only call's as
//!    `[session] durability` says); staged session changes settle;
//! 8. the final card goes to every listener and the outcome to the handle.
//!
//! The call runs as a task of its own: a caller that goes away (a cancelled request drops the
//! handle) cancels the call, whose body is still awaited to its end and logged.

use crate::calls::{Heritage, Lane};
use crate::host::{CallOutcome, Host, HostError, new_call_id};
use crate::permissions::AgentCall;
use crate::presentation::ToolPresentation;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use toolhost_contract::protocol::ToolExecutionResult;
use toolhost_contract::{CancellationToken, QuestionsHandle, ToolError};
use toolhost_protocol::card::{self, CallOrigin, Card, CardGroup, CardOutcome};
use toolhost_protocol::session_log::{ToolCallEvent, ToolResultRecord};
use toolhost_registry::{CallInput, Finalized};

/// What to call, and on whose behalf.
pub struct CallRequest {
    /// The call's id (a fresh one when `None`).
    pub call_id: Option<String>,
    pub name: String,
    pub arguments: Value,
    /// Who asks, when it is another program (an MCP client's name, the own agent): shown on the
    /// cards and recorded in the log.
    pub caller: Option<String>,
    /// Who answers the call's questions first (the MCP client that made it, when it can elicit).
    pub asker: Option<QuestionsHandle>,
    /// The call this one runs under (a subagent's call, a program's nested call): cancelled with
    /// it, and holding no barrier permit of its own.
    pub parent: Option<String>,
    /// The caller's cancellation (a run's, an MCP request's): the call's token is its child.
    pub cancel: Option<CancellationToken>,
    /// Where the call's live output also goes (an MCP client quoting it in its progress).
    pub output: Option<mpsc::UnboundedSender<String>>,
    /// A call of the own agent: its run's permission mode and depth.
    pub agent: Option<AgentCall>,
    /// The caller's lane: the calls the barrier orders this one with (see `calls.rs`);
    /// `None` for the host's shared lane (the editor's calls, a CLI call).
    pub lane: Option<Lane>,
    /// A model's call: the tools its model is offered (a tool it does not see is unknown to
    /// it); `None` for callers that see every tool (the editor, the CLI, a program).
    pub presentation: Option<ToolPresentation>,
    /// Where the caller puts the call among its parent's children (a workflow child's phase and
    /// label): on its cards and in its `tool/call` record, never in the tool's arguments.
    pub group: Option<CardGroup>,
}

impl CallRequest {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        CallRequest {
            call_id: None,
            name: name.into(),
            arguments,
            caller: None,
            asker: None,
            parent: None,
            cancel: None,
            output: None,
            agent: None,
            lane: None,
            presentation: None,
            group: None,
        }
    }

    pub fn id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    pub fn by(mut self, caller: Option<String>) -> Self {
        self.caller = caller;
        self
    }

    pub fn asked_through(mut self, asker: Option<QuestionsHandle>) -> Self {
        self.asker = asker;
        self
    }

    pub fn child_of(mut self, parent: Option<String>) -> Self {
        self.parent = parent;
        self
    }

    pub fn cancelled_by(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    pub fn following(mut self, output: Option<mpsc::UnboundedSender<String>>) -> Self {
        self.output = output;
        self
    }

    pub fn for_agent(mut self, agent: AgentCall) -> Self {
        self.agent = Some(agent);
        self
    }

    pub fn in_lane(mut self, lane: Lane) -> Self {
        self.lane = Some(lane);
        self
    }

    pub fn offered_as(mut self, presentation: ToolPresentation) -> Self {
        self.presentation = Some(presentation);
        self
    }

    pub fn grouped(mut self, group: Option<CardGroup>) -> Self {
        self.group = group;
        self
    }
}

/// A running call. Dropping it before the call ended cancels the call (its body is still
/// awaited and logged); [`CallHandle::detach`] lets it run on.
pub struct CallHandle {
    call_id: String,
    token: CancellationToken,
    started: Option<oneshot::Receiver<Card>>,
    done: Option<tokio::task::JoinHandle<Result<CallOutcome, HostError>>>,
}

impl CallHandle {
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Cancels the call (a card's Stop).
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// The pending card, once the call has its turn; `None` when it never got one (cancelled
    /// while it waited) or was already asked for.
    pub async fn started(&mut self) -> Option<Card> {
        self.started.take()?.await.ok()
    }

    /// Waits for the call's end: its outcome and final card. Dropping this future before the
    /// end cancels the call, as dropping the handle does.
    pub async fn finish(mut self) -> Result<CallOutcome, HostError> {
        let Some(done) = self.done.take() else {
            return Err(HostError::Internal("the call was already awaited".to_owned()));
        };
        let cancel_if_dropped = self.token.clone().drop_guard();
        let outcome = done.await;
        cancel_if_dropped.disarm();
        outcome.map_err(|e| HostError::Internal(format!("the call task failed: {e}")))?
    }

    /// Lets the call run to its end without anyone waiting for it.
    pub fn detach(mut self) {
        self.done = None;
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        if self.done.as_ref().is_some_and(|d| !d.is_finished()) {
            self.token.cancel();
        }
    }
}

impl Host {
    /// Starts a call (see the module doc for what the host does around the pipeline). Fails only
    /// when a call with the same id is already running.
    pub fn call(self: &Arc<Self>, mut request: CallRequest) -> Result<CallHandle, HostError> {
        let call_id = request.call_id.clone().unwrap_or_else(new_call_id);
        // A call made under another (a program's nested call) is made by the same caller: it
        // inherits what its request does not say itself.
        if let Some(parent) = request.parent.as_deref().and_then(|p| self.calls().heritage(p)) {
            request.caller = request.caller.or(parent.caller);
            request.asker = request.asker.or(parent.asker);
            request.agent = request.agent.or(parent.agent);
        }
        let heritage = Heritage {
            caller: request.caller.clone(),
            asker: request.asker.clone(),
            agent: request.agent,
        };
        // A child of a call that still runs goes under its parent's permit; a child that outlived
        // its parent (a background subagent's) takes its own turn like any call.
        let under_parent = request.parent.as_deref().is_some_and(|p| self.calls().running(p));
        let (token, listed) = self
            .calls()
            .enter(&call_id, request.parent.as_deref(), request.cancel.as_ref(), heritage)
            .ok_or_else(|| HostError::DuplicateCall(call_id.clone()))?;
        let (started_tx, started_rx) = oneshot::channel();
        let host = Arc::clone(self);
        let (id, call_token) = (call_id.clone(), token.clone());
        let done = tokio::spawn(async move {
            let _listed = listed;
            host.run_call(id, request, under_parent, call_token, started_tx).await
        });
        Ok(CallHandle { call_id, token, started: Some(started_rx), done: Some(done) })
    }

    /// Starts a call and waits for its end ([`Host::call`], then [`CallHandle::finish`]).
    pub async fn run(self: &Arc<Self>, request: CallRequest) -> Result<CallOutcome, HostError> {
        self.call(request)?.finish().await
    }

    async fn run_call(
        self: Arc<Self>,
        call_id: String,
        request: CallRequest,
        under_parent: bool,
        token: CancellationToken,
        started: oneshot::Sender<Card>,
    ) -> Result<CallOutcome, HostError> {
        let CallRequest {
            name,
            arguments,
            caller,
            asker,
            parent,
            output,
            agent,
            lane,
            presentation: offered,
            group,
            ..
        } = request;
        self.recover().await;
        let registry = self.registry();
        // A tool the caller's model is not offered is, to that model, no tool at all.
        // The host's internal tools are no tools to a model either.
        let hidden = offered.is_some_and(|p| !p.shows(&name) || registry.internal(&name));
        if !hidden && !registry.contains(&name) {
            registry.resolve_unknown(&name).await;
        }
        // Undeclared bulk and oversized arguments never reach the card, the log or the tool.
        let arguments = crate::arguments::screen(registry, &name, arguments);
        let mut presentation = registry.present_call(&name, &arguments);
        // The caller's grouping travels with the presentation: every card and the log get it.
        presentation.group = group;
        let origin = || {
            CallOrigin::new(&call_id, &name)
                .with_caller(caller.as_deref())
                .with_parent(parent.as_deref())
        };
        // A child runs under its parent's permit; a call cancelled while it waits runs nothing.
        let _permit = if under_parent {
            None
        } else {
            let safe = registry.concurrency_safe(&name, &arguments);
            self.calls().permit(lane.as_ref(), safe, &token).await
        };
        let pending =
            card::build(origin(), &presentation, self.root_display(), CardOutcome::Pending);
        self.listeners().card(&pending);
        let _ = started.send(pending);
        let mut record_gate = None;
        if let Some(log) = self.session() {
            let event = ToolCallEvent {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                card: Some(presentation.clone()),
                caller: caller.clone(),
                parent_call_id: parent.clone(),
            };
            if registry.annotations(&name).read_only {
                log.enqueue_tool_call(&event)?;
            } else if !hidden && registry.changes_only_through_workspace(&name) {
                // Synced while the body runs; its first replace waits for it.
                record_gate =
                    Some(self.record_gates().open(&call_id, log.begin_tool_call(&event)?));
            } else {
                log.append_tool_call(&event).await?;
            }
        }
        let _watch = output.map(|sender| self.call_watchers().watch(&call_id, sender));
        self.review().begin_call(&call_id, &presentation.title, caller.as_deref());
        if let Some(asker) = asker {
            self.questions().route(&call_id, asker);
        }
        if let Some(agent) = agent {
            self.agent_permissions().begin(&call_id, agent);
        }
        let input = CallInput {
            call_id: call_id.clone(),
            name: name.clone(),
            arguments,
            parent: None,
            session_id: self.session_id().map(str::to_owned),
            signal: token,
            capabilities: Arc::clone(self.capabilities_handle()),
        };
        let began = std::time::Instant::now();
        let finalized = if hidden {
            Finalized {
                result: {
                    let unknown = ToolError::unknown_tool(&name);
                    ToolExecutionResult::failure(unknown.message, unknown.info)
                },
                additional_contexts: Vec::new(),
                concludes_turn: false,
                renderer_version: 0,
            }
        } else {
            registry.dispatch(input).await
        };
        self.agent_permissions().end(&call_id);
        self.questions().unroute(&call_id);
        self.review().end_call(&call_id);
        if let Some(gate) = record_gate {
            gate.close().await?;
        }
        tracing::info!(
            tool = name,
            call_id,
            status = if finalized.result.is_error() { "failed" } else { "completed" },
            code = finalized
                .result
                .error()
                .and_then(|e| e.info.as_ref())
                .map_or("", |i| i.code.as_str()),
            ms = began.elapsed().as_millis() as u64,
            "tool call"
        );
        if let Some(log) = self.session() {
            // Borrowed from the result: a read's page and its presentation are logged, not copied.
            let event = ToolResultRecord {
                call_id: &call_id,
                name: &name,
                content: finalized.result.content(),
                is_error: finalized.result.is_error(),
                error: finalized.result.error().and_then(|e| e.info.as_ref()),
                meta: finalized.result.meta(),
                renderer_version: finalized.renderer_version,
            };
            // A mutation's result is synced before it is answered; a read-only call's as
            // `[session] durability` says (by default within a few milliseconds).
            if registry.annotations(&name).read_only {
                log.append_read_only_result(event).await?;
            } else {
                log.append_tool_result(event).await?;
            }
        }
        // Plan approval and a structured value take effect only with a successful result.
        self.interaction().settle(&call_id, !finalized.result.is_error()).await;
        let outcome = CallOutcome {
            call_id,
            finalized,
            tool: name,
            presentation,
            caller,
            parent,
            root: self.root_display().to_owned(),
        };
        self.listeners().card_built(|| outcome.card());
        Ok(outcome)
    }
}
