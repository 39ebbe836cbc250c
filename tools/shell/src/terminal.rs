//! Terminal sessions: an interactive shell on a pseudo-terminal (pty-process), and a transcript of
//! everything printed (escape sequences removed) for `terminal_read`. Two kinds of backend:
//!
//! - `shell`, the default: a plain `bash` (no profile, no rc files, prompt `dsh> `, `TERM=dumb`)
//!   whose viewport after a send is the plain text printed since the send began — the echo, the
//!   output and the next prompt;
//! - `bash`, `sh`, `zsh`: the user's own shell with its rc files on an emulated `xterm-256color`
//!   screen (vt100), whose viewport is the screen, so what a full-screen program or a pager
//!   shows is readable as text.
//!
//! `[shell] terminal_types` says which of them `terminal_open` offers.
//!
//! After text is sent, the call waits for one of four reasons: the foreground process waits for
//! input on the terminal (`stdin_read`, read from `/proc/<pid>/syscall`), the output went quiet
//! (`inferred_idle`), the time ran out (`timeout`), or the session ended (`session_exit`).
//! Sessions are process sessions of `toolhost-process` (every group of the session is signalled
//! and reaped), owned by the toolhost session that opened them, and die with the server. In an
//! execution world the shell runs on a terminal there (`process/spawn` with a `pty`): its output
//! comes over the world's connection, input is written there, and the world reads what the
//! foreground program does; the screen, transcript and waits are the same code.

use crate::config::ShellConfig;
use crate::sanitize::{Sanitizer, Transcript};

mod start;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use start::terminal_command;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ExecutionWorld, WorldProcessControl, WorldProcessEvent};
use toolhost_process::GroupHandle;

/// Terminal size (rows, columns).
pub const ROWS: u16 = 24;
pub const COLS: u16 = 120;
/// No output for this long (and nothing else decided) ends a wait as `inferred_idle`.
const IDLE: Duration = Duration::from_millis(1500);
/// The foreground process must have been waiting this long, with no output, for `stdin_read`.
const QUIET_FOR_STDIN: Duration = Duration::from_millis(150);
/// Terminals one session may have open.
const MAX_TERMINALS: usize = 10;
/// How long a `shell` terminal may take to print its first prompt.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Plain text of a `shell` terminal kept for its viewports (the newest is kept).
const STREAM_CAP: usize = 512 * 1024;

/// Every terminal type toolhost has: `shell` (plain bash, the reference's one backend) and the
/// user's own shells on an emulated screen.
pub const TERMINAL_TYPES: [&str; 4] = ["shell", "bash", "sh", "zsh"];

/// The prompt of a `shell` terminal, and the command that runs before each prompt: it prints the
/// readiness marker (OSC 133;D with the last status) and sets the prompt again, so a command that
/// changed `PS1` does not hide the next prompt.
const SHELL_PS1: &str = "dsh> ";
const SHELL_PROMPT_COMMAND: &str = r#"printf '\033]133;D;%s\007' "$?"; PS1='dsh> '"#;

/// Whether the session's shell still runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SessionStatus {
    Running,
    #[serde(rename_all = "camelCase")]
    Exited {
        exit_code: Option<i32>,
        signal: Option<String>,
    },
}

impl SessionStatus {
    /// `running` or `exited code=<c> signal=<s>` (`null` for an absent part).
    pub fn describe(&self) -> String {
        match self {
            SessionStatus::Running => "running".to_owned(),
            SessionStatus::Exited { exit_code, signal } => format!(
                "exited code={} signal={}",
                exit_code.map_or("null".to_owned(), |c| c.to_string()),
                signal.as_deref().unwrap_or("null")
            ),
        }
    }
}

/// Why a wait after `terminal_send` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    StdinRead,
    InferredIdle,
    Timeout,
    SessionExit,
}

impl WaitReason {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::StdinRead => "stdin_read",
            WaitReason::InferredIdle => "inferred_idle",
            WaitReason::Timeout => "timeout",
            WaitReason::SessionExit => "session_exit",
        }
    }
}

/// A terminal as `terminal_list` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalSnapshot {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub status: SessionStatus,
}

struct Screen {
    parser: vt100::Parser,
    transcript: Transcript,
    last_output: Instant,
    output_seq: u64,
    /// `shell` terminals: their plain text (the newest `STREAM_CAP` bytes) and how many bytes of
    /// it were ever appended, so a send can take what came after its start.
    sanitizer: Sanitizer,
    stream: String,
    stream_total: u64,
}

