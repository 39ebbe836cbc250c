//! `toolhost serve`: the LSP server an editor starts (docs/protocol.md).
//!
//! Layout of one connection:
//!
//! ```text
//! stdin ─▶ reader thread: frames → classify ─┬─ responses ─▶ EditorBridge (the waiting request)
//!                                            ├─ notifications ─▶ handled in order, on the thread
//!                                            └─ requests ─▶ one spawned task each ─┐
//! stdout ◀─ writer thread ◀─ Outbox ◀── results, errors, cards, editor requests ◀──┘
//! ```
//!
//! The reader never waits on a handler: requests run as tasks, responses from the editor go
//! straight to the request awaiting them, and notifications (document tracking, cancellation)
//! are cheap and stay in order. A `$/cancelRequest` answers the request `-32800` at once; a tool
//! call it cancels is still awaited to its end and logged. On `exit`, end of input, a fatal
//! frame or the death of the client process, every call is cancelled, the server waits at most
//! [`EXIT_GRACE`], stops its language servers and every child process, flushes the session log
//! and exits (0 after `shutdown` then `exit`, 1 otherwise).

mod agent;
mod documents;
mod handlers;
mod hosted;
mod routes;
mod worktrees;

use crate::editor::EditorBridge;
use documents::Documents;
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{Notify, broadcast};
use toolhost_contract::CancellationToken;
use toolhost_host::Host;
use toolhost_host::session::OpenedSession;
use toolhost_host::watcher::WatchEvent;
use toolhost_jsonrpc::message::{ErrorObject, Id, Incoming, codes};
use toolhost_jsonrpc::reader::{self, Inbound, ReadEnd};
use toolhost_jsonrpc::{Framing, Outbox};

/// How long exit waits for running calls before abandoning them.
pub const EXIT_GRACE: Duration = Duration::from_millis(1500);

/// Options of `toolhost serve`.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub session_dir: Option<PathBuf>,
    pub max_message_bytes: usize,
}

/// Where the connection is in the LSP lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Uninitialized,
    /// `initialize` is being handled; other requests are still refused.
    Initializing,
    Initialized,
    /// `shutdown` was received: only `exit` is expected.
    ShutDown,
}

/// What ended the connection.
#[derive(Debug)]
enum Ending {
    Eof,
    Exit,
    Fatal(String),
    ClientDied,
    /// SIGTERM, SIGINT or SIGHUP: stop as cleanly as for a dead client.
    Signal(&'static str),
}

/// Connection-wide state, shared by the reader thread and the request tasks.
struct ServerState {
    options: ServeOptions,
    runtime: tokio::runtime::Handle,
    outbox: Outbox,
    editor: EditorBridge,
    phase: Mutex<Phase>,
    host: OnceLock<Arc<Host>>,
    opened: OnceLock<OpenedSession>,
    /// Requests in flight by id: `$/cancelRequest` fires their token; a second request with the
    /// same id is refused.
    requests: Mutex<HashMap<Id, CancellationToken>>,
    /// Agent prompts still running (the host counts calls; a wind-down waits for both).
    prompts: AtomicUsize,
    prompts_idle: Notify,
    documents: Documents,
    client_pid: Mutex<Option<i32>>,
    client_died: AtomicBool,
    /// Fired to stop the connection.
    stop: CancellationToken,
    ending: Mutex<Option<Ending>>,
    watch_events: OnceLock<broadcast::Sender<WatchEvent>>,
    /// The attach socket this server bound (removed at exit).
    attach_socket: Mutex<Option<PathBuf>>,
    /// Set when the client's `initialized` arrived: notifications of our own may go out then
    /// (not before the initialize result).
    client_initialized: tokio::sync::watch::Sender<bool>,
    /// `[agent]` of the resolved configuration (set by initialize).
    agent_settings: OnceLock<toolhost_agent::AgentSettings>,
    /// The own agent's chats of this connection.
    chats: agent::Chats,
    /// `[acp]` of the resolved configuration (set by initialize).
    acp_settings: OnceLock<toolhost_host::acp_config::AcpSettings>,
    /// The agents hosted over ACP, started by the first prompt for one.
    hosted: OnceLock<Arc<toolhost_acp::hosted::HostedAgents>>,
    /// The other session the editor shows (a worktree session's), watched for growth.
    watched: worktrees::Watched,
}

impl ServerState {
    fn phase(&self) -> Phase {
        self.phase.lock().map_or(Phase::ShutDown, |p| *p)
    }

