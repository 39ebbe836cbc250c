//! One initialized language server for one workspace: start (`initialize` with our client
//! capabilities plus the position encodings we convert), queries as transient
//! `didOpen` → request → `didClose`, cancellation (`$/cancelRequest`, then teardown after the
//! grace), and shutdown (`shutdown` + `exit`, then SIGTERM/SIGKILL of the process group).

use crate::connection::{ClientInfo, Connection, Reply};
use crate::encoding::{self, Encoding};
use crate::error::LspHostError;
use crate::normalize;
use crate::process::ProcessGroup;
use crate::servers::{ServerSpec, server_env};
use crate::shapes::{self, ServerCapabilities};
use crate::uri_map::UriMap;
use crate::watch::FileChange;
use gen_lsp_types::{
    CancelParams, DidChangeConfigurationParams, DidChangeWatchedFilesParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, Id, InitializedParams, LanguageKind,
    TextDocumentIdentifier, TextDocumentItem, Uri,
};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolhost_contract::lsp::{
    LspAnswer, LspLocation, LspOperation, LspRange, LspRequest, file_uri_path,
};

/// Files read to convert columns of other files' locations are capped at this size.
const CONVERT_MAX_BYTES: u64 = 4_000_000;

/// The longest wait for a server's readiness log line after `initialized`.
const READY_MAX: Duration = Duration::from_secs(10);

/// A running, initialized server.
pub struct Instance {
    spec: Arc<ServerSpec>,
    /// The workspace folder the server was started on.
    root: PathBuf,
    conn: Connection,
    process: Arc<Mutex<Option<ProcessGroup>>>,
    pid: Option<i32>,
    capabilities: ServerCapabilities,
    encoding: Encoding,
    exited: CancellationToken,
    /// Set when we stopped it (cancellation, shutdown): its death is not a crash.
    stopped: AtomicBool,
}

/// What a start needs besides the spec.
pub struct StartOptions<'a> {
    pub program: &'a Path,
    pub root: &'a Path,
    pub max_message_bytes: usize,
    /// The execution world the server runs in (the workspace's files are there), if not here.
    pub world: Option<&'a Arc<dyn toolhost_contract::ExecutionWorld>>,
}

/// Starts the server's process: here, or in the world, with the root's spelling there.
async fn spawn_server(
    spec: &ServerSpec,
    options: &StartOptions<'_>,
) -> Result<(ProcessGroup, crate::process::Pipes, Option<UriMap>), LspHostError> {
    let spawn_failed = |detail: String| LspHostError::Spawn {
        id: spec.id.clone(),
        command: options.program.display().to_string(),
        detail,
    };
    let Some(world) = options.world else {
        let mut command = tokio::process::Command::new(options.program);
        command.args(&spec.args).env_clear().envs(server_env(spec)).current_dir(options.root);
        let (group, pipes) =
            ProcessGroup::spawn(command).map_err(|e| spawn_failed(e.to_string()))?;
        return Ok((group, pipes, None));
    };
    let remote_root = world.root().await.map_err(|f| spawn_failed(f.to_string()))?;
    let mut argv = vec![options.program.to_string_lossy().into_owned()];
    argv.extend(spec.args.iter().cloned());
    // The world's own environment, plus what the entry sets: this machine's never crosses.
    let command = toolhost_contract::WorldCommand {
        argv,
        cwd: String::new(),
        env: spec.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        kill_group_with_leader: true,
        pty: None,
    };
    let (group, pipes) = ProcessGroup::spawn_in_world(world.as_ref(), &command)
        .await
        .map_err(|f| spawn_failed(f.to_string()))?;
    let map = UriMap::new(&options.root.to_string_lossy(), &remote_root);
    Ok((group, pipes, map))
}

async fn await_reply(conn: &Connection, rx: oneshot::Receiver<Reply>) -> Reply {
    match rx.await {
        Ok(reply) => reply,
        Err(_) => Err(conn.death().unwrap_or(LspHostError::Disposed)),
    }
}

