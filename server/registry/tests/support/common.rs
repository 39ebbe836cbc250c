//! Shared fixtures for the contract's integration tests: small typed tools, closure-backed policy
//! listeners, and accessors that read a finalized result the way the pipeline's contract states
//! them.
#![allow(dead_code, clippy::unwrap_used)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::protocol::content::joined_text;
use toolhost_contract::{
    AdditionalContext, BoxFuture, CancellationToken, Capabilities, Tool, ToolContext, ToolError,
};
use toolhost_registry::{
    ApprovalChannel, ApprovalOutcome, CallInput, CanonicalResult, ExecNext, ExecuteWrapper,
    Execution, Finalized, Guard, PostDecision, PostExecute, PostNext, PreDecision, PreExecute,
    PreNext, ResultObserver, WrapperOutcome,
};

// ---------------------------------------------------------------------------------------------
// Calls and result accessors
// ---------------------------------------------------------------------------------------------

pub fn caps() -> Arc<Capabilities> {
    Arc::new(Capabilities::new())
}

/// A direct call with fresh cancellation and no capabilities.
pub fn call(name: &str, args: Value) -> CallInput {
    CallInput::direct(&format!("call-{name}"), name, args, caps())
}

/// A direct call whose caller signal is `signal`.
pub fn call_with_signal(name: &str, args: Value, signal: &CancellationToken) -> CallInput {
    let mut input = call(name, args);
    input.signal = signal.clone();
    input
}

/// The failure message; panics on a success.
pub fn message(f: &Finalized) -> &str {
    match f.result.error() {
        Some(err) => &err.message,
        None => panic!("expected a failure, got {:?}", f.result),
    }
}

/// The failure code (`None` for a success or a code-less failure).
pub fn code(f: &Finalized) -> Option<&str> {
    f.result.error()?.info.as_ref().map(|i| i.code.as_str())
}

/// The failure class name (`None` for a success or a code-less failure).
pub fn info_name(f: &Finalized) -> Option<&str> {
    f.result.error()?.info.as_ref().map(|i| i.name.as_str())
}

/// The content's text, text blocks joined by `\n`.
pub fn text(f: &Finalized) -> String {
    joined_text(f.result.content())
}

/// The wire form of the result.
pub fn wire(f: &Finalized) -> Value {
    serde_json::to_value(&f.result).unwrap()
}

/// The `source` of every additional context, in order.
pub fn sources(f: &Finalized) -> Vec<&str> {
    f.additional_contexts.iter().map(|c| c.source.as_str()).collect()
}

pub fn ctx(source: &str) -> AdditionalContext {
    AdditionalContext::new(source, format!("{source} context"))
}

/// Asserts the generic failure projection (`Error: <message>`) with the given code.
pub fn assert_failure(f: &Finalized, expected_message: &str, expected_code: Option<&str>) {
    assert!(f.result.is_error(), "expected a failure, got {:?}", f.result);
    assert_eq!(message(f), expected_message);
    assert_eq!(code(f), expected_code, "code of {:?}", f.result);
    assert_eq!(f.result.content(), [ContentBlock::text(format!("Error: {expected_message}"))]);
    assert!(f.result.value().is_none());
    assert!(wire(f).get("value").is_none());
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

pub fn bump(c: &AtomicUsize) {
    c.fetch_add(1, Ordering::SeqCst);
}

// ---------------------------------------------------------------------------------------------
// Typed tools
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EchoArgs {
    #[serde(default)]
    pub text: Option<String>,
}

/// `echo`: returns its `text` argument as a string value; renders it; optional meta projector.
pub struct Echo {
    pub name: &'static str,
    pub calls: Arc<AtomicUsize>,
    pub meta: bool,
    /// Made by the host, never by a model (`Tool::internal`).
    pub internal: bool,
}

impl Echo {
    pub fn new(name: &'static str) -> Self {
        Echo { name, calls: counter(), meta: false, internal: false }
    }

    pub fn made_internal(mut self) -> Self {
        self.internal = true;
        self
    }

    pub fn with_meta(mut self) -> Self {
        self.meta = true;
        self
    }

    pub fn counting(mut self, calls: &Arc<AtomicUsize>) -> Self {
        self.calls = Arc::clone(calls);
        self
    }
}

impl Tool for Echo {
    type Args = EchoArgs;
    type Output = String;

    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> String {
        "echo arguments back".to_owned()
    }

    fn internal(&self) -> bool {
        self.internal
    }

    async fn call(&self, args: EchoArgs, _cx: ToolContext) -> Result<String, ToolError> {
        bump(&self.calls);
        Ok(args.text.unwrap_or_default())
    }

    fn render(&self, _args: &EchoArgs, output: &String) -> Vec<ContentBlock> {
        vec![ContentBlock::text(output.clone())]
    }

    fn presentation_meta(&self, _args: &EchoArgs, output: &String) -> Option<Value> {
        self.meta.then(|| json!({ "card": "echo", "text": output }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

/// A closed object output: `{ text }`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectedOut {
    pub text: String,
}

/// `projected`: returns `{text: "body"}`, renders `render:<text>`, projects `{projected: <text>}`.
pub struct Projected {
    pub calls: Arc<AtomicUsize>,
}

impl Tool for Projected {
    type Args = NoArgs;
    type Output = ProjectedOut;

    fn name(&self) -> &str {
        "projected"
    }

    fn description(&self) -> String {
        "projected".to_owned()
    }

    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<ProjectedOut, ToolError> {
        bump(&self.calls);
        Ok(ProjectedOut { text: "body".to_owned() })
    }

    fn render(&self, _args: &NoArgs, output: &ProjectedOut) -> Vec<ContentBlock> {
        vec![ContentBlock::text(format!("render:{}", output.text))]
    }

    fn presentation_meta(&self, _args: &NoArgs, output: &ProjectedOut) -> Option<Value> {
        Some(json!({ "projected": output.text }))
    }
}

// ---------------------------------------------------------------------------------------------
// Closure-backed policies
// ---------------------------------------------------------------------------------------------

pub struct PreFn<F>(F);

impl<F> PreExecute for PreFn<F>
where
    F: for<'a> Fn(&'a Execution, PreNext<'a>) -> BoxFuture<'a, Result<PreDecision, ToolError>>
        + Send
        + Sync,
{
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        next: PreNext<'a>,
    ) -> BoxFuture<'a, Result<PreDecision, ToolError>> {
        (self.0)(exec, next)
    }
}

/// A `tools/pre-execute` listener from a closure.
pub fn pre<F>(f: F) -> Arc<dyn PreExecute>
where
    F: for<'a> Fn(&'a Execution, PreNext<'a>) -> BoxFuture<'a, Result<PreDecision, ToolError>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(PreFn(f))
}

pub struct PostFn<F>(F);

impl<F> PostExecute for PostFn<F>
where
    F: for<'a> Fn(
            &'a Execution,
            &'a CanonicalResult,
            PostNext<'a>,
        ) -> BoxFuture<'a, Result<PostDecision, ToolError>>
        + Send
        + Sync,
{
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        result: &'a CanonicalResult,
        next: PostNext<'a>,
    ) -> BoxFuture<'a, Result<PostDecision, ToolError>> {
        (self.0)(exec, result, next)
    }
}

