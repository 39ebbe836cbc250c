//! Policy extension points of the pipeline: `tools/pre-execute` (waterfall), approval, guards,
//! `tools/execute` wrappers (around-middleware), `tools/post-execute` (waterfall) and result
//! observers. Waterfall listeners receive a `next` handle; registration order is outer → inner.

use crate::execution::{CanonicalResult, Execution, Finalized};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_contract::tool::panic_message;
use toolhost_contract::{AdditionalContext, BoxFuture, ToolError};
use toolhost_protocol::{ContentBlock, ToolExecutionResult};

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
        signal: CancellationToken,
        next: ExecNext<'a>,
    ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>>;
}

/// What the end of the `tools/execute` chain does (the pipeline implements it): run the body,
/// and settle a result a wrapper authored.
pub(crate) trait ExecTail: Sync {
    fn body<'a>(
        &'a self,
        exec: &'a Execution,
        signal: CancellationToken,
    ) -> BoxFuture<'a, CanonicalResult>;
    fn settle(&self, exec: &Execution, authored: AuthoredResult) -> CanonicalResult;
}

/// The rest of the `tools/execute` chain, ending in the body.
pub struct ExecNext<'a> {
    pub(crate) chain: &'a [Arc<dyn ExecuteWrapper>],
    pub(crate) exec: &'a Execution,
    pub(crate) tail: &'a dyn ExecTail,
}

impl<'a> ExecNext<'a> {
    /// Runs the inner wrappers and the body under `signal` (fused with the caller's signal).
    /// An error escaping a wrapper propagates (like a throw) and ends as a final result that skips
    /// post-execute; wrappers pass it on with `?`.
    pub fn run(
        self,
        signal: CancellationToken,
    ) -> BoxFuture<'a, Result<CanonicalResult, ToolError>> {
        Box::pin(async move {
            let Some((first, rest)) = self.chain.split_first() else {
                return Ok(self.tail.body(self.exec, signal).await);
            };
            let next = ExecNext { chain: rest, exec: self.exec, tail: self.tail };
            let outcome =
                contain("tools/execute wrapper", first.wrap(self.exec, signal, next)).await;
            match outcome? {
                WrapperOutcome::Canonical(res) => Ok(res),
                WrapperOutcome::Authored(authored) => Ok(self.tail.settle(self.exec, authored)),
            }
        })
    }
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
    fn observe(&self, exec: &Execution, result: &Finalized);
}

/// Runs a listener future, turning a panic into a plain failure.
pub(crate) async fn contain<T>(
    what: &str,
    fut: BoxFuture<'_, Result<T, ToolError>>,
) -> Result<T, ToolError> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(res) => res,
        Err(payload) => {
            Err(ToolError::plain(format!("{what} panicked: {}", panic_message(payload.as_ref()))))
        }
    }
}
