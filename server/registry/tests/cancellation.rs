//! The cancellation matrix of docs/design.md §3: where the caller's cancellation lands
//! decides between `ABORTED_BEFORE_DISPATCH`, `ABORTED`, a kept denial and a kept tool failure; a
//! started body is always awaited; a pre-aborted entry publishes one result and runs no phase.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use toolhost_contract::protocol::{ContentBlock, ToolExecutionResult};
use toolhost_contract::{BoxFuture, CancellationToken, RawTool, ToolError};
use toolhost_registry::{
    ApprovalChannel, ApprovalOutcome, AuthoredResult, Execution, PostDecision, PreDecision,
    Registry, WrapperOutcome,
};

/// A string tool whose body is `body`, counting its invocations.
fn tool<F, Fut>(name: &str, calls: &Arc<std::sync::atomic::AtomicUsize>, body: F) -> RawTool
where
    F: Fn(toolhost_contract::ToolContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<serde_json::Value, ToolError>> + Send + 'static,
{
    let calls = Arc::clone(calls);
    RawTool::new(name)
        .with_output_schema(json!({"type": "string"}))
        .with_render(|_args, value| vec![ContentBlock::text(value.as_str().unwrap_or_default())])
        .with_execute(move |_args, cx| {
            bump(&calls);
            body(cx)
        })
}

fn instant_tool(name: &str, calls: &Arc<std::sync::atomic::AtomicUsize>) -> RawTool {
    tool(name, calls, |_cx| async { Ok(json!("ran")) })
}

#[tokio::test]
async fn cancel_during_pre_execute_skips_the_body() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register_raw(instant_tool("must-not-run", &calls)).unwrap();
    registry.add_pre_execute(pre(|exec, next| {
        Box::pin(async move {
            exec.caller_signal().cancel();
            next.run().await
        })
    }));
    let posted = counter();
    let p = Arc::clone(&posted);
    registry.add_post_execute(
        post(move |_e, _r, next| {
            bump(&p);
            Box::pin(next.run())
        }),
        false,
    );
    let res = registry.dispatch(call("must-not-run", json!({}))).await;
    assert_failure(&res, "tool call aborted before dispatch", Some("ABORTED_BEFORE_DISPATCH"));
    assert_eq!(info_name(&res), Some("AbortError"));
    assert_eq!(count(&calls), 0);
    assert_eq!(count(&posted), 1, "cancellation during pre-execute is a post result");
}

#[tokio::test]
async fn denial_settling_after_cancel_stays_a_denial() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register_raw(instant_tool("denied-after-cancel", &calls)).unwrap();
    registry.add_pre_execute(pre(|exec, _next| {
        Box::pin(async move {
            exec.caller_signal().cancel();
            Ok(PreDecision::Deny { reason: "policy denied the call".to_owned() })
        })
    }));
    let res = registry.dispatch(call("denied-after-cancel", json!({}))).await;
    assert_eq!(
        wire(&res),
        json!({
            "isError": true,
            "error": {"message": "policy denied the call"},
            "content": [{"type": "text", "text": "Error: policy denied the call"}]
        })
    );
    assert_eq!(count(&calls), 0);
}

#[tokio::test]
async fn pre_execute_error_settling_after_cancel_is_kept() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register_raw(instant_tool("must-not-run", &calls)).unwrap();
    registry.add_pre_execute(pre(|exec, _next| {
        Box::pin(async move {
            exec.caller_signal().cancel();
            Err(ToolError::plain("gate interrupted"))
        })
    }));
    let res = registry.dispatch(call("must-not-run", json!({}))).await;
    assert_failure(&res, "gate interrupted", None);
    assert_eq!(count(&calls), 0);
}

/// Cancels the caller while "asking", then answers with a fixed outcome.
struct CancellingApproval(ApprovalOutcome);

impl ApprovalChannel for CancellingApproval {
    fn request<'a>(
        &'a self,
        exec: &'a Execution,
        _reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ApprovalOutcome, ToolError>> {
        exec.caller_signal().cancel();
        let outcome = self.0;
        Box::pin(async move { Ok(outcome) })
    }
}

