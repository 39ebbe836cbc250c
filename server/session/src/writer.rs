//! The session log writer: opening (create or continue) under an exclusive lock, crash repair,
//! and durable appends by one writer thread.
//!
//! Durability policy: every awaited append returns only after its line was written and
//! `sync_data`'d. Appends that arrive while a sync is in progress are committed together by the
//! next write + sync (group commit), so concurrent callers share one sync without weakening the
//! guarantee. Appends nobody waits for — `observe`d `fs/observed` lines, and the `tool/call` of
//! a read-only call ([`SessionLog::enqueue_tool_call`]) — cost no sync of their own: they are
//! held and committed, in order, in front of the next batch that someone waits for (or a flush,
//! or the close). So a read costs one sync, not three.
//!
//! The `tool/result` of a read-only call follows the session's [`Durability`]: with `every-call`
//! it is awaited like any append; with `batched` (the default) it is written at once, nobody
//! waits for it, and it is synced within [`SYNC_WINDOW`](crate::durability::SYNC_WINDOW) — by
//! the writer's own timer, or sooner by the next line someone waits for. So what a power loss can
//! cost is the records of the reads of the last few milliseconds; a mutation's records are synced
//! before it is answered, always.
//!
//! A failed write is rolled back to the last committed length and stops the writer (later
//! appends fail with `WriterClosed`): an fsync error leaves the page cache in an unknown state, so
//! continuing would risk acknowledging lines that never reach the disk. Reopen to continue.

mod thread;

use crate::blob::BlobStore;
use crate::durability::Durability;
use crate::encoded::{Data, encode_result};
use crate::error::SessionError;
use crate::lines::validate_event;
use crate::paths::{
    BLOB_DIR_NAME, LOG_FILE_NAME, TORN_FILE_NAME, create_private_dir_all, now_ms,
    open_private_append, sync_dir, validate_session_id, workspace_key,
};
use crate::scan::{FS_CHANGE, FS_OBSERVED, TOOL_CALL, TOOL_RESULT, scan};
use crate::session_lock::lock_session;
use crate::view::{SessionView, build_view};
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use thread::{Command, Held, Item, Queue, Writer};
use tokio::sync::oneshot;
use toolhost_protocol::session_log::{
    FsChangeEvent, FsObservedEvent, LOG_VERSION, SessionHeader, ToolCallEvent, ToolResultEvent,
    ToolResultRecord,
};
use toolhost_protocol::{ContentBlock, ErrorInfo};

/// Error name and code of the synthetic result crash repair gives an interrupted call.
pub const OUTCOME_UNKNOWN_NAME: &str = "ToolOutcomeUnknownError";
pub const OUTCOME_UNKNOWN_CODE: &str = "TOOL_OUTCOME_UNKNOWN";

/// A sync `fs/observed` sink with the shape of the workspace ledger's observer hook.
pub type ObserveFn = Arc<dyn Fn(&str, Option<&str>) + Send + Sync>;

/// Most commands committed by one write + sync; bounds the latency of the first in a burst.
const MAX_BATCH: usize = 1024;

/// Bytes cut from the end of the log by crash repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Where the cut started (the log's length afterwards).
    pub offset: u64,
    /// The bytes removed; also appended to `session.torn` beside the log.
    pub bytes: Vec<u8>,
}

/// What `SessionLog::open` found and repaired.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenReport {
    /// The log was new (or had no complete header) and a header was written.
    pub created: bool,
    /// The torn last line that was cut, if any.
    pub torn_tail: Option<TornTail>,
    /// Call ids that got a synthetic `TOOL_OUTCOME_UNKNOWN` result.
    pub synthetic_results: Vec<String>,
    /// `fs/observed` entries to restore into the ledger (last wins per path).
    pub observed: Vec<(String, Option<String>)>,
    /// The session after repair (every call has a result).
    pub view: SessionView,
}

/// The synthetic failed result of a call whose outcome is unknown (the process stopped while it
/// ran). Its text tells the model not to assume either outcome.
pub fn outcome_unknown_result(call_id: &str, name: &str) -> ToolResultEvent {
    let message = format!(
        "The outcome of this {name} call is unknown: toolhost stopped before the call finished, so \
         it may or may not have taken effect. Check the current state (for example, read the file \
         again) before retrying anything that is not idempotent."
    );
    ToolResultEvent {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        content: vec![ContentBlock::text(format!("Error: {message}"))],
        is_error: true,
        error: Some(ErrorInfo::new(OUTCOME_UNKNOWN_NAME, OUTCOME_UNKNOWN_CODE)),
        meta: None,
        renderer_version: 0,
    }
}

