//! Registry behaviour as docs/design.md §3 and docs/tools.md pin it: the result
//! wire shape, output validation and projections, registration checks, argument validation,
//! pre-execute / approval / guards, the timeout policy, wrapper-authored and cached results, and
//! nested calls.
#![allow(clippy::unwrap_used)]

#[path = "support/common.rs"]
mod common;

use common::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_contract::protocol::{ContentBlock, ErrorInfo, ToolErrorPayload, ToolExecutionResult};
use toolhost_contract::{Disposer, RawTool, RegistrationError, Tool, ToolContext, ToolError};
use toolhost_registry::{
    ApprovalOutcome, AuthoredResult, CanonicalResult, ExecToken, PostDecision, PreDecision,
    Registry, WrapperOutcome,
};

// ---------------------------------------------------------------------------------------------
// Result wire shape
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn success_serializes_without_meta_key_when_no_projector() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    let res = registry.dispatch(call("echo", json!({"text": "hi"}))).await;
    assert_eq!(
        serde_json::to_string(&res.result).unwrap(),
        r#"{"isError":false,"value":"hi","content":[{"type":"text","text":"hi"}]}"#
    );
    assert!(res.additional_contexts.is_empty());
    assert!(!res.concludes_turn);
}

#[tokio::test]
async fn success_serializes_with_meta_when_projected() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo").with_meta()).unwrap();
    let res = registry.dispatch(call("echo", json!({"text": "hi"}))).await;
    assert_eq!(
        serde_json::to_string(&res.result).unwrap(),
        r#"{"isError":false,"value":"hi","content":[{"type":"text","text":"hi"}],"meta":{"card":"echo","text":"hi"}}"#
    );
}

#[tokio::test]
async fn raw_tool_success_has_the_same_shape() {
    let registry = Registry::default();
    let _d = registry
        .register_raw(
            RawTool::new("raw")
                .with_output_schema(
                    json!({"type": "object", "properties": {"n": {"type": "number"}}}),
                )
                .with_render(|_args, value| vec![ContentBlock::text(value["n"].to_string())])
                .with_execute(|_args, _cx| async { Ok(json!({"n": 42})) }),
        )
        .unwrap();
    let res = registry.dispatch(call("raw", json!({}))).await;
    assert_eq!(
        wire(&res),
        json!({"isError": false, "value": {"n": 42}, "content": [{"type": "text", "text": "42"}]})
    );
}

// ---------------------------------------------------------------------------------------------
// Output validation: schema, lossless JSON
// ---------------------------------------------------------------------------------------------

fn string_tool(name: &str, value: Value) -> RawTool {
    RawTool::new(name)
        .with_output_schema(json!({"type": "string"}))
        .with_render(|_args, value| vec![ContentBlock::text(value.to_string())])
        .with_execute(move |_args, _cx| {
            let value = value.clone();
            async move { Ok(value) }
        })
}

#[tokio::test]
async fn wrong_typed_body_value_is_invalid_tool_output() {
    let registry = Registry::default();
    let _d = registry.register_raw(string_tool("wrong", json!(42))).unwrap();
    let res = registry.dispatch(call("wrong", json!({}))).await;
    assert_failure(
        &res,
        r#"tool "wrong" returned invalid output: "value" must be a string"#,
        Some("INVALID_TOOL_OUTPUT"),
    );
    assert_eq!(info_name(&res), Some("ToolOutputError"));
}

