//! The nested-call seam's test double: a few fake tools, and counters of what ran, how many at
//! once, and whether an exclusive call ever overlapped another.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_contract::{
    BoxFuture, ExposedTool, NestedCall, NestedCalls, NestedCallsHandle, NestedOutcome,
};

#[derive(Default)]
pub struct Fake {
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    pub exclusive_overlapped: AtomicBool,
    pub exclusive_running: AtomicBool,
    pub cancelled: AtomicUsize,
    /// (call id, tool name) in the order calls started.
    pub started: Mutex<Vec<(String, String)>>,
    /// The parent and root ids calls carried.
    pub parents: Mutex<Vec<(String, String)>>,
}

fn tool(name: &str, description: &str, input: Value, output: Option<Value>) -> ExposedTool {
    ExposedTool {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: input,
        output_schema: output,
    }
}

pub fn exposed() -> Vec<ExposedTool> {
    let open = json!({"type": "object"});
    vec![
        tool(
            "echo",
            "Returns its arguments.",
            json!({"type": "object", "properties": {"i": {"type": "integer", "description": "A number."}}}),
            Some(json!({"type": "object"})),
        ),
        tool(
            "slow",
            "Waits 20 ms, then returns {}.",
            open.clone(),
            Some(json!({"type": "object"})),
        ),
        tool("wait", "Waits until cancelled.", open.clone(), None),
        tool("edit", "An exclusive call that takes 20 ms.", open.clone(), None),
        tool("fail", "Always fails.", open.clone(), None),
        tool(
            "big",
            "Returns a string of n bytes.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            Some(json!({"type": "string"})),
        ),
        tool("my-tool", "A tool whose name is not an identifier.", open.clone(), None),
        tool("__proto__", "A tool named like the prototype accessor.", open, None),
    ]
}

impl Fake {
    pub fn handle() -> (Arc<Fake>, NestedCallsHandle) {
        let fake = Arc::new(Fake::default());
        let handle: NestedCallsHandle = fake.clone();
        (fake, handle)
    }

    pub fn started_names(&self) -> Vec<String> {
        self.started.lock().unwrap().iter().map(|(_, n)| n.clone()).collect()
    }

    async fn body(&self, call: &NestedCall) -> NestedOutcome {
        let pause = |ms| async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => true,
                _ = call.cancel.cancelled() => false,
            }
        };
        let aborted = || {
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            NestedOutcome::Failed {
                message: "tool call aborted".into(),
                code: Some("ABORTED".into()),
            }
        };
        match call.name.as_str() {
            "echo" => NestedOutcome::Value(call.arguments.clone()),
            "slow" => {
                if pause(20).await {
                    NestedOutcome::Value(json!({}))
                } else {
                    aborted()
                }
            }
            "wait" => {
                call.cancel.cancelled().await;
                aborted()
            }
            "edit" => {
                if pause(20).await {
                    NestedOutcome::Value(json!("edited"))
                } else {
                    aborted()
                }
            }
            "fail" => NestedOutcome::Failed { message: "nope".into(), code: Some("E_NOPE".into()) },
            "big" => {
                let n = call.arguments["n"].as_u64().unwrap_or(0) as usize;
                NestedOutcome::Value(Value::String("x".repeat(n)))
            }
            other => NestedOutcome::Value(json!(other)),
        }
    }
}

impl NestedCalls for Fake {
    fn tools(&self) -> Vec<ExposedTool> {
        exposed()
    }

    fn concurrency_safe(&self, name: &str, _arguments: &Value) -> bool {
        name != "edit"
    }

    fn call(&self, call: NestedCall) -> BoxFuture<'_, NestedOutcome> {
        Box::pin(async move {
            self.started.lock().unwrap().push((call.call_id.clone(), call.name.clone()));
            let ids = (call.parent_call_id.clone(), call.root_call_id.clone());
            self.parents.lock().unwrap().push(ids);
            let exclusive = call.name == "edit";
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            if exclusive {
                if now != 1 {
                    self.exclusive_overlapped.store(true, Ordering::SeqCst);
                }
                self.exclusive_running.store(true, Ordering::SeqCst);
            } else if self.exclusive_running.load(Ordering::SeqCst) {
                self.exclusive_overlapped.store(true, Ordering::SeqCst);
            }
            let outcome = self.body(&call).await;
            if exclusive {
                self.exclusive_running.store(false, Ordering::SeqCst);
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            outcome
        })
    }
}
