//! `tools/post-execute` decisions (docs/design.md §3) and the `additionalContexts` ordering:
//! content replacement keeps value and meta, value replacement re-runs the canonical step, block
//! turns the result into a valueless failure, and listener failures are contained.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use toolhost_contract::protocol::{ContentBlock, ErrorInfo, ToolExecutionResult};
use toolhost_contract::{Disposer, RawTool, ToolError};
use toolhost_registry::{AuthoredResult, PostDecision, Registry, WrapperOutcome};

fn accept_content(content: Vec<ContentBlock>) -> PostDecision {
    PostDecision::Accept { content: Some(content), value: None, additional_contexts: vec![] }
}

fn accept_value(value: serde_json::Value) -> PostDecision {
    PostDecision::Accept { content: None, value: Some(value), additional_contexts: vec![] }
}

fn block(feedback: Vec<ContentBlock>) -> PostDecision {
    PostDecision::Block { feedback, additional_contexts: vec![] }
}

fn projected_registry() -> Registry {
    let registry = Registry::default();
    // Dropping a Disposer keeps the tool registered.
    let _ = registry.register(Projected { calls: counter() }).unwrap();
    registry
}

/// A raw tool that fails with a typed error and defers a context first.
fn failing_tool(name: &str) -> RawTool {
    RawTool::new(name)
        .with_output_schema(json!({"type": "string"}))
        .with_render(|_args, value| vec![ContentBlock::text(value.to_string())])
        .with_execute(|_args, cx| async move {
            cx.defer_context("nested", "deferred before failing");
            Err(ToolError::typed("HarnessError", "TOOL_FAILURE", "outer failure"))
        })
}

#[tokio::test]
async fn content_replacement_keeps_value_and_meta() {
    let registry = projected_registry();
    registry.add_post_execute(
        post_fixed(accept_content(vec![ContentBlock::text("policy content")])),
        false,
    );
    let res = registry.dispatch(call("projected", json!({}))).await;
    assert_eq!(
        wire(&res),
        json!({
            "isError": false,
            "value": {"text": "body"},
            "content": [{"type": "text", "text": "policy content"}],
            "meta": {"projected": "body"}
        })
    );
}

#[tokio::test]
async fn content_replacement_on_a_failure_stays_a_failure_with_the_same_error() {
    let registry = Registry::default();
    let _d = registry.register_raw(failing_tool("fails")).unwrap();
    registry
        .add_post_execute(post_fixed(accept_content(vec![ContentBlock::text("reworded")])), false);
    let res = registry.dispatch(call("fails", json!({}))).await;
    assert!(res.result.is_error());
    assert_eq!(message(&res), "outer failure");
    assert_eq!(
        res.result.error().unwrap().info,
        Some(ErrorInfo::new("HarnessError", "TOOL_FAILURE"))
    );
    assert_eq!(res.result.content(), [ContentBlock::text("reworded")]);
    assert!(res.result.value().is_none());
}

#[tokio::test]
async fn value_replacement_revalidates_and_rerenders_content_and_meta() {
    let registry = projected_registry();
    registry.add_post_execute(
        post_fixed(PostDecision::Accept {
            content: None,
            value: Some(json!({"text": "policy value"})),
            additional_contexts: vec![ctx("value")],
        }),
        false,
    );
    let res = registry.dispatch(call("projected", json!({}))).await;
    assert_eq!(
        wire(&res),
        json!({
            "isError": false,
            "value": {"text": "policy value"},
            "content": [{"type": "text", "text": "render:policy value"}],
            "meta": {"projected": "policy value"}
        })
    );
    assert_eq!(sources(&res), ["value"]);
}