impl Screen {
    fn push_plain(&mut self, bytes: &[u8]) {
        let before = self.stream.len();
        self.sanitizer.push(bytes, &mut self.stream);
        self.stream_total += (self.stream.len() - before) as u64;
        if self.stream.len() > STREAM_CAP {
            let mut cut = self.stream.len() - STREAM_CAP;
            while !self.stream.is_char_boundary(cut) {
                cut += 1;
            }
            self.stream.drain(..cut);
        }
    }

    /// The plain text appended after `mark` (all that is kept, if some of it is gone).
    fn plain_since(&self, mark: u64) -> String {
        let kept_from = self.stream_total - self.stream.len() as u64;
        let mut start = mark.saturating_sub(kept_from) as usize;
        while start < self.stream.len() && !self.stream.is_char_boundary(start) {
            start += 1;
        }
        self.stream[start.min(self.stream.len())..].to_owned()
    }
}

/// Where a terminal's shell runs.
enum Io {
    Here {
        master: OwnedFd,
        writer: tokio::sync::Mutex<pty_process::OwnedWritePty>,
        group: GroupHandle,
    },
    World(Arc<dyn WorldProcessControl>),
}

struct Term {
    id: String,
    name: Option<String>,
    kind: String,
    owner: String,
    pid: u32,
    io: Io,
    screen: Mutex<Screen>,
    status: watch::Sender<SessionStatus>,
    closing: AtomicBool,
    /// A send is waiting on this terminal (one at a time).
    sending: AtomicBool,
    output: tokio::sync::Notify,
}

/// Clears a terminal's `sending` flag when its send ends, however it ends.
struct SendGuard<'a>(&'a AtomicBool);

impl Drop for SendGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Term {
    fn snapshot(&self) -> TerminalSnapshot {
        TerminalSnapshot {
            session_id: self.id.clone(),
            name: self.name.clone(),
            kind: self.kind.clone(),
            pid: Some(self.pid),
            status: self.status.borrow().clone(),
        }
    }

    /// A plain `shell` terminal (its viewport is its text, not an emulated screen).
    fn is_plain(&self) -> bool {
        self.kind == "shell"
    }

    /// Where the plain text stands now.
    fn plain_mark(&self) -> u64 {
        lock(&self.screen).stream_total
    }

    /// What a send (or the start) shows: a `shell` terminal's text since `mark`, or the screen.
    fn viewport(&self, mark: u64) -> String {
        let screen = lock(&self.screen);
        if self.is_plain() {
            return screen.plain_since(mark);
        }
        let contents = screen.parser.screen().contents();
        contents.trim_end().to_owned()
    }

    /// The terminal's foreground group, whether it waits for input, and how often its members
    /// have blocked so far.
    async fn foreground(&self) -> Option<toolhost_process::TerminalState> {
        match &self.io {
            Io::Here { master, .. } => toolhost_process::terminal_state(master.as_fd()),
            Io::World(control) => {
                let state = control.terminal_state().await.ok().flatten()?;
                Some(toolhost_process::TerminalState {
                    pgid: state.pgid,
                    waits_for_input: state.waits_for_input,
                    switches: state.switches,
                })
            }
        }
    }

    /// Whether the foreground process is blocked reading the terminal — and, when `since` says
    /// where things stood as input was sent, has run since then: a program still asleep in the
    /// same read has not seen the input yet.
    async fn waits_for_input(&self, since: Option<(i32, u64)>) -> bool {
        let Some(now) = self.foreground().await else { return false };
        if !now.waits_for_input {
            return false;
        }
        match since {
            Some((before, switches)) if before == now.pgid => now.switches > switches,
            _ => true,
        }
    }

    /// The foreground group and how often its members have blocked so far.
    async fn progress_mark(&self) -> Option<(i32, u64)> {
        self.foreground().await.map(|now| (now.pgid, now.switches))
    }

    /// Types `bytes` into the terminal.
    async fn type_in(&self, bytes: &[u8]) -> Result<(), String> {
        match &self.io {
            Io::Here { writer, .. } => {
                let mut writer = writer.lock().await;
                writer.write_all(bytes).await.map_err(|e| e.to_string())?;
                let _ = writer.flush().await;
                Ok(())
            }
            Io::World(control) => control.write(bytes, false).await.map_err(|f| f.to_string()),
        }
    }

