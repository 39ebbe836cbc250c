//! The program's thread: one fresh QuickJS runtime and context per run, on an OS thread of its
//! own, so a busy program never holds up the host's async runtime and its CPU time can be read
//! alone (the thread's CPU clock: awaiting a slow tool costs no compute time).
//!
//! The thread runs the program's jobs until it has to wait for a nested call, then blocks on
//! the host's channel. A nested call goes to the host as a message ([`FromVm::Call`]); its end
//! comes back as [`ToVm::Settled`] and settles the program's promise. The interrupt handler
//! stops the program at once on cancellation or a limit (QuickJS's interrupt cannot be caught).

use crate::config::CodeConfig;
use crate::failure::{Failure, FailureKind};
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Promise, Runtime, Value as JsValue};
use serde::Deserialize as _;
use serde_json::Value;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use toolhost_contract::tool::panic_message;

/// `run_code`'s prelude: the `tools`, `ToolCallError` and `console` globals.
pub(crate) const PRELUDE: &str = include_str!("prelude.js");
/// What every prelude builds on: a function of `(kind, hostLog, hostCall, dataJson)` that calls
/// the kind's prelude with the shared kit (`ToolCallError`, the lossless-JSON check, requests
/// and their settling, `describe`, result encodings, globals).
pub const BASE_PRELUDE: &str = include_str!("base.js");

/// Native stack the thread has beyond the JavaScript stack limit (the parser, host functions,
/// QuickJS's own frames), so reaching the limit is an exception and never a crash.
const STACK_MARGIN: usize = 8 * 1024 * 1024;

/// A message from the program to the host.
pub(crate) enum FromVm {
    /// The program called `tools.<name>(arguments)`: call number `n` (from 1).
    Call { n: u64, name: String, arguments: Value },
    /// The run ended: the program's result (`None` for `undefined`) or why it failed. The
    /// runtime is gone when this is sent.
    Finished(Result<Option<Value>, Failure>),
}

/// A message from the host to the program.
pub(crate) enum ToVm {
    /// Call `n` ended: its value as JSON text, or the error's message and code.
    Settled { n: u64, ok: bool, text: String, code: Option<String> },
    /// The run was cancelled.
    Stop,
}

/// What the host and the program's thread both see.
#[derive(Default)]
pub(crate) struct Shared {
    /// `console.*` lines so far.
    pub logs: Mutex<Vec<String>>,
    /// Output bytes so far: logs, nested values and (at the end) the result.
    pub output_used: AtomicU64,
    /// Set on cancellation; the interrupt handler reads it.
    pub cancelled: AtomicBool,
}

impl Shared {
    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// Everything the thread needs.
pub(crate) struct VmSetup {
    pub source: String,
    /// The program kind's prelude: a function of `(kit, hostLog, hostCall, dataJson)` (the kit
    /// of [`BASE_PRELUDE`]) that installs the program's globals and returns
    /// `{start, settle, describe}`.
    pub prelude: &'static str,
    /// What the prelude is given as its third argument (`run_code`: the tool catalog).
    pub data_json: String,
    pub config: CodeConfig,
    pub shared: Arc<Shared>,
    pub to_host: tokio::sync::mpsc::UnboundedSender<FromVm>,
    pub from_host: mpsc::Receiver<ToVm>,
    pub started: Instant,
}

/// Why the host stopped the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Compute,
    Wall,
    Abort,
    Output,
    Calls,
}