#[tokio::test]
async fn invalid_replacement_value_is_invalid_tool_output() {
    let registry = projected_registry();
    registry.add_post_execute(post_fixed(accept_value(json!({"text": 1}))), false);
    let res = registry.dispatch(call("projected", json!({}))).await;
    assert!(res.result.is_error());
    assert_eq!(code(&res), Some("INVALID_TOOL_OUTPUT"));
    assert!(
        message(&res).starts_with(r#"tool "projected" returned invalid output: "#),
        "{}",
        message(&res)
    );
    assert!(res.result.value().is_none());
    assert!(res.result.meta().is_none());

    let registry = projected_registry();
    registry
        .add_post_execute(post_fixed(accept_value(json!({"text": "ok", "extra": -0.0}))), false);
    let res = registry.dispatch(call("projected", json!({}))).await;
    assert_eq!(code(&res), Some("INVALID_TOOL_OUTPUT"));
}

#[tokio::test]
async fn value_replacement_on_a_failure_is_a_failure() {
    let registry = Registry::default();
    let _d = registry.register_raw(failing_tool("fails")).unwrap();
    registry.add_post_execute(post_fixed(accept_value(json!("replacement"))), false);
    let res = registry.dispatch(call("fails", json!({}))).await;
    assert_failure(&res, "tools/post-execute cannot replace the value of a failed result", None);
}

#[tokio::test]
async fn replacing_both_value_and_content_is_a_failure() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_post_execute(
        post_fixed(PostDecision::Accept {
            content: Some(vec![ContentBlock::text("also replacement")]),
            value: Some(json!("replacement")),
            additional_contexts: vec![],
        }),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(
        &res,
        "tools/post-execute accept decision cannot replace both value and content",
        None,
    );
}

#[tokio::test]
async fn value_replacement_after_the_tool_was_disposed_is_unknown_tool() {
    let registry = Registry::default();
    let disposer: Arc<Mutex<Option<Disposer>>> =
        Arc::new(Mutex::new(Some(registry.register(Echo::new("echo")).unwrap())));
    let held = Arc::clone(&disposer);
    registry.add_post_execute(
        post(move |_e, _r, _n| {
            if let Some(d) = held.lock().unwrap().take() {
                d.dispose();
            }
            Box::pin(async { Ok(accept_value(json!("replacement"))) })
        }),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, r#"unknown tool "echo""#, Some("UNKNOWN_TOOL"));
    assert_eq!(info_name(&res), Some("ToolNotFoundError"));
}

#[tokio::test]
async fn block_is_a_valueless_failure_with_verbatim_feedback() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo").with_meta()).unwrap();
    registry
        .add_post_execute(post_fixed(block(vec![ContentBlock::text("blocked by policy")])), false);
    let res = registry.dispatch(call("echo", json!({"text": "secret"}))).await;
    assert_eq!(
        wire(&res),
        json!({
            "isError": true,
            "error": {"message": "blocked by policy"},
            "content": [{"type": "text", "text": "blocked by policy"}]
        })
    );
}

#[tokio::test]
async fn block_with_empty_feedback_has_the_default_message() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo").with_meta()).unwrap();
    registry.add_post_execute(post_fixed(block(vec![])), false);
    let res = registry.dispatch(call("echo", json!({"text": "x"}))).await;
    assert_eq!(message(&res), "tool result blocked by post-execute policy");
    let error = res.result.error().unwrap();
    assert!(error.info.is_none());
    assert!(res.result.value().is_none());
    assert!(res.result.meta().is_none());
    assert!(res.result.content().is_empty(), "feedback is the content, verbatim");
    assert_eq!(
        wire(&res),
        json!({"isError": true, "error": {"message": "tool result blocked by post-execute policy"}, "content": []})
    );
}

#[tokio::test]
async fn block_with_a_non_text_block_names_its_type() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    let image = ContentBlock::Image { data: "AAA=".to_owned(), mime_type: "image/png".to_owned() };
    registry.add_post_execute(post_fixed(block(vec![image.clone()])), false);
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_eq!(message(&res), "[image content]");
    assert_eq!(res.result.content(), std::slice::from_ref(&image));

    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_post_execute(
        post_fixed(block(vec![ContentBlock::text("first"), image, ContentBlock::text("last")])),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_eq!(message(&res), "first\n[image content]\nlast");
}