    /// SIGKILL to the whole session, without waiting.
    fn kill(&self) {
        match &self.io {
            Io::Here { group, .. } => group.kill(),
            Io::World(control) => toolhost_contract::world::kill_detached(control),
        }
    }

    /// Waits after input was sent (or the session started) for one of the wait reasons.
    async fn settle(
        &self,
        timeout: Duration,
        since: Option<(i32, u64)>,
        seq: u64,
        signal: &CancellationToken,
    ) -> (WaitReason, bool) {
        let started = Instant::now();
        let mut status = self.status.subscribe();
        loop {
            if matches!(*status.borrow(), SessionStatus::Exited { .. }) {
                return (WaitReason::SessionExit, self.output_since(seq));
            }
            let now = Instant::now();
            let quiet = now.duration_since(lock(&self.screen).last_output);
            let waited = now.duration_since(started);
            if waited >= QUIET_FOR_STDIN * 2
                && quiet >= QUIET_FOR_STDIN
                && self.waits_for_input(since).await
            {
                return (WaitReason::StdinRead, self.output_since(seq));
            }
            if quiet >= IDLE && waited >= IDLE {
                return (WaitReason::InferredIdle, self.output_since(seq));
            }
            if waited >= timeout {
                return (WaitReason::Timeout, self.output_since(seq));
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                () = self.output.notified() => {}
                _ = status.changed() => {}
                () = signal.cancelled() => return (WaitReason::Timeout, self.output_since(seq)),
            }
        }
    }

    /// Waits until a `shell` terminal printed its first readiness marker.
    async fn ready(&self, signal: &CancellationToken) -> Result<(), TerminalError> {
        let started = Instant::now();
        let mut status = self.status.subscribe();
        loop {
            if lock(&self.screen).sanitizer.ready_marks > 0 {
                return Ok(());
            }
            if matches!(*status.borrow(), SessionStatus::Exited { .. }) {
                return Err(TerminalError::ExitedDuringStartup);
            }
            if started.elapsed() >= STARTUP_TIMEOUT {
                return Err(TerminalError::NotReady);
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                () = self.output.notified() => {}
                _ = status.changed() => {}
                () = signal.cancelled() => return Err(TerminalError::NotReady),
            }
        }
    }

    fn output_since(&self, seq: u64) -> bool {
        lock(&self.screen).output_seq > seq
    }
}

/// How a world names `signal` (the signals `terminal_signal` sends).
fn world_signal_name(signal: toolhost_process::Signal) -> &'static str {
    use toolhost_process::Signal;
    match signal {
        Signal::INT => "INT",
        Signal::KILL => "KILL",
        Signal::HUP => "HUP",
        Signal::QUIT => "QUIT",
        Signal::TSTP => "TSTP",
        _ => "TERM",
    }
}

/// Why a terminal request failed (plain failures: the model reads the message, no code).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TerminalError {
    #[error("sessionId must be a non-empty string")]
    NoSessionId,
    #[error("unknown PTY session {0}")]
    Unknown(String),
    #[error("PTY session {0} belongs to another agent")]
    NotOwner(String),
    #[error("type must be a non-empty string")]
    NoType,
    #[error("no PTY backend registered for \"{0}\"")]
    NoBackend(String),
    #[error("PTY session name \"{0}\" already exists for this owner")]
    NameTaken(String),
    #[error("PTY session {0} is closing")]
    Closing(String),
    #[error("PTY session {0} already has an active send")]
    Busy(String),
    #[error("PTY session has exited")]
    Exited,
    #[error("terminal send aborted")]
    Aborted,
    #[error("PTY shell exited during startup")]
    ExitedDuringStartup,
    #[error("PTY shell did not reach readiness before startup timeout")]
    NotReady,
    #[error("PTY read offset must be a non-negative safe integer")]
    BadOffset,
    #[error("PTY read count must be a positive safe integer")]
    BadCount,
    #[error("refusing to SIGKILL the terminal shell; terminate the terminal session instead")]
    KillShell,
    #[error(
        "too many terminal sessions: {0} are open (at most {MAX_TERMINALS}); close one with terminal_close"
    )]
    TooMany(usize),
    #[error("cannot open a terminal: {0}")]
    Open(String),
    #[error("cannot write to terminal session {0}: {1}")]
    Write(String, String),
}

/// Every terminal of this server.
pub struct TerminalRegistry {
    config: Arc<ShellConfig>,
    terms: Mutex<Vec<Arc<Term>>>,
    counter: Mutex<u64>,
}

