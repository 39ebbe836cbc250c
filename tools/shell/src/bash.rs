//! `bash`: one command per call in a fresh `bash -c`, in the foreground (its output, exit code
//! and markers as the result) or as a background job (`run_in_background`).

use crate::capture::{Capture, CapturedStream, SpillOpener};
use crate::config::ShellConfig;
use crate::exec::{self, Ending};
use crate::jobs::JobRegistry;
use crate::live::{LiveFeed, LiveForwarder};
use crate::render;
use crate::sandbox::{self, Enforcement, SandboxMode};
use crate::world_exec::{self, Started};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::spill::{SpillHandle, SpillRequest};
use toolhost_contract::{EventsHandle, Tool, ToolContext, ToolError};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CallPresentation, CardKind, TerminalCall};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_workspace::{EntryKind, EntryState, Workspace};

/// Arguments of `bash`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command, run by `bash -c` in a fresh shell (no state carries over between calls).
    pub command: String,
    /// A few words on what the command does (shown to the person).
    pub description: String,
    /// Milliseconds before the command is stopped (default 120000, at most 600000).
    #[serde(rename = "timeoutMs", default)]
    pub timeout_ms: Option<f64>,
    /// The working directory (relative to the workspace root; must lie inside the workspace).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Start the command as a background job and return at once; read it with `job_output`.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// One output stream of a foreground command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamOutput {
    /// The retained tail of the stream (all of it unless `truncated`).
    pub text: String,
    pub truncated: bool,
    /// A file with the stream from its first byte (up to the spill cap), when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill_path: Option<String>,
}

impl From<CapturedStream> for StreamOutput {
    fn from(captured: CapturedStream) -> Self {
        StreamOutput {
            text: captured.text,
            truncated: captured.truncated,
            spill_path: captured.spill_path,
        }
    }
}

/// How a confined command fared (present only when `[shell] sandbox` is on).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxReport {
    /// `workspace-write`.
    pub mode: String,
    /// The command failed on a write the sandbox refused (inferred from its exit and stderr).
    pub denied: bool,
    /// What the kernel enforced: `full`, `partial` or `unavailable` (nothing was confined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<String>,
    /// The launcher could not apply the sandbox; the command did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_failed: Option<bool>,
}

/// A number of milliseconds as the call gave it: `1500.5` stays `1500.5`, and a whole number is
/// written without a fraction (`120000`, not `120000.0`), as it was asked for.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Millis(pub f64);

// Arguments are finite numbers (the argument screen refuses NaN and infinities), so equality is
// total here.
impl Eq for Millis {}

impl Millis {
    /// As a duration to wait (sub-microsecond fractions round up, so a wait never ends early).
    pub fn duration(self) -> Duration {
        Duration::from_nanos((self.0 * 1_000_000.0).ceil().max(0.0) as u64)
    }
}

impl std::fmt::Display for Millis {
    /// The number as a model would write it (`1500.5`, `120000`, `1e-7`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render::js_number(self.0))
    }
}

impl Serialize for Millis {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        const SAFE: f64 = 9_007_199_254_740_991.0;
        if self.0.fract() == 0.0 && self.0.abs() <= SAFE {
            serializer.serialize_i64(self.0 as i64)
        } else {
            serializer.serialize_f64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        f64::deserialize(deserializer).map(Millis)
    }
}

impl JsonSchema for Millis {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Millis".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "number"})
    }
}

/// How a foreground command ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForegroundOutput {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub timed_out: bool,
    pub aborted: bool,
    /// The timeout in force, as the call gave it (a fraction stays), capped at the maximum.
    pub timeout_ms: Millis,
    pub stdout: StreamOutput,
    pub stderr: StreamOutput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxReport>,
}

/// The canonical value of `bash`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum BashOutput {
    #[serde(rename_all = "camelCase")]
    Background {
        job_id: String,
    },
    Foreground(ForegroundOutput),
}

/// The `bash` tool.
pub struct BashTool {
    config: Arc<ShellConfig>,
    jobs: Arc<JobRegistry>,
    /// What the kernel enforces, probed once when the sandbox is first used.
    enforcement: tokio::sync::OnceCell<Enforcement>,
}