#[tokio::test]
async fn erroring_listener_is_a_failure() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_post_execute(
        post(|_e, _r, _n| Box::pin(async { Err(ToolError::plain("post hook broke")) })),
        false,
    );
    let res = registry.dispatch(call("echo", json!({"text": "hi"}))).await;
    assert_eq!(
        wire(&res),
        json!({
            "isError": true,
            "error": {"message": "post hook broke"},
            "content": [{"type": "text", "text": "Error: post hook broke"}]
        })
    );
}

#[tokio::test]
async fn panicking_listener_is_a_contained_failure() {
    let registry = Registry::default();
    let (obs, seen) = recording_observer();
    registry.add_result_observer(obs);
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_post_execute(
        post(|_e, _r, _n| Box::pin(async { panic!("post hook exploded") })),
        false,
    );
    let res = registry.dispatch(call("echo", json!({"text": "hi"}))).await;
    assert!(res.result.is_error());
    assert!(message(&res).contains("post hook exploded"), "{}", message(&res));
    assert!(res.result.value().is_none());
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn post_execute_sees_body_failures() {
    let registry = Registry::default();
    let _d = registry.register_raw(failing_tool("fails")).unwrap();
    let saw: Arc<Mutex<Option<bool>>> = Arc::default();
    let s = Arc::clone(&saw);
    registry.add_post_execute(
        post(move |_e, result, next| {
            *s.lock().unwrap() = Some(result.result().is_error());
            Box::pin(next.run())
        }),
        false,
    );
    let res = registry.dispatch(call("fails", json!({}))).await;
    assert_eq!(*saw.lock().unwrap(), Some(true));
    assert_failure(&res, "outer failure", Some("TOOL_FAILURE"));
}

#[tokio::test]
async fn waterfall_order_is_registration_order_with_prepend_outermost() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    for (name, prepend) in [("a", false), ("b", false), ("p", true)] {
        let o = Arc::clone(&order);
        registry.add_post_execute(
            post(move |_e, _r, next| {
                o.lock().unwrap().push(name);
                Box::pin(next.run())
            }),
            prepend,
        );
    }
    let _ = registry.dispatch(call("echo", json!({}))).await;
    assert_eq!(*order.lock().unwrap(), ["p", "a", "b"]);
}

// ---------------------------------------------------------------------------------------------
// additionalContexts
// ---------------------------------------------------------------------------------------------

/// A raw tool that defers two contexts and succeeds.
fn composite_tool() -> RawTool {
    RawTool::new("composite")
        .with_output_schema(json!({"type": "string"}))
        .with_render(|_args, value| vec![ContentBlock::text(value.as_str().unwrap_or_default())])
        .with_execute(|_args, cx| async move {
            cx.defer_context("nested-1", "one");
            cx.defer_context("nested-2", "two");
            Ok(json!("done"))
        })
}

#[tokio::test]
async fn contexts_are_deferred_then_wrapper_then_post_execute() {
    let registry = Registry::default();
    let _d = registry.register_raw(composite_tool()).unwrap();
    registry.add_execute_wrapper(wrapper(|_e, signal, next| {
        Box::pin(async move {
            let res = next.run(signal).await?;
            let mut contexts = res.additional_contexts().to_vec();
            contexts.push(ctx("wrapper"));
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result: res.result().clone(),
                additional_contexts: contexts,
            }))
        })
    }));
    registry.add_post_execute(
        post(|_e, _r, next| {
            Box::pin(async move {
                let downstream = next.run().await?;
                let PostDecision::Accept { content, value, additional_contexts } = downstream
                else {
                    return Ok(downstream);
                };
                let mut contexts = vec![ctx("post")];
                contexts.extend(additional_contexts);
                Ok(PostDecision::Accept { content, value, additional_contexts: contexts })
            })
        }),
        false,
    );
    let res = registry.dispatch(call("composite", json!({}))).await;
    assert_eq!(res.result.value(), Some(&json!("done")));
    assert_eq!(sources(&res), ["nested-1", "nested-2", "wrapper", "post"]);
    assert_eq!(res.additional_contexts[0].text, "one");
}

