//! `toolhost/agentPrompt` with an `agent` (docs/protocol.md, docs/acp.md "Hosting ACP agents"):
//! the prompt goes to an agent hosted over ACP instead of toolhost's own, its chat drawn from
//! the same `toolhost/agentUpdate`s, its steps' cards coming as every call's. `toolhost/listAgents`
//! says which agents there are; `toolhost/agentOptions` and `toolhost/agentSetOption` read and
//! change a chat's settings (the agent's modes, models, …). Stopping the request stops the
//! agent's turn.

use super::ServerState;
use super::agent::Updates;
use std::sync::Arc;
use toolhost_acp::hosted::{HostedAgents, HostedError, HostedPrompt};
use toolhost_contract::CancellationToken;
use toolhost_jsonrpc::message::{ErrorObject, codes};
use toolhost_protocol::lsp_ext::{
    AgentOptionsParams, AgentOptionsResult, AgentPromptParams, AgentPromptResult,
    AgentSetOptionParams,
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

/// A hosted agent's error as the reply to a request that could not be carried out.
fn refused(err: HostedError) -> ErrorObject {
    match err.code {
        "CHAT_BUSY" => {
            ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {}", err.message))
        }
        "AGENT_UNKNOWN"
        | "AGENT_NOT_INSTALLED"
        | "CHAT_UNKNOWN"
        | "OPTION_UNKNOWN"
        | "OPTION_VALUE_UNKNOWN" => {
            ErrorObject::invalid_params(format!("Invalid params: {}: {}", err.code, err.message))
        }
        _ => ErrorObject::internal(format!("{}: {}", err.code, err.message)),
    }
}

/// `toolhost/agentOptions`: starts the chat's agent when needed and answers its settings.
pub(super) async fn options(
    state: &Arc<ServerState>,
    params: AgentOptionsParams,
) -> Result<AgentOptionsResult, ErrorObject> {
    let hosted = agents(state)?;
    let named = params.chat_id.filter(|c| !c.is_empty());
    let given = named.is_some();
    let chat_id = named.unwrap_or_else(toolhost_host::agent::new_chat_id);
    let options = hosted.options(&params.agent, &chat_id, given).await.map_err(refused)?;
    Ok(AgentOptionsResult { chat_id, options })
}

/// `toolhost/agentSetOption`: changes one setting of a hosted agent's chat.
pub(super) async fn set_option(
    state: &Arc<ServerState>,
    params: AgentSetOptionParams,
) -> Result<AgentOptionsResult, ErrorObject> {
    let hosted = agents(state)?;
    let options =
        hosted.set_option(&params.chat_id, &params.option, params.value).await.map_err(refused)?;
    Ok(AgentOptionsResult { chat_id: params.chat_id, options })
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
    let chat_id = params
        .chat_id
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(toolhost_host::agent::new_chat_id);
    let run_id = toolhost_host::agent::new_run_id();
    let updates =
        Updates { editor: state.editor.clone(), chat_id: chat_id.clone(), run_id: run_id.clone() };
    let sink = Arc::new(move |update: serde_json::Value| updates.send(update));
    let request = HostedPrompt {
        agent,
        chat_id: chat_id.clone(),
        named_by_editor: params.chat_id.as_deref().is_some_and(|c| !c.is_empty()),
        prompt: params.prompt,
        run_id: Some(run_id.clone()),
    };
    let stopped = CancellationToken::new();
    let told = stopped.clone();
    let outcome = super::agent::run_prompt(state, move |cancel| async move {
        let outcome = hosted.prompt(request, sink, cancel.clone()).await;
        if cancel.is_cancelled() {
            told.cancel();
        }
        outcome
    })
    .await?;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(
            err @ HostedError {
                code: "CHAT_BUSY" | "AGENT_UNKNOWN" | "AGENT_NOT_INSTALLED", ..
            },
        ) => {
            return Err(refused(err));
        }
        Err(err) => {
            return Ok(AgentPromptResult {
                chat_id,
                run_id,
                stop: if stopped.is_cancelled() { "cancelled" } else { "failed" }.to_owned(),
                turns: 0,
                answer: None,
                usage: AgentTokens::default(),
                cost: None,
                structured: None,
                error: Some(err.to_string()),
            });
        }
    };
    let usage = outcome.usage.unwrap_or_default();
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