#[tokio::test]
async fn cancellation_overtaking_approval_is_aborted_before_dispatch() {
    for outcome in [ApprovalOutcome::AllowedOnce, ApprovalOutcome::Cancelled] {
        let registry = Registry::default();
        let calls = counter();
        let _d = registry.register_raw(instant_tool("approval-probe", &calls)).unwrap();
        registry.add_pre_execute(pre(|_e, _n| {
            Box::pin(async { Ok(PreDecision::Ask { reason: None }) })
        }));
        registry.set_approval_channel(Some(Arc::new(CancellingApproval(outcome))));
        let res = registry.dispatch(call("approval-probe", json!({}))).await;
        assert_failure(&res, "tool call aborted before dispatch", Some("ABORTED_BEFORE_DISPATCH"));
        assert_eq!(count(&calls), 0);
    }
    // A rejection that settles after cancellation stays a denial.
    let registry = Registry::default();
    let _d = registry.register_raw(instant_tool("approval-probe", &counter())).unwrap();
    registry
        .add_pre_execute(pre(|_e, _n| Box::pin(async { Ok(PreDecision::Ask { reason: None }) })));
    registry.set_approval_channel(Some(Arc::new(CancellingApproval(ApprovalOutcome::Rejected))));
    let res = registry.dispatch(call("approval-probe", json!({}))).await;
    assert_failure(&res, r#"the user rejected tool "approval-probe""#, None);
}

#[tokio::test]
async fn wrapper_supplying_an_already_cancelled_signal_skips_the_body() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register_raw(instant_tool("must-not-run", &calls)).unwrap();
    registry.add_execute_wrapper(wrapper(|_exec, _signal, next| {
        Box::pin(async move {
            let replacement = CancellationToken::new();
            replacement.cancel();
            Ok(WrapperOutcome::Canonical(next.run(replacement).await?))
        })
    }));
    let signal = CancellationToken::new();
    let res = registry.dispatch(call_with_signal("must-not-run", json!({}), &signal)).await;
    assert_failure(&res, "tool call aborted before dispatch", Some("ABORTED_BEFORE_DISPATCH"));
    assert_eq!(info_name(&res), Some("AbortError"));
    assert_eq!(count(&calls), 0);
    assert!(!signal.is_cancelled(), "the caller was never cancelled");
}

#[tokio::test]
async fn caller_cancel_inside_a_wrapper_before_next_skips_the_body() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register_raw(instant_tool("must-not-run", &calls)).unwrap();
    registry.add_execute_wrapper(wrapper(|exec, _signal, next| {
        Box::pin(async move {
            exec.caller_signal().cancel();
            // The wrapper delegates under a fresh, uncancelled signal; the caller's is re-fused.
            Ok(WrapperOutcome::Canonical(next.run(CancellationToken::new()).await?))
        })
    }));
    let res = registry.dispatch(call("must-not-run", json!({}))).await;
    assert_failure(&res, "tool call aborted before dispatch", Some("ABORTED_BEFORE_DISPATCH"));
    assert_eq!(count(&calls), 0);
}

#[tokio::test]
async fn cancellation_overtaking_a_wrapper_short_circuit_is_aborted_before_dispatch() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register_raw(instant_tool("short-circuited", &calls)).unwrap();
    registry.add_execute_wrapper(wrapper(|exec, _signal, _next| {
        Box::pin(async move {
            exec.caller_signal().cancel();
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result: ToolExecutionResult::Success {
                    value: json!("wrapper success"),
                    content: vec![ContentBlock::text("wrapper success")],
                    meta: None,
                },
                additional_contexts: vec![ctx("wrapper")],
            }))
        })
    }));
    let res = registry.dispatch(call("short-circuited", json!({}))).await;
    assert_failure(&res, "tool call aborted before dispatch", Some("ABORTED_BEFORE_DISPATCH"));
    assert_eq!(sources(&res), ["wrapper"]);
    assert_eq!(count(&calls), 0);
}