#[tokio::test]
async fn negative_zero_raw_value_is_not_lossless() {
    let registry = Registry::default();
    let _d = registry
        .register_raw(
            RawTool::new("negzero")
                .with_output_schema(json!({}))
                .with_render(|_args, _value| vec![])
                .with_execute(|_args, _cx| async { Ok(json!({"x": -0.0})) }),
        )
        .unwrap();
    let res = registry.dispatch(call("negzero", json!({}))).await;
    assert_failure(
        &res,
        r#"tool "negzero" returned invalid output: value is not lossless JSON"#,
        Some("INVALID_TOOL_OUTPUT"),
    );
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct FloatOut {
    x: f64,
}

/// A typed tool whose body returns a fixed float.
struct FloatTool {
    name: &'static str,
    x: f64,
}

impl Tool for FloatTool {
    type Args = NoArgs;
    type Output = FloatOut;

    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> String {
        "float".to_owned()
    }

    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<FloatOut, ToolError> {
        Ok(FloatOut { x: self.x })
    }

    fn render(&self, _args: &NoArgs, out: &FloatOut) -> Vec<ContentBlock> {
        vec![ContentBlock::text(out.x.to_string())]
    }
}

#[tokio::test]
async fn nan_and_negative_zero_in_typed_output_are_not_lossless() {
    let registry = Registry::default();
    let _a = registry.register(FloatTool { name: "nan", x: f64::NAN }).unwrap();
    let _b = registry.register(FloatTool { name: "inf", x: f64::INFINITY }).unwrap();
    let _c = registry.register(FloatTool { name: "negzero", x: -0.0 }).unwrap();
    let _d = registry.register(FloatTool { name: "fine", x: 1.5 }).unwrap();
    for name in ["nan", "inf", "negzero"] {
        let res = registry.dispatch(call(name, json!({}))).await;
        assert_failure(
            &res,
            &format!("tool \"{name}\" returned invalid output: value is not lossless JSON"),
            Some("INVALID_TOOL_OUTPUT"),
        );
    }
    let ok = registry.dispatch(call("fine", json!({}))).await;
    assert_eq!(ok.result.value(), Some(&json!({"x": 1.5})));
}

// ---------------------------------------------------------------------------------------------
// Projections: render / presentation_meta
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Broken {
    RenderPanics,
    MetaPanics,
    MetaNegativeZero,
}

struct BrokenProjection(Broken);

impl Tool for BrokenProjection {
    type Args = NoArgs;
    type Output = String;

    fn name(&self) -> &str {
        match self.0 {
            Broken::RenderPanics => "bad-render",
            Broken::MetaPanics => "bad-meta",
            Broken::MetaNegativeZero => "lossy-meta",
        }
    }

    fn description(&self) -> String {
        "broken projection".to_owned()
    }

    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<String, ToolError> {
        Ok("ok".to_owned())
    }

    fn render(&self, _args: &NoArgs, out: &String) -> Vec<ContentBlock> {
        if self.0 == Broken::RenderPanics {
            panic!("renderer exploded");
        }
        vec![ContentBlock::text(out.clone())]
    }

    fn presentation_meta(&self, _args: &NoArgs, _out: &String) -> Option<Value> {
        match self.0 {
            Broken::MetaPanics => panic!("metadata exploded"),
            Broken::MetaNegativeZero => Some(json!({"x": -0.0})),
            Broken::RenderPanics => None,
        }
    }
}

#[tokio::test]
async fn panicking_render_is_one_contained_invalid_output_failure() {
    let registry = Registry::default();
    let (obs, seen) = recording_observer();
    registry.add_result_observer(obs);
    let _d = registry.register(BrokenProjection(Broken::RenderPanics)).unwrap();
    let res = registry.dispatch(call("bad-render", json!({}))).await;
    assert!(res.result.is_error());
    assert!(
        message(&res).starts_with(r#"tool "bad-render" returned invalid output: "#),
        "{}",
        message(&res)
    );
    assert!(message(&res).contains("renderer exploded"), "{}", message(&res));
    assert_eq!(code(&res), Some("INVALID_TOOL_OUTPUT"));
    assert_eq!(info_name(&res), Some("ToolOutputError"));
    assert!(res.result.value().is_none());
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "exactly one result");
    assert_eq!(seen[0], res);
}

#[tokio::test]
async fn panicking_presentation_meta_is_one_contained_invalid_output_failure() {
    let registry = Registry::default();
    let (obs, seen) = recording_observer();
    registry.add_result_observer(obs);
    let _d = registry.register(BrokenProjection(Broken::MetaPanics)).unwrap();
    let res = registry.dispatch(call("bad-meta", json!({}))).await;
    assert!(res.result.is_error());
    assert!(message(&res).contains("metadata exploded"), "{}", message(&res));
    assert_eq!(code(&res), Some("INVALID_TOOL_OUTPUT"));
    assert!(res.result.value().is_none());
    assert!(res.result.meta().is_none());
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn non_lossless_meta_is_a_failure_reaching_observers_as_failure() {
    let registry = Registry::default();
    let (obs, seen) = recording_observer();
    registry.add_result_observer(obs);
    let _d = registry.register(BrokenProjection(Broken::MetaNegativeZero)).unwrap();
    let res = registry.dispatch(call("lossy-meta", json!({}))).await;
    assert!(res.result.is_error());
    assert!(message(&res).starts_with(r#"tool "lossy-meta" returned invalid output: "#));
    assert_eq!(code(&res), Some("INVALID_TOOL_OUTPUT"));
    assert!(res.result.meta().is_none());
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].result.is_error());
}

#[tokio::test]
async fn nested_call_has_no_meta_and_keeps_its_value() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo").with_meta()).unwrap();
    // Learn a real outer execution token from a listener.
    let outer: Arc<Mutex<Option<ExecToken>>> = Arc::default();
    let sink = Arc::clone(&outer);
    registry.add_pre_execute(pre(move |exec, next| {
        if exec.name == "outer" {
            *sink.lock().unwrap() = Some(exec.token);
        }
        Box::pin(next.run())
    }));
    let _o = registry.register(Echo::new("outer")).unwrap();
    let outer_res = registry.dispatch(call("outer", json!({}))).await;
    assert!(!outer_res.result.is_error());
    let token = outer.lock().unwrap().unwrap();

    let direct = registry.dispatch(call("echo", json!({"text": "x"}))).await;
    assert_eq!(direct.result.meta(), Some(&json!({"card": "echo", "text": "x"})));

    let mut nested = call("echo", json!({"text": "x"}));
    nested.parent = Some(token);
    let nested = registry.dispatch(nested).await;
    assert!(!nested.result.is_error());
    assert_eq!(nested.result.meta(), None);
    assert_eq!(nested.result.value(), Some(&json!("x")));
    assert_eq!(
        wire(&nested),
        json!({"isError": false, "value": "x", "content": [{"type": "text", "text": "x"}]})
    );
}

// ---------------------------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------------------------

fn body_only(name: &str) -> RawTool {
    RawTool::new(name).with_execute(|_args, _cx| async { Ok(json!("x")) })
}

#[test]
fn raw_tool_without_output_schema_or_render_is_refused() {
    let registry = Registry::default();
    let no_schema = body_only("a").with_render(|_a, _v| vec![]);
    let no_render = body_only("b").with_output_schema(json!({"type": "string"}));
    let neither = body_only("c");
    for (tool, name) in [(no_schema, "a"), (no_render, "b"), (neither, "c")] {
        let err = registry.register_raw(tool).err().unwrap();
        assert_eq!(err, RegistrationError::MissingOutput(name.to_owned()));
        assert_eq!(
            err.to_string(),
            format!("tool \"{name}\" must declare output {{ schema, render, presentationMeta? }}")
        );
        assert!(!registry.contains(name), "nothing registered");
    }
}

struct ZeroTimeout;

impl Tool for ZeroTimeout {
    type Args = NoArgs;
    type Output = String;
    fn name(&self) -> &str {
        "zero-timeout"
    }
    fn description(&self) -> String {
        String::new()
    }
    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<String, ToolError> {
        Ok(String::new())
    }
    fn render(&self, _args: &NoArgs, _out: &String) -> Vec<ContentBlock> {
        vec![]
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::ZERO)
    }
}