impl Instance {
    /// Spawns and initializes the server; a cancelled or failed start kills the process.
    pub async fn start(
        spec: Arc<ServerSpec>,
        options: StartOptions<'_>,
        cancel: &CancellationToken,
    ) -> Result<Arc<Instance>, LspHostError> {
        // A canonical path always has a `file:` URI; checked before anything is started.
        let Some(root_uri) = shapes::uri_of(options.root) else {
            return Err(LspHostError::Initialize {
                id: spec.id.clone(),
                detail: format!("no URI names the folder {}", options.root.display()),
            });
        };
        let (group, pipes, uri_map) = spawn_server(&spec, &options).await?;
        let pid = group.pid();
        let exited = group.exited();
        let process = Arc::new(Mutex::new(Some(group)));
        let info = ClientInfo {
            server_id: spec.id.clone(),
            folder: shapes::workspace_folder(root_uri.clone()),
            settings: spec.settings.clone().unwrap_or(Value::Null),
            ready_message: spec.ready_message.clone(),
            uri_map,
        };
        let conn = Connection::start(
            info,
            pipes.stdin,
            pipes.stdout,
            pipes.stderr,
            options.max_message_bytes,
            Arc::downgrade(&process),
            exited.clone(),
        );
        let kill = |process: &Arc<Mutex<Option<ProcessGroup>>>| {
            if let Ok(mut guard) = process.lock()
                && let Some(group) = guard.as_mut()
            {
                group.kill();
            }
        };
        let params =
            shapes::initialize_params(options.root, &root_uri, spec.initialization_options.clone());
        let (_, rx) = conn.request("initialize", &params)?;
        let reply = tokio::select! {
            reply = await_reply(&conn, rx) => reply,
            () = cancel.cancelled() => {
                kill(&process);
                conn.close(LspHostError::Aborted);
                return Err(LspHostError::Aborted);
            }
        };
        let init_failed = |detail: String| LspHostError::Initialize { id: spec.id.clone(), detail };
        let result = match reply {
            Ok(Some(result)) => result,
            Ok(None) => {
                kill(&process);
                return Err(init_failed("the initialize result is missing".to_owned()));
            }
            Err(LspHostError::Rpc { message, .. }) => {
                kill(&process);
                return Err(init_failed(message));
            }
            Err(err) => {
                kill(&process);
                return Err(err);
            }
        };
        let capabilities = result.get("capabilities").and_then(ServerCapabilities::read);
        let Some(capabilities) = capabilities else {
            kill(&process);
            return Err(init_failed("the initialize result has no capabilities".to_owned()));
        };
        let announced = capabilities.position_encoding.clone().map(String::from);
        let Some(encoding) = Encoding::parse(announced.as_deref()) else {
            kill(&process);
            return Err(init_failed(format!(
                "unsupported position encoding {:?}",
                announced.unwrap_or_default()
            )));
        };
        conn.notify("initialized", &InitializedParams {})?;
        // Servers that do not pull `workspace/configuration` read their settings from this push
        // (what VS Code and Neovim send after initialized when settings are configured).
        if let Some(settings) = spec.settings.as_ref().filter(|s| !s.is_null()) {
            let params = DidChangeConfigurationParams { settings: settings.clone() };
            conn.notify("workspace/didChangeConfiguration", &params)?;
        }
        // Some servers load the workspace only after `initialized` (pyright enumerates its
        // source files once it has its configuration); a first query sent before that sees a
        // half-loaded project. Such specs name a log line to wait for (bounded).
        if spec.ready_message.is_some() {
            tokio::select! {
                () = conn.ready().cancelled() => {}
                () = tokio::time::sleep(READY_MAX) => {}
                () = cancel.cancelled() => {
                    kill(&process);
                    conn.close(LspHostError::Aborted);
                    return Err(LspHostError::Aborted);
                }
            }
        }
        Ok(Arc::new(Instance {
            spec,
            root: options.root.to_path_buf(),
            conn,
            process,
            pid,
            capabilities,
            encoding,
            exited,
            stopped: AtomicBool::new(false),
        }))
    }

    pub fn is_alive(&self) -> bool {
        self.conn.is_alive()
    }

    /// Whether it died by itself (not stopped by us).
    pub fn crashed(&self) -> bool {
        !self.is_alive() && !self.stopped.load(Ordering::SeqCst)
    }

    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// Tells the server about changed files in its workspace that its registered watchers want
    /// (`workspace/didChangeWatchedFiles`). Queued in order before any later request.
    pub fn files_changed(&self, changes: &[FileChange]) {
        let wanted: Vec<_> = changes
            .iter()
            .filter(|c| c.path.starts_with(&self.root) && self.conn.wants(c))
            .filter_map(shapes::file_event)
            .collect();
        if !wanted.is_empty() && self.is_alive() {
            let params = DidChangeWatchedFilesParams { changes: wanted };
            let _ = self.conn.notify("workspace/didChangeWatchedFiles", &params);
        }
    }

