//! One execution through the pipeline, in the documented order (docs/design.md §3): argument
//! snapshot → pre-aborted check → `tools/pre-execute` → approval → guards → `tools/execute`
//! wrappers → body → normalization → token check → `tools/post-execute` → cancellation override →
//! result observers.
//!
//! "Final" outcomes (argument snapshot failure, pre-aborted entry, a throwing listener, approval
//! service or wrapper) skip post-execute; everything else goes through it.

use crate::capabilities::Capabilities;
use crate::context::{AdditionalContext, SideChannels, ToolContext};
use crate::error::ToolError;
use crate::policy::{
    ApprovalOutcome, AuthoredResult, ExecuteWrapper, PostDecision, PostNext, PreDecision, PreNext,
    WrapperOutcome, contain,
};
use crate::registry::RegistryInner;
use crate::snapshot::lossless_value;
use crate::tool::{BodyOutcome, BoxFuture, ErasedTool, panic_message};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_protocol::content::joined_text;
use toolhost_protocol::{ContentBlock, ToolErrorPayload, ToolExecutionResult};

/// Opaque identity of one execution. Never serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecToken(u64);

impl ExecToken {
    fn mint() -> Self {
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
    caller: CancellationToken,
    capabilities: Arc<Capabilities>,
    side: Arc<SideChannels>,
    body_invoked: AtomicBool,
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
}

/// A result bound to the execution that produced it. Only the registry constructs one.
#[derive(Clone, Debug)]
pub struct CanonicalResult {
    token: ExecToken,
    result: ToolExecutionResult,
    additional_contexts: Vec<AdditionalContext>,
    concludes_turn: bool,
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

    fn bound(token: ExecToken, result: ToolExecutionResult) -> Self {
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

fn failure_of(err: ToolError) -> ToolExecutionResult {
    ToolExecutionResult::failure(err.message, err.info)
}

/// The rest of the `tools/execute` chain, ending in the body.
pub struct ExecNext<'a> {
    pub(crate) chain: &'a [Arc<dyn ExecuteWrapper>],
    pub(crate) exec: &'a Execution,
    pub(crate) registry: &'a RegistryInner,
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
                return Ok(invoke_body(self.registry, self.exec, signal).await);
            };
            let next = ExecNext { chain: rest, exec: self.exec, registry: self.registry };
            let outcome =
                contain("tools/execute wrapper", first.wrap(self.exec, signal, next)).await;
            match outcome? {
                WrapperOutcome::Canonical(res) => Ok(res),
                WrapperOutcome::Authored(authored) => {
                    Ok(settle_authored(self.registry, self.exec, authored))
                }
            }
        })
    }
}

async fn invoke_body(
    registry: &RegistryInner,
    exec: &Execution,
    signal: CancellationToken,
) -> CanonicalResult {
    if exec.caller.is_cancelled() || signal.is_cancelled() {
        return CanonicalResult::bound(
            exec.token,
            failure_of(ToolError::aborted_before_dispatch()),
        );
    }
    let Some(tool) = registry.resolve(&exec.name) else {
        return CanonicalResult::bound(exec.token, failure_of(ToolError::unknown_tool(&exec.name)));
    };
    // Fuse the caller's signal with the wrapper's: either one cancels the body.
    let fused = CancellationToken::new();
    let done = CancellationToken::new();
    {
        let (caller, wrapper, fused, done) =
            (exec.caller.clone(), signal.clone(), fused.clone(), done.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = caller.cancelled() => fused.cancel(),
                _ = wrapper.cancelled() => fused.cancel(),
                _ = done.cancelled() => {}
            }
        });
    }
    exec.body_invoked.store(true, Ordering::SeqCst);
    let cx = ToolContext {
        call_id: Arc::from(exec.call_id.as_str()),
        session_id: exec.session_id.as_deref().map(Arc::from),
        nested: exec.parent.is_some(),
        signal: fused.clone(),
        capabilities: Arc::clone(&exec.capabilities),
        side: Arc::clone(&exec.side),
    };
    // A started body is always awaited to completion, never dropped.
    let outcome =
        AssertUnwindSafe(tool.invoke(Arc::clone(&exec.arguments), cx)).catch_unwind().await;
    done.cancel();
    let result = match outcome {
        Err(payload) => failure_of(ToolError::typed(
            "InternalError",
            "INTERNAL_ERROR",
            format!("tool \"{}\" panicked: {}", exec.name, panic_message(payload.as_ref())),
        )),
        Ok(BodyOutcome::Failed(err)) => failure_of(err),
        Ok(BodyOutcome::Lossy(detail)) => {
            failure_of(ToolError::invalid_output(&exec.name, &detail))
        }
        Ok(BodyOutcome::Value(value)) => {
            let res = normalize(tool.as_ref(), exec, value);
            if fused.is_cancelled() && !res.is_error() {
                failure_of(ToolError::aborted())
            } else {
                res
            }
        }
    };
    let concludes = !result.is_error() && exec.side.concludes_turn.load(Ordering::SeqCst);
    CanonicalResult {
        token: exec.token,
        result,
        additional_contexts: Vec::new(),
        concludes_turn: concludes,
    }
}

