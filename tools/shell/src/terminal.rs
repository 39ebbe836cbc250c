//! Terminal sessions: an interactive shell on a pseudo-terminal (pty-process), its screen kept by
//! a terminal emulator (vt100), so what a full-screen program or a pager shows is readable as
//! text, and a transcript of everything printed (escape sequences removed) for `terminal_read`.
//!
//! After text is sent, the call waits for one of four reasons: the foreground process waits for
//! input on the terminal (`stdin_read`, read from `/proc/<pid>/syscall`), the output went quiet
//! (`inferred_idle`), the time ran out (`timeout`), or the session ended (`session_exit`).
//! Sessions are process sessions of `toolhost-process` (every group of the session is signalled
//! and reaped), owned by the toolhost session that opened them, and die with the server.

use crate::config::ShellConfig;
use crate::live::decode_into;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolhost_process::{GroupHandle, SpawnOptions};

/// Terminal size (rows, columns).
pub const ROWS: u16 = 24;
pub const COLS: u16 = 120;
/// Transcript lines kept for `terminal_read`.
const TRANSCRIPT_LINES: usize = 10_000;
/// No output for this long (and nothing else decided) ends a wait as `inferred_idle`.
const IDLE: Duration = Duration::from_millis(1500);
/// The foreground process must have been waiting this long, with no output, for `stdin_read`.
const QUIET_FOR_STDIN: Duration = Duration::from_millis(150);
/// Terminals one session may have open.
const MAX_TERMINALS: usize = 10;

/// The programs a terminal may run.
pub const TERMINAL_TYPES: [&str; 3] = ["bash", "sh", "zsh"];

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

/// Everything printed, as lines without escape sequences.
#[derive(Default)]
struct Transcript {
    lines: VecDeque<String>,
    current: String,
    carry: Vec<u8>,
    escape: Escape,
    pending_cr: bool,
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    Start,
    Csi,
    Osc,
    OscEsc,
}

impl Transcript {
    fn push(&mut self, bytes: &[u8]) {
        let mut text = String::new();
        decode_into(&mut text, &mut self.carry, bytes);
        for ch in text.chars() {
            self.escape = match (self.escape, ch) {
                (Escape::None, '\u{1b}') => Escape::Start,
                (Escape::None, _) => {
                    self.plain(ch);
                    Escape::None
                }
                (Escape::Start, '[') => Escape::Csi,
                (Escape::Start, ']') => Escape::Osc,
                (Escape::Start, _) => Escape::None,
                (Escape::Csi, c) if ('\u{40}'..='\u{7e}').contains(&c) => Escape::None,
                (Escape::Csi, _) => Escape::Csi,
                (Escape::Osc, '\u{7}') => Escape::None,
                (Escape::Osc, '\u{1b}') => Escape::OscEsc,
                (Escape::Osc, _) => Escape::Osc,
                (Escape::OscEsc, _) => Escape::None,
            };
        }
    }

    fn plain(&mut self, ch: char) {
        if self.pending_cr && ch != '\n' {
            // A carriage return not followed by a newline: the line is redrawn from its start.
            self.current.clear();
        }
        self.pending_cr = false;
        match ch {
            '\r' => self.pending_cr = true,
            '\n' => {
                self.lines.push_back(std::mem::take(&mut self.current));
                if self.lines.len() > TRANSCRIPT_LINES {
                    self.lines.pop_front();
                }
            }
            '\u{8}' => {
                self.current.pop();
            }
            '\t' => self.current.push('\t'),
            c if c.is_control() => {}
            c => self.current.push(c),
        }
    }

    /// Every retained line, the unfinished one last.
    fn all(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if !self.current.is_empty() {
            all.push(&self.current);
        }
        all
    }
}

struct Screen {
    parser: vt100::Parser,
    transcript: Transcript,
    last_output: Instant,
    output_seq: u64,
}

struct Term {
    id: String,
    name: Option<String>,
    kind: String,
    owner: String,
    pid: u32,
    master: OwnedFd,
    writer: tokio::sync::Mutex<pty_process::OwnedWritePty>,
    screen: Mutex<Screen>,
    group: GroupHandle,
    status: watch::Sender<SessionStatus>,
    closing: AtomicBool,
    output: tokio::sync::Notify,
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

    fn viewport(&self) -> String {
        let screen = lock(&self.screen);
        let contents = screen.parser.screen().contents();
        contents.trim_end().to_owned()
    }