#[test]
fn zero_timeout_is_refused() {
    let registry = Registry::default();
    let err = registry.register(ZeroTimeout).err().unwrap();
    assert_eq!(err, RegistrationError::InvalidTimeout("zero-timeout".to_owned()));
    assert_eq!(
        err.to_string(),
        r#"tool "zero-timeout" timeoutMs must be a positive finite number"#
    );
    let raw = string_tool("raw-zero", json!("x")).with_timeout(Duration::ZERO);
    assert_eq!(
        registry.register_raw(raw).err().unwrap(),
        RegistrationError::InvalidTimeout("raw-zero".to_owned())
    );
    assert!(!registry.contains("zero-timeout"));
    assert!(!registry.contains("raw-zero"));
}

#[test]
fn duplicate_name_is_refused_and_the_first_stays() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    let err = registry.register(Echo::new("echo")).err().unwrap();
    assert_eq!(err, RegistrationError::Duplicate("echo".to_owned()));
    assert!(err.to_string().contains("already registered"), "{err}");
    let err = registry.register_raw(string_tool("echo", json!("x"))).err().unwrap();
    assert_eq!(err, RegistrationError::Duplicate("echo".to_owned()));
    assert!(registry.contains("echo"));
}

#[test]
fn run_code_is_reserved() {
    let registry = Registry::default();
    assert_eq!(
        registry.register(Echo::new("run_code")).err().unwrap(),
        RegistrationError::Reserved
    );
    assert_eq!(
        registry.register_raw(string_tool("run_code", json!("x"))).err().unwrap(),
        RegistrationError::Reserved
    );
    assert!(!registry.contains("run_code"));
}

