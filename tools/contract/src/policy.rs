//! Policy extension points of the pipeline: `tools/pre-execute` (waterfall), approval, guards,
//! `tools/execute` wrappers (around-middleware), `tools/post-execute` (waterfall) and result
//! observers. Waterfall listeners receive a `next` handle; registration order is outer → inner.

use crate::context::AdditionalContext;
use crate::error::ToolError;
use crate::pipeline::{CanonicalResult, Execution};
use crate::tool::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use toolhost_protocol::{ContentBlock, ToolExecutionResult};

pub use crate::pipeline::ExecNext;

/// A pre-execute decision. Arguments cannot be rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreDecision {
    Allow,
    Deny { reason: String },
    Ask { reason: Option<String> },
}

/// A `tools/pre-execute` listener.
pub trait PreExecute: Send + Sync {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        next: PreNext<'a>,
    ) -> BoxFuture<'a, Result<PreDecision, ToolError>>;
}

/// The rest of the pre-execute chain; its default decision is `Allow`.
pub struct PreNext<'a> {
    pub(crate) chain: &'a [Arc<dyn PreExecute>],
    pub(crate) exec: &'a Execution,
}

impl<'a> PreNext<'a> {
    pub fn run(self) -> BoxFuture<'a, Result<PreDecision, ToolError>> {
        Box::pin(async move {
            let Some((first, rest)) = self.chain.split_first() else {
                return Ok(PreDecision::Allow);
            };
            let next = PreNext { chain: rest, exec: self.exec };
            contain("tools/pre-execute listener", first.decide(self.exec, next)).await
        })
    }
}

/// What the user (or the approval service) answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalOutcome {
    AllowedOnce,
    Rejected,
    Cancelled,
    Unavailable,
}

/// Resolves `ask` decisions (the editor's approval prompt).
pub trait ApprovalChannel: Send + Sync {
    fn request<'a>(
        &'a self,
        exec: &'a Execution,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ApprovalOutcome, ToolError>>;
}

/// A deny-only guard: returns a denial reason or nothing.
pub trait Guard: Send + Sync {
    fn check(&self, exec: &Execution) -> Result<Option<String>, ToolError>;
}

/// A result authored outside the registry (by a wrapper): failures are kept verbatim, successes are
/// re-normalized under the active tool's declaration (content and meta recomputed).
#[derive(Clone, Debug, PartialEq)]
pub struct AuthoredResult {
    pub result: ToolExecutionResult,
    pub additional_contexts: Vec<AdditionalContext>,
}

/// What a `tools/execute` wrapper returns.
#[derive(Clone, Debug)]
pub enum WrapperOutcome {
    /// A canonical result (from `next`, or cached from an earlier call — then re-normalized).
    Canonical(CanonicalResult),
    Authored(AuthoredResult),
}

/// A `tools/execute` around-wrapper. It may run `next` with a different signal (e.g. a deadline)
/// or short-circuit with its own result.
pub trait ExecuteWrapper: Send + Sync {
    fn wrap<'a>(
        &'a self,
        exec: &'a Execution,
        signal: tokio_util::sync::CancellationToken,
        next: ExecNext<'a>,
    ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>>;
}

/// A post-execute decision.
#[derive(Clone, Debug, PartialEq)]
pub enum PostDecision {
    /// Keep the result, optionally replacing only the content or only the value.
    Accept {
        content: Option<Vec<ContentBlock>>,
        value: Option<Value>,
        additional_contexts: Vec<AdditionalContext>,
    },
    /// Turn the result into a failure whose content is `feedback`.
    Block { feedback: Vec<ContentBlock>, additional_contexts: Vec<AdditionalContext> },
}

impl PostDecision {
    /// Plain accept.
    pub fn accept() -> Self {
        PostDecision::Accept { content: None, value: None, additional_contexts: Vec::new() }
    }
}

/// A `tools/post-execute` listener.
pub trait PostExecute: Send + Sync {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        result: &'a CanonicalResult,
        next: PostNext<'a>,
    ) -> BoxFuture<'a, Result<PostDecision, ToolError>>;
}

/// The rest of the post-execute chain; its default decision is a plain accept.
pub struct PostNext<'a> {
    pub(crate) chain: &'a [Arc<dyn PostExecute>],
    pub(crate) exec: &'a Execution,
    pub(crate) result: &'a CanonicalResult,
}

impl<'a> PostNext<'a> {
    pub fn run(self) -> BoxFuture<'a, Result<PostDecision, ToolError>> {
        Box::pin(async move {
            let Some((first, rest)) = self.chain.split_first() else {
                return Ok(PostDecision::accept());
            };
            let next = PostNext { chain: rest, exec: self.exec, result: self.result };
            contain("tools/post-execute listener", first.decide(self.exec, self.result, next)).await
        })
    }
}

/// A `tools/result` observer: sees every final result; its panics are contained.
pub trait ResultObserver: Send + Sync {
    fn observe(&self, exec: &Execution, result: &crate::pipeline::Finalized);
}

/// Runs a listener future, turning a panic into a plain failure.
pub(crate) async fn contain<T>(
    what: &str,
    fut: BoxFuture<'_, Result<T, ToolError>>,
) -> Result<T, ToolError> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(res) => res,
        Err(payload) => Err(ToolError::plain(format!(
            "{what} panicked: {}",
            crate::tool::panic_message(payload.as_ref())
        ))),
    }
}
