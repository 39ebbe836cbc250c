//! The host's side of a program's nested calls (the contract's `NestedCalls`, used by `run_code`,
//! docs/tools.md): each nested call is an ordinary call through [`Host::call`] — policies,
//! review, the change history, its own `tool/call` and `tool/result` records and its own card —
//! whose parent is the program's call, so it is cancelled with it, holds no barrier permit of its
//! own, is made by the program's caller (see `Heritage`) and is drawn inside the program's card.
//! Beside the call's own records, the program's view of it is logged as `tool/code-dispatch-start`
//! and `tool/code-dispatch` (docs/protocol.md).
//!
//! The capability exists before the host is shared (capabilities are fixed when the host is
//! built); it reaches the host once [`crate::share`] attached it.

use crate::call::CallRequest;
use crate::calls::Lane;
use crate::host::Host;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock, Weak};
use toolhost_contract::{
    BoxFuture, ExposedTool, NestedCall, NestedCalls, NestedOutcome, RESERVED_NAME,
};
use toolhost_protocol::session_log::{CodeDispatchEvent, CodeDispatchStartEvent};

/// Event types of a program's nested calls (ignorable: older readers skip them).
const DISPATCH_START: &str = "tool/code-dispatch-start";
const DISPATCH: &str = "tool/code-dispatch";

/// Nested calls on a host, once the host is shared.
#[derive(Default)]
pub struct HostNestedCalls {
    host: OnceLock<Weak<Host>>,
}

impl HostNestedCalls {
    /// Connects the capability to the shared host (weakly: the host holds the capability).
    pub(crate) fn attach(&self, host: &Arc<Host>) {
        let _ = self.host.set(Arc::downgrade(host));
    }

    fn host(&self) -> Option<Arc<Host>> {
        self.host.get().and_then(Weak::upgrade)
    }
}

impl NestedCalls for HostNestedCalls {
    fn tools(&self) -> Vec<ExposedTool> {
        let Some(host) = self.host() else { return Vec::new() };
        // Every tool but the program tool itself (whose description lists these).
        host.registry()
            .descriptors_except(Some(RESERVED_NAME))
            .into_iter()
            .map(|d| ExposedTool {
                name: d.name,
                description: d.description,
                input_schema: d.input_schema,
                output_schema: Some(d.output_schema),
            })
            .collect()
    }

    fn concurrency_safe(&self, name: &str, arguments: &Value) -> bool {
        self.host().is_some_and(|host| host.registry().concurrency_safe(name, arguments))
    }

    fn call(&self, call: NestedCall) -> BoxFuture<'_, NestedOutcome> {
        Box::pin(async move {
            let Some(host) = self.host() else {
                return NestedOutcome::Failed {
                    message: "nested calls are not available in this process".to_owned(),
                    code: None,
                };
            };
            let start = CodeDispatchStartEvent {
                root_call_id: call.root_call_id.clone(),
                parent_call_id: call.parent_call_id.clone(),
                sub_call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            };
            record(&host, DISPATCH_START, json!(start));
            // The program schedules its own calls (submission order, read-only ones together):
            // under a running program they take no permit; a background program's calls, made
            // after its call answered, go in a lane of their own — never the editor's, where a
            // `job_output` waiting for this very program may hold the barrier.
            let request = CallRequest::new(call.name.clone(), call.arguments.clone())
                .id(call.call_id.clone())
                .child_of(Some(call.parent_call_id.clone()))
                .cancelled_by(call.cancel.clone())
                .in_lane(Lane::new());
            let outcome = host.run(request).await;
            let (outcome, content, is_error) = match outcome {
                Ok(done) => {
                    let result = &done.finalized.result;
                    let content = result.content().to_vec();
                    match result.value() {
                        Some(value) if !result.is_error() => {
                            (NestedOutcome::Value(value.clone()), content, false)
                        }
                        _ => {
                            let error = result.error();
                            let failed = NestedOutcome::Failed {
                                message: error.map_or_else(
                                    || "the call failed".to_owned(),
                                    |e| e.message.clone(),
                                ),
                                code: error.and_then(|e| e.info.as_ref()).map(|i| i.code.clone()),
                            };
                            (failed, content, true)
                        }
                    }
                }
                Err(e) => {
                    let failed = NestedOutcome::Failed { message: e.to_string(), code: None };
                    (failed, Vec::new(), true)
                }
            };
            let settled = CodeDispatchEvent {
                root_call_id: call.root_call_id,
                parent_call_id: call.parent_call_id,
                sub_call_id: call.call_id,
                name: call.name,
                arguments: call.arguments,
                is_error,
                content,
            };
            record(&host, DISPATCH, json!(settled));
            outcome
        })
    }
}

/// Queues one dispatch event on the session log (synced with the calls' own records; a host
/// without a log records nothing).
fn record(host: &Host, kind: &str, data: Value) {
    if let Some(log) = host.session()
        && let Err(e) = log.enqueue(kind, data, true)
    {
        tracing::warn!(kind, error = %e, "could not record a nested call's dispatch event");
    }
}
