//! One run, host side: the program's thread started, its nested calls scheduled and run through
//! the host's [`NestedCalls`], cancellation passed on, and nothing left running at the end.
//!
//! Scheduling (the agent loop's rule, docs/tools.md): calls start strictly in the order the
//! program made them; concurrency-safe calls overlap up to `max_parallel_calls`; an exclusive
//! call waits until nothing runs and runs alone. Whether a call is concurrency-safe is asked
//! when it is about to start. When the run ends (any way) its token is cancelled: calls not yet
//! started are dropped unstarted, running ones are cancelled and awaited.

use crate::config::CodeConfig;
use crate::failure::{Failure, FailureKind};
use crate::vm::{self, FromVm, Shared, ToVm, VmSetup};
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{NestedCall, NestedCallsHandle, NestedOutcome};

/// How often a background run publishes its logs so far.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Publishes the logs so far (a background run's `job_output`).
pub type Progress = Arc<dyn Fn(String) + Send + Sync>;

/// One run's inputs.
pub struct Run {
    /// The program as a JavaScript function expression (already stripped of types).
    pub function_source: String,
    /// `[{name, description, declaration}]` of every callable tool, as JSON.
    pub catalog_json: String,
    pub nested: Option<NestedCallsHandle>,
    /// The `run_code` call: every nested call's parent.
    pub parent_call_id: String,
    pub config: CodeConfig,
    pub signal: CancellationToken,
    pub progress: Option<Progress>,
}

/// What a run produced: its logs, and its result (`None` for `undefined`) or why it failed.
pub struct Ran {
    pub logs: Vec<String>,
    pub outcome: Result<Option<Value>, Failure>,
}

struct Queued {
    n: u64,
    name: String,
    arguments: Value,
}

/// Runs a program to its end.
pub async fn execute(run: Run) -> Ran {
    let shared = Arc::new(Shared::default());
    let outcome = schedule(run, &shared).await;
    Ran { logs: shared.logs(), outcome }
}

async fn schedule(run: Run, shared: &Arc<Shared>) -> Result<Option<Value>, Failure> {
    let (to_host, mut from_vm) = tokio::sync::mpsc::unbounded_channel();
    let (to_vm, vm_inbox) = std::sync::mpsc::channel();
    let setup = VmSetup {
        source: run.function_source,
        prelude: vm::PRELUDE,
        data_json: run.catalog_json,
        config: run.config.clone(),
        shared: Arc::clone(shared),
        to_host,
        from_host: vm_inbox,
        started: Instant::now(),
    };
    vm::spawn(setup).map_err(|e| {
        Failure::new(FailureKind::WorkerExit, format!("the program's thread did not start: {e}"))
    })?;
    let nested = run.nested;
    let parent = run.parent_call_id;
    let max_parallel = run.config.max_parallel_calls.max(1);
    let run_token = run.signal.child_token();
    let mut queue: VecDeque<Queued> = VecDeque::new();
    let mut running = FuturesUnordered::new();
    let mut exclusive_running = false;
    let mut cancelled = false;
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    let mut published = 0usize;
    let outcome = loop {
        while let Some(head) = queue.front() {
            let Some(nested) = nested.as_ref() else {
                // No host to call through: every call fails at once.
                let Some(q) = queue.pop_front() else { break };
                let _ = to_vm.send(ToVm::Settled {
                    n: q.n,
                    ok: false,
                    text: format!(
                        "no tools are available to programs here; {} not dispatched",
                        q.name
                    ),
                    code: None,
                });
                continue;
            };
            let safe = nested.concurrency_safe(&head.name, &head.arguments);
            let may_start = if safe {
                !exclusive_running && running.len() < max_parallel
            } else {
                running.is_empty()
            };
            if !may_start {
                break;
            }
            let Some(q) = queue.pop_front() else { break };
            exclusive_running |= !safe;
            let call = NestedCall {
                parent_call_id: parent.clone(),
                root_call_id: parent.clone(),
                call_id: format!("{parent}:code:{}", q.n),
                name: q.name,
                arguments: q.arguments,
                cancel: run_token.clone(),
            };
            let n = q.n;
            let fut = nested.call(call);
            running.push(async move { (n, safe, fut.await) });
        }
        tokio::select! {
            biased;
            _ = run.signal.cancelled(), if !cancelled => {
                cancelled = true;
                shared.cancelled.store(true, Ordering::SeqCst);
                run_token.cancel();
                let _ = to_vm.send(ToVm::Stop);
            }
            Some((n, safe, outcome)) = running.next(), if !running.is_empty() => {
                if !safe {
                    exclusive_running = false;
                }
                let message = match outcome {
                    NestedOutcome::Value(value) => {
                        let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".to_owned());
                        let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
                        shared.output_used.fetch_add(bytes, Ordering::Relaxed);
                        ToVm::Settled { n, ok: true, text, code: None }
                    }
                    NestedOutcome::Failed { message, code } => {
                        ToVm::Settled { n, ok: false, text: message, code }
                    }
                };
                let _ = to_vm.send(message);
            }
            event = from_vm.recv() => match event {
                Some(FromVm::Call { n, name, arguments }) => {
                    queue.push_back(Queued { n, name, arguments });
                }
                Some(FromVm::Finished(outcome)) => break outcome,
                None => break Err(Failure::new(
                    FailureKind::WorkerExit,
                    "the program's thread ended without a result",
                )),
            },
            _ = ticker.tick(), if run.progress.is_some() => {
                if let Some(progress) = &run.progress {
                    let logs = shared.logs();
                    if logs.len() != published {
                        published = logs.len();
                        progress(logs.join("\n"));
                    }
                }
            }
        }
    };
    // The run is over: nothing queued starts, everything running is cancelled and awaited.
    run_token.cancel();
    queue.clear();
    while running.next().await.is_some() {}
    if let Some(progress) = &run.progress {
        progress(shared.logs().join("\n"));
    }
    outcome
}