/// A `tools/post-execute` listener from a closure.
pub fn post<F>(f: F) -> Arc<dyn PostExecute>
where
    F: for<'a> Fn(
            &'a Execution,
            &'a CanonicalResult,
            PostNext<'a>,
        ) -> BoxFuture<'a, Result<PostDecision, ToolError>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(PostFn(f))
}

/// A post-execute listener that always returns `decision` (without consulting the rest).
pub fn post_fixed(decision: PostDecision) -> Arc<dyn PostExecute> {
    post(move |_exec, _result, _next| {
        let decision = decision.clone();
        Box::pin(async move { Ok(decision) })
    })
}

pub struct WrapFn<F>(F);

impl<F> ExecuteWrapper for WrapFn<F>
where
    F: for<'a> Fn(
            &'a Execution,
            CancellationToken,
            ExecNext<'a>,
        ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>>
        + Send
        + Sync,
{
    fn wrap<'a>(
        &'a self,
        exec: &'a Execution,
        signal: CancellationToken,
        next: ExecNext<'a>,
    ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>> {
        (self.0)(exec, signal, next)
    }
}

/// A `tools/execute` wrapper from a closure.
pub fn wrapper<F>(f: F) -> Arc<dyn ExecuteWrapper>
where
    F: for<'a> Fn(
            &'a Execution,
            CancellationToken,
            ExecNext<'a>,
        ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(WrapFn(f))
}

pub struct ObserveFn<F>(F);

impl<F: Fn(&Execution, &Finalized) + Send + Sync> ResultObserver for ObserveFn<F> {
    fn observe(&self, exec: &Execution, result: &Finalized) {
        (self.0)(exec, result)
    }
}

/// A `tools/result` observer from a closure.
pub fn observer(
    f: impl Fn(&Execution, &Finalized) + Send + Sync + 'static,
) -> Arc<dyn ResultObserver> {
    Arc::new(ObserveFn(f))
}

/// An observer that records every final result it sees.
pub fn recording_observer() -> (Arc<dyn ResultObserver>, Arc<Mutex<Vec<Finalized>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    (observer(move |_exec, result| sink.lock().unwrap().push(result.clone())), seen)
}

pub struct GuardFn<F>(F);

impl<F: Fn(&Execution) -> Result<Option<String>, ToolError> + Send + Sync> Guard for GuardFn<F> {
    fn check(&self, exec: &Execution) -> Result<Option<String>, ToolError> {
        (self.0)(exec)
    }
}

pub fn guard(
    f: impl Fn(&Execution) -> Result<Option<String>, ToolError> + Send + Sync + 'static,
) -> Arc<dyn Guard> {
    Arc::new(GuardFn(f))
}

/// An approval channel with a fixed answer that counts its requests.
pub struct FixedApproval {
    pub outcome: ApprovalOutcome,
    pub requests: Arc<AtomicUsize>,
}

impl ApprovalChannel for FixedApproval {
    fn request<'a>(
        &'a self,
        _exec: &'a Execution,
        _reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ApprovalOutcome, ToolError>> {
        bump(&self.requests);
        let outcome = self.outcome;
        Box::pin(async move { Ok(outcome) })
    }
}

/// A caller signal that is already cancelled.
pub fn cancelled_token() -> CancellationToken {
    let token = CancellationToken::new();
    token.cancel();
    token
}