#[test]
fn external_ref_in_output_schema_is_unsupported_naming_tool_and_path() {
    let registry = Registry::default();
    let tool = string_tool("ext", json!("x")).with_output_schema(json!({
        "type": "object",
        "properties": {"a": {"$ref": "https://example.invalid/schema.json"}}
    }));
    let err = registry.register_raw(tool).err().unwrap();
    assert_eq!(err.code(), "UNSUPPORTED_SCHEMA");
    match &err {
        RegistrationError::UnsupportedSchema { tool, path, .. } => {
            assert_eq!(tool, "ext");
            assert!(path.contains("outputSchema") && path.contains("properties/a/$ref"), "{path}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let shown = err.to_string();
    assert!(shown.contains("\"ext\"") && shown.contains("outputSchema"), "{shown}");
    assert!(!registry.contains("ext"));
}

#[test]
fn non_compiling_output_schema_is_unsupported_naming_tool_and_path() {
    let registry = Registry::default();
    let tool =
        string_tool("bad-schema", json!("x")).with_output_schema(json!({"type": "nonsense"}));
    let err = registry.register_raw(tool).err().unwrap();
    assert_eq!(err.code(), "UNSUPPORTED_SCHEMA");
    match &err {
        RegistrationError::UnsupportedSchema { tool, path, .. } => {
            assert_eq!(tool, "bad-schema");
            assert!(path.starts_with("outputSchema"), "{path}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let not_a_schema = string_tool("num-schema", json!("x")).with_output_schema(json!(42));
    assert_eq!(registry.register_raw(not_a_schema).err().unwrap().code(), "UNSUPPORTED_SCHEMA");
    assert!(!registry.contains("bad-schema"));
}

#[tokio::test]
async fn disposer_unregisters_and_the_name_becomes_unknown() {
    let registry = Registry::default();
    let calls = counter();
    let disposer = registry.register(Echo::new("disposable").counting(&calls)).unwrap();
    assert!(registry.contains("disposable"));
    disposer.dispose();
    assert!(!registry.contains("disposable"));
    assert!(registry.descriptors().iter().all(|d| d.name != "disposable"));
    let res = registry.dispatch(call("disposable", json!({}))).await;
    assert_failure(&res, r#"unknown tool "disposable""#, Some("UNKNOWN_TOOL"));
    assert_eq!(info_name(&res), Some("ToolNotFoundError"));
    assert_eq!(count(&calls), 0);
    // The name is free again.
    let _d = registry.register(Echo::new("disposable")).unwrap();
    assert!(!registry.dispatch(call("disposable", json!({}))).await.result.is_error());
}

#[tokio::test]
async fn unknown_tool_still_reaches_pre_and_post_execute() {
    let registry = Registry::default();
    let (pre_calls, post_calls) = (counter(), counter());
    let (p1, p2) = (Arc::clone(&pre_calls), Arc::clone(&post_calls));
    registry.add_pre_execute(pre(move |_e, next| {
        bump(&p1);
        Box::pin(next.run())
    }));
    registry.add_post_execute(
        post(move |_e, _r, next| {
            bump(&p2);
            Box::pin(next.run())
        }),
        false,
    );
    let res = registry.dispatch(call("nope", json!({}))).await;
    assert_failure(&res, r#"unknown tool "nope""#, Some("UNKNOWN_TOOL"));
    assert_eq!((count(&pre_calls), count(&post_calls)), (1, 1));
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Deserialize, JsonSchema)]
struct ReadLikeArgs {
    file_path: String,
    #[serde(default)]
    offset: Option<f64>,
}

struct ReadLike {
    calls: Arc<AtomicUsize>,
}

impl Tool for ReadLike {
    type Args = ReadLikeArgs;
    type Output = String;
    fn name(&self) -> &str {
        "readlike"
    }
    fn description(&self) -> String {
        String::new()
    }
    async fn call(&self, args: ReadLikeArgs, _cx: ToolContext) -> Result<String, ToolError> {
        bump(&self.calls);
        Ok(format!("{}@{}", args.file_path, args.offset.unwrap_or(1.0)))
    }
    fn render(&self, _args: &ReadLikeArgs, out: &String) -> Vec<ContentBlock> {
        vec![ContentBlock::text(out.clone())]
    }
}

#[tokio::test]
async fn invalid_args_use_the_documented_wording() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register(ReadLike { calls: Arc::clone(&calls) }).unwrap();

    let missing = registry.dispatch(call("readlike", json!({}))).await;
    assert_failure(
        &missing,
        r#"invalid arguments: missing required property "file_path""#,
        Some("INVALID_ARGS"),
    );
    assert_eq!(info_name(&missing), Some("ToolArgsError"));

    let wrong = registry.dispatch(call("readlike", json!({"file_path": "a", "offset": "x"}))).await;
    assert_failure(&wrong, r#"invalid arguments: "offset" must be a number"#, Some("INVALID_ARGS"));

    let raw = registry.dispatch(call("readlike", json!("{not json"))).await;
    assert_failure(
        &raw,
        r#"invalid arguments: "arguments" must be an object"#,
        Some("INVALID_ARGS"),
    );

    assert_eq!(count(&calls), 0, "the body never runs on invalid arguments");
}

#[tokio::test]
async fn several_argument_violations_are_joined_by_semicolons() {
    let registry = Registry::default();
    let _d = registry.register(ReadLike { calls: counter() }).unwrap();
    let res = registry.dispatch(call("readlike", json!({"offset": "x"}))).await;
    let msg = message(&res);
    let rest = msg.strip_prefix("invalid arguments: ").unwrap();
    let mut parts: Vec<&str> = rest.split("; ").collect();
    parts.sort_unstable();
    assert_eq!(
        parts,
        [r#""offset" must be a number"#, r#"missing required property "file_path""#],
        "{msg}"
    );
    assert_eq!(code(&res), Some("INVALID_ARGS"));
}

#[tokio::test]
async fn extra_argument_keys_are_accepted() {
    let registry = Registry::default();
    let _d = registry.register(ReadLike { calls: counter() }).unwrap();
    let res = registry
        .dispatch(call("readlike", json!({"file_path": "a", "offset": 3, "extra": true})))
        .await;
    assert_eq!(res.result.value(), Some(&json!("a@3")));
}

#[tokio::test]
async fn negative_zero_arguments_fail_the_snapshot_without_info() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
    let res = registry.dispatch(call("echo", json!({"text": "x", "n": -0.0}))).await;
    assert_failure(&res, "tool execution arguments must be losslessly JSON-serializable", None);
    assert!(res.result.error().unwrap().info.is_none());
    assert_eq!(count(&calls), 0);
}

#[tokio::test]
async fn argument_snapshot_failure_wins_over_a_pre_aborted_signal() {
    let registry = Registry::default();
    let (obs, seen) = recording_observer();
    registry.add_result_observer(obs);
    let signal = cancelled_token();
    let res = registry.dispatch(call_with_signal("missing", json!({"n": -0.0}), &signal)).await;
    assert_failure(&res, "tool execution arguments must be losslessly JSON-serializable", None);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Pre-execute, approval, guards
// ---------------------------------------------------------------------------------------------

fn asking(reason: Option<&'static str>) -> Arc<dyn toolhost_registry::PreExecute> {
    pre(move |_exec, _next| {
        Box::pin(async move { Ok(PreDecision::Ask { reason: reason.map(str::to_owned) }) })
    })
}

#[tokio::test]
async fn ask_without_approval_channel_is_a_denial() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
    registry.add_pre_execute(asking(None));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, r#"tool "echo" requires approval (not yet supported)"#, None);

    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
    registry.add_pre_execute(asking(Some("needs approval")));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "needs approval", None);
    assert_eq!(count(&calls), 0);
}

#[tokio::test]
async fn approval_outcomes_map_to_the_documented_messages() {
    let cases = [
        (ApprovalOutcome::AllowedOnce, None),
        (ApprovalOutcome::Rejected, Some(r#"the user rejected tool "echo""#)),
        (ApprovalOutcome::Cancelled, Some(r#"approval for tool "echo" was cancelled"#)),
        (
            ApprovalOutcome::Unavailable,
            Some(r#"tool "echo" requires approval, but no approval channel is available"#),
        ),
    ];
    for (outcome, denial) in cases {
        let registry = Registry::default();
        let calls = counter();
        let requests = counter();
        let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
        registry.add_pre_execute(asking(Some("hook wants a human")));
        registry.set_approval_channel(Some(Arc::new(FixedApproval {
            outcome,
            requests: Arc::clone(&requests),
        })));
        let res = registry.dispatch(call("echo", json!({"text": "hi"}))).await;
        assert_eq!(count(&requests), 1);
        match denial {
            None => {
                assert_eq!(res.result.value(), Some(&json!("hi")));
                assert_eq!(count(&calls), 1);
            }
            Some(reason) => {
                assert_failure(&res, reason, None);
                assert_eq!(count(&calls), 0);
            }
        }
    }
}

#[tokio::test]
async fn pre_execute_deny_is_a_code_less_denial_that_reaches_post_execute() {
    let registry = Registry::default();
    let (wrapped, posted) = (counter(), counter());
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_pre_execute(pre(|_e, _n| {
        Box::pin(async { Ok(PreDecision::Deny { reason: "denied by policy".to_owned() }) })
    }));
    let w = Arc::clone(&wrapped);
    registry.add_execute_wrapper(wrapper(move |_e, signal, next| {
        bump(&w);
        Box::pin(async move { Ok(WrapperOutcome::Canonical(next.run(signal).await?)) })
    }));
    let p = Arc::clone(&posted);
    registry.add_post_execute(
        post(move |_e, result, next| {
            assert!(result.result().is_error());
            bump(&p);
            Box::pin(next.run())
        }),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "denied by policy", None);
    assert_eq!(count(&wrapped), 0, "a denied call never enters tools/execute");
    assert_eq!(count(&posted), 1, "a denial is a post result");
}

#[tokio::test]
async fn a_guard_never_refuses_an_internal_tools_record_of_what_already_happened() {
    // Seen with a hosted agent in plan mode: its step's record was refused, and what the
    // agent changed went unrecorded.
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register(Echo::new("step").made_internal().counting(&calls)).unwrap();
    registry.add_guard(guard(|_exec| Ok(Some("plan mode is active".to_owned()))));
    let res = registry.dispatch(call("step", json!({}))).await;
    assert!(!res.result.is_error(), "{:?}", res.result);
    assert_eq!(count(&calls), 1);
}

#[tokio::test]
async fn guard_denies_with_its_reason_and_only_after_allow() {
    let registry = Registry::default();
    let calls = counter();
    let guard_calls = counter();
    let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
    let g = Arc::clone(&guard_calls);
    registry.add_guard(guard(move |exec| {
        bump(&g);
        Ok((exec.name == "echo").then(|| "guard says no".to_owned()))
    }));
    registry.add_guard(guard(|_exec| Ok(Some("second guard".to_owned()))));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "guard says no", None);
    assert_eq!(count(&calls), 0);

    // A pre-execute denial wins and the guards are not consulted.
    registry.add_pre_execute(pre(|_e, _n| {
        Box::pin(async { Ok(PreDecision::Deny { reason: "pre says no".to_owned() }) })
    }));
    let before = count(&guard_calls);
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "pre says no", None);
    assert_eq!(count(&guard_calls), before);
}

#[tokio::test]
async fn failing_pre_execute_listener_is_a_final_result_that_skips_post_execute() {
    let registry = Registry::default();
    let (calls, posted) = (counter(), counter());
    let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
    registry.add_pre_execute(pre(|_e, _n| {
        Box::pin(async { Err(ToolError::plain("permission hook broke")) })
    }));
    let p = Arc::clone(&posted);
    registry.add_post_execute(
        post(move |_e, _r, next| {
            bump(&p);
            Box::pin(next.run())
        }),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "permission hook broke", None);
    assert_eq!((count(&calls), count(&posted)), (0, 0));

    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_pre_execute(pre(|_e, _n| {
        Box::pin(async { Err(ToolError::typed("HarnessError", "DENIED", "denied")) })
    }));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "denied", Some("DENIED"));
    assert_eq!(info_name(&res), Some("HarnessError"));
}

/// An approval channel that fails.
struct BrokenApproval;

impl toolhost_registry::ApprovalChannel for BrokenApproval {
    fn request<'a>(
        &'a self,
        _exec: &'a toolhost_registry::Execution,
        _reason: Option<&'a str>,
    ) -> toolhost_contract::BoxFuture<'a, Result<ApprovalOutcome, ToolError>> {
        Box::pin(async { Err(ToolError::plain("approval service down")) })
    }
}

#[tokio::test]
async fn failing_approval_channel_or_guard_is_a_final_result() {
    for broken in ["approval", "guard"] {
        let registry = Registry::default();
        let (calls, posted) = (counter(), counter());
        let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
        if broken == "approval" {
            registry.add_pre_execute(asking(None));
            registry.set_approval_channel(Some(Arc::new(BrokenApproval)));
        } else {
            registry.add_guard(guard(|_e| Err(ToolError::plain("guard crashed"))));
        }
        let p = Arc::clone(&posted);
        registry.add_post_execute(
            post(move |_e, _r, next| {
                bump(&p);
                Box::pin(next.run())
            }),
            false,
        );
        let res = registry.dispatch(call("echo", json!({}))).await;
        let expected = if broken == "approval" { "approval service down" } else { "guard crashed" };
        assert_failure(&res, expected, None);
        assert_eq!((count(&calls), count(&posted)), (0, 0), "{broken}: final result");
    }
}

#[tokio::test]
async fn panicking_pre_execute_listener_is_contained() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_pre_execute(pre(|_e, _n| Box::pin(async { panic!("hook exploded") })));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert!(res.result.is_error());
    assert!(message(&res).contains("hook exploded"), "{}", message(&res));
    assert!(res.result.value().is_none());
}

// ---------------------------------------------------------------------------------------------
// Timeout policy
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn timeout_policy_fires_tool_timeout() {
    let registry = Registry::default();
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let _d = registry
        .register_raw(
            string_tool("slow", json!("x")).with_timeout(Duration::from_millis(50)).with_execute(
                move |_args, cx| {
                    let flag = Arc::clone(&flag);
                    async move {
                        cx.signal().cancelled().await;
                        flag.store(true, Ordering::SeqCst);
                        Ok(json!("late"))
                    }
                },
            ),
        )
        .unwrap();
    let started = Instant::now();
    let res = registry.dispatch(call("slow", json!({}))).await;
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_failure(&res, "tool call timed out after 50ms", Some("TOOL_TIMEOUT"));
    assert_eq!(info_name(&res), Some("ToolTimeoutError"));
    assert!(finished.load(Ordering::SeqCst), "the body observed its signal and settled first");
}

#[tokio::test]
async fn tools_without_timeout_have_no_deadline() {
    let registry = Registry::default();
    let _d = registry
        .register_raw(string_tool("unbounded", json!("x")).with_execute(|_args, _cx| async {
            tokio::time::sleep(Duration::from_millis(80)).await;
            Ok(json!("done"))
        }))
        .unwrap();
    let res = registry.dispatch(call("unbounded", json!({}))).await;
    assert_eq!(res.result.value(), Some(&json!("done")));
}

// ---------------------------------------------------------------------------------------------
// Wrapper-authored and cached results
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn wrapper_authored_failure_is_kept_verbatim() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register(Echo::new("echo").with_meta().counting(&calls)).unwrap();
    let authored = ToolExecutionResult::Failure {
        error: ToolErrorPayload { message: "wrapped failure".to_owned(), info: None },
        content: vec![ContentBlock::text("wrapper content")],
        meta: Some(json!({"wrapped": true})),
    };
    let returned = authored.clone();
    registry.add_execute_wrapper(wrapper(move |_e, _s, _next| {
        let result = returned.clone();
        Box::pin(async move {
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result,
                additional_contexts: vec![ctx("wrapper")],
            }))
        })
    }));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_eq!(res.result, authored);
    assert_eq!(sources(&res), ["wrapper"]);
    assert_eq!(count(&calls), 0);
}

#[tokio::test]
async fn wrapper_authored_success_is_renormalized() {
    let registry = Registry::default();
    let calls = counter();
    let _d = registry.register(Echo::new("echo").with_meta().counting(&calls)).unwrap();
    registry.add_execute_wrapper(wrapper(|_e, _s, _next| {
        Box::pin(async {
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result: ToolExecutionResult::Success {
                    value: json!("short-circuited"),
                    content: vec![ContentBlock::text("ignored authored content")],
                    meta: Some(json!({"forged": true})),
                },
                additional_contexts: vec![ctx("wrapper")],
            }))
        })
    }));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_eq!(count(&calls), 0, "short-circuit skips the body");
    assert_eq!(
        wire(&res),
        json!({
            "isError": false,
            "value": "short-circuited",
            "content": [{"type": "text", "text": "short-circuited"}],
            "meta": {"card": "echo", "text": "short-circuited"}
        })
    );
    assert_eq!(sources(&res), ["wrapper"]);
}

