//! One run, host side: the program's thread started, its requests handed to its kind's
//! [`Requests`] — for `run_code`, nested calls scheduled and run through the host's
//! [`NestedCalls`] — cancellation passed on, and nothing left running at the end. Every kind of
//! program runs in the one loop here ([`drive`]).
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
use futures::future::BoxFuture;
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

/// How a request ended: its value, or an error's message and code (the prelude decides what
/// the program sees of either).
pub type Settled = Result<Value, (String, Option<String>)>;

/// The requests of a run that are going on, each ending with its number and how it ended.
pub(crate) type Running = FuturesUnordered<BoxFuture<'static, (u64, Settled)>>;

/// What one kind of program does with its requests: `run_code` schedules them as nested calls,
/// another kind hands each to its dispatcher. The loop ([`drive`]) is the same for all.
pub(crate) trait Requests {
    /// A request the program made (`hostCall(name, arguments)` number `n`).
    fn submit(&mut self, n: u64, name: String, arguments: Value);
    /// Starts the submitted requests that may start now, under `token`; a request refused
    /// before it starts is answered at once with its message.
    fn start(
        &mut self,
        token: &CancellationToken,
        running: &mut Running,
        refuse: &mut dyn FnMut(u64, String),
    );
    /// Request `n` ended.
    fn ended(&mut self, n: u64);
    /// Whether the logs so far are published with each request (not only every 250 ms).
    fn publish_with_requests(&self) -> bool;
}

/// `run_code`'s requests: nested calls in submission order, concurrency-safe ones overlapping
/// up to `max_parallel`, an exclusive one alone.
struct NestedScheduler {
    nested: Option<NestedCallsHandle>,
    parent: String,
    max_parallel: usize,
    queue: VecDeque<Queued>,
    /// The exclusive call running, if one is.
    exclusive: Option<u64>,
}

impl Requests for NestedScheduler {
    fn submit(&mut self, n: u64, name: String, arguments: Value) {
        self.queue.push_back(Queued { n, name, arguments });
    }

    fn start(
        &mut self,
        token: &CancellationToken,
        running: &mut Running,
        refuse: &mut dyn FnMut(u64, String),
    ) {
        while let Some(head) = self.queue.front() {
            let Some(nested) = self.nested.as_ref() else {
                // No host to call through: every call fails at once.
                let Some(q) = self.queue.pop_front() else { break };
                refuse(
                    q.n,
                    format!("no tools are available to programs here; {} not dispatched", q.name),
                );
                continue;
            };
            let safe = nested.concurrency_safe(&head.name, &head.arguments);
            let may_start = if safe {
                self.exclusive.is_none() && running.len() < self.max_parallel
            } else {
                running.is_empty()
            };
            if !may_start {
                break;
            }
            let Some(q) = self.queue.pop_front() else { break };
            if !safe {
                self.exclusive = Some(q.n);
            }
            let parent = self.parent.clone();
            let call = NestedCall {
                parent_call_id: parent.clone(),
                root_call_id: parent.clone(),
                call_id: format!("{parent}:code:{}", q.n),
                name: q.name,
                arguments: q.arguments,
                cancel: token.clone(),
            };
            let n = q.n;
            let nested = Arc::clone(nested);
            running.push(Box::pin(async move {
                let settled = match nested.call(call).await {
                    NestedOutcome::Value(value) => Ok(value),
                    NestedOutcome::Failed { message, code } => Err((message, code)),
                };
                (n, settled)
            }));
        }
    }

    fn ended(&mut self, n: u64) {
        if self.exclusive == Some(n) {
            self.exclusive = None;
        }
    }

    fn publish_with_requests(&self) -> bool {
        false
    }
}

