//! What the MCP server calls: a [`Backend`] that lists the registry's tools and runs one call
//! through the whole pipeline. The binary provides two — the registry in this process, or the
//! registry of the editor's `toolhost serve`, reached over its local socket — so this crate never
//! knows which.

use serde_json::Value;
use toolhost_contract::{BoxFuture, CancellationToken};
use toolhost_protocol::ToolExecutionResult;
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::ToolDescriptor;

/// Who makes the calls: the MCP client's `clientInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub version: Option<String>,
}

/// One `tools/call`, ready for the pipeline.
#[derive(Clone)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    pub caller: Option<Caller>,
    /// Where the call's live output goes while it runs (a `bash` command's stdout and stderr),
    /// for the client's progress notifications.
    pub output: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    /// Who answers the call's questions: the MCP client (elicitation), when it can.
    pub questions: Option<toolhost_contract::QuestionsHandle>,
}

/// Why a backend could not run or list.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// The backend cannot serve now (the editor's toolhost went away mid-call).
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// One call's end as the MCP server needs it: its id and result (no card: MCP clients show
/// their own, and building the editor's card of a big result is work for nobody).
#[derive(Debug)]
pub struct CallDone {
    pub call_id: String,
    pub result: ToolExecutionResult,
}

/// The registry behind the MCP server.
pub trait Backend: Send + Sync + 'static {
    /// Every tool, sorted by name (clients cache prompts on a stable order).
    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDescriptor>, BackendError>>;

    /// The tools `caller` is offered, sorted by name: [`Backend::tools`] without what only
    /// another caller may use (a session tool another agent defined).
    fn tools_for<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ToolDescriptor>, BackendError>> {
        self.tools()
    }

    /// Runs one call through the whole pipeline (policies, spill, session log, cards). A
    /// cancelled `cancel` aborts it; the body is still awaited to its end.
    fn call(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<CallDone, BackendError>>;

    /// A receiver that changes whenever the set of tools changes.
    fn tools_changed(&self) -> tokio::sync::watch::Receiver<u64>;

    /// A client identified itself and the result shape chosen for it (recorded in the log).
    fn client_seen(&self, _caller: &Caller, _protocol: &str, _results: &str) {}

    /// The prompts offered to the client (the workspace's skills), sorted by name.
    fn prompts(&self) -> Vec<PromptEntry> {
        Vec::new()
    }

    /// The text of prompt `name` (a skill's instructions in their envelope); `Ok(None)` when
    /// there is no such prompt.
    fn prompt(&self, _name: &str) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// The id of the live session the calls land in, when there is one (its transcript is
    /// offered as a resource).
    fn live_session(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    /// The cards of session `id` of this workspace, in log order; `Ok(None)` when there is no
    /// such session.
    fn session_cards(&self, _id: &str) -> BoxFuture<'_, Result<Option<Vec<Card>>, BackendError>> {
        Box::pin(async { Ok(None) })
    }

    /// A receiver that changes whenever a card of the live session changes (a call starts or
    /// ends); one whose sender is gone when nothing is live.
    fn cards_changed(&self) -> BoxFuture<'_, tokio::sync::watch::Receiver<u64>> {
        Box::pin(async { tokio::sync::watch::channel(0).1 })
    }
}

/// A prompt as `prompts/list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptEntry {
    pub name: String,
    pub description: String,
}