#[tokio::test]
async fn wrapper_authored_success_is_revalidated() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_execute_wrapper(wrapper(|_e, _s, _next| {
        Box::pin(async {
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result: ToolExecutionResult::Success {
                    value: json!(7),
                    content: vec![],
                    meta: None,
                },
                additional_contexts: vec![],
            }))
        })
    }));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(
        &res,
        r#"tool "echo" returned invalid output: "value" must be a string"#,
        Some("INVALID_TOOL_OUTPUT"),
    );
}

#[tokio::test]
async fn wrapper_authored_success_after_dispose_is_unknown_tool() {
    let registry = Registry::default();
    let disposer: Arc<Mutex<Option<Disposer>>> =
        Arc::new(Mutex::new(Some(registry.register(Echo::new("echo")).unwrap())));
    let held = Arc::clone(&disposer);
    registry.add_execute_wrapper(wrapper(move |_e, _s, _next| {
        if let Some(d) = held.lock().unwrap().take() {
            d.dispose();
        }
        Box::pin(async {
            Ok(WrapperOutcome::Authored(AuthoredResult {
                result: ToolExecutionResult::Success {
                    value: json!("replacement"),
                    content: vec![],
                    meta: None,
                },
                additional_contexts: vec![],
            }))
        })
    }));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, r#"unknown tool "echo""#, Some("UNKNOWN_TOOL"));
    assert_eq!(info_name(&res), Some("ToolNotFoundError"));
}

