//! Programs of another kind on `run_code`'s runtime: the same fresh QuickJS runtime per run, its
//! limits and its cancellation, with another prelude (the program's globals) and another
//! dispatcher of what the program asks the host for. `workflow` scripts are such programs
//! (their `agent()` calls start child runs of the agent); one engine serves both tools.
//!
//! Unlike `run_code`'s tool calls, which this crate schedules (submission order, read-only ones
//! together), a kind's requests are handed to its dispatcher as they are made: the dispatcher
//! decides what runs at once. The run itself is `run_code`'s loop (`runner::drive`): when it
//! ends, any way, the token the dispatcher was given is cancelled and every request still
//! running is awaited.

use crate::config::CodeConfig;
use crate::failure::{Failure, FailureKind};
pub use crate::runner::Settled;
use crate::runner::{Progress, Ran, Requests, Running, Started, drive};
use crate::strip::to_function_source;
use crate::vm::Shared;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What every kind's prelude builds on (`base.js`): it calls the kind's prelude with a kit of
/// what every kind needs — `ToolCallError`, the lossless-JSON check, requests to the host and
/// their settling, `describe`, the encodings of a result, the installation of globals.
pub use crate::vm::BASE_PRELUDE;

/// A program kind: the prelude that installs its globals.
#[derive(Clone, Copy, Debug)]
pub struct ProgramKind {
    /// A function of `(kit, hostLog, hostCall, dataJson)` returning `{start, settle, describe}`,
    /// called by [`BASE_PRELUDE`] with its kit (see `prelude.js` for the contract).
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
    let outcome = match to_function_source(&program.code) {
        Ok(source) => {
            let started = Started {
                source,
                prelude: program.kind.prelude,
                data_json: program.data.to_string(),
                config: program.config,
                signal: program.signal,
                progress: program.progress,
            };
            let requests = Dispatcher { dispatch: program.dispatch, submitted: Vec::new() };
            drive(started, requests, &shared).await
        }
        Err(message) => Err(Failure::new(FailureKind::Exception, message)),
    };
    Ran { logs: shared.logs(), outcome }
}

/// A kind's requests: each handed to its dispatcher as soon as it is made.
struct Dispatcher {
    dispatch: Dispatch,
    submitted: Vec<(u64, String, Value)>,
}

impl Requests for Dispatcher {
    fn submit(&mut self, n: u64, name: String, arguments: Value) {
        self.submitted.push((n, name, arguments));
    }

    fn start(
        &mut self,
        token: &CancellationToken,
        running: &mut Running,
        _refuse: &mut dyn FnMut(u64, String),
    ) {
        for (n, name, arguments) in self.submitted.drain(..) {
            let request = Request { n, name, arguments, cancel: token.clone() };
            let fut = (self.dispatch)(request);
            running.push(Box::pin(async move { (n, fut.await) }));
        }
    }

    fn ended(&mut self, _n: u64) {}

    fn publish_with_requests(&self) -> bool {
        true
    }
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
