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
use crate::watch::FileChange;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolhost_contract::lsp::{
    LspAnswer, LspLocation, LspOperation, LspRange, LspRequest, file_uri, file_uri_path,
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
    capabilities: Value,
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
}

fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16", "utf-8", "utf-32"]},
        "workspace": {
            "workspaceFolders": true,
            "configuration": true,
            "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true}
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": false},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "definition": {"linkSupport": true},
            "implementation": {"linkSupport": true},
            "references": {}
        }
    })
}

/// Whether a server capability value means "supported" (`true` or an options object).
fn supported(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(_)) => true,
        _ => false,
    }
}

/// Transient opening needs full or incremental sync, or `openClose: true`.
fn open_close_supported(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Number(n)) => matches!(n.as_u64(), Some(1 | 2)),
        Some(Value::Object(map)) => map.get("openClose").and_then(Value::as_bool) == Some(true),
        _ => false,
    }
}

fn capability_key(op: LspOperation) -> &'static str {
    match op {
        LspOperation::GoToDefinition => "definitionProvider",
        LspOperation::FindReferences => "referencesProvider",
        LspOperation::GoToImplementation => "implementationProvider",
        LspOperation::Hover => "hoverProvider",
    }
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
        let mut command = tokio::process::Command::new(options.program);
        command.args(&spec.args).env_clear().envs(server_env(&spec)).current_dir(options.root);
        let (group, pipes) = ProcessGroup::spawn(command).map_err(|e| LspHostError::Spawn {
            id: spec.id.clone(),
            command: options.program.display().to_string(),
            detail: e.to_string(),
        })?;
        let pid = group.pid();
        let exited = group.exited();
        let process = Arc::new(Mutex::new(Some(group)));
        let root_uri = file_uri(options.root);
        let info = ClientInfo {
            server_id: spec.id.clone(),
            root_uri: root_uri.clone(),
            settings: spec.settings.clone().unwrap_or(Value::Null),
            ready_message: spec.ready_message.clone(),
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
        let params = json!({
            "processId": null,
            "clientInfo": {"name": "toolhost", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": options.root.display().to_string(),
            "workspaceFolders": [{"uri": root_uri, "name": "workspace"}],
            "capabilities": client_capabilities(),
            "initializationOptions": spec.initialization_options.clone().unwrap_or(Value::Null),
        });
        let (_, rx) = conn.request("initialize", params)?;
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
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        if !capabilities.is_object() {
            kill(&process);
            return Err(init_failed("the initialize result has no capabilities".to_owned()));
        }
        let announced = capabilities.get("positionEncoding").and_then(Value::as_str);
        let Some(encoding) = Encoding::parse(announced) else {
            kill(&process);
            return Err(init_failed(format!(
                "unsupported position encoding {:?}",
                announced.unwrap_or_default()
            )));
        };
        conn.notify("initialized", json!({}))?;
        // Servers that do not pull `workspace/configuration` read their settings from this push
        // (what VS Code and Neovim send after initialized when settings are configured).
        if let Some(settings) = spec.settings.as_ref().filter(|s| !s.is_null()) {
            conn.notify("workspace/didChangeConfiguration", json!({"settings": settings}))?;
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
        let wanted: Vec<Value> = changes
            .iter()
            .filter(|c| c.path.starts_with(&self.root) && self.conn.wants(c))
            .map(|c| json!({"uri": file_uri(&c.path), "type": c.kind.wire()}))
            .collect();
        if !wanted.is_empty() && self.is_alive() {
            let _ = self.conn.notify("workspace/didChangeWatchedFiles", json!({"changes": wanted}));
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
            && let Ok((_, rx)) = self.conn.request("shutdown", Value::Null)
        {
            let _ = tokio::time::timeout(budget / 2, rx).await;
            let _ = self.conn.notify("exit", Value::Null);
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
        params: Value,
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
                let _ = self.conn.notify("$/cancelRequest", json!({"id": id}));
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
        if !supported(self.capabilities.get(capability_key(op))) {
            return Err(LspHostError::Unsupported(op.as_str().to_owned()));
        }
        if !open_close_supported(self.capabilities.get("textDocumentSync")) {
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
        let doc = json!({"uri": request.uri});
        self.conn.notify(
            "textDocument/didOpen",
            json!({"textDocument": {
                "uri": request.uri,
                "languageId": language_id,
                "version": 1,
                "text": &*request.text,
            }}),
        )?;
        let mut params = json!({"textDocument": doc, "position": position});
        if op == LspOperation::FindReferences {
            params["context"] = json!({"includeDeclaration": true});
        }
        let reply = self.call(op.method(), params, cancel, grace).await;
        if self.is_alive()
            && self
                .conn
                .notify("textDocument/didClose", json!({"textDocument": {"uri": request.uri}}))
                .is_err()
        {
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

async fn read_capped(path: &PathBuf) -> Option<String> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    if !meta.is_file() || meta.len() > CONVERT_MAX_BYTES {
        return None;
    }
    tokio::fs::read_to_string(path).await.ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_checks() {
        assert!(supported(Some(&json!(true))));
        assert!(supported(Some(&json!({"workDoneProgress": true}))));
        assert!(!supported(Some(&json!(false))));
        assert!(!supported(None));
        assert!(open_close_supported(Some(&json!(1))));
        assert!(open_close_supported(Some(&json!(2))));
        assert!(!open_close_supported(Some(&json!(0))));
        assert!(open_close_supported(Some(&json!({"openClose": true, "change": 2}))));
        assert!(!open_close_supported(Some(&json!({"change": 2}))));
    }
}