#[tokio::test]
async fn plain_accept_contexts_follow_the_results() {
    let registry = Registry::default();
    let _d = registry.register_raw(composite_tool()).unwrap();
    registry.add_post_execute(
        post_fixed(PostDecision::Accept {
            content: None,
            value: None,
            additional_contexts: vec![ctx("fyi")],
        }),
        false,
    );
    let res = registry.dispatch(call("composite", json!({}))).await;
    assert_eq!(sources(&res), ["nested-1", "nested-2", "fyi"]);
}

#[tokio::test]
async fn content_and_value_replacements_keep_deferred_contexts() {
    for decision in [
        PostDecision::Accept {
            content: Some(vec![ContentBlock::text("c")]),
            value: None,
            additional_contexts: vec![ctx("post")],
        },
        PostDecision::Accept {
            content: None,
            value: Some(json!("v")),
            additional_contexts: vec![ctx("post")],
        },
    ] {
        let registry = Registry::default();
        let _d = registry.register_raw(composite_tool()).unwrap();
        registry.add_post_execute(post_fixed(decision), false);
        let res = registry.dispatch(call("composite", json!({}))).await;
        assert!(!res.result.is_error());
        assert_eq!(sources(&res), ["nested-1", "nested-2", "post"]);
    }
}

#[tokio::test]
async fn a_throwing_composite_keeps_its_deferred_contexts() {
    let registry = Registry::default();
    let _d = registry.register_raw(failing_tool("failing-composite")).unwrap();
    let res = registry.dispatch(call("failing-composite", json!({}))).await;
    assert!(res.result.is_error());
    assert_eq!(sources(&res), ["nested"]);
}

#[tokio::test]
async fn block_keeps_only_its_own_contexts() {
    for tool in [composite_tool(), failing_tool("composite")] {
        let registry = Registry::default();
        let _d = registry.register_raw(tool).unwrap();
        registry.add_execute_wrapper(wrapper(|_e, signal, next| {
            Box::pin(async move {
                let res = next.run(signal).await?;
                Ok(WrapperOutcome::Authored(AuthoredResult {
                    result: res.result().clone(),
                    additional_contexts: vec![ctx("wrapper")],
                }))
            })
        }));
        registry.add_post_execute(
            post_fixed(PostDecision::Block {
                feedback: vec![ContentBlock::text("blocked")],
                additional_contexts: vec![ctx("blocker")],
            }),
            false,
        );
        let res = registry.dispatch(call("composite", json!({}))).await;
        assert_eq!(message(&res), "blocked");
        assert_eq!(sources(&res), ["blocker"]);
        assert!(!res.concludes_turn);
    }
}

#[tokio::test]
async fn wrapper_authored_failure_contexts_follow_deferred_ones() {
    let registry = Registry::default();
    let _d = registry.register_raw(composite_tool()).unwrap();
    registry.add_execute_wrapper(wrapper(|_e, signal, next| {
        Box::pin(async move {
            // Run the body (which defers), then author a failure with its own context.
            let _ = next.run(signal).await?;
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result: ToolExecutionResult::failure("wrapped failure", None),
                additional_contexts: vec![ctx("wrapper")],
            }))
        })
    }));
    let res = registry.dispatch(call("composite", json!({}))).await;
    assert_failure(&res, "wrapped failure", None);
    assert_eq!(sources(&res), ["nested-1", "nested-2", "wrapper"]);
}
