//! `terminal_open`, `terminal_send`, `terminal_read`, `terminal_signal`, `terminal_close` and
//! `terminal_list`: interactive sessions on a pseudo-terminal (see `terminal.rs`).

use crate::bash::working_dir;
use crate::jobs::{JobRegistry, JobStatus, owner_of};
use crate::terminal::{
    SessionStatus, TerminalError, TerminalRegistry, TerminalSnapshot, WaitReason,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use toolhost_contract::spill::tail_bytes;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;

/// Every terminal result's text is bounded to this many bytes (the tail is kept).
pub const MAX_RESULT_BYTES: usize = 262_144;
const TRUNCATED: &str = "\n[output truncated]";
const DEFAULT_SEND_TIMEOUT_MS: f64 = 30_000.0;
const MAX_SEND_TIMEOUT_MS: f64 = 600_000.0;

/// The tail of `text` within the result cap (leaving room for `reserve` bytes of suffix).
fn bounded(text: &str, reserve: usize) -> (String, bool) {
    let budget = MAX_RESULT_BYTES.saturating_sub(reserve + TRUNCATED.len());
    if text.len() + reserve <= MAX_RESULT_BYTES {
        (text.to_owned(), false)
    } else {
        (tail_bytes(text, budget).to_owned(), true)
    }
}

fn session_arg(args: &Value) -> String {
    args.get("sessionId").and_then(Value::as_str).unwrap_or("").to_owned()
}

fn terminal_failure(err: TerminalError) -> ToolError {
    ToolError::plain(err.to_string())
}

/// An integer a JSON number can hold exactly (at most 2^53 − 1 in size).
fn is_safe_integer(value: f64) -> bool {
    value.fract() == 0.0 && value.abs() <= 9_007_199_254_740_991.0
}

fn text_block(text: String) -> Vec<ContentBlock> {
    vec![ContentBlock::text(text)]
}

/// Arguments of `terminal_open`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TerminalOpenArgs {
    /// The terminal type: `shell` (a plain bash with the prompt `dsh> `; the viewport is the text
    /// printed since the send began), or `bash`, `sh`, `zsh` (your own shell on an emulated
    /// screen; the viewport is the screen).
    #[serde(rename = "type")]
    pub kind: String,
    /// A name to tell sessions apart.
    #[serde(default)]
    pub name: Option<String>,
    /// The working directory (inside the workspace; default its root).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// A started session and what it printed first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOpenValue {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub status: SessionStatus,
    pub motd: String,
}

pub struct TerminalOpenTool {
    terminals: Arc<TerminalRegistry>,
}

impl Tool for TerminalOpenTool {
    type Args = TerminalOpenArgs;
    type Output = TerminalOpenValue;

    fn name(&self) -> &str {
        "terminal_open"
    }

    fn description(&self) -> String {
        "Opens an interactive terminal session (a shell on a pseudo-terminal) that keeps its state \
         between calls: use it for REPLs, prompts, long-running programs and full-screen tools. \
         Send input with terminal_send, read the transcript with terminal_read, interrupt with \
         terminal_signal, end it with terminal_close."
            .to_owned()
    }

    async fn call(
        &self,
        args: TerminalOpenArgs,
        cx: ToolContext,
    ) -> Result<TerminalOpenValue, ToolError> {
        let cwd = working_dir(&cx, args.cwd.as_deref()).await?;
        let world = crate::world_exec::in_world(&cx)
            .map(|(ws, world)| (world, crate::world_exec::world_folder(&ws, &cwd)));
        let opened = self
            .terminals
            .open(&args.kind, args.name, cwd, world, owner_of(&cx), cx.signal())
            .await
            .map_err(terminal_failure)?;
        let (motd, _) = bounded(&opened.motd, 200);
        let s = opened.snapshot;
        Ok(TerminalOpenValue {
            session_id: s.session_id,
            name: s.name,
            kind: s.kind,
            pid: s.pid,
            status: s.status,
            motd,
        })
    }

    fn render(&self, _args: &TerminalOpenArgs, v: &TerminalOpenValue) -> Vec<ContentBlock> {
        let name = v.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
        let motd = if v.motd.is_empty() { "(no startup output)" } else { &v.motd };
        text_block(format!(
            "started terminal session {}{name} [type: {}]\n{motd}",
            v.session_id, v.kind
        ))
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let kind = args.get("type").and_then(Value::as_str).unwrap_or("");
        CallPresentation::new(CardKind::Terminal, format!("Open terminal ({kind})"))
    }
}