    /// The process group in the terminal's foreground, if it can be read.
    fn foreground_pgid(&self) -> Option<i32> {
        rustix::termios::tcgetpgrp(self.master.as_fd()).ok().map(|p| p.as_raw_nonzero().get())
    }

    /// Whether the foreground process is blocked reading the terminal — and, when `since` says
    /// where things stood as input was sent, has run since then: a program still asleep in the
    /// same read has not seen the input yet.
    fn waits_for_input(&self, since: Option<(i32, u64)>) -> bool {
        let Some(pgid) = self.foreground_pgid() else { return false };
        let members = toolhost_process::group_members(pgid);
        if !members.iter().any(|pid| waits_on_terminal(*pid)) {
            return false;
        }
        match since {
            Some((before, switches)) if before == pgid => context_switches(&members) > switches,
            _ => true,
        }
    }

    /// The foreground group and how often its members have blocked so far.
    fn progress_mark(&self) -> Option<(i32, u64)> {
        let pgid = self.foreground_pgid()?;
        Some((pgid, context_switches(&toolhost_process::group_members(pgid))))
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
                && self.waits_for_input(since)
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

    fn output_since(&self, seq: u64) -> bool {
        lock(&self.screen).output_seq > seq
    }
}

/// How often these processes have given up the CPU, in total (`/proc/<pid>/status`).
fn context_switches(pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// Reads `/proc/<pid>/syscall`: the process is in `read` on a terminal, or in `select`/`poll`
/// (readline, a REPL) with its stdin a terminal.
fn waits_on_terminal(pgid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pgid}/syscall")) else { return false };
    let mut fields = text.split_whitespace();
    let Some(nr) = fields.next().and_then(|n| n.parse::<i64>().ok()) else { return false };
    let arg0 = fields
        .next()
        .and_then(|a| i64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .unwrap_or(-1);
    let is_tty = |fd: i64| {
        std::fs::read_link(format!("/proc/{pgid}/fd/{fd}"))
            .is_ok_and(|p| p.starts_with("/dev/pts") || p.starts_with("/dev/tty"))
    };
    #[cfg(target_arch = "x86_64")]
    let (read, waiters): (i64, &[i64]) = (0, &[7, 23, 270, 271]);
    #[cfg(target_arch = "aarch64")]
    let (read, waiters): (i64, &[i64]) = (63, &[72, 73]);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let (read, waiters): (i64, &[i64]) = (-1, &[]);
    (nr == read && is_tty(arg0)) || (waiters.contains(&nr) && is_tty(0))
}

/// Why a terminal request failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TerminalError {
    #[error("unknown terminal session {0}")]
    Unknown(String),
    #[error("terminal session {0} belongs to another session")]
    NotOwner(String),
    #[error("unsupported terminal type \"{0}\" (expected one of: bash, sh, zsh)")]
    UnsupportedType(String),
    #[error(
        "too many terminal sessions: {0} are open (at most {MAX_TERMINALS}); close one with terminal_close"
    )]
    TooMany(usize),
    #[error("cannot open a terminal: {0}")]
    Open(String),
    #[error("terminal session {0} has exited")]
    Exited(String),
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

    fn find(&self, id: &str, owner: &str) -> Result<Arc<Term>, TerminalError> {
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

    /// Starts a shell of `kind` on a new terminal in `cwd`.
    pub async fn open(
        &self,
        kind: &str,
        name: Option<String>,
        cwd: PathBuf,
        owner: String,
        signal: &CancellationToken,
    ) -> Result<Opened, TerminalError> {
        if !TERMINAL_TYPES.contains(&kind) {
            return Err(TerminalError::UnsupportedType(kind.to_owned()));
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
        let (pty, pts) = pty_process::open().map_err(|e| TerminalError::Open(e.to_string()))?;
        pty.resize(pty_process::Size::new(ROWS, COLS))
            .map_err(|e| TerminalError::Open(e.to_string()))?;
        let master =
            pty.as_fd().try_clone_to_owned().map_err(|e| TerminalError::Open(e.to_string()))?;
        let secondary =
            pts.as_fd().try_clone_to_owned().map_err(|e| TerminalError::Open(e.to_string()))?;
        drop(pts);
        let mut env = crate::env::command_env(std::env::vars_os(), &self.config);
        // A terminal is a real terminal: programs may draw (the screen is emulated), and a pager
        // is readable in the viewport.
        for (name, value) in [("TERM", "xterm-256color"), ("PAGER", "less"), ("GIT_PAGER", "less")]
        {
            env.retain(|(n, _)| n != name);
            env.push((name.into(), value.into()));
        }
        env.retain(|(n, _)| n != "NO_COLOR");
        let mut command = tokio::process::Command::new(kind);
        command.current_dir(&cwd).env_clear().envs(env);
        let group = toolhost_process::spawn_in_terminal(
            command,
            secondary,
            SpawnOptions { kill_group_with_leader: true },
        )
        .map_err(|e| TerminalError::Open(format!("{kind}: {e}")))?;
        let id = {
            let mut counter = lock(&self.counter);
            *counter += 1;
            format!("term-{counter}")
        };
        let (reader, writer) = pty.into_split();
        let rows = std::num::NonZeroU16::new(ROWS).unwrap_or(std::num::NonZeroU16::MIN);
        let cols = std::num::NonZeroU16::new(COLS).unwrap_or(std::num::NonZeroU16::MIN);
        let (status, _) = watch::channel(SessionStatus::Running);
        let term = Arc::new(Term {
            id,
            name,
            kind: kind.to_owned(),
            owner,
            pid: group.id(),
            master,
            writer: tokio::sync::Mutex::new(writer),
            screen: Mutex::new(Screen {
                parser: vt100::Parser::new(rows, cols, 1000),
                transcript: Transcript::default(),
                last_output: Instant::now(),
                output_seq: 0,
            }),
            group: group.handle(),
            status,
            closing: AtomicBool::new(false),
            output: tokio::sync::Notify::new(),
        });
        lock(&self.terms).push(Arc::clone(&term));
        let reading = Arc::clone(&term);
        tokio::spawn(async move {
            let mut reader = reader;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                // EIO once the last process on the terminal is gone: the end, like EOF.
                match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut screen = lock(&reading.screen);
                        screen.parser.process(&buf[..n]);
                        screen.transcript.push(&buf[..n]);
                        screen.last_output = Instant::now();
                        screen.output_seq += 1;
                        drop(screen);
                        reading.output.notify_waiters();
                    }
                }
            }
        });
        let watching = Arc::clone(&term);
        tokio::spawn(async move {
            let status = group.wait().await;
            let (exit_code, signal) = crate::exec::describe(status);
            watching.status.send_replace(SessionStatus::Exited { exit_code, signal });
            // The group (and its session) is reaped by its monitor; keep `group` alive until then.
            group.reaped().await;
        });
        let (_, _) = term.settle(Duration::from_secs(5), None, 0, signal).await;
        Ok(Opened { snapshot: term.snapshot(), motd: term.viewport() })
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
        if matches!(*term.status.borrow(), SessionStatus::Exited { .. }) {
            return Err(TerminalError::Exited(id.to_owned()));
        }
        // Nothing to type: the wait is only for the program to settle.
        let since = if text.is_empty() && !submit { None } else { term.progress_mark() };
        // Taken before writing: the terminal's own echo of the input is output too.
        let seq = lock(&term.screen).output_seq;
        {
            let mut writer = term.writer.lock().await;
            let mut bytes = text.as_bytes().to_vec();
            if submit {
                bytes.push(b'\r');
            }
            writer
                .write_all(&bytes)
                .await
                .map_err(|e| TerminalError::Write(id.to_owned(), e.to_string()))?;
            let _ = writer.flush().await;
        }
        let (wait_reason, any) = term.settle(timeout, since, seq, signal).await;
        let viewport = if any { term.viewport() } else { String::new() };
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
    pub fn signal(
        &self,
        id: &str,
        owner: &str,
        signal: toolhost_process::Signal,
    ) -> Result<i32, TerminalError> {
        let term = self.find(id, owner)?;
        let pgid = term.foreground_pgid().unwrap_or(term.pid as i32);
        if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
            let _ = rustix::process::kill_process_group(pid, signal);
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
        term.group.terminate(self.config.kill_grace).await;
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
            term.group.kill();
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
    fn the_transcript_drops_escapes_and_redrawn_lines() {
        let mut t = Transcript::default();
        t.push(
            b"\x1b[31mred\x1b[0m plain\r\nprogress 10%\rprogress 100%\r\n\x1b]0;title\x07$ ab\x08c",
        );
        assert_eq!(t.all(), vec!["red plain", "progress 100%", "$ ac"]);
    }

    #[test]
    fn exited_status_names_a_missing_part_null() {
        let status = SessionStatus::Exited { exit_code: Some(0), signal: None };
        assert_eq!(status.describe(), "exited code=0 signal=null");
        assert_eq!(SessionStatus::Running.describe(), "running");
    }
}
