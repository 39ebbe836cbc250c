//! What a tool body sees of its execution: ids, the cancellation signal, capabilities, and the
//! two in-process side channels for the agent loop (`deferContext`, `concludeTurn`).

use crate::capabilities::Capabilities;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Context attached to a result for the agent loop; never serialized, never logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdditionalContext {
    pub source: String,
    pub text: String,
}

impl AdditionalContext {
    pub fn new(source: impl Into<String>, text: impl Into<String>) -> Self {
        AdditionalContext { source: source.into(), text: text.into() }
    }
}

/// What a body hands the agent loop beside its result: deferred context and the end of the turn
/// (one per execution, shared by its contexts; the registry reads it when the body is done).
#[derive(Default)]
pub struct SideChannels {
    deferred: Mutex<Vec<AdditionalContext>>,
    concludes_turn: AtomicBool,
}

impl SideChannels {
    /// Takes the context the body deferred so far.
    pub fn take_deferred(&self) -> Vec<AdditionalContext> {
        self.deferred.lock().map(|mut d| std::mem::take(&mut *d)).unwrap_or_default()
    }

    /// Whether the body asked to end the agent's turn.
    pub fn concludes_turn(&self) -> bool {
        self.concludes_turn.load(Ordering::SeqCst)
    }
}

/// The execution context of one tool body.
#[derive(Clone)]
pub struct ToolContext {
    call_id: Arc<str>,
    session_id: Option<Arc<str>>,
    nested: bool,
    signal: CancellationToken,
    capabilities: Arc<Capabilities>,
    side: Arc<SideChannels>,
}

impl ToolContext {
    /// The context of one execution (the registry builds one per body invocation).
    pub fn new(
        call_id: &str,
        session_id: Option<&str>,
        nested: bool,
        signal: CancellationToken,
        capabilities: Arc<Capabilities>,
        side: Arc<SideChannels>,
    ) -> Self {
        ToolContext {
            call_id: Arc::from(call_id),
            session_id: session_id.map(Arc::from),
            nested,
            signal,
            capabilities,
            side,
        }
    }

    /// A context for calling a tool body directly (tests, benches); the registry builds its own.
    pub fn detached(call_id: &str, capabilities: Arc<Capabilities>) -> Self {
        ToolContext {
            call_id: Arc::from(call_id),
            session_id: None,
            nested: false,
            signal: CancellationToken::new(),
            capabilities,
            side: Arc::default(),
        }
    }

    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Whether this is a nested (programmatic) call.
    pub fn is_nested(&self) -> bool {
        self.nested
    }

    /// The fused cancellation signal (caller cancellation or a wrapper's deadline).
    pub fn signal(&self) -> &CancellationToken {
        &self.signal
    }

    pub fn is_cancelled(&self) -> bool {
        self.signal.is_cancelled()
    }

    /// The capability of type `T` (e.g. `Arc<Workspace>`), if the host provided it.
    pub fn capability<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.capabilities.get::<T>()
    }

    /// Attaches context to this execution's own result.
    pub fn defer_context(&self, source: &str, text: impl Into<String>) {
        if let Ok(mut deferred) = self.side.deferred.lock() {
            deferred.push(AdditionalContext::new(source, text));
        }
    }

    /// Marks a successful result as ending the agent turn.
    pub fn conclude_turn(&self) {
        self.side.concludes_turn.store(true, Ordering::SeqCst);
    }
}