/// Arguments of `terminal_send`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TerminalSendArgs {
    /// The session (`pty-1`, …).
    #[serde(rename = "sessionId")]
    pub session_id: String,
    /// What to type.
    pub text: String,
    /// Press Enter after the text (default true).
    #[serde(default)]
    pub submit: Option<bool>,
    /// Return at once; the result arrives as a background job (`pty-send-<n>`).
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// How long to wait for the program to need input or go quiet (default 30000, at most
    /// 600000 ms).
    #[serde(default)]
    pub timeout_ms: Option<f64>,
}

/// The screen after the wait, and why the wait ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendForeground {
    /// The terminal's screen as text (empty when nothing was printed since the input).
    pub viewport: String,
    pub wait_reason: WaitReason,
    pub session_status: SessionStatus,
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TerminalSendValue {
    #[serde(rename_all = "camelCase")]
    Background {
        job_id: String,
    },
    Foreground(SendForeground),
}

fn render_send(fg: &SendForeground) -> String {
    let viewport = if fg.viewport.is_empty() { "(no new output)" } else { &fg.viewport };
    let mut text = format!(
        "{viewport}\n[wait: {}]\n[session: {}]",
        fg.wait_reason.as_str(),
        fg.session_status.describe()
    );
    if fg.truncated {
        text.push_str(TRUNCATED);
    }
    text
}

pub struct TerminalSendTool {
    terminals: Arc<TerminalRegistry>,
    jobs: Arc<JobRegistry>,
}

impl Tool for TerminalSendTool {
    type Args = TerminalSendArgs;
    type Output = TerminalSendValue;

    fn name(&self) -> &str {
        "terminal_send"
    }

    fn description(&self) -> String {
        "Types text into a terminal session (then Enter, unless submit is false) and waits until \
         the program waits for input (stdin_read), goes quiet (inferred_idle), the session ends \
         (session_exit) or timeout_ms passes; returns the screen. Control keys: send them as \
         characters (\\u0003 is Ctrl-C) or use terminal_signal."
            .to_owned()
    }

    async fn call(
        &self,
        args: TerminalSendArgs,
        cx: ToolContext,
    ) -> Result<TerminalSendValue, ToolError> {
        if args.run_in_background == Some(true) && !self.terminals.background_allowed() {
            return Err(ToolError::plain(
                "background terminal sends are disabled by tool-terminal configuration",
            ));
        }
        let ms = match args.timeout_ms {
            None => DEFAULT_SEND_TIMEOUT_MS,
            Some(ms) if ms.is_finite() && ms > 0.0 => ms.min(MAX_SEND_TIMEOUT_MS),
            Some(_) => return Err(ToolError::plain("timeout_ms must be a positive finite number")),
        };
        let timeout = crate::bash::Millis(ms).duration();
        let submit = args.submit.unwrap_or(true);
        let owner = owner_of(&cx);
        if args.run_in_background == Some(true) {
            let terminals = Arc::clone(&self.terminals);
            let (id, text) = (args.session_id.clone(), args.text.clone());
            let job_id =
                self.jobs.start_task("pty-send", &args.text, &cx, move |stop| async move {
                    match terminals.send(&id, &owner, &text, submit, timeout, &stop).await {
                        Ok(sent) => {
                            let fg = foreground(sent);
                            (
                                JobStatus::Completed,
                                format!("wait: {}", fg.wait_reason.as_str()),
                                render_send(&fg),
                            )
                        }
                        Err(err) => (JobStatus::Failed, err.to_string(), String::new()),
                    }
                })?;
            return Ok(TerminalSendValue::Background { job_id });
        }
        let sent = self
            .terminals
            .send(&args.session_id, &owner, &args.text, submit, timeout, cx.signal())
            .await
            .map_err(terminal_failure)?;
        Ok(TerminalSendValue::Foreground(foreground(sent)))
    }

    fn render(&self, _args: &TerminalSendArgs, v: &TerminalSendValue) -> Vec<ContentBlock> {
        match v {
            TerminalSendValue::Background { job_id } => {
                text_block(format!("started background job {job_id}"))
            }
            TerminalSendValue::Foreground(fg) => text_block(render_send(fg)),
        }
    }

    fn presentation_meta(&self, _args: &TerminalSendArgs, v: &TerminalSendValue) -> Option<Value> {
        match v {
            TerminalSendValue::Foreground(fg) => serde_json::to_value(fg).ok(),
            TerminalSendValue::Background { .. } => None,
        }
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let text = args.get("text").and_then(Value::as_str).unwrap_or("");
        CallPresentation::new(CardKind::Terminal, format!("{} ⟵ {text}", session_arg(args)))
    }
}

fn foreground(sent: crate::terminal::Sent) -> SendForeground {
    let (viewport, truncated) = bounded(&sent.viewport, 200);
    SendForeground {
        viewport,
        wait_reason: sent.wait_reason,
        session_status: sent.session_status,
        truncated,
    }
}

