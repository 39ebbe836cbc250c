//! One execution through the pipeline, in the documented order (docs/design.md §3): argument
//! snapshot → pre-aborted check → `tools/pre-execute` → approval → guards → `tools/execute`
//! wrappers → body → normalization → token check → `tools/post-execute` → cancellation override →
//! result observers.
//!
//! "Final" outcomes (argument snapshot failure, pre-aborted entry, a throwing listener, approval
//! service or wrapper) skip post-execute; everything else goes through it.

use crate::execution::{CallInput, CanonicalResult, ExecToken, Execution, Finalized, failure_of};
use crate::policy::{
    ApprovalChannel, ApprovalOutcome, AuthoredResult, ExecNext, ExecTail, ExecuteWrapper, Guard,
    PostDecision, PostExecute, PostNext, PreDecision, PreExecute, PreNext, ResultObserver, contain,
};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;
use toolhost_contract::tool::{BodyOutcome, ErasedTool, panic_message};
use toolhost_contract::{BoxFuture, ToolContext, ToolError, lossless_value};
use toolhost_protocol::content::joined_text;
use toolhost_protocol::{ContentBlock, ToolErrorPayload, ToolExecutionResult};

/// Where a dispatch finds tools by name (the registry).
pub(crate) trait Tools: Sync {
    fn resolve(&self, name: &str) -> Option<Arc<dyn ErasedTool>>;
}

/// The policy lists a dispatch runs with, as they were when it started.
#[derive(Default)]
pub(crate) struct Policies {
    pub(crate) pre: Vec<Arc<dyn PreExecute>>,
    pub(crate) guards: Vec<Arc<dyn Guard>>,
    pub(crate) wrappers: Vec<Arc<dyn ExecuteWrapper>>,
    pub(crate) post: Vec<Arc<dyn PostExecute>>,
    pub(crate) observers: Vec<Arc<dyn ResultObserver>>,
    pub(crate) approval: Option<Arc<dyn ApprovalChannel>>,
}

/// One dispatch's view of the registry.
struct Dispatch<'a> {
    tools: &'a dyn Tools,
    policies: &'a Policies,
}

impl ExecTail for Dispatch<'_> {
    fn body<'a>(
        &'a self,
        exec: &'a Execution,
        signal: CancellationToken,
    ) -> BoxFuture<'a, CanonicalResult> {
        Box::pin(invoke_body(self.tools, exec, signal))
    }

    fn settle(&self, exec: &Execution, authored: AuthoredResult) -> CanonicalResult {
        settle_authored(self.tools, exec, authored)
    }
}

async fn invoke_body(
    tools: &dyn Tools,
    exec: &Execution,
    signal: CancellationToken,
) -> CanonicalResult {
    if exec.caller.is_cancelled() || signal.is_cancelled() {
        return CanonicalResult::bound(
            exec.token,
            failure_of(ToolError::aborted_before_dispatch()),
        );
    }
    let Some(tool) = tools.resolve(&exec.name) else {
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
    let cx = ToolContext::new(
        &exec.call_id,
        exec.session_id.as_deref(),
        exec.parent.is_some(),
        fused.clone(),
        Arc::clone(&exec.capabilities),
        Arc::clone(&exec.side),
    );
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
    let concludes = !result.is_error() && exec.side.concludes_turn();
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
    tools: &dyn Tools,
    exec: &Execution,
    authored: AuthoredResult,
) -> CanonicalResult {
    let AuthoredResult { result, additional_contexts } = authored;
    let result = match result {
        failure @ ToolExecutionResult::Failure { .. } => failure,
        ToolExecutionResult::Success { value, .. } => match tools.resolve(&exec.name) {
            Some(tool) => normalize(tool.as_ref(), exec, value),
            None => failure_of(ToolError::unknown_tool(&exec.name)),
        },
    };
    CanonicalResult { token: exec.token, result, additional_contexts, concludes_turn: false }
}

fn trusted_or_renormalized(
    tools: &dyn Tools,
    exec: &Execution,
    res: CanonicalResult,
) -> CanonicalResult {
    if res.token == exec.token {
        return res;
    }
    let contexts = res.additional_contexts.clone();
    settle_authored(
        tools,
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

async fn gate(policies: &Policies, exec: &Execution) -> Gate {
    let decision = match (PreNext { chain: &policies.pre, exec }).run().await {
        Ok(decision) => decision,
        Err(err) => return Gate::Final(failure_of(err)),
    };
    let name = &exec.name;
    let denial = match decision {
        PreDecision::Allow => None,
        PreDecision::Deny { reason } => Some(reason),
        PreDecision::Ask { reason } => match &policies.approval {
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
            // An internal tool's call records what happened outside the host's control (a
            // hosted agent's step already taken): refusing it would only lose the record.
            let internal = exec.tool().is_some_and(|tool| tool.internal());
            let guards = if internal { &[][..] } else { &policies.guards[..] };
            for guard in guards {
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
    tools: &dyn Tools,
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
            let result = match tools.resolve(&exec.name) {
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
pub(crate) async fn dispatch(
    tools: &dyn Tools,
    policies: &Policies,
    input: CallInput,
) -> Finalized {
    let tool = tools.resolve(&input.name);
    let timeout = tool.as_ref().and_then(|t| t.timeout());
    let exec = Execution {
        token: ExecToken::mint(),
        call_id: input.call_id,
        name: input.name,
        arguments: Arc::new(input.arguments),
        parent: input.parent,
        session_id: input.session_id,
        timeout,
        tool,
        caller: input.signal,
        capabilities: input.capabilities,
        side: Arc::default(),
        body_invoked: AtomicBool::new(false),
    };
    let dispatch = Dispatch { tools, policies };
    let res = run(&dispatch, &exec).await;
    let renderer_version = tools.resolve(&exec.name).map_or(0, |t| t.renderer_version());
    let finalized = Finalized {
        result: res.result,
        additional_contexts: res.additional_contexts,
        concludes_turn: res.concludes_turn,
        renderer_version,
    };
    for observer in &policies.observers {
        if std::panic::catch_unwind(AssertUnwindSafe(|| observer.observe(&exec, &finalized)))
            .is_err()
        {
            tracing::warn!(call_id = %exec.call_id, "a tools/result observer panicked");
        }
    }
    finalized
}

async fn run(dispatch: &Dispatch<'_>, exec: &Execution) -> CanonicalResult {
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
    let res = match gate(dispatch.policies, exec).await {
        Gate::Final(result) => return CanonicalResult::bound(exec.token, result),
        Gate::Post(result) => CanonicalResult::bound(exec.token, result),
        Gate::Proceed => {
            let next = ExecNext { chain: &dispatch.policies.wrappers, exec, tail: dispatch };
            let res = match next.run(exec.caller.child_token()).await {
                Ok(res) => res,
                Err(err) => return CanonicalResult::bound(exec.token, failure_of(err)),
            };
            let mut res = trusted_or_renormalized(dispatch.tools, exec, res);
            let mut contexts = exec.side.take_deferred();
            contexts.append(&mut res.additional_contexts);
            res.additional_contexts = contexts;
            cancel_override(exec, res)
        }
    };
    let decision = (PostNext { chain: &dispatch.policies.post, exec, result: &res }).run().await;
    let res = match decision {
        Ok(decision) => apply_post(dispatch.tools, exec, res, decision),
        Err(err) => CanonicalResult::bound(exec.token, failure_of(err)),
    };
    cancel_override(exec, res)
}
