//! `toolhost/agentPrompt`: toolhost's own agent driven from the editor (docs/agent.md,
//! docs/protocol.md). A prompt starts a chat or continues one (its conversation so far is kept
//! here, per chat, for the connection's life); what the run streams goes out as
//! `toolhost/agentUpdate` notifications, and each call's cards as `toolhost/card` like any other
//! call's. The run is a task of its own: cancelling the request (`$/cancelRequest`, the editor's
//! Stop) cancels the run, which still ends properly — calls started finish, the rest are answered
//! as aborted, `agent/end` is recorded — and the chat keeps what was said up to there. A `chatId`
//! this connection does not know but the session log does (a `runId`, after the editor restarted
//! the server on the same session) continues that run's conversation, rebuilt from the log. The
//! agent's calls are host calls like every other (the barrier, `toolhost/cancelCall` from a card,
//! their cards to the editor), and so are its subagents' (children of their `subagent` call).

use super::ServerState;
use crate::editor::EditorBridge;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use toolhost_agent::agent::AgentEvent;
use toolhost_agent::model::Message;
use toolhost_agent::{PermissionMode, settings::CALLER};
use toolhost_contract::CancellationToken;
use toolhost_host::agent::{self as own_agent, RunRequest, RunUpdate};
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

/// Sends one run's `toolhost/agentUpdate` notifications.
#[derive(Clone)]
pub(super) struct Updates {
    pub(super) editor: EditorBridge,
    pub(super) chat_id: String,
    pub(super) run_id: String,
}

impl Updates {
    pub(super) fn send(&self, update: serde_json::Value) {
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

/// Runs a prompt's `work` on a task of its own, counted among the running prompts (the server's
/// end waits for them) and told to stop — through the token it is given — when the request's
/// future is dropped (`$/cancelRequest`, or the connection ended): the work still ends properly.
pub(super) async fn run_prompt<T, Work>(
    state: &Arc<ServerState>,
    work: impl FnOnce(CancellationToken) -> Work,
) -> Result<T, ErrorObject>
where
    Work: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let cancel = CancellationToken::new();
    let guard = cancel.clone().drop_guard();
    state.prompts.fetch_add(1, Ordering::SeqCst);
    let work = work(cancel);
    let task_state = Arc::clone(state);
    let task = tokio::spawn(async move {
        let done = work.await;
        if task_state.prompts.fetch_sub(1, Ordering::SeqCst) == 1 {
            task_state.prompts_idle.notify_waiters();
        }
        done
    });
    let joined = task.await;
    guard.disarm();
    joined.map_err(|err| ErrorObject::internal(format!("internal error: the prompt failed: {err}")))
}

/// Handles `toolhost/agentPrompt`: runs the prompt to its end and answers how it ended.
pub(super) async fn prompt(
    state: &Arc<ServerState>,
    params: AgentPromptParams,
) -> Result<AgentPromptResult, ErrorObject> {
    if let Some(agent) = params.agent.as_deref().filter(|a| !a.is_empty() && *a != "toolhost") {
        let agent = agent.to_owned();
        return super::hosted::prompt(state, agent, params).await;
    }
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
    let chat_id = params
        .chat_id
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(toolhost_host::agent::new_chat_id);
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
    let task_state = Arc::clone(state);
    let (task_chat, task_run) = (chat_id.clone(), run_id.clone());
    let report = run_prompt(state, move |cancel| async move {
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
        // The cards themselves reach the editor as every call's do.
        let on_update = move |run_update: RunUpdate| {
            updates.send(own_agent::update_json(&run_update));
        };
        let request = RunRequest {
            settings,
            prompt: params.prompt,
            history,
            caller: CALLER.to_owned(),
            run_id: Some(task_run.clone()),
            parent: None,
            mode: None,
            presentation: None,
        };
        let report = own_agent::run(&host, request, &cancel, &mut on_event, on_update).await;
        if let Ok(outcome) = &report.outcome
            && let Ok(mut chats) = state.chats.lock()
            && let Some(chat) = chats.get_mut(&task_chat)
        {
            chat.messages = outcome.messages.clone();
            chat.last_run = Some(task_run.clone());
        }
        report
    })
    .await?;
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
