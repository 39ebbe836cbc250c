//! One execution as policies see it: the call request ([`CallInput`]), the execution record
//! ([`Execution`]), a result bound to the execution that produced it ([`CanonicalResult`]) and
//! what a dispatch returns ([`Finalized`]).

use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_contract::tool::ErasedTool;
use toolhost_contract::{AdditionalContext, Capabilities, SideChannels, ToolError};
use toolhost_protocol::ToolExecutionResult;

/// Opaque identity of one execution. Never serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecToken(u64);

impl ExecToken {
    pub(crate) fn mint() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ExecToken(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// One call request.
pub struct CallInput {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    /// The outer execution of a nested (programmatic) call; nested calls get no meta.
    pub parent: Option<ExecToken>,
    pub session_id: Option<String>,
    /// The caller's cancellation.
    pub signal: CancellationToken,
    pub capabilities: Arc<Capabilities>,
}

impl CallInput {
    /// A direct call with fresh cancellation and the given capabilities.
    pub fn direct(
        call_id: &str,
        name: &str,
        arguments: Value,
        capabilities: Arc<Capabilities>,
    ) -> Self {
        CallInput {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            arguments,
            parent: None,
            session_id: None,
            signal: CancellationToken::new(),
            capabilities,
        }
    }
}

/// The execution record every policy sees.
pub struct Execution {
    pub token: ExecToken,
    pub call_id: String,
    pub name: String,
    pub arguments: Arc<Value>,
    pub parent: Option<ExecToken>,
    pub session_id: Option<String>,
    /// The resolved tool's declared deadline at execution start.
    pub timeout: Option<Duration>,
    /// The tool as it was registered when the execution started (its declarations).
    pub(crate) tool: Option<Arc<dyn ErasedTool>>,
    pub(crate) caller: CancellationToken,
    pub(crate) capabilities: Arc<Capabilities>,
    pub(crate) side: Arc<SideChannels>,
    pub(crate) body_invoked: AtomicBool,
}

impl Execution {
    /// Whether the model (or a client) called the tool directly.
    pub fn is_direct(&self) -> bool {
        self.parent.is_none()
    }

    /// The caller's cancellation signal.
    pub fn caller_signal(&self) -> &CancellationToken {
        &self.caller
    }

    pub fn capability<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.capabilities.get::<T>()
    }

    /// The tool this execution resolved to when it started (`None` for an unknown name): what
    /// it declares (annotations, how it spills) without a lookup by name.
    pub fn tool(&self) -> Option<&dyn ErasedTool> {
        self.tool.as_deref()
    }
}

/// A result bound to the execution that produced it. Only the registry constructs one.
#[derive(Clone, Debug)]
pub struct CanonicalResult {
    pub(crate) token: ExecToken,
    pub(crate) result: ToolExecutionResult,
    pub(crate) additional_contexts: Vec<AdditionalContext>,
    pub(crate) concludes_turn: bool,
}

impl CanonicalResult {
    pub fn result(&self) -> &ToolExecutionResult {
        &self.result
    }

    pub fn additional_contexts(&self) -> &[AdditionalContext] {
        &self.additional_contexts
    }

    pub fn concludes_turn(&self) -> bool {
        self.concludes_turn
    }

    pub(crate) fn bound(token: ExecToken, result: ToolExecutionResult) -> Self {
        CanonicalResult { token, result, additional_contexts: Vec::new(), concludes_turn: false }
    }
}

/// What a dispatch returns: the final result plus the in-process extras.
#[derive(Clone, Debug, PartialEq)]
pub struct Finalized {
    pub result: ToolExecutionResult,
    pub additional_contexts: Vec<AdditionalContext>,
    pub concludes_turn: bool,
    /// The renderer version of the tool that produced the content (0 if none resolved).
    pub renderer_version: u32,
}

pub(crate) fn failure_of(err: ToolError) -> ToolExecutionResult {
    ToolExecutionResult::failure(err.message, err.info)
}
