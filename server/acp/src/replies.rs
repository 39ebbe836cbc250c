//! What the ACP agent answers with besides session updates: the `initialize` answer, the modes a
//! client can pick, and errors whose message says what was wrong (clients show the message,
//! rarely the data).

use agent_client_protocol::v1::schema::{
    AgentCapabilities, Implementation, InitializeResponse, McpCapabilities, PromptCapabilities,
    SessionMode, SessionModeState, StopReason,
};
use agent_client_protocol::{self as acp};
use toolhost_agent::PermissionMode;
use toolhost_agent::agent::StopReason as RunStop;

/// The `initialize` answer: sessions can be loaded, MCP servers may be HTTP ones, prompts may
/// embed context.
pub fn initialize(version: &str) -> InitializeResponse {
    InitializeResponse::new(acp::schema::ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .mcp_capabilities(McpCapabilities::new().http(true))
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
        )
        .agent_info(Implementation::new("toolhost", version).title("toolhost".to_owned()))
}

/// The modes a client can pick (`session/set_mode`), as the agent's permission modes.
pub fn mode_state(current: PermissionMode) -> SessionModeState {
    let mode = |m: PermissionMode, name: &str, description: &str| {
        SessionMode::new(m.as_str(), name).description(description.to_owned())
    };
    SessionModeState::new(
        current.as_str(),
        vec![
            mode(PermissionMode::Ask, "Ask", "Every call that changes something asks first"),
            mode(
                PermissionMode::AcceptEdits,
                "Accept edits",
                "File edits run; commands and outside effects ask",
            ),
            mode(
                PermissionMode::Plan,
                "Plan",
                "Read-only until the plan is approved, then Accept edits",
            ),
            mode(PermissionMode::Auto, "Auto", "Nothing asks"),
        ],
    )
}

/// Why a run stopped, as ACP says it.
pub fn stop_reason(stop: RunStop) -> StopReason {
    match stop {
        RunStop::Answered | RunStop::Structured => StopReason::EndTurn,
        RunStop::TurnLimit => StopReason::MaxTurnRequests,
        // ACP has no money limit: the cost budget is a budget like the tokens'.
        RunStop::TokenBudget | RunStop::CostBudget => StopReason::MaxTokens,
        RunStop::Cancelled => StopReason::Cancelled,
    }
}

/// An error whose message starts with its kind.
pub fn error(code: acp::ErrorCode, kind: &str, message: impl Into<String>) -> acp::Error {
    acp::Error::new(code, format!("{kind}: {}", message.into()))
}

pub fn invalid_params(message: impl Into<String>) -> acp::Error {
    error(acp::ErrorCode::INVALID_PARAMS, "Invalid params", message)
}

pub fn unknown_session(id: &str) -> acp::Error {
    invalid_params(format!("unknown session {id}"))
}

pub fn internal(message: impl Into<String>) -> acp::Error {
    error(acp::ErrorCode::INTERNAL_ERROR, "Internal error", message)
}
