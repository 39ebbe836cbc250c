//! Programs of another kind on `run_code`'s runtime: the same fresh QuickJS runtime per run, its
//! limits and its cancellation, with another prelude (the program's globals) and another
//! dispatcher of what the program asks the host for. `workflow` scripts are such programs
//! (their `agent()` calls start child runs of the agent); one engine serves both tools.
//!
//! Unlike `run_code`'s tool calls, which this crate schedules (submission order, read-only ones
//! together), a kind's requests are handed to its dispatcher as they are made: the dispatcher
//! decides what runs at once. When the run ends, any way, the token the dispatcher was given is
//! cancelled and every request still running is awaited.

use crate::config::CodeConfig;
use crate::failure::{Failure, FailureKind};
use crate::runner::{Progress, Ran};
use crate::strip::to_function_source;
use crate::vm::{self, FromVm, Shared, ToVm, VmSetup};
use futures::StreamExt as _;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often a run publishes its logs to its progress callback.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// A program kind: the prelude that installs its globals.
#[derive(Clone, Copy, Debug)]
pub struct ProgramKind {
    /// A function of `(hostLog, hostCall, dataJson)` returning `{start, settle, describe}`
    /// (see `prelude.js` for the contract).
    pub prelude: &'static str,
}

/// `workflow` scripts: `args`, `agent`, `parallel`, `pipeline`, `phase`, `log`; no clock, no
/// randomness (see `workflow.js`).
pub const WORKFLOW: ProgramKind = ProgramKind { prelude: include_str!("workflow.js") };

/// One request of a program: `hostCall(name, arguments)` number `n` (from 1).
pub struct Request {
    pub n: u64,
    pub name: String,
    pub arguments: Value,
    /// Cancelled when the run ends (any way): the request must end soon after.
    pub cancel: CancellationToken,
}

/// How a request ended: its value, or an error's message and code (the prelude decides what
/// the program sees of either).
pub type Settled = Result<Value, (String, Option<String>)>;

/// What answers a program's requests.
pub type Dispatch = Arc<dyn Fn(Request) -> BoxFuture<'static, Settled> + Send + Sync>;

/// One run of a program of `kind`.
pub struct Program {
    pub kind: ProgramKind,
    /// The body of an async function (erasable TypeScript is stripped).
    pub code: String,
    /// The prelude's data (a kind's own inputs, e.g. the script's `args`).
    pub data: Value,
    pub config: CodeConfig,
    pub signal: CancellationToken,
    pub dispatch: Dispatch,
    pub progress: Option<Progress>,
}

/// Runs a program to its end: its logs, and its result or why it failed.
pub async fn run(program: Program) -> Ran {
    let shared = Arc::new(Shared::default());
    let outcome = drive(program, &shared).await;
    Ran { logs: shared.logs(), outcome }
}

