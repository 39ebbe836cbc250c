//! The review seam: before a write or edit lands, the host may ask a person to accept or reject
//! each hunk (docs/tools.md, "Review"). Tools see a `ReviewGate` capability; the host implements
//! it over the editor (`toolhost/review`, docs/protocol.md) with its configured timeout and
//! fallback, and tests implement it with scripted answers.

use crate::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_protocol::card::Hunk;
use toolhost_protocol::lsp_ext::ReviewFallback;

/// A change about to be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewRequest {
    pub call_id: String,
    pub tool: String,
    /// The file's absolute path.
    pub path: String,
    /// Whole texts, LF-normalized (`before` is `""` for a new file).
    pub before: String,
    pub after: String,
    pub hunks: Vec<Hunk>,
    /// Asked whatever the session's review mode: the person asked to see this change hunk by
    /// hunk (applying another session's changes).
    pub required: bool,
}

/// How a review ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewVerdict {
    /// Review is off for this session: write as usual.
    NotAsked,
    /// The person decided: write the `accepted` hunks (indexes into the request's hunks).
    Decided { accepted: Vec<usize>, comment: Option<String> },
    /// Nobody can answer (no reviewing editor is connected): the fallback applies.
    Unavailable { fallback: ReviewFallback },
    /// Nobody answered within the timeout: the fallback applies.
    TimedOut { after_ms: u64, fallback: ReviewFallback },
    /// The call was cancelled while it waited (the question is withdrawn).
    Cancelled,
}

/// The host's way to ask for a review.
pub trait ReviewGate: Send + Sync {
    /// Asks about `request` and waits for the answer, the timeout, or `cancel`.
    fn review(
        &self,
        request: ReviewRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, ReviewVerdict>;

    /// Whether call `call_id`'s changes are reviewed (the session's review mode, or a policy
    /// that asks for this call — the agent's `ask` permission mode). Cheap: checked before
    /// computing hunks.
    fn is_on(&self, call_id: &str) -> bool;
}

/// The capability as tools get it.
pub type ReviewHandle = Arc<dyn ReviewGate>;