/// An open, locked session log with its writer thread. Dropping it commits what is queued,
/// stops the writer and releases the lock.
pub struct SessionLog {
    id: String,
    dir: PathBuf,
    log_path: PathBuf,
    blobs: BlobStore,
    queue: Arc<Queue>,
    thread: Option<JoinHandle<()>>,
    /// `true` for [`Durability::EveryCall`]: read-only results are awaited too.
    every_call: AtomicBool,
    durable: Arc<AtomicU64>,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog")
            .field("id", &self.id)
            .field("log_path", &self.log_path)
            .finish()
    }
}

impl SessionLog {
    /// Opens the session `id` of the workspace at `workspace_root` under `sessions_dir`
    /// (`<sessions_dir>/<workspace key>/<id>/session.jsonl`). With `create`, a missing session
    /// is created and an existing one continued; without, a missing one is `NotFound`.
    ///
    /// Takes the session's exclusive lock (`Locked` if another holder exists), then repairs: a
    /// torn last line is cut (its bytes saved to `session.torn` and reported), and every call
    /// without a result gets a synthetic `TOOL_OUTCOME_UNKNOWN` result. Corruption before the
    /// tail is an error (`Damaged`, naming the command that repairs it) and nothing is changed.
    pub fn open(
        sessions_dir: &Path,
        workspace_root: &Path,
        id: &str,
        create: bool,
    ) -> Result<(SessionLog, OpenReport), SessionError> {
        validate_session_id(id)?;
        let root =
            std::fs::canonicalize(workspace_root).unwrap_or_else(|_| workspace_root.to_owned());
        let dir = sessions_dir.join(workspace_key(&root)).join(id);
        let log_path = dir.join(LOG_FILE_NAME);
        if create {
            create_private_dir_all(&dir)?;
        }
        let mut file = match open_private_append(&log_path, create) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(log_path));
            }
            Err(e) => return Err(SessionError::io_at(&log_path, "open")(e)),
        };
        lock_session(&file, &log_path)?;

        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut bytes))
            .map_err(SessionError::io_at(&log_path, "read"))?;
        let mut scanned = scan(&bytes).map_err(|err| match err {
            SessionError::Corrupt { .. } | SessionError::UnknownEvent { .. } => {
                SessionError::Damaged { id: id.to_owned(), source: Box::new(err) }
            }
            other => other,
        })?;

        let torn_tail = if scanned.torn_len > 0 {
            let tail = bytes[scanned.good_len..].to_vec();
            save_torn(&dir.join(TORN_FILE_NAME), &tail)?;
            file.set_len(scanned.good_len as u64)
                .and_then(|()| file.sync_data())
                .map_err(SessionError::io_at(&log_path, "truncate the torn tail of"))?;
            Some(TornTail { offset: scanned.good_len as u64, bytes: tail })
        } else {
            None
        };

        let mut len = scanned.good_len as u64;
        let created = scanned.header.is_none();
        match &scanned.header {
            None => {
                // New, or the crash hit the very first write: nothing was ever acknowledged.
                let header = SessionHeader {
                    kind: "session".to_owned(),
                    version: LOG_VERSION,
                    id: id.to_owned(),
                    cwd: root.to_string_lossy().into_owned(),
                    created_at: now_ms(),
                };
                let mut line = serde_json::to_vec(&header).map_err(|e| {
                    SessionError::InvalidEvent { kind: "session".into(), detail: e.to_string() }
                })?;
                line.push(b'\n');
                file.write_all(&line)
                    .and_then(|()| file.sync_data())
                    .map_err(SessionError::io_at(&log_path, "write"))?;
                sync_dir(&dir)?;
                len = line.len() as u64;
                scanned.last_time = header.created_at;
                scanned.header = Some(header);
            }
            Some(header) if header.id != id => {
                return Err(SessionError::Corrupt {
                    line: 1,
                    expected_seq: 0,
                    detail: format!("the header names session {:?}, not {id:?}", header.id),
                });
            }
            Some(_) => {}
        }

        let blobs = BlobStore::new(dir.join(BLOB_DIR_NAME));
        let last_time = scanned.last_time;
        let mut writer = Writer {
            file,
            blobs: blobs.clone(),
            next_seq: scanned.next_seq,
            len,
            deferred: Vec::new(),
            unsynced_since: None,
            durable: Arc::new(AtomicU64::new(len)),
            held: Arc::new(std::sync::Mutex::new(Held::default())),
        };
        let held = Arc::clone(&writer.held);
        let durable = Arc::clone(&writer.durable);
        let mut view = build_view(scanned, Some(&blobs))?;

        let mut synthetic_results = Vec::new();
        let mut items = Vec::new();
        for call in view.calls.iter_mut().filter(|c| c.result.is_none()) {
            let result = outcome_unknown_result(&call.call_id, &call.name);
            let data = serde_json::to_value(&result).map_err(|e| SessionError::InvalidEvent {
                kind: TOOL_RESULT.into(),
                detail: e.to_string(),
            })?;
            items.push(Item {
                kind: TOOL_RESULT.to_owned(),
                data: Data::Value(data),
                ignorable: false,
                time: Some(last_time),
            });
            synthetic_results.push(call.call_id.clone());
            call.result = Some(result);
        }
        if !items.is_empty() {
            for outcome in writer.commit(items, true)? {
                outcome?;
            }
            view.next_seq = writer.next_seq;
        }

        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("toolhost-session-writer".to_owned())
            .spawn(move || writer.run(rx))
            .map_err(|e| SessionError::io("cannot start the session writer thread", e))?;
        let report = OpenReport {
            created,
            torn_tail,
            synthetic_results,
            observed: view.observed.clone(),
            view,
        };
        let queue = Arc::new(Queue { held, tx });
        let log = SessionLog {
            id: id.to_owned(),
            dir,
            log_path,
            blobs,
            queue,
            thread: Some(thread),
            every_call: AtomicBool::new(false),
            durable,
        };
        Ok((log, report))
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's directory (log, blobs, torn sidecar).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of `session.jsonl`.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The session's blob store (spill files, images).
    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Appends one event and returns its seq once it is durable. `data` is checked against the
    /// event's shape for the known types; any other type must be `ignorable` (readers skip it).
    /// Image blocks of a `tool/result` are moved to the blob store.
    pub async fn append(
        &self,
        kind: &str,
        data: Value,
        ignorable: bool,
    ) -> Result<u64, SessionError> {
        validate_event(kind, &data, ignorable)?;
        self.send_append(Item::new(kind, Data::Value(data), ignorable)).await
    }

    /// Appends `tool/call` (when a call starts).
    pub async fn append_tool_call(&self, event: &ToolCallEvent) -> Result<u64, SessionError> {
        self.append_typed(TOOL_CALL, event, false).await
    }

    /// Sends `tool/call` to be written and synced now, and returns what says when it is durable,
    /// so the caller may start the call's body meanwhile (what the body changes must wait for
    /// it; see `Tool::changes_only_through_workspace`). Lines appended after this one are
    /// written after it.
    pub fn begin_tool_call(&self, event: &ToolCallEvent) -> Result<Durable, SessionError> {
        let data = serde_json::to_value(event).map_err(|e| SessionError::InvalidEvent {
            kind: TOOL_CALL.to_owned(),
            detail: e.to_string(),
        })?;
        let (reply, rx) = oneshot::channel();
        self.queue
            .send(Command::Append(Item::new(TOOL_CALL, Data::Value(data), false), Some(reply)))?;
        Ok(Durable(rx))
    }

    /// Enqueues `tool/call` without waiting and without a sync of its own: it is committed in
    /// front of the next awaited append (normally the call's own `tool/result`). For calls of
    /// read-only tools, whose start need not be on disk before they run. Errors surface on the
    /// next awaited append.
    pub fn enqueue_tool_call(&self, event: &ToolCallEvent) -> Result<(), SessionError> {
        let data = serde_json::to_value(event).map_err(|e| SessionError::InvalidEvent {
            kind: TOOL_CALL.to_owned(),
            detail: e.to_string(),
        })?;
        self.queue.hold(Item::new(TOOL_CALL, Data::Value(data), false))
    }

    /// Appends `tool/result` (when a call ends).
    pub async fn append_tool_result<'a>(
        &self,
        event: impl Into<ToolResultRecord<'a>>,
    ) -> Result<u64, SessionError> {
        let data = encode_result(&event.into())?;
        self.send_append(Item::new(TOOL_RESULT, data, false)).await
    }

    /// Appends the `tool/result` of a read-only call as the session's [`Durability`] says: with
    /// `every-call` as [`append_tool_result`](Self::append_tool_result); with `batched` it is
    /// written at once and synced within [`SYNC_WINDOW`](crate::durability::SYNC_WINDOW), and
    /// nobody waits (errors of the write surface on the next awaited append).
    pub async fn append_read_only_result<'a>(
        &self,
        event: impl Into<ToolResultRecord<'a>>,
    ) -> Result<(), SessionError> {
        let event = event.into();
        if self.durability() == Durability::EveryCall {
            return self.append_tool_result(event).await.map(drop);
        }
        let data = encode_result(&event)?;
        self.queue.write_soon(Item::new(TOOL_RESULT, data, false))
    }

    /// Sets what a read-only call's result promises (`[session] durability`).
    pub fn set_durability(&self, durability: Durability) {
        self.every_call.store(durability == Durability::EveryCall, Ordering::Relaxed);
    }

    /// What a read-only call's result promises.
    pub fn durability(&self) -> Durability {
        if self.every_call.load(Ordering::Relaxed) {
            Durability::EveryCall
        } else {
            Durability::Batched
        }
    }

    /// How many bytes of the log are known to be synced (everything written, once no lazy line
    /// waits for its sync). For tests and diagnostics.
    pub fn durable_len(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Appends an ignorable `fs/observed` and waits until it is durable.
    pub async fn append_fs_observed(
        &self,
        path: &str,
        version: Option<&str>,
    ) -> Result<u64, SessionError> {
        let event = FsObservedEvent { path: path.to_owned(), version: version.map(str::to_owned) };
        self.append_typed(FS_OBSERVED, &event, true).await
    }

    /// Enqueues an ignorable `fs/observed` without waiting (for the ledger's sync hook). It is
    /// committed with the next batch, before any append enqueued after it. Errors surface on the
    /// next awaited append or [`flush`](Self::flush); after close it is dropped.
    pub fn observe(&self, path: &str, version: Option<&str>) {
        let _ = self.queue.hold(observed_item(path, version));
    }

    /// Enqueues an ignorable `fs/change` without waiting: it is committed with the next batch
    /// (normally the changing call's own `tool/result`), before anything enqueued after it.
    pub fn enqueue_fs_change(&self, event: &FsChangeEvent) -> Result<(), SessionError> {
        let data = serde_json::to_value(event).map_err(|e| SessionError::InvalidEvent {
            kind: FS_CHANGE.to_owned(),
            detail: e.to_string(),
        })?;
        self.queue.hold(Item::new(FS_CHANGE, Data::Value(data), true))
    }

    /// Enqueues an event without waiting: it is committed with the next batch, before anything
    /// enqueued or appended after it, so records written this way keep their order with the
    /// calls around them (the agent's conversation between its tool calls). Same checks as
    /// [`append`](Self::append); errors of the write surface on the next awaited append or
    /// [`flush`](Self::flush).
    pub fn enqueue(&self, kind: &str, data: Value, ignorable: bool) -> Result<(), SessionError> {
        validate_event(kind, &data, ignorable)?;
        self.queue.hold(Item::new(kind, Data::Value(data), ignorable))
    }

    /// A `'static` observer closure for `Ledger::with_observer` (same semantics as
    /// [`observe`](Self::observe)).
    pub fn observer(&self) -> ObserveFn {
        let queue = Arc::clone(&self.queue);
        Arc::new(move |path: &str, version: Option<&str>| {
            let _ = queue.hold(observed_item(path, version));
        })
    }

    /// Waits until everything enqueued before it (including `observe`d entries) is durable.
    pub async fn flush(&self) -> Result<(), SessionError> {
        let (reply, rx) = oneshot::channel();
        self.queue.send(Command::Flush(reply))?;
        rx.await.map_err(|_| closed())?
    }

    async fn append_typed<T: serde::Serialize>(
        &self,
        kind: &str,
        event: &T,
        ignorable: bool,
    ) -> Result<u64, SessionError> {
        let data = serde_json::to_value(event).map_err(|e| SessionError::InvalidEvent {
            kind: kind.to_owned(),
            detail: e.to_string(),
        })?;
        self.send_append(Item::new(kind, Data::Value(data), ignorable)).await
    }

    async fn send_append(&self, item: Item) -> Result<u64, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.queue.send(Command::Append(item, Some(reply)))?;
        rx.await.map_err(|_| closed())?
    }
}

/// The durability of a line sent by [`SessionLog::begin_tool_call`]: its seq once synced.
pub struct Durable(oneshot::Receiver<Result<u64, SessionError>>);

impl std::future::Future for Durable {
    type Output = Result<u64, SessionError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|answer| answer.map_err(|_| closed())?)
    }
}

fn observed_item(path: &str, version: Option<&str>) -> Item {
    let data = serde_json::json!({ "path": path, "version": version });
    Item::new(FS_OBSERVED, Data::Value(data), true)
}

fn closed() -> SessionError {
    SessionError::WriterClosed(
        "it stopped after an I/O error or was closed; reopen the session".to_owned(),
    )
}

/// Keeps cut bytes for a human to inspect (never silently lost), one record per cut.
fn save_torn(path: &Path, tail: &[u8]) -> Result<(), SessionError> {
    let mut file = open_private_append(path, true).map_err(SessionError::io_at(path, "open"))?;
    file.write_all(tail)
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_data())
        .map_err(SessionError::io_at(path, "write"))
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        // Shutdown is queued behind everything already sent, so queued lines are committed; the
        // join makes "dropped" mean "unlocked", so a reopen right after cannot see `Locked`.
        let _ = self.queue.send(Command::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