async fn drive(program: Program, shared: &Arc<Shared>) -> Result<Option<Value>, Failure> {
    let source = to_function_source(&program.code)
        .map_err(|message| Failure::new(FailureKind::Exception, message))?;
    let (to_host, mut from_vm) = tokio::sync::mpsc::unbounded_channel();
    let (to_vm, vm_inbox) = std::sync::mpsc::channel();
    let setup = VmSetup {
        source,
        prelude: program.kind.prelude,
        data_json: program.data.to_string(),
        config: program.config.clone(),
        shared: Arc::clone(shared),
        to_host,
        from_host: vm_inbox,
        started: Instant::now(),
    };
    vm::spawn(setup).map_err(|e| {
        Failure::new(FailureKind::WorkerExit, format!("the program's thread did not start: {e}"))
    })?;
    let run_token = program.signal.child_token();
    let mut running = FuturesUnordered::new();
    let mut cancelled = false;
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    let mut published = 0usize;
    let outcome = loop {
        tokio::select! {
            biased;
            _ = program.signal.cancelled(), if !cancelled => {
                cancelled = true;
                shared.cancelled.store(true, Ordering::SeqCst);
                run_token.cancel();
                let _ = to_vm.send(ToVm::Stop);
            }
            Some((n, settled)) = running.next(), if !running.is_empty() => {
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
                    if let Some(progress) = &program.progress {
                        let logs = shared.logs();
                        if logs.len() != published {
                            published = logs.len();
                            progress(logs.join("\n"));
                        }
                    }
                    let request = Request { n, name, arguments, cancel: run_token.clone() };
                    let fut = (program.dispatch)(request);
                    running.push(async move { (n, fut.await) });
                }
                Some(FromVm::Finished(outcome)) => break outcome,
                None => break Err(Failure::new(
                    FailureKind::WorkerExit,
                    "the program's thread ended without a result",
                )),
            },
            _ = ticker.tick(), if program.progress.is_some() => {
                if let Some(progress) = &program.progress {
                    let logs = shared.logs();
                    if logs.len() != published {
                        published = logs.len();
                        progress(logs.join("\n"));
                    }
                }
            }
        }
    };
    run_token.cancel();
    while running.next().await.is_some() {}
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn program(code: &str, args: Value, dispatch: Dispatch) -> Program {
        Program {
            kind: WORKFLOW,
            code: code.to_owned(),
            data: json!({ "args": args }),
            config: CodeConfig::default(),
            signal: CancellationToken::new(),
            dispatch,
            progress: None,
        }
    }

    /// Answers `agent` with the prompt upper-cased (or the schema's example), `phase` with null.
    fn echo() -> Dispatch {
        Arc::new(|request: Request| {
            Box::pin(async move {
                match request.name.as_str() {
                    "agent" => {
                        let prompt = request.arguments["prompt"].as_str().unwrap_or_default();
                        if prompt == "fatal" {
                            return Err(("bad schema".to_owned(), Some("FATAL".to_owned())));
                        }
                        if prompt == "fails" {
                            return Ok(Value::Null);
                        }
                        Ok(json!(prompt.to_uppercase()))
                    }
                    _ => Ok(Value::Null),
                }
            })
        })
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn parallel_and_pipeline_return_every_result_in_order() {
        let code = r#"
phase("one");
const a = await parallel([() => agent("x"), () => agent("y", { label: "why" })]);
const b = await pipeline(args.items, (prev, item, i) => agent(prev + i), (prev) => agent(prev + "!"));
log("done");
return { a, b, failed: await agent("fails") };
"#;
        let ran = block_on(run(program(code, json!({"items": ["p", "q"]}), echo())));
        assert_eq!(ran.logs, ["done"]);
        let value = ran.outcome.unwrap().unwrap();
        assert_eq!(value, json!({"a": ["X", "Y"], "b": ["P0!", "Q1!"], "failed": null}));
    }

    #[test]
    fn fatal_errors_and_unknown_options_go_through_the_combinators() {
        let ran = block_on(run(program(
            "return await parallel([() => agent('x'), () => agent('fatal')]);",
            json!({}),
            echo(),
        )));
        let failure = ran.outcome.unwrap_err();
        assert!(failure.message.contains("bad schema"), "{failure:?}");
        let ran = block_on(run(program(
            "try { await agent('x', { colour: 1 }); } catch (e) { return 'caught'; }",
            json!({}),
            echo(),
        )));
        let failure = ran.outcome.unwrap_err();
        assert!(failure.message.contains("unknown agent option \"colour\""), "{failure:?}");
    }

    #[test]
    fn the_clock_and_randomness_are_not_offered() {
        let code = "return [typeof Date.now, typeof Math.random, new Date(0).getTime(), \
                    (() => { try { new Date(); return 'clock'; } catch (e) { return 'none'; } })()];";
        let ran = block_on(run(program(code, json!({}), echo())));
        assert_eq!(ran.outcome.unwrap().unwrap(), json!(["undefined", "undefined", 0, "none"]));
    }

    #[test]
    fn a_combinator_refuses_more_than_its_cap_of_items() {
        let code = "return await parallel(Array.from({ length: 4097 }, () => () => 1));";
        let failure = block_on(run(program(code, json!({}), echo()))).outcome.unwrap_err();
        assert!(failure.message.contains("at most 4096"), "{failure:?}");
    }
}
