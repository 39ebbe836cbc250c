//! The execution-world protocol: what `toolhost exec-server` answers over JSON-RPC 2.0 (one JSON
//! message per line), camelCase on the wire. A world is where the files are and where processes
//! run — this machine, another one over ssh, a container — while sessions, review, cards and the
//! agent loop stay with the host that connects to it (docs/design.md, "Execution worlds").
//!
//! Bytes travel base64 in JSON. Every path is resolved by the *server*, beneath the root it was
//! started with: a client never widens what the world may touch. Errors are JSON-RPC errors whose
//! `data` is a [`WorldErrorData`] carrying the same stable code a local tool reports
//! (`FS_SANDBOX_DENIED`, `FS_NOT_FOUND`, `FS_STALE_VERSION`, `SEARCH_INVALID_PATTERN`, …).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The protocol's version; a server refuses a client whose major differs.
pub const WORLD_PROTOCOL_VERSION: &str = "1.0";

/// The method names.
pub mod methods {
    /// The first request of a connection: versions and the world's root.
    pub const HELLO: &str = "world/hello";
    /// Where a path leads beneath the root, and what is there.
    pub const RESOLVE: &str = "fs/resolve";
    /// A file's bytes (bounded) and version.
    pub const READ: &str = "fs/read";
    /// Replaces (or removes) a file atomically, given the version it must have now.
    pub const REPLACE: &str = "fs/replace";
    /// A folder's entries.
    pub const LIST: &str = "fs/list";
    /// Files matching a glob, oldest first.
    pub const GLOB: &str = "search/glob";
    /// Lines matching a regular expression.
    pub const GREP: &str = "search/grep";
    /// Runs a process group to its end (bounded output, a timeout).
    pub const RUN: &str = "process/run";
    /// Starts a process group whose output streams back as `process/output` notifications.
    pub const SPAWN: &str = "process/spawn";
    /// Writes to (or closes) a spawned process's stdin.
    pub const WRITE: &str = "process/write";
    /// Signals a spawned process's group.
    pub const SIGNAL: &str = "process/signal";
    /// What a terminal's foreground program does (a process spawned with `pty`).
    pub const TERMINAL: &str = "process/terminal";
    /// Notification, server to client: output of a spawned process.
    pub const OUTPUT: &str = "process/output";
    /// Notification, server to client: a spawned process ended (after all its output).
    pub const EXITED: &str = "process/exited";
}

/// The JSON-RPC error code of a world error (its `data` says which).
pub const WORLD_ERROR_CODE: i64 = -32010;

/// `data` of a world error: the stable code and the display path it is about, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorldErrorData {
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `FS_TOO_LARGE`: the file's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloParams {
    /// The client's [`WORLD_PROTOCOL_VERSION`].
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloResult {
    /// The server's [`WORLD_PROTOCOL_VERSION`].
    pub version: String,
    /// The toolhost version serving the world.
    pub toolhost: String,
    /// The world's root as the server sees it (canonical).
    pub root: String,
}

/// A path as a tool gives it: relative to the world's root, or absolute beneath it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathParams {
    pub path: String,
}

/// What is at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum EntryKind {
    File,
    Dir,
    Other,
    Missing,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveResult {
    /// The path as messages show it.
    pub display: String,
    /// The symlink-free path on the world's side.
    pub real_path: String,
    pub kind: EntryKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadParams {
    pub path: String,
    /// Refuse (`FS_TOO_LARGE`) a file over this many bytes; the server's own cap when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadResult {
    /// The bytes, base64; absent when the file does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// sha256 hex of the bytes (absent with `data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceParams {
    pub path: String,
    /// The version the file must have now; `null`: it must not exist.
    pub expected_version: Option<String>,
    /// The new bytes, base64; `null` removes the file.
    pub data: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceResult {
    pub display: String,
    /// `create`, `update` or `remove`.
    pub operation: String,
    /// sha256 hex of what the file holds now (of nothing, after a remove).
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListEntry {
    pub name: String,
    pub kind: EntryKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    /// Sorted by name; at most the server's cap.
    pub entries: Vec<ListEntry>,
    /// More entries exist than were returned.
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobParams {
    pub pattern: String,
    /// The folder to search (the root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobResult {
    /// Root-relative paths, oldest modification first.
    pub paths: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepParams {
    pub pattern: String,
    /// A folder or a file (the root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A glob restricting which files are searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepHit {
    pub path: String,
    #[schemars(range(min = 1))]
    pub line_number: u64,
    pub line: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepResult {
    pub matches: Vec<GrepHit>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunParams {
    /// Program and arguments (no shell unless the program is one).
    pub argv: Vec<String>,
    /// The working folder, beneath the root (the root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Bytes for stdin, base64 (stdin is empty when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Ends the group (TERM, then KILL) after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The exit code; absent when a signal ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// base64 of the first bytes of stdout (see `truncated`).
    pub stdout: String,
    pub stderr: String,
    /// Output past the server's cap was dropped.
    pub truncated: bool,
    pub timed_out: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnParams {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The working folder, beneath the root (the root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Variables set over the server's own environment (the client's never crosses whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// The group is killed when its leader exits, so what it left running in the background
    /// cannot outlive it (a tool's foreground command).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kill_group_with_leader: bool,
    /// Run on a new pseudo-terminal of this size (a session leader with it as its controlling
    /// terminal): its output is one `stdout` stream, `process/write` types into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty: Option<PtySize>,
}

/// A pseudo-terminal's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PtySize {
    pub rows: u16,
    pub cols: u16,
}

/// `process/terminal`'s answer: the terminal's foreground process group and what it does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalStateResult {
    /// Absent when it cannot be read (the terminal is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreground_pgid: Option<i32>,
    /// A member of that group is blocked reading the terminal.
    pub waits_for_input: bool,
    /// How often its members have given up the CPU so far.
    pub switches: u64,
}

/// `process/terminal`'s params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRef {
    pub process_id: u64,
}

/// One environment variable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnResult {
    /// Names the process in later requests and notifications (per connection).
    pub process_id: u64,
    /// Its pid in the world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteParams {
    pub process_id: u64,
    /// Bytes for stdin, base64.
    #[serde(default)]
    pub data: String,
    /// Close stdin after writing.
    #[serde(default)]
    pub close: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalParams {
    pub process_id: u64,
    /// `INT`, `TERM`, `KILL`, `HUP` or `QUIT`.
    pub signal: String,
    /// Signal the terminal's foreground group instead of the whole process group (a process
    /// spawned with `pty`); the answer then says which group: `{pgid}`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub foreground: bool,
}

/// Which pipe output came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputParams {
    pub process_id: u64,
    pub stream: OutputStream,
    /// base64 of the bytes, in order per stream.
    pub data: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExitedParams {
    pub process_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}