/// The canonical step: validate the (already lossless) value, then render and project from it.
pub(crate) fn normalize(
    tool: &dyn ErasedTool,
    exec: &Execution,
    value: Value,
) -> ToolExecutionResult {
    let name = tool.name();
    if lossless_value(&value).is_err() {
        return failure_of(ToolError::invalid_output(name, "value is not lossless JSON"));
    }
    let violations = tool.output_schema().violations(&value, "value");
    if !violations.is_empty() {
        return failure_of(ToolError::invalid_output(name, &violations.join("; ")));
    }
    let (content, meta) = match tool.project(&exec.arguments, &value, exec.is_direct()) {
        Ok(projection) => projection,
        Err(detail) => return failure_of(ToolError::invalid_output(name, &detail)),
    };
    if meta.as_ref().is_some_and(|m| lossless_value(m).is_err()) {
        return failure_of(ToolError::invalid_output(
            name,
            "output.presentationMeta returned non-lossless JSON",
        ));
    }
    ToolExecutionResult::Success { value, content, meta }
}

/// A result that did not come from this execution's own normalization.
fn settle_authored(
    registry: &RegistryInner,
    exec: &Execution,
    authored: AuthoredResult,
) -> CanonicalResult {
    let AuthoredResult { result, additional_contexts } = authored;
    let result = match result {
        failure @ ToolExecutionResult::Failure { .. } => failure,
        ToolExecutionResult::Success { value, .. } => match registry.resolve(&exec.name) {
            Some(tool) => normalize(tool.as_ref(), exec, value),
            None => failure_of(ToolError::unknown_tool(&exec.name)),
        },
    };
    CanonicalResult { token: exec.token, result, additional_contexts, concludes_turn: false }
}

fn trusted_or_renormalized(
    registry: &RegistryInner,
    exec: &Execution,
    res: CanonicalResult,
) -> CanonicalResult {
    if res.token == exec.token {
        return res;
    }
    let contexts = res.additional_contexts.clone();
    settle_authored(
        registry,
        exec,
        AuthoredResult { result: res.result, additional_contexts: contexts },
    )
}

fn cancel_override(exec: &Execution, mut res: CanonicalResult) -> CanonicalResult {
    if exec.caller.is_cancelled() && !res.result.is_error() {
        let err = if exec.body_invoked.load(Ordering::SeqCst) {
            ToolError::aborted()
        } else {
            ToolError::aborted_before_dispatch()
        };
        res.result = failure_of(err);
        res.concludes_turn = false;
    }
    res
}

enum Gate {
    Proceed,
    /// A denial or cancellation that still goes through post-execute.
    Post(ToolExecutionResult),
    /// A final result that skips post-execute.
    Final(ToolExecutionResult),
}