    /// Kills the process group now and marks the connection dead.
    pub fn kill(&self, why: LspHostError) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Ok(mut guard) = self.process.lock()
            && let Some(group) = guard.as_mut()
        {
            group.kill();
        }
        self.conn.close(why);
    }

    /// Graceful stop within `budget`: `shutdown` + `exit`, then SIGTERM and SIGKILL.
    pub async fn shutdown(&self, budget: Duration) {
        self.stopped.store(true, Ordering::SeqCst);
        let started = Instant::now();
        if self.is_alive()
            && let Ok((_, rx)) = self.conn.request("shutdown", &Value::Null)
        {
            let _ = tokio::time::timeout(budget / 2, rx).await;
            let _ = self.conn.notify("exit", &Value::Null);
        }
        let group = self.process.lock().ok().and_then(|mut g| g.take());
        if let Some(mut group) = group {
            let left = budget.saturating_sub(started.elapsed());
            let _ = tokio::time::timeout(left / 2, self.exited.cancelled()).await;
            group.terminate(budget.saturating_sub(started.elapsed())).await;
        }
        self.conn.close(LspHostError::Disposed);
    }

    /// Sends a request and waits for its reply; on cancellation sends `$/cancelRequest`, waits
    /// up to `grace` for the request to settle and otherwise tears the instance down.
    async fn call(
        &self,
        method: &str,
        params: &Value,
        cancel: &CancellationToken,
        grace: Duration,
    ) -> Reply {
        let (id, mut rx) = self.conn.request(method, params)?;
        tokio::select! {
            reply = &mut rx => match reply {
                Ok(reply) => reply,
                Err(_) => Err(self.conn.death().unwrap_or(LspHostError::Disposed)),
            },
            () = cancel.cancelled() => {
                // Our ids count up from 1: far below i32::MAX in any real session.
                let id_param = i32::try_from(id).map_or_else(|_| Id::String(id.to_string()), Id::Int);
                let _ = self.conn.notify("$/cancelRequest", &CancelParams { id: id_param });
                if tokio::time::timeout(grace, &mut rx).await.is_err() {
                    self.conn.forget(id);
                    self.kill(LspHostError::Aborted);
                }
                Err(LspHostError::Aborted)
            }
        }
    }

    /// One query: capability checks, transient open, the request, close, normalization.
    pub async fn query(
        &self,
        request: &LspRequest,
        language_id: &str,
        cancel: &CancellationToken,
        grace: Duration,
    ) -> Result<LspAnswer, LspHostError> {
        let op = request.operation;
        if !self.capabilities.supports(op) {
            return Err(LspHostError::Unsupported(op.as_str().to_owned()));
        }
        if !self.capabilities.opens_documents() {
            return Err(LspHostError::Unsupported(format!(
                "{} (the server does not accept opened documents)",
                op.as_str()
            )));
        }
        let position = encoding::convert(
            Some(&request.text),
            request.position,
            Encoding::Utf16,
            self.encoding,
        );
        // The tool passes the `file:` URI of a canonical path, which always parses.
        let uri: Uri = Uri::parse(&request.uri)
            .map_err(|_| LspHostError::NoProvider(request.display.clone()))?;
        let params = shapes::position_params(op, uri.clone(), position).map_err(|e| {
            LspHostError::Protocol { id: self.spec.id.clone(), detail: e.to_string() }
        })?;
        let opened = DidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: uri.clone(),
                language_id: LanguageKind::from(language_id.to_owned()),
                version: 1,
                text: request.text.to_string(),
            },
        };
        self.conn.notify("textDocument/didOpen", &opened)?;
        let reply = self.call(op.method(), &params, cancel, grace).await;
        let closed = DidCloseTextDocumentParams { text_document: TextDocumentIdentifier { uri } };
        if self.is_alive() && self.conn.notify("textDocument/didClose", &closed).is_err() {
            self.kill(LspHostError::Exited { id: self.spec.id.clone(), stderr: String::new() });
        }
        let result = reply?;
        match op {
            LspOperation::Hover => {
                let mut hover = normalize::hover(result.as_ref())?;
                if let Some(range) = hover.as_mut().and_then(|h| h.range.as_mut()) {
                    *range = self.range_to_utf16(Some(&request.text), *range);
                }
                Ok(LspAnswer::Hover(hover))
            }
            _ => {
                let locations = normalize::locations(op.as_str(), result.as_ref())?;
                Ok(LspAnswer::Locations(self.locations_to_utf16(request, locations).await))
            }
        }
    }

    fn range_to_utf16(&self, text: Option<&str>, range: LspRange) -> LspRange {
        LspRange {
            start: encoding::convert(text, range.start, self.encoding, Encoding::Utf16),
            end: encoding::convert(text, range.end, self.encoding, Encoding::Utf16),
        }
    }

    /// Converts server columns back to UTF-16, reading other files' lines when needed.
    async fn locations_to_utf16(
        &self,
        request: &LspRequest,
        mut locations: Vec<LspLocation>,
    ) -> Vec<LspLocation> {
        if self.encoding == Encoding::Utf16 {
            return locations;
        }
        let mut texts: HashMap<String, Option<String>> = HashMap::new();
        texts.insert(request.uri.clone(), Some(request.text.to_string()));
        for location in &mut locations {
            if !texts.contains_key(&location.uri) {
                let text = match file_uri_path(&location.uri) {
                    Some(path) => read_capped(&path).await,
                    None => None,
                };
                texts.insert(location.uri.clone(), text);
            }
            let text = texts.get(&location.uri).and_then(Option::as_deref);
            location.range = self.range_to_utf16(text, location.range);
        }
        locations
    }
}

async fn read_capped(path: &Path) -> Option<String> {
    // Non-blocking open, type checked on the handle: a FIFO cannot pin the blocking pool.
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        toolhost_contract::regular_file::read_regular_text(&path, CONVERT_MAX_BYTES).ok()
    })
    .await
    .ok()
    .flatten()
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("server", &self.spec.id)
            .field("pid", &self.pid)
            .field("alive", &self.is_alive())
            .finish()
    }
}