#[tokio::test]
async fn late_success_is_aborted_and_keeps_deferred_contexts() {
    let registry = Registry::default();
    let calls = counter();
    let entered = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (e, r) = (Arc::clone(&entered), Arc::clone(&release));
    let _d = registry
        .register_raw(tool("late", &calls, move |cx| {
            let (e, r) = (Arc::clone(&e), Arc::clone(&r));
            async move {
                cx.defer_context("child", "completed child work");
                e.notify_one();
                // Ignores its signal and finishes successfully after the caller cancelled.
                r.notified().await;
                Ok(json!("body complete"))
            }
        }))
        .unwrap();
    let signal = CancellationToken::new();
    let input = call_with_signal("late", json!({}), &signal);
    let (res, ()) = tokio::join!(registry.dispatch(input), async {
        entered.notified().await;
        signal.cancel();
        release.notify_one();
    });
    assert_failure(&res, "tool call aborted", Some("ABORTED"));
    assert_eq!(info_name(&res), Some("AbortError"));
    assert_eq!(sources(&res), ["child"]);
    assert_eq!(count(&calls), 1);
}

#[tokio::test]
async fn success_cancelled_while_a_wrapper_settles_is_aborted() {
    let registry = Registry::default();
    let _d = registry
        .register_raw(tool("completed-before-wrapper", &counter(), |cx| async move {
            cx.defer_context("child", "completed child work");
            Ok(json!("body complete"))
        }))
        .unwrap();
    registry.add_execute_wrapper(wrapper(|exec, signal, next| {
        Box::pin(async move {
            let res = next.run(signal).await?;
            exec.caller_signal().cancel();
            Ok(WrapperOutcome::Canonical(res))
        })
    }));
    let res = registry.dispatch(call("completed-before-wrapper", json!({}))).await;
    assert_failure(&res, "tool call aborted", Some("ABORTED"));
    assert_eq!(sources(&res), ["child"]);
}

#[tokio::test]
async fn success_cancelled_during_post_execute_is_aborted_with_all_contexts() {
    let registry = Registry::default();
    let _d = registry
        .register_raw(tool("completed-before-post", &counter(), |cx| async move {
            cx.defer_context("child", "completed child work");
            Ok(json!("body complete"))
        }))
        .unwrap();
    registry.add_post_execute(
        post(|exec, _r, next| {
            Box::pin(async move {
                let decision = next.run().await?;
                exec.caller_signal().cancel();
                let PostDecision::Accept { content, value, .. } = decision else {
                    return Ok(decision);
                };
                Ok(PostDecision::Accept { content, value, additional_contexts: vec![ctx("post")] })
            })
        }),
        false,
    );
    let res = registry.dispatch(call("completed-before-post", json!({}))).await;
    assert_failure(&res, "tool call aborted", Some("ABORTED"));
    assert_eq!(sources(&res), ["child", "post"]);
}

#[tokio::test]
async fn post_execute_failure_settling_after_cancel_is_kept() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_post_execute(
        post(|exec, _r, _next| {
            Box::pin(async move {
                exec.caller_signal().cancel();
                Err(ToolError::typed("HarnessError", "POST_FAILURE", "post-policy failed"))
            })
        }),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "post-policy failed", Some("POST_FAILURE"));
}

#[tokio::test]
async fn tool_owned_failure_after_abort_is_kept() {
    let registry = Registry::default();
    let entered = Arc::new(Notify::new());
    let e = Arc::clone(&entered);
    let _d = registry
        .register_raw(tool("tool-failure", &counter(), move |cx| {
            let e = Arc::clone(&e);
            async move {
                e.notify_one();
                cx.signal().cancelled().await;
                Err(ToolError::typed("HarnessError", "TOOL_FAILURE", "tool failed"))
            }
        }))
        .unwrap();
    let signal = CancellationToken::new();
    let input = call_with_signal("tool-failure", json!({}), &signal);
    let (res, ()) = tokio::join!(registry.dispatch(input), async {
        entered.notified().await;
        signal.cancel();
    });
    assert_failure(&res, "tool failed", Some("TOOL_FAILURE"));
    assert_eq!(info_name(&res), Some("HarnessError"));
}