/// What `terminal_open` reports.
pub struct Opened {
    pub snapshot: TerminalSnapshot,
    pub motd: String,
}

/// What a wait after `terminal_send` found.
pub struct Sent {
    pub viewport: String,
    pub wait_reason: WaitReason,
    pub session_status: SessionStatus,
}

impl TerminalRegistry {
    pub fn new(config: Arc<ShellConfig>) -> Self {
        TerminalRegistry { config, terms: Mutex::default(), counter: Mutex::default() }
    }

    /// Whether `terminal_send` may run in the background (`[shell] background`).
    pub fn background_allowed(&self) -> bool {
        self.config.background
    }

    fn find(&self, id: &str, owner: &str) -> Result<Arc<Term>, TerminalError> {
        if id.is_empty() {
            return Err(TerminalError::NoSessionId);
        }
        let terms = lock(&self.terms);
        let term = terms
            .iter()
            .find(|t| t.id == id)
            .ok_or_else(|| TerminalError::Unknown(id.to_owned()))?;
        if term.owner != owner {
            return Err(TerminalError::NotOwner(id.to_owned()));
        }
        Ok(Arc::clone(term))
    }

    /// Starts a shell of `kind` on a new terminal in `cwd` — or, with `world`, on a terminal in
    /// that execution world, in the folder there (relative to its root).
    pub async fn open(
        &self,
        kind: &str,
        name: Option<String>,
        cwd: PathBuf,
        world: Option<(Arc<dyn ExecutionWorld>, String)>,
        owner: String,
        signal: &CancellationToken,
    ) -> Result<Opened, TerminalError> {
        if kind.is_empty() {
            return Err(TerminalError::NoType);
        }
        // A type is offered when it is a backend toolhost has and the configuration lists it.
        if !TERMINAL_TYPES.contains(&kind) || !self.config.terminal_types.iter().any(|t| t == kind)
        {
            return Err(TerminalError::NoBackend(kind.to_owned()));
        }
        if let Some(name) = &name
            && lock(&self.terms).iter().any(|t| t.owner == owner && t.name.as_ref() == Some(name))
        {
            return Err(TerminalError::NameTaken(name.clone()));
        }
        let open = lock(&self.terms)
            .iter()
            // A shell that exited on its own no longer counts against the limit.
            .filter(|t| {
                t.owner == owner
                    && !t.closing.load(Ordering::SeqCst)
                    && matches!(*t.status.borrow(), SessionStatus::Running)
            })
            .count();
        if open >= MAX_TERMINALS {
            return Err(TerminalError::TooMany(open));
        }
        let id = {
            let mut counter = lock(&self.counter);
            *counter += 1;
            format!("pty-{counter}")
        };
        // Here this machine's environment is the base; in a world, the world's own (only the
        // shell's variables and `[shell] env` are set over it).
        let base = match &world {
            None => crate::env::command_env(std::env::vars_os(), &self.config),
            Some(_) => crate::env::command_env(std::iter::empty(), &self.config),
        };
        let (argv, env) = terminal_command(kind, &id, base);
        let term = match world {
            None => self.open_here(kind, name, owner, id, &argv, env, &cwd)?,
            Some((world, folder)) => {
                self.open_in_world(kind, name, owner, id, argv, env, world.as_ref(), folder).await?
            }
        };
        lock(&self.terms).push(Arc::clone(&term));
        if term.is_plain() {
            if let Err(err) = term.ready(signal).await {
                term.kill();
                lock(&self.terms).retain(|t| t.id != term.id);
                return Err(err);
            }
            // The marker comes just before the prompt; wait for the prompt itself.
            let seq = lock(&term.screen).output_seq;
            let _ = term.settle(Duration::from_secs(2), None, seq.saturating_sub(1), signal).await;
        } else {
            let _ = term.settle(Duration::from_secs(5), None, 0, signal).await;
        }
        Ok(Opened { snapshot: term.snapshot(), motd: term.viewport(0) })
    }