/// A typed tool with a closed object output `{ok: bool}` that counts body runs.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OkOut {
    ok: bool,
}

struct ObjectOutput {
    calls: Arc<AtomicUsize>,
}

impl Tool for ObjectOutput {
    type Args = NoArgs;
    type Output = OkOut;
    fn name(&self) -> &str {
        "object-output"
    }
    fn description(&self) -> String {
        "Return one closed object.".to_owned()
    }
    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<OkOut, ToolError> {
        bump(&self.calls);
        Ok(OkOut { ok: true })
    }
    fn render(&self, _args: &NoArgs, out: &OkOut) -> Vec<ContentBlock> {
        vec![ContentBlock::text(out.ok.to_string())]
    }
}

#[tokio::test]
async fn cached_canonical_result_reused_for_another_tool_is_revalidated() {
    let registry = Registry::default();
    let string_calls = counter();
    let object_calls = counter();
    let _a = registry
        .register_raw(string_tool("string-output", json!("cached")).with_execute({
            let c = Arc::clone(&string_calls);
            move |_args, _cx| {
                bump(&c);
                async { Ok(json!("cached")) }
            }
        }))
        .unwrap();
    let _b = registry.register(ObjectOutput { calls: Arc::clone(&object_calls) }).unwrap();
    let cache: Arc<Mutex<Option<CanonicalResult>>> = Arc::default();
    let store = Arc::clone(&cache);
    registry.add_execute_wrapper(wrapper(move |exec, signal, next| {
        let store = Arc::clone(&store);
        Box::pin(async move {
            if exec.name == "string-output" {
                let res = next.run(signal).await?;
                *store.lock().unwrap() = Some(res.clone());
                return Ok(WrapperOutcome::Canonical(res));
            }
            let cached = store.lock().unwrap().clone();
            match cached {
                Some(res) => Ok(WrapperOutcome::Canonical(res)),
                None => Err(ToolError::plain("expected the first dispatch result")),
            }
        })
    }));
    let first = registry.dispatch(call("string-output", json!({}))).await;
    assert_eq!(first.result.value(), Some(&json!("cached")));
    let second = registry.dispatch(call("object-output", json!({}))).await;
    assert!(second.result.is_error());
    assert_eq!(code(&second), Some("INVALID_TOOL_OUTPUT"));
    assert_eq!(info_name(&second), Some("ToolOutputError"));
    assert!(message(&second).starts_with(r#"tool "object-output" returned invalid output: "#));
    assert_eq!(count(&object_calls), 0, "B's body never runs");
    assert_eq!(count(&string_calls), 1);
}

#[tokio::test]
async fn cached_canonical_result_of_the_same_tool_is_rerendered_for_the_new_call() {
    // A canonical result bound to an earlier execution is not trusted as-is: its value is
    // re-validated and re-rendered against the new call's arguments.
    let registry = Registry::default();
    let _d = registry
        .register_raw(
            string_tool("args-render", json!("x"))
                .with_render(|args, value| {
                    vec![ContentBlock::text(format!(
                        "{}:{}",
                        args["text"].as_str().unwrap_or(""),
                        value
                    ))]
                })
                .with_execute(|args, _cx| async move { Ok(args["text"].clone()) }),
        )
        .unwrap();
    let cache: Arc<Mutex<Option<CanonicalResult>>> = Arc::default();
    let store = Arc::clone(&cache);
    registry.add_execute_wrapper(wrapper(move |_exec, signal, next| {
        let store = Arc::clone(&store);
        Box::pin(async move {
            let cached = store.lock().unwrap().clone();
            if let Some(res) = cached {
                return Ok(WrapperOutcome::Canonical(res));
            }
            let res = next.run(signal).await?;
            *store.lock().unwrap() = Some(res.clone());
            Ok(WrapperOutcome::Canonical(res))
        })
    }));
    let first = registry.dispatch(call("args-render", json!({"text": "one"}))).await;
    let second = registry.dispatch(call("args-render", json!({"text": "two"}))).await;
    assert_eq!(text(&first), r#"one:"one""#);
    assert_eq!(second.result.value(), Some(&json!("one")));
    assert_eq!(text(&second), r#"two:"one""#);
}

#[tokio::test]
async fn wrapper_error_is_a_final_result_that_skips_post_execute() {
    // Regression (pipeline.rs ExecNext::run) — the pipeline's rule: "A throw escaping the wrapper
    // chain ⇒ final result": it does not go through tools/post-execute. The pipeline currently
    // turns the wrapper's Err into an ordinary bound failure that post-execute listeners still see
    // (and may replace or block).
    let registry = Registry::default();
    let (calls, posted) = (counter(), counter());
    let _d = registry.register(Echo::new("echo").counting(&calls)).unwrap();
    registry.add_execute_wrapper(wrapper(|_e, _s, _n| {
        Box::pin(async { Err(ToolError::plain("wrapper broke")) })
    }));
    let p = Arc::clone(&posted);
    registry.add_post_execute(
        post(move |_e, _r, _next| {
            bump(&p);
            Box::pin(async {
                Ok(PostDecision::Accept {
                    content: Some(vec![ContentBlock::text("post-execute rewrote it")]),
                    value: None,
                    additional_contexts: vec![],
                })
            })
        }),
        false,
    );
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_eq!(count(&calls), 0);
    assert_eq!(count(&posted), 0, "SEED BUG: a wrapper error must skip tools/post-execute");
    assert_failure(&res, "wrapper broke", None);
}

#[tokio::test]
async fn wrapper_error_keeps_its_message_and_info() {
    let registry = Registry::default();
    let _d = registry.register(Echo::new("echo")).unwrap();
    registry.add_execute_wrapper(wrapper(|_e, _s, _n| {
        Box::pin(async {
            Err(ToolError::typed("HarnessError", "WRAPPER_FAILURE", "wrapper failed"))
        })
    }));
    let res = registry.dispatch(call("echo", json!({}))).await;
    assert_failure(&res, "wrapper failed", Some("WRAPPER_FAILURE"));
    assert_eq!(
        res.result.error().unwrap().info,
        Some(ErrorInfo::new("HarnessError", "WRAPPER_FAILURE"))
    );
}

#[tokio::test]
async fn pipeline_phase_order() {
    let registry = Registry::default();
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let o = Arc::clone(&order);
    let _d = registry
        .register_raw(string_tool("traced", json!("x")).with_execute(move |_args, _cx| {
            o.lock().unwrap().push("body");
            async { Ok(json!("x")) }
        }))
        .unwrap();
    let o = Arc::clone(&order);
    registry.add_pre_execute(pre(move |_e, next| {
        let o = Arc::clone(&o);
        Box::pin(async move {
            o.lock().unwrap().push("pre:before");
            let d = next.run().await;
            o.lock().unwrap().push("pre:after");
            d
        })
    }));
    let o = Arc::clone(&order);
    registry.add_guard(guard(move |_e| {
        o.lock().unwrap().push("guard");
        Ok(None)
    }));
    let o = Arc::clone(&order);
    registry.add_execute_wrapper(wrapper(move |_e, signal, next| {
        let o = Arc::clone(&o);
        Box::pin(async move {
            o.lock().unwrap().push("execute:before");
            let r = next.run(signal).await?;
            o.lock().unwrap().push("execute:after");
            Ok(WrapperOutcome::Canonical(r))
        })
    }));
    let o = Arc::clone(&order);
    registry.add_post_execute(
        post(move |_e, _r, next| {
            let o = Arc::clone(&o);
            Box::pin(async move {
                o.lock().unwrap().push("post:before");
                let d = next.run().await;
                o.lock().unwrap().push("post:after");
                d
            })
        }),
        false,
    );
    let o = Arc::clone(&order);
    registry.add_result_observer(observer(move |_e, _r| o.lock().unwrap().push("result")));
    let res = registry.dispatch(call("traced", json!({}))).await;
    assert!(!res.result.is_error());
    assert_eq!(
        *order.lock().unwrap(),
        [
            "pre:before",
            "pre:after",
            "guard",
            "execute:before",
            "body",
            "execute:after",
            "post:before",
            "post:after",
            "result"
        ]
    );
}

#[tokio::test]
async fn concludes_turn_rides_on_a_success() {
    let registry = Registry::default();
    let _d = registry
        .register_raw(string_tool("concluding", json!("x")).with_execute(|_args, cx| async move {
            cx.conclude_turn();
            Ok(json!("done"))
        }))
        .unwrap();
    let res = registry.dispatch(call("concluding", json!({}))).await;
    assert!(res.concludes_turn);
}
