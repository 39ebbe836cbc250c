//! The execution-world seam: where a session's files and processes are when they are not on this
//! machine (docs/world.md, docs/design.md §12).
//!
//! A host that is given an [`ExecutionWorld`] keeps everything that is the person's — the session
//! log, the observation ledger, review, history blobs, cards, the editor's unsaved buffers — and
//! asks the world only for what lives there: the primary root's files (resolved and confined on
//! the world's side, which never trusts this side's checks), search run where the files are, and
//! processes. Without one, the workspace and the shell use this machine directly; that is the
//! local world, and it is the same code the world's own server runs.
//!
//! Paths given to a world are relative to its root (`""` is the root itself); paths it returns
//! are too, so the host maps them onto its own root and the editor's files.

use crate::BoxFuture;

/// A request the world refused or could not carry out: the stable code a local tool would report
/// (`FS_NOT_FOUND`, `FS_STALE_VERSION`, `SEARCH_…`, `WORLD_DISCONNECTED`, …) and its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct WorldFailure {
    pub code: String,
    pub message: String,
    /// For `FS_TOO_LARGE`: the file's size.
    pub size: Option<u64>,
}

impl WorldFailure {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        WorldFailure { code: code.into(), message: message.into(), size: None }
    }
}

/// What a world's answer costs: a result or the failure.
pub type WorldResult<T> = Result<T, WorldFailure>;

/// What is at a resolved path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldEntry {
    File,
    Dir,
    Other,
    Missing,
}

/// A path resolved beneath the world's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldPath {
    /// The symlink-free path relative to the world's root (`""`: the root).
    pub real_rel: String,
    pub entry: WorldEntry,
}

/// One grep hit, as the local search reports it (path relative to the world's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldGrepHit {
    pub path: String,
    pub line_number: u64,
    pub line: String,
}

/// What to start: argv, the folder (relative to the root), variables set over the world's own
/// environment (this machine's environment never crosses), and whether the group dies with its
/// leader.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorldCommand {
    pub argv: Vec<String>,
    pub cwd: String,
    pub env: Vec<(String, String)>,
    pub kill_group_with_leader: bool,
    /// Run on a new terminal of (rows, columns): one output stream, input typed into it.
    pub pty: Option<(u16, u16)>,
}

/// What a terminal's foreground program does (a process started with a `pty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorldTerminalState {
    /// The foreground process group.
    pub pgid: i32,
    /// A member of it is blocked reading the terminal.
    pub waits_for_input: bool,
    /// How often its members have given up the CPU so far.
    pub switches: u64,
}

/// What a started process says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorldProcessEvent {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    /// The leader ended: its exit code, or the number of the signal that ended it.
    Exited {
        exit_code: Option<i32>,
        signal: Option<i32>,
    },
}

/// What may be done to a started process from anywhere (shared while its events are read).
pub trait WorldProcessControl: Send + Sync {
    /// Signals the whole group (`TERM`, `KILL`, `INT`, `HUP`, `QUIT`).
    fn signal<'a>(&'a self, signal: &'a str) -> BoxFuture<'a, WorldResult<()>>;
    /// Writes to its stdin (then closes it, with `close`).
    fn write<'a>(&'a self, data: &'a [u8], close: bool) -> BoxFuture<'a, WorldResult<()>>;
    /// A terminal process: signals the terminal's foreground group; which group it was.
    fn signal_foreground<'a>(&'a self, signal: &'a str) -> BoxFuture<'a, WorldResult<Option<i32>>>;
    /// A terminal process: what its foreground program does (`None`: cannot be read).
    fn terminal_state(&self) -> BoxFuture<'_, WorldResult<Option<WorldTerminalState>>>;
}

/// Sends SIGKILL to a world process's group without waiting (from a `Drop`, or where killing
/// must not block): the request goes from a task, when a runtime is there to run it.
pub fn kill_detached(control: &std::sync::Arc<dyn WorldProcessControl>) {
    let control = std::sync::Arc::clone(control);
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ = control.signal("KILL").await;
        });
    }
}

/// A process group started in a world.
pub trait WorldProcess: Send {
    /// The next event; `None` once the process exited and everything was said, or the
    /// connection to the world was lost (then a last [`WorldProcessEvent::Exited`] is missing).
    fn next_event(&mut self) -> BoxFuture<'_, Option<WorldProcessEvent>>;
    /// Signalling and input, usable while another task reads the events.
    fn control(&self) -> std::sync::Arc<dyn WorldProcessControl>;
    /// Its pid in the world, if the world says.
    fn pid(&self) -> Option<u32>;
    /// Signals the whole group (`TERM`, `KILL`, `INT`, `HUP`, `QUIT`).
    fn signal<'a>(&'a self, signal: &'a str) -> BoxFuture<'a, WorldResult<()>> {
        let control = self.control();
        Box::pin(async move { control.signal(signal).await })
    }
}

/// Where the primary root's files and the session's processes are.
pub trait ExecutionWorld: Send + Sync + std::fmt::Debug {
    /// A short description for messages (`ssh build-box:/srv/repo`).
    fn describe(&self) -> String;
    /// The root as the world names it (an absolute path there): what programs started there
    /// see, so language servers' locations can be mapped back to this machine's root.
    fn root(&self) -> BoxFuture<'_, WorldResult<String>>;
    /// Resolves `rel` beneath the root, following symbolic links there (an escape is refused
    /// with `FS_SANDBOX_DENIED`).
    fn resolve<'a>(&'a self, rel: &'a str) -> BoxFuture<'a, WorldResult<WorldPath>>;
    /// A regular file's bytes (`None`: nothing there); a file over `max_bytes` is refused with
    /// `FS_TOO_LARGE` and its size.
    fn read<'a>(
        &'a self,
        rel: &'a str,
        max_bytes: u64,
    ) -> BoxFuture<'a, WorldResult<Option<Vec<u8>>>>;
    /// Replaces the file atomically if it has version `expected` now (`None`: it must not
    /// exist), else `FS_STALE_VERSION`; `content: None` removes it. Missing folders are made.
    fn replace<'a>(
        &'a self,
        rel: &'a str,
        expected: Option<&'a str>,
        content: Option<&'a [u8]>,
    ) -> BoxFuture<'a, WorldResult<()>>;
    /// The local glob, run in the world (`path`: the search root, relative).
    fn glob<'a>(
        &'a self,
        pattern: &'a str,
        path: Option<&'a str>,
        cancel: &'a tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'a, WorldResult<Vec<String>>>;
    /// The local grep, run in the world.
    fn grep<'a>(
        &'a self,
        pattern: &'a str,
        path: Option<&'a str>,
        include: Option<&'a str>,
        cancel: &'a tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'a, WorldResult<Vec<WorldGrepHit>>>;
    /// Starts a process group.
    fn spawn<'a>(
        &'a self,
        command: &'a WorldCommand,
    ) -> BoxFuture<'a, WorldResult<Box<dyn WorldProcess>>>;
}
