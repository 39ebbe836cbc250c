//! What a running tool tells the host while it runs, besides its result: appended output of a
//! call (a terminal card streams it) and notices for the session (a background job finished).
//! The host decides where they go — the editor's cards, an MCP client's progress, the session
//! log — so a tool never knows which client is listening.

use serde_json::Value;
use std::sync::Arc;

/// A notice for whoever owns the session: shown by the clients and recorded in the session log.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    /// What sent it (`job` for a background job).
    pub source: String,
    /// The sentence the model and the person read.
    pub text: String,
    /// Structured detail for clients (e.g. the job's snapshot).
    pub data: Value,
}

/// The host side of a call's live output and of session notices. Implementations must be cheap
/// and must not block: they queue, they never wait for a client.
pub trait HostEvents: Send + Sync {
    /// Text appended to the output of the running call `call_id` (already throttled by the
    /// tool; each piece follows the previous one).
    fn call_output(&self, call_id: &str, text: &str);

    /// A notice for the session `session_id` (or the process when there is none).
    fn notice(&self, session_id: Option<&str>, notice: Notice);
}

/// Handle type under which the host provides its events sink as a capability.
pub type EventsHandle = Arc<dyn HostEvents>;
