//! The nested-call seam: what a tool that runs a program over other tools (`run_code`,
//! docs/tools.md) needs from the host — the tools a program may call, whether a call may overlap
//! others, and one call run through the host's whole call path as a child of the program's call.
//!
//! A nested call is a call like any other: policies, review, the change history, its own
//! `tool/call` and `tool/result` records and its own card, whose parent is the program's call.
//! The host implements the seam (`toolhost-host`); the program's scheduler (submission order, a
//! pool of overlapping read-only calls, exclusive calls alone) lives with the tool.

use crate::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A tool a program may call: what its declaration is generated from.
#[derive(Clone, Debug, PartialEq)]
pub struct ExposedTool {
    pub name: String,
    pub description: String,
    /// The published input schema (standard JSON Schema 2020-12 terms).
    pub input_schema: Value,
    /// The published output schema: the shape of the value the program receives.
    pub output_schema: Option<Value>,
}

/// One nested call a program makes.
#[derive(Clone, Debug)]
pub struct NestedCall {
    /// The program's call (the `run_code` call): the nested call's parent.
    pub parent_call_id: String,
    /// The outermost call of the program (the parent itself unless programs nest).
    pub root_call_id: String,
    /// `<parent>:code:<n>`, n counting the program's calls from 1 in submission order.
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    /// Cancelled when the program's call is cancelled or the run settles.
    pub cancel: CancellationToken,
}

/// How a nested call ended, as the program sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum NestedOutcome {
    /// The call succeeded: its canonical value after every policy.
    Value(Value),
    /// The call failed (denied, rejected in review, the tool's error, cancelled): the error's
    /// message, and its stable code when it has one.
    Failed { message: String, code: Option<String> },
}

/// The host's side of nested calls.
pub trait NestedCalls: Send + Sync {
    /// The tools a program may call, in lexicographic name order: every listed tool except the
    /// program tool itself.
    fn tools(&self) -> Vec<ExposedTool>;

    /// Whether a call of `name` with these arguments may overlap other read-only calls; an
    /// exclusive call runs alone.
    fn concurrency_safe(&self, name: &str, arguments: &Value) -> bool;

    /// Runs one nested call through the host's call path and waits for its end. The host
    /// records `tool/code-dispatch-start` when the call starts and `tool/code-dispatch` when it
    /// settles, beside the call's own records.
    fn call(&self, call: NestedCall) -> BoxFuture<'_, NestedOutcome>;
}

/// The capability as tools get it.
pub type NestedCallsHandle = Arc<dyn NestedCalls>;