    /// Types `text` (then Enter when `submit`) and waits for a reason to stop waiting.
    pub async fn send(
        &self,
        id: &str,
        owner: &str,
        text: &str,
        submit: bool,
        timeout: Duration,
        signal: &CancellationToken,
    ) -> Result<Sent, TerminalError> {
        let term = self.find(id, owner)?;
        if term.closing.load(Ordering::SeqCst) {
            return Err(TerminalError::Closing(id.to_owned()));
        }
        if term.sending.swap(true, Ordering::SeqCst) {
            return Err(TerminalError::Busy(id.to_owned()));
        }
        let _sending = SendGuard(&term.sending);
        if matches!(*term.status.borrow(), SessionStatus::Exited { .. }) {
            return Err(TerminalError::Exited);
        }
        // Nothing to type: the wait is only for the program to settle.
        let since = if text.is_empty() && !submit { None } else { term.progress_mark().await };
        // Taken before writing: the terminal's own echo of the input is output too.
        let seq = lock(&term.screen).output_seq;
        let mark = term.plain_mark();
        let mut bytes = text.as_bytes().to_vec();
        if submit {
            bytes.push(b'\r');
        }
        term.type_in(&bytes).await.map_err(|why| TerminalError::Write(id.to_owned(), why))?;
        let (wait_reason, any) = term.settle(timeout, since, seq, signal).await;
        if signal.is_cancelled() {
            return Err(TerminalError::Aborted);
        }
        let viewport = if any { term.viewport(mark) } else { String::new() };
        let session_status = term.status.borrow().clone();
        Ok(Sent { viewport, wait_reason, session_status })
    }

    /// Lines `offset..offset+count` of the retained transcript, and how many there are.
    pub fn read(
        &self,
        id: &str,
        owner: &str,
        offset: usize,
        count: usize,
    ) -> Result<(Vec<String>, usize), TerminalError> {
        let term = self.find(id, owner)?;
        let screen = lock(&term.screen);
        let all = screen.transcript.all();
        let total = all.len();
        let lines = all.iter().skip(offset).take(count).map(|l| (*l).to_owned()).collect();
        Ok((lines, total))
    }

    /// Sends `signal` to the terminal's foreground process group; that group's id.
    pub async fn signal(
        &self,
        id: &str,
        owner: &str,
        signal: toolhost_process::Signal,
    ) -> Result<i32, TerminalError> {
        let term = self.find(id, owner)?;
        let pgid = term.foreground().await.map_or(term.pid as i32, |now| now.pgid);
        // Killing the shell itself would end the session without closing it.
        if signal == toolhost_process::Signal::KILL && pgid == term.pid as i32 {
            return Err(TerminalError::KillShell);
        }
        match &term.io {
            Io::Here { .. } => toolhost_process::signal_group(pgid, signal),
            Io::World(control) => {
                let name = world_signal_name(signal);
                let signalled = control.signal_foreground(name).await;
                return signalled
                    .map(|group| group.unwrap_or(pgid))
                    .map_err(|f| TerminalError::Write(id.to_owned(), f.to_string()));
            }
        }
        Ok(pgid)
    }

    /// Closes a terminal: its whole session is terminated and reaped. `false` when it was
    /// already closing.
    pub async fn close(&self, id: &str, owner: &str) -> Result<bool, TerminalError> {
        let term = self.find(id, owner)?;
        if term.closing.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        // A hangup first, as a closed terminal gives: an interactive shell ignores SIGTERM and
        // would otherwise hold the close for the whole grace period.
        match &term.io {
            Io::Here { group, .. } => {
                group.signal(toolhost_process::Signal::HUP);
                group.terminate(self.config.kill_grace).await;
            }
            Io::World(control) => {
                let _ = control.signal("HUP").await;
                let mut status = term.status.subscribe();
                let ended = status.wait_for(|s| matches!(s, SessionStatus::Exited { .. }));
                if tokio::time::timeout(self.config.kill_grace, ended).await.is_err() {
                    let _ = control.signal("KILL").await;
                }
            }
        }
        lock(&self.terms).retain(|t| t.id != term.id);
        Ok(true)
    }

    /// The terminals of `owner`.
    pub fn list(&self, owner: &str) -> Vec<TerminalSnapshot> {
        lock(&self.terms).iter().filter(|t| t.owner == owner).map(|t| t.snapshot()).collect()
    }

    /// Kills every terminal (the server is going away).
    pub fn close_all(&self) {
        for term in lock(&self.terms).iter() {
            term.kill();
        }
    }
}

impl Drop for TerminalRegistry {
    fn drop(&mut self) {
        self.close_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exited_status_names_a_missing_part_null() {
        let status = SessionStatus::Exited { exit_code: Some(0), signal: None };
        assert_eq!(status.describe(), "exited code=0 signal=null");
        assert_eq!(SessionStatus::Running.describe(), "running");
    }
}
