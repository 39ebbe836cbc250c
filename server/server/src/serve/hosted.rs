//! `toolhost/agentPrompt` with an `agent` (docs/protocol.md, docs/acp.md "Hosting ACP agents"):
//! the prompt goes to an agent hosted over ACP instead of toolhost's own, its chat drawn from
//! the same `toolhost/agentUpdate`s, its steps' cards coming as every call's. `toolhost/listAgents`
//! says which agents there are. Stopping the request stops the agent's turn.

use super::ServerState;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use toolhost_acp::hosted::{HostedAgents, HostedError, HostedPrompt};
use toolhost_contract::CancellationToken;
use toolhost_jsonrpc::message::{ErrorObject, codes};
use toolhost_protocol::lsp_ext::{
    AgentPromptParams, AgentPromptResult, AgentUpdateParams, methods,
};
use toolhost_protocol::session_log::AgentTokens;

fn agents(state: &Arc<ServerState>) -> Result<Arc<HostedAgents>, ErrorObject> {
    let host = state.host()?;
    let settings = state.acp_settings.get().cloned().unwrap_or_default();
    Ok(Arc::clone(state.hosted.get_or_init(|| HostedAgents::new(host, settings))))
}

/// `toolhost/listAgents`: `{agents: [{name, title, command, installed, package?, configured}]}`.
pub(super) fn list(state: &Arc<ServerState>) -> Result<serde_json::Value, ErrorObject> {
    let agents = agents(state)?.agents();
    Ok(serde_json::json!({ "agents": agents }))
}

fn new_chat_id() -> String {
    format!("chat_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// Runs one prompt of a hosted agent's chat to the end of its turn.
pub(super) async fn prompt(
    state: &Arc<ServerState>,
    agent: String,
    params: AgentPromptParams,
) -> Result<AgentPromptResult, ErrorObject> {
    if params.prompt.trim().is_empty() {
        return Err(ErrorObject::invalid_params("Invalid params: the prompt is empty"));
    }
    let hosted = agents(state)?;
    let chat_id = params.chat_id.clone().filter(|c| !c.is_empty()).unwrap_or_else(new_chat_id);
    let run_id = toolhost_host::agent::new_run_id();
    let editor = state.editor.clone();
    let (sink_chat, sink_run) = (chat_id.clone(), run_id.clone());
    let sink = Arc::new(move |update: serde_json::Value| {
        editor.notify(
            methods::AGENT_UPDATE,
            &AgentUpdateParams { chat_id: sink_chat.clone(), run_id: sink_run.clone(), update },
        );
    });
    let cancel = CancellationToken::new();
    // Dropping this future (the request was cancelled, or the connection ends) stops the turn.
    let guard = cancel.clone().drop_guard();
    state.prompts.fetch_add(1, Ordering::SeqCst);
    let task_state = Arc::clone(state);
    let request = HostedPrompt {
        agent,
        chat_id: Some(chat_id.clone()),
        prompt: params.prompt,
        run_id: Some(run_id.clone()),
    };
    let task_cancel = cancel.clone();
    let task = tokio::spawn(async move {
        let outcome = hosted.prompt(request, sink, task_cancel).await;
        if task_state.prompts.fetch_sub(1, Ordering::SeqCst) == 1 {
            task_state.prompts_idle.notify_waiters();
        }
        outcome
    });
    let joined = task.await;
    guard.disarm();
    let outcome = joined.map_err(|err| {
        ErrorObject::internal(format!("internal error: the agent's turn failed: {err}"))
    })?;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(HostedError { code: "CHAT_BUSY", message }) => {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("Invalid request: {message}"),
            ));
        }
        Err(HostedError { code: code @ ("AGENT_UNKNOWN" | "AGENT_NOT_INSTALLED"), message }) => {
            return Err(ErrorObject::invalid_params(format!("Invalid params: {code}: {message}")));
        }
        Err(err) => {
            return Ok(AgentPromptResult {
                chat_id,
                run_id,
                stop: if cancel.is_cancelled() { "cancelled" } else { "failed" }.to_owned(),
                turns: 0,
                answer: None,
                usage: AgentTokens::default(),
                cost: None,
                structured: None,
                error: Some(err.to_string()),
            });
        }
    };
    let usage = outcome
        .usage
        .as_ref()
        .map(|u| AgentTokens {
            prompt_tokens: u["promptTokens"].as_u64().unwrap_or(0),
            completion_tokens: u["completionTokens"].as_u64().unwrap_or(0),
            total_tokens: u["totalTokens"].as_u64().unwrap_or(0),
            cached_tokens: u["cachedTokens"].as_u64().unwrap_or(0),
        })
        .unwrap_or_default();
    Ok(AgentPromptResult {
        chat_id: outcome.chat_id,
        run_id,
        stop: outcome.stop.to_owned(),
        turns: 1,
        answer: outcome.answer,
        usage,
        cost: None,
        structured: None,
        error: None,
    })
}