impl BashTool {
    pub fn new(config: Arc<ShellConfig>, jobs: Arc<JobRegistry>) -> Self {
        BashTool { config, jobs, enforcement: tokio::sync::OnceCell::new() }
    }
}

/// The launcher and the writable folders of a confined call (`None`: not confined).
pub(crate) type Confinement = Option<(PathBuf, Vec<PathBuf>)>;

/// How a call is confined under `[shell] sandbox`: writable are the workspace's writable roots
/// and the temp folder. Refuses to run unconfined when confinement was asked for and cannot be
/// applied.
pub(crate) fn confinement(
    config: &ShellConfig,
    cx: &ToolContext,
) -> Result<Confinement, ToolError> {
    if config.sandbox == SandboxMode::Off {
        return Ok(None);
    }
    let launcher = config.sandbox_launcher.clone().ok_or_else(|| {
        ToolError::plain("[shell] sandbox is on, but this host has no sandbox launcher")
    })?;
    let workspace = cx.capability::<Workspace>().ok_or_else(|| {
        ToolError::plain("the shell tools require a workspace (none is configured)")
    })?;
    let mut writable: Vec<PathBuf> = workspace
        .roots()
        .iter()
        .filter(|root| !root.is_read_only())
        .map(|root| root.canonical().to_path_buf())
        .collect();
    writable.push(std::env::temp_dir());
    Ok(Some((launcher, writable)))
}