async fn gate(registry: &RegistryInner, exec: &Execution) -> Gate {
    let pre = registry.pre_listeners();
    let decision = match (PreNext { chain: &pre, exec }).run().await {
        Ok(decision) => decision,
        Err(err) => return Gate::Final(failure_of(err)),
    };
    let name = &exec.name;
    let denial = match decision {
        PreDecision::Allow => None,
        PreDecision::Deny { reason } => Some(reason),
        PreDecision::Ask { reason } => match registry.approval_channel() {
            None => Some(reason.unwrap_or_else(|| {
                format!("tool \"{name}\" requires approval (not yet supported)")
            })),
            Some(channel) => {
                let outcome =
                    contain("approval channel", channel.request(exec, reason.as_deref())).await;
                match outcome {
                    Err(err) => return Gate::Final(failure_of(err)),
                    Ok(ApprovalOutcome::AllowedOnce) => None,
                    Ok(ApprovalOutcome::Rejected) => {
                        Some(format!("the user rejected tool \"{name}\""))
                    }
                    Ok(ApprovalOutcome::Cancelled) if exec.caller.is_cancelled() => {
                        return Gate::Post(failure_of(ToolError::aborted_before_dispatch()));
                    }
                    Ok(ApprovalOutcome::Cancelled) => {
                        Some(format!("approval for tool \"{name}\" was cancelled"))
                    }
                    Ok(ApprovalOutcome::Unavailable) => Some(format!(
                        "tool \"{name}\" requires approval, but no approval channel is available"
                    )),
                }
            }
        },
    };
    let denial = match denial {
        Some(reason) => Some(reason),
        None => {
            let mut reason = None;
            for guard in registry.guards() {
                let checked = std::panic::catch_unwind(AssertUnwindSafe(|| guard.check(exec)))
                    .unwrap_or_else(|p| {
                        Err(ToolError::plain(format!(
                            "guard panicked: {}",
                            panic_message(p.as_ref())
                        )))
                    });
                match checked {
                    Ok(Some(r)) => {
                        reason = Some(r);
                        break;
                    }
                    Ok(None) => {}
                    Err(err) => return Gate::Final(failure_of(err)),
                }
            }
            reason
        }
    };
    match denial {
        Some(reason) => Gate::Post(ToolExecutionResult::failure(reason, None)),
        None if exec.caller.is_cancelled() => {
            Gate::Post(failure_of(ToolError::aborted_before_dispatch()))
        }
        None => Gate::Proceed,
    }
}

/// Applies the post-execute decision to the canonical result.
fn apply_post(
    registry: &RegistryInner,
    exec: &Execution,
    res: CanonicalResult,
    decision: PostDecision,
) -> CanonicalResult {
    match decision {
        PostDecision::Block { feedback, additional_contexts } => {
            let mut message = joined_text(&feedback);
            if message.is_empty() {
                message = "tool result blocked by post-execute policy".to_owned();
            }
            let result = ToolExecutionResult::Failure {
                error: ToolErrorPayload { message, info: None },
                content: feedback,
                meta: None,
            };
            CanonicalResult {
                token: exec.token,
                result,
                additional_contexts,
                concludes_turn: false,
            }
        }
        PostDecision::Accept { content: Some(_), value: Some(_), .. } => CanonicalResult::bound(
            exec.token,
            failure_of(ToolError::plain(
                "tools/post-execute accept decision cannot replace both value and content",
            )),
        ),
        PostDecision::Accept { value: Some(value), additional_contexts, .. } => {
            if res.result.is_error() {
                return CanonicalResult::bound(
                    exec.token,
                    failure_of(ToolError::plain(
                        "tools/post-execute cannot replace the value of a failed result",
                    )),
                );
            }
            let result = match registry.resolve(&exec.name) {
                Some(tool) => normalize(tool.as_ref(), exec, value),
                None => failure_of(ToolError::unknown_tool(&exec.name)),
            };
            let mut contexts = res.additional_contexts;
            contexts.extend(additional_contexts);
            let concludes = res.concludes_turn && !result.is_error();
            CanonicalResult {
                token: exec.token,
                result,
                additional_contexts: contexts,
                concludes_turn: concludes,
            }
        }
        PostDecision::Accept { content, value: None, additional_contexts } => {
            let mut res = res;
            if let Some(content) = content {
                res.result = replace_content(res.result, content);
            }
            res.additional_contexts.extend(additional_contexts);
            res
        }
    }
}

fn replace_content(result: ToolExecutionResult, content: Vec<ContentBlock>) -> ToolExecutionResult {
    match result {
        ToolExecutionResult::Success { value, meta, .. } => {
            ToolExecutionResult::Success { value, content, meta }
        }
        ToolExecutionResult::Failure { error, meta, .. } => {
            ToolExecutionResult::Failure { error, content, meta }
        }
    }
}