/// Runs a program to its end.
pub async fn execute(run: Run) -> Ran {
    let shared = Arc::new(Shared::default());
    let scheduler = NestedScheduler {
        nested: run.nested,
        parent: run.parent_call_id,
        max_parallel: run.config.max_parallel_calls.max(1),
        queue: VecDeque::new(),
        exclusive: None,
    };
    let program = Started {
        source: run.function_source,
        prelude: vm::PRELUDE,
        data_json: run.catalog_json,
        config: run.config,
        signal: run.signal,
        progress: run.progress,
    };
    let outcome = drive(program, scheduler, &shared).await;
    Ran { logs: shared.logs(), outcome }
}

/// What [`drive`] starts: a program of some kind on its own thread.
pub(crate) struct Started {
    pub source: String,
    pub prelude: &'static str,
    pub data_json: String,
    pub config: CodeConfig,
    pub signal: CancellationToken,
    pub progress: Option<Progress>,
}

/// Publishes the logs when they changed since the last time.
fn publish(progress: Option<&Progress>, shared: &Shared, published: &mut usize) {
    if let Some(progress) = progress {
        let logs = shared.logs();
        if logs.len() != *published {
            *published = logs.len();
            progress(logs.join("\n"));
        }
    }
}

/// The one loop of every run: starts the program's thread, hands its requests to `requests`,
/// sends their answers back, passes cancellation on, publishes the logs; when the run ends (any
/// way) its token is cancelled, nothing else starts, and every running request is awaited.
pub(crate) async fn drive(
    program: Started,
    mut requests: impl Requests,
    shared: &Arc<Shared>,
) -> Result<Option<Value>, Failure> {
    let (to_host, mut from_vm) = tokio::sync::mpsc::unbounded_channel();
    let (to_vm, vm_inbox) = std::sync::mpsc::channel();
    let setup = VmSetup {
        source: program.source,
        prelude: program.prelude,
        data_json: program.data_json,
        config: program.config,
        shared: Arc::clone(shared),
        to_host,
        from_host: vm_inbox,
        started: Instant::now(),
    };
    vm::spawn(setup).map_err(|e| {
        Failure::new(FailureKind::WorkerExit, format!("the program's thread did not start: {e}"))
    })?;
    let progress = program.progress.as_ref();
    let run_token = program.signal.child_token();
    let mut running: Running = FuturesUnordered::new();
    let mut cancelled = false;
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    let mut published = 0usize;
    let outcome = loop {
        requests.start(&run_token, &mut running, &mut |n, text| {
            let _ = to_vm.send(ToVm::Settled { n, ok: false, text, code: None });
        });
        tokio::select! {
            biased;
            _ = program.signal.cancelled(), if !cancelled => {
                cancelled = true;
                shared.cancelled.store(true, Ordering::SeqCst);
                run_token.cancel();
                let _ = to_vm.send(ToVm::Stop);
            }
            Some((n, settled)) = running.next(), if !running.is_empty() => {
                requests.ended(n);
                let message = match settled {
                    Ok(value) => {
                        let text = serde_json::to_string(&value).unwrap_or_else(|_| "null".to_owned());
                        let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
                        shared.output_used.fetch_add(bytes, Ordering::Relaxed);
                        ToVm::Settled { n, ok: true, text, code: None }
                    }
                    Err((text, code)) => ToVm::Settled { n, ok: false, text, code },
                };
                let _ = to_vm.send(message);
            }
            event = from_vm.recv() => match event {
                Some(FromVm::Call { n, name, arguments }) => {
                    // What the program logged before this request shows with it.
                    if requests.publish_with_requests() {
                        publish(progress, shared, &mut published);
                    }
                    requests.submit(n, name, arguments);
                }
                Some(FromVm::Finished(outcome)) => break outcome,
                None => break Err(Failure::new(
                    FailureKind::WorkerExit,
                    "the program's thread ended without a result",
                )),
            },
            _ = ticker.tick(), if progress.is_some() => {
                publish(progress, shared, &mut published);
            }
        }
    };
    // The run is over: nothing more starts, everything running is cancelled and awaited.
    run_token.cancel();
    drop(requests);
    while running.next().await.is_some() {}
    publish(progress, shared, &mut published);
    outcome
}