/// Arguments of `terminal_read`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TerminalReadArgs {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    /// The first line to return (0-based, default 0).
    #[serde(default)]
    pub offset: Option<f64>,
    /// How many lines (default 500).
    #[serde(default)]
    pub count: Option<f64>,
}

/// Lines of the session's retained transcript.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalReadValue {
    pub text: String,
    pub total_lines: u64,
    pub line_begin: u64,
    pub line_end: u64,
    pub truncated: bool,
}

pub struct TerminalReadTool {
    terminals: Arc<TerminalRegistry>,
}

impl Tool for TerminalReadTool {
    type Args = TerminalReadArgs;
    type Output = TerminalReadValue;

    fn name(&self) -> &str {
        "terminal_read"
    }

    fn description(&self) -> String {
        "Reads a terminal session's transcript (everything it printed, escape sequences removed, \
         the last 10000 lines kept): `count` lines from `offset` (0-based)."
            .to_owned()
    }

    async fn call(
        &self,
        args: TerminalReadArgs,
        cx: ToolContext,
    ) -> Result<TerminalReadValue, ToolError> {
        let offset = args.offset.unwrap_or(0.0);
        if !is_safe_integer(offset) || offset < 0.0 {
            return Err(terminal_failure(TerminalError::BadOffset));
        }
        let count = args.count.unwrap_or(500.0);
        if !is_safe_integer(count) || count < 1.0 {
            return Err(terminal_failure(TerminalError::BadCount));
        }
        let (offset, count) = (offset as usize, count as usize);
        let (lines, total) = self
            .terminals
            .read(&args.session_id, &owner_of(&cx), offset, count)
            .map_err(terminal_failure)?;
        let begin = offset.min(total);
        let end = begin + lines.len();
        let (text, truncated) = bounded(&lines.join("\n"), 64);
        Ok(TerminalReadValue {
            text,
            total_lines: total as u64,
            line_begin: begin as u64,
            line_end: end as u64,
            truncated,
        })
    }

    fn render(&self, _args: &TerminalReadArgs, v: &TerminalReadValue) -> Vec<ContentBlock> {
        let body = if v.text.is_empty() { "(no retained output)" } else { &v.text };
        let mut text =
            format!("{body}\n[lines: {}-{} of {}]", v.line_begin, v.line_end, v.total_lines);
        if v.truncated {
            text.push_str(TRUNCATED);
        }
        text_block(text)
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        CallPresentation::new(CardKind::Generic, format!("Read terminal {}", session_arg(args)))
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { read_only: true, destructive: false, idempotent: true, open_world: false }
    }
}

/// The signals `terminal_signal` delivers.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
pub enum TerminalSignal {
    #[serde(rename = "SIGINT")]
    Int,
    #[serde(rename = "SIGTERM")]
    Term,
    #[serde(rename = "SIGKILL")]
    Kill,
    #[serde(rename = "SIGTSTP")]
    Tstp,
    #[serde(rename = "SIGHUP")]
    Hup,
}

impl TerminalSignal {
    fn signal(self) -> toolhost_process::Signal {
        use toolhost_process::Signal;
        match self {
            TerminalSignal::Int => Signal::INT,
            TerminalSignal::Term => Signal::TERM,
            TerminalSignal::Kill => Signal::KILL,
            TerminalSignal::Tstp => Signal::TSTP,
            TerminalSignal::Hup => Signal::HUP,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TerminalSignal::Int => "SIGINT",
            TerminalSignal::Term => "SIGTERM",
            TerminalSignal::Kill => "SIGKILL",
            TerminalSignal::Tstp => "SIGTSTP",
            TerminalSignal::Hup => "SIGHUP",
        }
    }
}

/// Arguments of `terminal_signal`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TerminalSignalArgs {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    pub signal: TerminalSignal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalSignalValue {
    pub delivered: bool,
    pub target_pgid: i32,
}

pub struct TerminalSignalTool {
    terminals: Arc<TerminalRegistry>,
}

impl Tool for TerminalSignalTool {
    type Args = TerminalSignalArgs;
    type Output = TerminalSignalValue;

    fn name(&self) -> &str {
        "terminal_signal"
    }

    fn description(&self) -> String {
        "Sends a signal (SIGINT, SIGTERM, SIGKILL, SIGTSTP or SIGHUP) to the program in the \
         foreground of a terminal session, as Ctrl-C or Ctrl-Z would."
            .to_owned()
    }

    async fn call(
        &self,
        args: TerminalSignalArgs,
        cx: ToolContext,
    ) -> Result<TerminalSignalValue, ToolError> {
        let pgid = self
            .terminals
            .signal(&args.session_id, &owner_of(&cx), args.signal.signal())
            .await
            .map_err(terminal_failure)?;
        Ok(TerminalSignalValue { delivered: true, target_pgid: pgid })
    }