/// Starts the program's thread; it always ends with one [`FromVm::Finished`] (a panic included)
/// unless it could not be started.
pub(crate) fn spawn(setup: VmSetup) -> std::io::Result<()> {
    let stack = setup.config.stack_bytes.saturating_add(STACK_MARGIN);
    std::thread::Builder::new().name("run_code".to_owned()).stack_size(stack).spawn(move || {
        let to_host = setup.to_host.clone();
        let outcome = catch_unwind(AssertUnwindSafe(|| run(setup))).unwrap_or_else(|payload| {
            Err(Failure::new(
                FailureKind::WorkerExit,
                format!("the program's thread panicked: {}", panic_message(&*payload)),
            ))
        });
        let _ = to_host.send(FromVm::Finished(outcome));
    })?;
    Ok(())
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

/// Bytes `text` takes as a JSON string in the logs array (quotes, escapes and a comma).
pub(crate) fn json_string_len(text: &str) -> u64 {
    let escaped = serde_json::to_string(text).map(|s| s.len()).unwrap_or(text.len() + 2);
    u64::try_from(escaped + 1).unwrap_or(u64::MAX)
}

fn failure_of(stop: Stop, config: &CodeConfig) -> Failure {
    let ms = |d: Duration| d.as_millis();
    match stop {
        Stop::Compute => Failure::new(
            FailureKind::Timeout,
            format!(
                "the program used more than its {} ms of compute time (waiting for tools does \
                 not count)",
                ms(config.compute)
            ),
        ),
        Stop::Wall => Failure::new(
            FailureKind::Timeout,
            format!("the run took longer than its wall-clock limit of {} ms", ms(config.wall)),
        ),
        Stop::Abort => Failure::new(FailureKind::Abort, "the run was cancelled"),
        Stop::Output => Failure::new(
            FailureKind::OutputLimit,
            format!(
                "the run's output passed {} bytes (logs, the result and every value nested calls \
                 returned count); log less, return a summary, or read large results in pages",
                config.output_bytes
            ),
        ),
        Stop::Calls => Failure::new(
            FailureKind::CallLimit,
            format!("the program made more than {} nested calls", config.max_calls),
        ),
    }
}

fn worker_exit(err: impl std::fmt::Display) -> Failure {
    Failure::new(FailureKind::WorkerExit, format!("the program's runtime failed: {err}"))
}

fn run(setup: VmSetup) -> Result<Option<Value>, Failure> {
    let rt = Runtime::new().map_err(worker_exit)?;
    rt.set_memory_limit(setup.config.memory_bytes);
    rt.set_max_stack_size(setup.config.stack_bytes);
    let stop: Rc<Cell<Option<Stop>>> = Rc::default();
    let deadline = setup.started + setup.config.wall;
    {
        let stop = Rc::clone(&stop);
        let shared = Arc::clone(&setup.shared);
        let compute = setup.config.compute;
        let output = setup.config.output_bytes;
        let cpu_start = thread_cpu();
        rt.set_interrupt_handler(Some(Box::new(move || {
            if stop.get().is_some() {
                return true;
            }
            let reason = if shared.cancelled.load(Ordering::Relaxed) {
                Some(Stop::Abort)
            } else if shared.output_used.load(Ordering::Relaxed) > output {
                Some(Stop::Output)
            } else if thread_cpu().saturating_sub(cpu_start) > compute {
                Some(Stop::Compute)
            } else if Instant::now() >= deadline {
                Some(Stop::Wall)
            } else {
                None
            };
            stop.set(reason);
            reason.is_some()
        })));
    }
    let context = Context::full(&rt).map_err(worker_exit)?;
    let outcome = context.with(|ctx| drive(&ctx, &setup, &stop, deadline));
    match outcome {
        Err(DriveError::Stopped(s)) => Err(failure_of(s, &setup.config)),
        Err(DriveError::Failed(f)) => Err(f),
        Err(DriveError::Js(e)) => {
            Err(stop.get().map(|s| failure_of(s, &setup.config)).unwrap_or_else(|| worker_exit(e)))
        }
        Ok(value) => Ok(value),
    }
}

enum DriveError {
    Stopped(Stop),
    Failed(Failure),
    Js(rquickjs::Error),
}

impl From<rquickjs::Error> for DriveError {
    fn from(e: rquickjs::Error) -> Self {
        DriveError::Js(e)
    }
}

fn set_once(stop: &Cell<Option<Stop>>, reason: Stop) {
    if stop.get().is_none() {
        stop.set(Some(reason));
    }
}

/// Runs the program to its end inside the context.
fn drive<'js>(
    ctx: &Ctx<'js>,
    setup: &VmSetup,
    stop: &Rc<Cell<Option<Stop>>>,
    deadline: Instant,
) -> Result<Option<Value>, DriveError> {
    let in_flight = Rc::new(Cell::new(0u64));
    let host_log = {
        let shared = Arc::clone(&setup.shared);
        let stop = Rc::clone(stop);
        let limit = setup.config.output_bytes;
        Function::new(ctx.clone(), move |line: String| {
            let bytes = json_string_len(&line);
            let used = shared.output_used.fetch_add(bytes, Ordering::Relaxed) + bytes;
            if let Ok(mut logs) = shared.logs.lock() {
                logs.push(line);
            }
            if used > limit {
                set_once(&stop, Stop::Output);
            }
        })?
    };
    let host_call = {
        let stop = Rc::clone(stop);
        let in_flight = Rc::clone(&in_flight);
        let to_host = setup.to_host.clone();
        let max_calls = setup.config.max_calls;
        let count = Cell::new(0u64);
        Function::new(ctx.clone(), move |name: String, json: String| -> f64 {
            if stop.get().is_some() {
                return -1.0;
            }
            let n = count.get() + 1;
            if n > max_calls {
                set_once(&stop, Stop::Calls);
                return -1.0;
            }
            count.set(n);
            // Deep arguments are the program's business: no recursion limit here.
            let mut de = serde_json::Deserializer::from_str(&json);
            de.disable_recursion_limit();
            let Ok(arguments) = Value::deserialize(&mut de) else {
                return -1.0;
            };
            in_flight.set(in_flight.get() + 1);
            let _ = to_host.send(FromVm::Call { n, name, arguments });
            n as f64
        })?
    };
    let options = |file: &str| {
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(file.to_owned());
        options
    };
    // The kind's prelude builds on the base every kind shares (`base.js`), which calls it.
    let base: Function = ctx.eval_with_options(BASE_PRELUDE, options("base.js"))?;
    let prelude: Function = ctx.eval_with_options(setup.prelude, options("prelude.js"))?;
    let api: Object = base.call((prelude, host_log, host_call, setup.data_json.as_str()))?;
    let start: Function = api.get("start")?;
    let settle: Function = api.get("settle")?;
    let describe: Function = api.get("describe")?;

    let thrown = |ctx: &Ctx<'js>| -> DriveError {
        if let Some(s) = stop.get() {
            return DriveError::Stopped(s);
        }
        let value = ctx.catch();
        DriveError::Failed(classify(ctx, &describe, value, &setup.config))
    };
    let body: Function = match ctx.eval_with_options(setup.source.as_str(), options("run_code.js"))
    {
        Ok(body) => body,
        Err(rquickjs::Error::Exception) => return Err(thrown(ctx)),
        Err(e) => return Err(e.into()),
    };
    let main: Promise = match start.call((body,)) {
        Ok(main) => main,
        Err(rquickjs::Error::Exception) => return Err(thrown(ctx)),
        Err(e) => return Err(e.into()),
    };
    loop {
        while stop.get().is_none() && ctx.execute_pending_job() {}
        if let Some(s) = stop.get() {
            return Err(DriveError::Stopped(s));
        }
        match main.state() {
            PromiseState::Resolved => {
                let text: String = main.result().unwrap_or(Err(rquickjs::Error::Unknown))?;
                return finish(&text, setup);
            }
            PromiseState::Rejected => {
                let _ = main.result::<JsValue>();
                return Err(thrown(ctx));
            }
            PromiseState::Pending => {}
        }
        if in_flight.get() == 0 {
            return Err(DriveError::Failed(Failure::new(
                FailureKind::Exception,
                "the program is waiting for a promise that nothing can settle",
            )));
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match setup.from_host.recv_timeout(wait) {
            Ok(ToVm::Settled { n, ok, text, code }) => {
                in_flight.set(in_flight.get().saturating_sub(1));
                if let Err(rquickjs::Error::Exception) =
                    settle.call::<_, ()>((n as f64, ok, text, code))
                {
                    return Err(thrown(ctx));
                }
            }
            Ok(ToVm::Stop) => set_once(stop, Stop::Abort),
            Err(mpsc::RecvTimeoutError::Timeout) => set_once(stop, Stop::Wall),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(DriveError::Failed(worker_exit("the host went away")));
            }
        }
    }
}

