//! `toolhost/agentPrompt`: toolhost's own agent driven from the editor (docs/agent.md,
//! docs/protocol.md). A prompt starts a chat or continues one (its conversation so far is kept
//! here, per chat, for the connection's life); what the run streams goes out as
//! `toolhost/agentUpdate` notifications, and each call's cards as `toolhost/card` like any other
//! call's. The run is a task of its own: cancelling the request (`$/cancelRequest`, the editor's
//! Stop) cancels the run, which still ends properly — calls started finish, the rest are answered
//! as aborted, `agent/end` is recorded — and the chat keeps what was said up to there. A `chatId`
//! this connection does not know but the session log does (a `runId`, after the editor restarted
//! the server on the same session) continues that run's conversation, rebuilt from the log. The agent's
//! calls take the connection's barrier like every other call and are listed for
//! `toolhost/cancelCall`, so a card's own Stop works on them too; so are its subagents' calls,
//! which take no barrier permit of their own (the `subagent` call holds one).

use super::ServerState;
use super::handlers::Permit;
use crate::agent::{
    self as own_agent, CallScope, PermissionMode, RunRequest, RunUpdate, ScopeGuard,
};
use crate::editor::EditorBridge;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use toolhost_agent::agent::{AgentEvent, BoxFuture};
use toolhost_agent::model::Message;
use toolhost_contract::CancellationToken;
use toolhost_jsonrpc::message::{ErrorObject, codes};
use toolhost_protocol::lsp_ext::{
    AgentPromptParams, AgentPromptResult, AgentUpdateParams, methods,
};

/// A chat of this connection: the conversation so far and the run that last added to it.
#[derive(Default)]
pub(super) struct Chat {
    last_run: Option<String>,
    messages: Vec<Message>,
    /// A prompt of this chat is running (one at a time: the next one continues its answer).
    running: bool,
}

/// The chats of one connection, by id.
pub(super) type Chats = std::sync::Mutex<HashMap<String, Chat>>;

fn new_chat_id() -> String {
    format!("chat_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// The connection's side of each agent call: the barrier permit, the call table, the idle count.
struct ServeScope {
    state: Arc<ServerState>,
    /// The calls take the connection's barrier; a subagent's calls do not (see
    /// [`CallScope::nested`]) and are scheduled by the subagent's own loop.
    barrier: bool,
}

/// Held while one of the agent's calls runs.
struct Held {
    state: Arc<ServerState>,
    call_id: String,
    _permit: Option<Permit>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.state.calls.lock() {
            calls.remove(&self.call_id);
        }
        if self.state.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.state.idle.notify_waiters();
        }
    }
}

impl CallScope for ServeScope {
    fn enter<'a>(
        &'a self,
        call_id: &'a str,
        concurrency_safe: bool,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, (CancellationToken, ScopeGuard)> {
        Box::pin(async move {
            let state = &self.state;
            let permit = match (self.barrier, concurrency_safe) {
                (false, _) => None,
                (true, true) => Some(Permit::Shared(Arc::clone(&state.barrier).read_owned().await)),
                (true, false) => {
                    Some(Permit::Exclusive(Arc::clone(&state.barrier).write_owned().await))
                }
            };
            // A child: the card's Stop cancels this call only, the run's cancellation all of them.
            let token = cancel.child_token();
            if let Ok(mut calls) = state.calls.lock() {
                calls.insert(call_id.to_owned(), token.clone());
            }
            state.active.fetch_add(1, Ordering::SeqCst);
            let held =
                Held { state: Arc::clone(state), call_id: call_id.to_owned(), _permit: permit };
            (token, Box::new(held) as ScopeGuard)
        })
    }

    fn nested(&self) -> Arc<dyn CallScope> {
        Arc::new(ServeScope { state: Arc::clone(&self.state), barrier: false })
    }
}

/// Sends one run's `toolhost/agentUpdate` notifications.
#[derive(Clone)]
struct Updates {
    editor: EditorBridge,
    chat_id: String,
    run_id: String,
}

impl Updates {
    fn send(&self, update: serde_json::Value) {
        self.editor.notify(
            methods::AGENT_UPDATE,
            &AgentUpdateParams {
                chat_id: self.chat_id.clone(),
                run_id: self.run_id.clone(),
                update,
            },
        );
    }
}

/// Marks a chat as no longer running however its prompt ends.
struct RunningChat<'a> {
    chats: &'a Chats,
    chat_id: String,
}