    fn render(&self, args: &TerminalSignalArgs, v: &TerminalSignalValue) -> Vec<ContentBlock> {
        text_block(format!(
            "delivered {} to foreground process group {}",
            args.signal.name(),
            v.target_pgid
        ))
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let signal = args.get("signal").and_then(Value::as_str).unwrap_or("");
        CallPresentation::new(CardKind::Generic, format!("{signal} → {}", session_arg(args)))
    }
}

/// Arguments of `terminal_close`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TerminalCloseArgs {
    #[serde(rename = "sessionId")]
    pub session_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CloseOutcome {
    Closed,
    AlreadyClosing,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCloseValue {
    pub session_id: String,
    pub outcome: CloseOutcome,
}

pub struct TerminalCloseTool {
    terminals: Arc<TerminalRegistry>,
}

impl Tool for TerminalCloseTool {
    type Args = TerminalCloseArgs;
    type Output = TerminalCloseValue;

    fn name(&self) -> &str {
        "terminal_close"
    }

    fn description(&self) -> String {
        "Ends a terminal session: every process in it is stopped (SIGTERM, then SIGKILL)."
            .to_owned()
    }

    async fn call(
        &self,
        args: TerminalCloseArgs,
        cx: ToolContext,
    ) -> Result<TerminalCloseValue, ToolError> {
        let closed = self
            .terminals
            .close(&args.session_id, &owner_of(&cx))
            .await
            .map_err(terminal_failure)?;
        let outcome = if closed { CloseOutcome::Closed } else { CloseOutcome::AlreadyClosing };
        Ok(TerminalCloseValue { session_id: args.session_id, outcome })
    }

    fn render(&self, _args: &TerminalCloseArgs, v: &TerminalCloseValue) -> Vec<ContentBlock> {
        text_block(match v.outcome {
            CloseOutcome::Closed => format!("closed terminal session {}", v.session_id),
            CloseOutcome::AlreadyClosing => {
                format!("terminal session {} was already closing", v.session_id)
            }
        })
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        CallPresentation::new(CardKind::Generic, format!("Close terminal {}", session_arg(args)))
    }
}

/// Arguments of `terminal_list` (none).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TerminalListArgs {}

pub struct TerminalListTool {
    terminals: Arc<TerminalRegistry>,
}

impl Tool for TerminalListTool {
    type Args = TerminalListArgs;
    type Output = Vec<TerminalSnapshot>;

    fn name(&self) -> &str {
        "terminal_list"
    }

    fn description(&self) -> String {
        "Lists this session's terminal sessions: id, name, type, status and pid.".to_owned()
    }

    async fn call(
        &self,
        _args: TerminalListArgs,
        cx: ToolContext,
    ) -> Result<Vec<TerminalSnapshot>, ToolError> {
        Ok(self.terminals.list(&owner_of(&cx)))
    }

    fn render(&self, _args: &TerminalListArgs, v: &Vec<TerminalSnapshot>) -> Vec<ContentBlock> {
        if v.is_empty() {
            return text_block("(no terminal sessions)".to_owned());
        }
        let lines: Vec<String> = v
            .iter()
            .map(|t| {
                let name = t.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
                let pid = t.pid.map(|p| format!(" pid={p}")).unwrap_or_default();
                format!("{}{name} [{}] {}{pid}", t.session_id, t.kind, t.status.describe())
            })
            .collect();
        text_block(lines.join("\n"))
    }

    fn present_call(&self, _args: &Value) -> CallPresentation {
        CallPresentation::new(CardKind::Generic, "Terminal sessions")
    }

    fn concurrency_safe(&self, _args: &TerminalListArgs) -> bool {
        true
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::READ_ONLY
    }
}

/// The six terminal tools over one registry of sessions.
pub fn tools(
    terminals: &Arc<TerminalRegistry>,
    jobs: &Arc<JobRegistry>,
) -> (
    TerminalOpenTool,
    TerminalSendTool,
    TerminalReadTool,
    TerminalSignalTool,
    TerminalCloseTool,
    TerminalListTool,
) {
    (
        TerminalOpenTool { terminals: Arc::clone(terminals) },
        TerminalSendTool { terminals: Arc::clone(terminals), jobs: Arc::clone(jobs) },
        TerminalReadTool { terminals: Arc::clone(terminals) },
        TerminalSignalTool { terminals: Arc::clone(terminals) },
        TerminalCloseTool { terminals: Arc::clone(terminals) },
        TerminalListTool { terminals: Arc::clone(terminals) },
    )
}