/// The program's result from the prelude's encoding: `u` undefined, `i<why>` not lossless
/// JSON, `v<json>` a value.
fn finish(text: &str, setup: &VmSetup) -> Result<Option<Value>, DriveError> {
    let (tag, rest) = text.split_at(text.len().min(1));
    match tag {
        "u" => Ok(None),
        "i" => Err(DriveError::Failed(Failure::new(
            FailureKind::InvalidOutput,
            format!("the program's result is not lossless JSON: {rest}"),
        ))),
        _ => {
            let bytes = u64::try_from(rest.len()).unwrap_or(u64::MAX);
            let used = setup.shared.output_used.fetch_add(bytes, Ordering::Relaxed) + bytes;
            if used > setup.config.output_bytes {
                return Err(DriveError::Stopped(Stop::Output));
            }
            let mut de = serde_json::Deserializer::from_str(rest);
            de.disable_recursion_limit();
            Value::deserialize(&mut de).map(Some).map_err(|e| {
                DriveError::Failed(Failure::new(FailureKind::InvalidOutput, e.to_string()))
            })
        }
    }
}

/// What a thrown value means: the memory or stack limit, or the program's own exception.
fn classify<'js>(
    ctx: &Ctx<'js>,
    describe: &Function<'js>,
    value: JsValue<'js>,
    config: &CodeConfig,
) -> Failure {
    let text: String = match describe.call((value,)) {
        Ok(text) => text,
        // Describing needs memory; a heap that cannot even do that is out of memory.
        Err(_) => {
            let _ = ctx.catch();
            "InternalError: out of memory".to_owned()
        }
    };
    if text.starts_with("InternalError: out of memory") {
        return Failure::new(
            FailureKind::Memory,
            format!("the program passed its memory limit of {} bytes", config.memory_bytes),
        );
    }
    if text.starts_with("RangeError: Maximum call stack size exceeded") {
        return Failure::new(
            FailureKind::Stack,
            format!(
                "the program passed its stack limit of {} bytes (too deep a recursion)",
                config.stack_bytes
            ),
        );
    }
    Failure::new(FailureKind::Exception, text)
}