impl Drop for RunningChat<'_> {
    fn drop(&mut self) {
        if let Ok(mut chats) = self.chats.lock()
            && let Some(chat) = chats.get_mut(&self.chat_id)
        {
            chat.running = false;
        }
    }
}

/// Handles `toolhost/agentPrompt`: runs the prompt to its end and answers how it ended.
pub(super) async fn prompt(
    state: &Arc<ServerState>,
    params: AgentPromptParams,
) -> Result<AgentPromptResult, ErrorObject> {
    let host = state.host()?;
    let mut settings = state.agent_settings.get().cloned().unwrap_or_default();
    if let Some(mode) = params.mode.as_deref() {
        settings.mode = PermissionMode::parse(mode).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "Invalid params: unknown mode {mode:?} (ask, accept-edits, plan or auto)"
            ))
        })?;
    }
    if let Some(model) = params.model.clone().filter(|m| !m.is_empty()) {
        settings.model = model;
    }
    if params.prompt.trim().is_empty() {
        return Err(ErrorObject::invalid_params("Invalid params: the prompt is empty"));
    }
    let chat_id = params.chat_id.clone().filter(|c| !c.is_empty()).unwrap_or_else(new_chat_id);
    let history = {
        let mut chats =
            state.chats.lock().map_err(|_| ErrorObject::internal("chat table poisoned"))?;
        let chat = chats.entry(chat_id.clone()).or_default();
        if chat.running {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("Invalid request: chat {chat_id} is still answering a prompt"),
            ));
        }
        chat.running = true;
        chat.last_run.clone().map(|run| (run, chat.messages.clone()))
    };
    // A chat this connection does not know may be a run of the session's log (the editor
    // restarted the server on the same session): its conversation is rebuilt from the records.
    let history = match (history, params.chat_id.as_deref(), state.opened.get()) {
        (None, Some(run_id), Some(opened)) if !run_id.is_empty() => {
            match own_agent::conversation_from_log(opened.log.log_path(), run_id) {
                Ok(Some(messages)) => Some((run_id.to_owned(), messages)),
                Ok(None) => None,
                Err(err) => {
                    tracing::warn!(%err, "cannot read the session log to continue {run_id}");
                    None
                }
            }
        }
        (history, _, _) => history,
    };
    let run_id = own_agent::new_run_id();
    let cancel = CancellationToken::new();
    // Dropping this future (the request was cancelled, or the connection ends) stops the run.
    let guard = cancel.clone().drop_guard();
    state.active.fetch_add(1, Ordering::SeqCst);
    let task_state = Arc::clone(state);
    let (task_chat, task_run) = (chat_id.clone(), run_id.clone());
    let task = tokio::spawn(async move {
        let state = task_state;
        let _running = RunningChat { chats: &state.chats, chat_id: task_chat.clone() };
        let updates = Updates {
            editor: state.editor.clone(),
            chat_id: task_chat.clone(),
            run_id: task_run.clone(),
        };
        let event_updates = updates.clone();
        let mut on_event = move |event: &AgentEvent| {
            if let Some(line) = own_agent::event_json(event) {
                event_updates.send(line);
            }
        };
        let on_update = move |run_update: RunUpdate| {
            let card = match &run_update {
                RunUpdate::CallStarted { card } | RunUpdate::CallFinished { card, .. } => card,
            };
            updates.editor.notify(methods::CARD, card);
            updates.send(own_agent::update_json(&run_update));
        };
        let request = RunRequest {
            settings,
            prompt: params.prompt,
            history,
            caller: own_agent::CALLER.to_owned(),
            run_id: Some(task_run.clone()),
            scope: Some(Arc::new(ServeScope { state: Arc::clone(&state), barrier: true })
                as Arc<dyn CallScope>),
            parent: None,
            mode: None,
        };
        let report = own_agent::run(&host, request, &cancel, &mut on_event, on_update).await;
        if let Ok(outcome) = &report.outcome
            && let Ok(mut chats) = state.chats.lock()
            && let Some(chat) = chats.get_mut(&task_chat)
        {
            chat.messages = outcome.messages.clone();
            chat.last_run = Some(task_run.clone());
        }
        if state.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            state.idle.notify_waiters();
        }
        report
    });
    let joined = task.await;
    guard.disarm();
    let report = joined.map_err(|err| {
        ErrorObject::internal(format!("internal error: the agent's run failed: {err}"))
    })?;
    let end = report.end_event();
    Ok(AgentPromptResult {
        chat_id,
        run_id,
        stop: end.stop,
        turns: end.turns,
        answer: end.answer,
        usage: end.usage,
        cost: end.cost,
        structured: end.structured,
        error: end.error,
    })
}