/// Asks the launcher what the kernel would enforce (it confines only itself, then exits).
async fn probe_enforcement(config: &ShellConfig, launcher: &std::path::Path) -> Enforcement {
    let mut command = tokio::process::Command::new(launcher);
    command
        .args(["sandbox-exec", "--probe"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let Ok(mut group) = toolhost_process::spawn(command, Default::default()) else {
        return Enforcement::Unavailable;
    };
    let mut text = String::new();
    if let Some(mut out) = group.take_stdout() {
        use tokio::io::AsyncReadExt;
        let _ = tokio::time::timeout(Duration::from_secs(5), out.read_to_string(&mut text)).await;
    }
    group.terminate(config.kill_grace).await;
    Enforcement::parse(&text).unwrap_or_else(|| {
        tracing::warn!(output = %text.trim(), "the sandbox probe gave no answer");
        Enforcement::Unavailable
    })
}

/// Where a call runs: the workspace root, or `workdir` resolved beneath it (symlinks included).
pub(crate) async fn working_dir(
    cx: &ToolContext,
    workdir: Option<&str>,
) -> Result<PathBuf, ToolError> {
    let workspace = cx.capability::<Workspace>().ok_or_else(|| {
        ToolError::plain("the shell tools require a workspace (none is configured)")
    })?;
    let Some(dir) = workdir.filter(|d| !d.trim().is_empty()) else {
        return Ok(workspace.primary_root().canonical().to_path_buf());
    };
    let resolved = workspace
        .resolve(dir)
        .await
        .map_err(|err| ToolError::typed("FsError", err.code(), format!("workdir: {err}")))?;
    match resolved.state {
        EntryState::Present(EntryKind::Dir) => Ok(resolved.real_path),
        EntryState::Present(_) => {
            Err(ToolError::plain(format!("workdir is not a directory: {}", resolved.display)))
        }
        EntryState::Missing | EntryState::ParentNotDir => {
            Err(ToolError::plain(format!("workdir does not exist: {}", resolved.display)))
        }
    }
}

/// Opens the call's spill file in the session's store when a stream overflows.
pub(crate) fn spill_opener(cx: &ToolContext, tool: &str, stream: &str) -> Option<SpillOpener> {
    let store = cx.capability::<SpillHandle>()?;
    let request = SpillRequest {
        session_id: cx.session_id().unwrap_or("default").to_owned(),
        tool_name: tool.to_owned(),
        call_id: cx.call_id().to_owned(),
        label: stream.to_owned(),
        suggested_name: format!("{tool}-{stream}.txt"),
        content: String::new(),
    };
    Some(Box::new(move || store.open_stream(&request)))
}

/// Whether a text is empty once the whitespace a model's client would trim is removed: the
/// ECMAScript set (Unicode spaces, line terminators and U+FEFF, but not U+0085), so a text that
/// looks blank to the caller is refused and nothing else is.
pub(crate) fn is_blank(value: &str) -> bool {
    value.chars().all(|c| match c {
        '\u{85}' => false,
        '\u{feff}' => true,
        c => c.is_whitespace(),
    })
}

/// `invalid <what>: expected a non-empty string` for a blank argument.
fn require_text(value: &str, what: &str) -> Result<(), ToolError> {
    if is_blank(value) {
        return Err(ToolError::plain(format!("invalid {what}: expected a non-empty string")));
    }
    Ok(())
}

impl BashTool {
    /// The call's timeout: as given (no rounding) or the default, capped at the maximum.
    fn timeout_ms(&self, requested: Option<f64>) -> Result<Millis, ToolError> {
        let max = self.config.max_timeout_ms as f64;
        match requested {
            None => Ok(Millis((self.config.default_timeout_ms as f64).min(max))),
            Some(ms) if ms > 0.0 => Ok(Millis(ms.min(max))),
            Some(ms) => Err(ToolError::plain(format!(
                "invalid timeoutMs: expected a positive number, got {}",
                render::js_number(ms)
            ))),
        }
    }

    /// Runs the command in the foreground: here (confined under `[shell] sandbox`), or in the
    /// session's execution world, where the world is the boundary and `[shell] sandbox` (which
    /// confines commands on this machine) has nothing to add and is not reported.
    async fn foreground(
        &self,
        args: &BashArgs,
        cwd: PathBuf,
        timeout_ms: Millis,
        cx: &ToolContext,
    ) -> Result<ForegroundOutput, ToolError> {
        let started = world_exec::start_in_world(&self.config, cx, &args.command, &cwd).await?;
        let (started, enforcement) = match started {
            Some(started) => (started, None),
            None => {
                let confine = confinement(&self.config, cx)?;
                let enforcement = match &confine {
                    Some((launcher, _)) => Some(
                        *self
                            .enforcement
                            .get_or_init(|| probe_enforcement(&self.config, launcher))
                            .await,
                    ),
                    None => None,
                };
                let env = crate::env::command_env(std::env::vars_os(), &self.config);
                let confined = confine.as_ref().map(|(l, w)| (l.as_path(), w.as_slice()));
                let group =
                    exec::spawn(&self.config, &args.command, &cwd, env, confined).map_err(|e| {
                        ToolError::plain(format!("cannot start {}: {e}", self.config.shell))
                    })?;
                (Started::Here(group), enforcement)
            }
        };
        let (mut stdout, mut stderr, live) = self.captures(cx);
        let timeout = Some(timeout_ms.duration());
        let grace = self.config.kill_grace;
        let end = started.run(&mut stdout, &mut stderr, timeout, cx.signal(), grace).await;
        let (stdout, stderr) = finish_captures(live, stdout, stderr).await?;
        let end = end.map_err(|why| ToolError::typed("WorldError", "WORLD_DISCONNECTED", why))?;
        if end.ending == Ending::Stopped {
            return Err(ToolError::aborted());
        }
        let sandbox = enforcement.map(|enforcement| {
            let runner_failed =
                end.exit_code == Some(126) && stderr.text.starts_with("toolhost sandbox: ");
            SandboxReport {
                mode: self.config.sandbox.as_str().to_owned(),
                denied: enforcement != Enforcement::Unavailable
                    && !runner_failed
                    && sandbox::looks_denied(end.exit_code, &stderr.text),
                enforcement: Some(enforcement.as_str().to_owned()),
                runner_failed: runner_failed.then_some(true),
            }
        });
        Ok(ForegroundOutput {
            exit_code: end.exit_code,
            signal: end.signal,
            timed_out: end.ending == Ending::TimedOut,
            aborted: false,
            timeout_ms,
            stdout: stdout.into(),
            stderr: stderr.into(),
            sandbox,
        })
    }
}

impl BashTool {
    /// The captures of a command's stdout and stderr (bounded, spilled to the session's store),
    /// with their live output sent as the call's progress when the host listens.
    fn captures(&self, cx: &ToolContext) -> (Capture, Capture, Option<LiveForwarder>) {
        let cap = self.config.max_output_bytes;
        let spill_cap = self.config.max_spill_bytes;
        let mut stdout = Capture::new(cap, spill_cap, spill_opener(cx, "bash", "stdout"));
        let mut stderr = Capture::new(cap, spill_cap, spill_opener(cx, "bash", "stderr"));
        let mut live = None;
        if let Some(events) = cx.capability::<EventsHandle>() {
            let feed = LiveFeed::default();
            stdout = stdout.with_live(feed.clone(), 0);
            stderr = stderr.with_live(feed.clone(), 1);
            live = Some(LiveForwarder::start(events, cx.call_id().to_owned(), feed));
        }
        (stdout, stderr, live)
    }
}

/// The finished captures of a command's two streams, after its live output was all sent.
async fn finish_captures(
    live: Option<LiveForwarder>,
    stdout: Capture,
    stderr: Capture,
) -> Result<(CapturedStream, CapturedStream), ToolError> {
    if let Some(live) = live {
        live.finish().await;
    }
    // Syncing a spill file is blocking I/O; without one, finishing is a few copies.
    if stdout.spilled() || stderr.spilled() {
        tokio::task::spawn_blocking(move || (stdout.finish(), stderr.finish()))
            .await
            .map_err(|e| ToolError::plain(format!("output capture failed: {e}")))
    } else {
        Ok((stdout.finish(), stderr.finish()))
    }
}

impl Tool for BashTool {
    type Args = BashArgs;
    type Output = BashOutput;

    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> String {
        let mut text = String::from(
            "Runs a shell command with `bash -c` in a fresh shell (no state carries over between \
             calls) in the workspace, with stdin closed and pagers disabled. Returns stdout, then \
             `[stderr]` and stderr, then markers such as `[exit code: N]`; a non-zero exit is not \
             an error. Long output keeps its tail, and the full output is saved to a file you can \
             read. Commands are stopped after timeoutMs (default 120000, at most 600000).",
        );
        if self.config.background {
            text.push_str(
                " With run_in_background the command runs as a job: read it with job_output, \
                 stop it with job_kill.",
            );
        }
        text
    }

    async fn call(&self, args: BashArgs, cx: ToolContext) -> Result<BashOutput, ToolError> {
        require_text(&args.command, "command")?;
        require_text(&args.description, "description")?;
        let timeout_ms = self.timeout_ms(args.timeout_ms)?;
        let background = args.run_in_background == Some(true);
        if background && !self.config.background {
            return Err(ToolError::plain(
                "run_in_background is disabled for this deployment (enableRunInBackground: false)",
            ));
        }
        let cwd = working_dir(&cx, args.workdir.as_deref()).await?;
        if background {
            let in_world = world_exec::start_in_world(&self.config, &cx, &args.command, &cwd);
            if let Some(started) = in_world.await? {
                let job_id = self.jobs.start_bash_in_world(&args.command, started, &cx)?;
                return Ok(BashOutput::Background { job_id });
            }
            let confine = confinement(&self.config, &cx)?;
            let job_id = self.jobs.start_bash(&args.command, cwd, confine, &cx)?;
            return Ok(BashOutput::Background { job_id });
        }
        self.foreground(&args, cwd, timeout_ms, &cx).await.map(BashOutput::Foreground)
    }

    fn render(&self, _args: &BashArgs, output: &BashOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render::bash(output))]
    }

    fn timeout(&self) -> Option<Duration> {
        None
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        present(args)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { destructive: true, open_world: true, ..ToolAnnotations::default() }
    }
}

/// A foreground call is a terminal card titled with its command; a background start is a
/// generic card (its output arrives through `job_output`).
pub fn present(args: &Value) -> CallPresentation {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let command = text("command").unwrap_or_default();
    if args.get("run_in_background").and_then(Value::as_bool) == Some(true) {
        return CallPresentation::new(CardKind::Generic, command);
    }
    CallPresentation::new(CardKind::Terminal, command.clone()).with_terminal(TerminalCall {
        command,
        description: text("description"),
        cwd: text("workdir"),
    })
}