#[tokio::test]
async fn caller_cancellation_reaches_the_body_through_a_wrapper_signal() {
    // The body's signal fuses the caller's with the wrapper's replacement: cancelling the caller
    // stops a cooperative body even though the wrapper installed its own token.
    let registry = Registry::default();
    let entered = Arc::new(Notify::new());
    let e = Arc::clone(&entered);
    let _d = registry
        .register_raw(tool("cooperative", &counter(), move |cx| {
            let e = Arc::clone(&e);
            async move {
                e.notify_one();
                cx.signal().cancelled().await;
                Ok(json!("stopped"))
            }
        }))
        .unwrap();
    let replacement = CancellationToken::new();
    let installed = replacement.clone();
    registry.add_execute_wrapper(wrapper(move |_exec, _signal, next| {
        let installed = installed.clone();
        Box::pin(async move { Ok(WrapperOutcome::Canonical(next.run(installed).await?)) })
    }));
    let signal = CancellationToken::new();
    let input = call_with_signal("cooperative", json!({}), &signal);
    let (res, ()) = tokio::join!(registry.dispatch(input), async {
        entered.notified().await;
        signal.cancel();
    });
    assert_failure(&res, "tool call aborted", Some("ABORTED"));
    assert!(!replacement.is_cancelled(), "the wrapper's own token is not cancelled by the caller");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncooperative_body_is_awaited_before_aborted_returns() {
    let registry = Registry::default();
    let entered = Arc::new(Notify::new());
    let finished = Arc::new(AtomicBool::new(false));
    let (e, f) = (Arc::clone(&entered), Arc::clone(&finished));
    let _d = registry
        .register_raw(tool("uncooperative", &counter(), move |cx| {
            let (e, f) = (Arc::clone(&e), Arc::clone(&f));
            async move {
                cx.defer_context("nested", "nested outcome");
                e.notify_one();
                // Ignores the signal entirely.
                tokio::time::sleep(Duration::from_millis(300)).await;
                f.store(true, Ordering::SeqCst);
                Ok(json!("settled"))
            }
        }))
        .unwrap();
    let signal = CancellationToken::new();
    let input = call_with_signal("uncooperative", json!({}), &signal);
    let dispatch = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.dispatch(input).await })
    };
    entered.notified().await;
    let cancelled_at = Instant::now();
    signal.cancel();
    // Still pending shortly after the cancellation: the body is not abandoned.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!dispatch.is_finished(), "dispatch returned before the body settled");
    let res = dispatch.await.unwrap();
    assert!(finished.load(Ordering::SeqCst), "dispatch returned before the body finished");
    assert!(cancelled_at.elapsed() >= Duration::from_millis(200));
    assert_failure(&res, "tool call aborted", Some("ABORTED"));
    assert_eq!(sources(&res), ["nested"]);
}

#[tokio::test]
async fn pre_aborted_entry_publishes_one_result_and_enters_no_phase() {
    let registry = Registry::default();
    let (pre_calls, guard_calls, around, posted, body) =
        (counter(), counter(), counter(), counter(), counter());
    let _d = registry.register_raw(instant_tool("domain-abort", &body)).unwrap();
    let p = Arc::clone(&pre_calls);
    registry.add_pre_execute(pre(move |_e, next| {
        bump(&p);
        Box::pin(next.run())
    }));
    let g = Arc::clone(&guard_calls);
    registry.add_guard(guard(move |_e| {
        bump(&g);
        Ok(None)
    }));
    let a = Arc::clone(&around);
    registry.add_execute_wrapper(wrapper(move |_e, signal, next| {
        bump(&a);
        Box::pin(async move { Ok(WrapperOutcome::Canonical(next.run(signal).await?)) })
    }));
    let q = Arc::clone(&posted);
    registry.add_post_execute(
        post(move |_e, _r, next| {
            bump(&q);
            Box::pin(next.run())
        }),
        false,
    );
    let (obs, seen) = recording_observer();
    registry.add_result_observer(obs);

    let signal = cancelled_token();
    let res = registry
        .dispatch(call_with_signal("domain-abort", json!({"nested": {"value": 1}}), &signal))
        .await;
    assert_eq!(
        wire(&res),
        json!({
            "isError": true,
            "error": {
                "message": "tool call aborted before dispatch",
                "info": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
            },
            "content": [{"type": "text", "text": "Error: tool call aborted before dispatch"}]
        })
    );
    assert_eq!(
        [count(&pre_calls), count(&guard_calls), count(&around), count(&body), count(&posted)],
        [0, 0, 0, 0, 0]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "exactly one result published");
    assert_eq!(seen[0], res);
}