/// Runs one call through the whole pipeline.
pub(crate) async fn dispatch(registry: &Arc<RegistryInner>, input: CallInput) -> Finalized {
    let timeout = registry.resolve(&input.name).and_then(|t| t.timeout());
    let exec = Execution {
        token: ExecToken::mint(),
        call_id: input.call_id,
        name: input.name,
        arguments: Arc::new(input.arguments),
        parent: input.parent,
        session_id: input.session_id,
        timeout,
        caller: input.signal,
        capabilities: input.capabilities,
        side: Arc::default(),
        body_invoked: AtomicBool::new(false),
    };
    let res = run(registry, &exec).await;
    let renderer_version = registry.resolve(&exec.name).map_or(0, |t| t.renderer_version());
    let finalized = Finalized {
        result: res.result,
        additional_contexts: res.additional_contexts,
        concludes_turn: res.concludes_turn,
        renderer_version,
    };
    for observer in registry.observers() {
        if std::panic::catch_unwind(AssertUnwindSafe(|| observer.observe(&exec, &finalized)))
            .is_err()
        {
            tracing::warn!(call_id = %exec.call_id, "a tools/result observer panicked");
        }
    }
    finalized
}

async fn run(registry: &RegistryInner, exec: &Execution) -> CanonicalResult {
    if lossless_value(&exec.arguments).is_err() {
        return CanonicalResult::bound(
            exec.token,
            ToolExecutionResult::failure(
                "tool execution arguments must be losslessly JSON-serializable",
                None,
            ),
        );
    }
    if exec.caller.is_cancelled() {
        return CanonicalResult::bound(
            exec.token,
            failure_of(ToolError::aborted_before_dispatch()),
        );
    }
    let res = match gate(registry, exec).await {
        Gate::Final(result) => return CanonicalResult::bound(exec.token, result),
        Gate::Post(result) => CanonicalResult::bound(exec.token, result),
        Gate::Proceed => {
            let wrappers = registry.wrappers();
            let next = ExecNext { chain: &wrappers, exec, registry };
            let res = match next.run(exec.caller.child_token()).await {
                Ok(res) => res,
                Err(err) => return CanonicalResult::bound(exec.token, failure_of(err)),
            };
            let mut res = trusted_or_renormalized(registry, exec, res);
            let mut contexts = exec.side.take_deferred();
            contexts.append(&mut res.additional_contexts);
            res.additional_contexts = contexts;
            cancel_override(exec, res)
        }
    };
    let post = registry.post_listeners();
    let decision = (PostNext { chain: &post, exec, result: &res }).run().await;
    let res = match decision {
        Ok(decision) => apply_post(registry, exec, res, decision),
        Err(err) => CanonicalResult::bound(exec.token, failure_of(err)),
    };
    cancel_override(exec, res)
}

/// The built-in timeout policy: a wrapper that installs the tool's deadline.
pub(crate) struct TimeoutWrapper;

impl ExecuteWrapper for TimeoutWrapper {
    fn wrap<'a>(
        &'a self,
        exec: &'a Execution,
        signal: CancellationToken,
        next: ExecNext<'a>,
    ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>> {
        Box::pin(async move {
            let Some(timeout) = exec.timeout else {
                return Ok(WrapperOutcome::Canonical(next.run(signal).await?));
            };
            let deadline = signal.child_token();
            let fired = Arc::new(AtomicBool::new(false));
            let timer = {
                let (deadline, fired) = (deadline.clone(), Arc::clone(&fired));
                tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    fired.store(true, Ordering::SeqCst);
                    deadline.cancel();
                })
            };
            let res = next.run(deadline).await;
            timer.abort();
            let res = res?;
            if fired.load(Ordering::SeqCst) {
                let result = failure_of(ToolError::timed_out(timeout.as_millis()));
                return Ok(WrapperOutcome::Authored(AuthoredResult {
                    result,
                    additional_contexts: res.additional_contexts,
                }));
            }
            Ok(WrapperOutcome::Canonical(res))
        })
    }
}