    fn set_phase(&self, phase: Phase) {
        if let Ok(mut p) = self.phase.lock() {
            *p = phase;
        }
    }

    fn host(&self) -> Result<Arc<Host>, ErrorObject> {
        self.host.get().cloned().ok_or_else(|| {
            ErrorObject::new(codes::SERVER_NOT_INITIALIZED, "server not initialized")
        })
    }

    /// Records why the connection ends (the first reason wins) and stops it.
    fn end(&self, ending: Ending) {
        if let Ok(mut slot) = self.ending.lock() {
            slot.get_or_insert(ending);
        }
        self.stop.cancel();
    }

    fn cancel_all(&self) {
        if let Some(host) = self.host.get() {
            host.cancel_all_calls();
        }
        if let Ok(requests) = self.requests.lock() {
            for token in requests.values() {
                token.cancel();
            }
        }
    }

    /// Waits until no call and no agent prompt runs.
    async fn wait_idle(&self) {
        if let Some(host) = self.host.get() {
            host.calls_idle().await;
        }
        loop {
            let notified = self.prompts_idle.notified();
            if self.prompts.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Routes one inbound item (on the reader thread). Returns `false` to stop reading.
    fn route(self: &Arc<Self>, inbound: Inbound) -> bool {
        match inbound {
            Inbound::Oversized(len) => {
                let max = self.options.max_message_bytes;
                let message = format!("message body of {len} bytes exceeds the {max}-byte limit");
                self.outbox
                    .send_error(&Id::Null, &ErrorObject::new(codes::INVALID_REQUEST, message));
            }
            Inbound::ParseError => {
                self.outbox
                    .send_error(&Id::Null, &ErrorObject::new(codes::PARSE_ERROR, "Parse error"));
            }
            Inbound::Invalid(invalid) => self.outbox.send_error(&invalid.id, &invalid.error()),
            Inbound::Message(Incoming::Response(response)) => self.editor.complete(response),
            Inbound::Message(Incoming::Notification(note)) => {
                if note.method == "exit" {
                    return false;
                }
                handlers::notification(self, note);
            }
            Inbound::Message(Incoming::Request(request)) => handlers::request(self, request),
        }
        true
    }
}

/// A duplicate of a standard stream's descriptor as a `File`: unbuffered, owned by its thread.
pub(crate) fn stdio_file(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<std::fs::File> {
    Ok(std::fs::File::from(fd.try_clone_to_owned()?))
}

/// Serves one LSP connection over stdio and returns the process exit code.
pub async fn serve(options: ServeOptions) -> u8 {
    let (stdin, stdout) =
        match (stdio_file(std::io::stdin().as_fd()), stdio_file(std::io::stdout().as_fd())) {
            (Ok(stdin), Ok(stdout)) => (stdin, stdout),
            (Err(err), _) | (_, Err(err)) => {
                eprintln!("toolhost: cannot use stdio: {err}");
                return 1;
            }
        };
    let (outbox, writer) = Outbox::start(stdout, Framing::ContentLength);
    let max_body = options.max_message_bytes;
    let state = Arc::new(ServerState {
        options,
        runtime: tokio::runtime::Handle::current(),
        editor: EditorBridge::new(outbox.clone()),
        outbox,
        phase: Mutex::new(Phase::Uninitialized),
        host: OnceLock::new(),
        opened: OnceLock::new(),
        requests: Mutex::new(HashMap::new()),
        prompts: AtomicUsize::new(0),
        prompts_idle: Notify::new(),
        documents: Documents::default(),
        client_pid: Mutex::new(None),
        client_died: AtomicBool::new(false),
        stop: CancellationToken::new(),
        ending: Mutex::new(None),
        watch_events: OnceLock::new(),
        attach_socket: Mutex::new(None),
        client_initialized: tokio::sync::watch::channel(false).0,
        agent_settings: OnceLock::new(),
        chats: Mutex::new(HashMap::new()),
        acp_settings: OnceLock::new(),
        hosted: OnceLock::new(),
        watched: worktrees::Watched::default(),
    });

    // The reader: a plain thread, so a read blocked on a silent editor never holds up exit.
    {
        let state = Arc::clone(&state);
        let spawned = std::thread::Builder::new().name("toolhost-stdin".into()).spawn(move || {
            let end = reader::read_loop(stdin, max_body, |inbound| state.route(inbound));
            state.end(match end {
                ReadEnd::Eof => Ending::Eof,
                ReadEnd::Stopped => Ending::Exit,
                ReadEnd::Fatal(reason) => Ending::Fatal(reason),
            });
        });
        if let Err(err) = spawned {
            eprintln!("toolhost: cannot start the input thread: {err}");
            return 1;
        }
    }
    let monitor = spawn_client_monitor(Arc::clone(&state));
    let signals = spawn_signal_watch(Arc::clone(&state));
    state.stop.cancelled().await;

    // Wind down: cancel every call and request, give them EXIT_GRACE while language servers
    // and other children stop, flush the log.
    state.cancel_all();
    state.editor.close();
    let host = state.host.get().cloned();
    let hosted = state.hosted.get().cloned();
    let children_down = async {
        if let Some(hosted) = &hosted {
            hosted.shutdown().await;
        }
        if let Some(host) = &host {
            host.shutdown().await;
        }
        toolhost_process::terminate_all(Duration::from_millis(500)).await;
    };
    let _ =
        tokio::time::timeout(EXIT_GRACE, futures::future::join(state.wait_idle(), children_down))
            .await;
    if let Some(opened) = state.opened.get() {
        let _ = tokio::time::timeout(Duration::from_millis(500), opened.log.flush()).await;
    }
    monitor.abort();
    signals.abort();
    if let Some(socket) = state.attach_socket.lock().ok().and_then(|mut s| s.take()) {
        let _ = std::fs::remove_file(socket);
    }
    state.outbox.close();
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    let ending = state.ending.lock().ok().and_then(|mut e| e.take()).unwrap_or(Ending::Eof);
    let ending = if state.client_died.load(Ordering::SeqCst) { Ending::ClientDied } else { ending };
    match ending {
        Ending::Fatal(reason) => {
            eprintln!("toolhost: closing the connection: {reason}");
            1
        }
        Ending::ClientDied => {
            eprintln!("toolhost: the client process died");
            1
        }
        Ending::Signal(name) => {
            eprintln!("toolhost: stopped by {name}");
            1
        }
        Ending::Exit if state.phase() == Phase::ShutDown => 0,
        Ending::Exit | Ending::Eof => 1,
    }
}

/// Turns SIGTERM, SIGINT and SIGHUP into a clean stop (calls cancelled, children reaped, log
/// flushed) instead of an abrupt death.
fn spawn_signal_watch(state: Arc<ServerState>) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
            _ = hup.recv() => "SIGHUP",
            () = state.stop.cancelled() => return,
        };
        state.end(Ending::Signal(name));
    })
}

/// Watches the client's process id (from initialize) and stops the server when it dies.
fn spawn_client_monitor(state: Arc<ServerState>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = state.stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            let pid = state.client_pid.lock().ok().and_then(|p| *p);
            if let Some(pid) = pid.filter(|p| *p > 0)
                && let Some(pid) = rustix::process::Pid::from_raw(pid)
                && rustix::process::test_kill_process(pid)
                    .is_err_and(|e| e == rustix::io::Errno::SRCH)
            {
                state.client_died.store(true, Ordering::SeqCst);
                state.end(Ending::ClientDied);
                return;
            }
        }
    })
}
