//! The editor's worktree sessions (docs/protocol.md, `toolhost/worktreeNew` and after): listing,
//! making, applying (one `apply_changes` call in this session, its hunks reviewed by this editor)
//! and discarding them, and the one other session the editor shows, watched so the editor hears
//! `toolhost/sessionChanged` when its log grows.

use super::ServerState;
use super::handlers::run_call;
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_host::CallRequest;
use toolhost_host::worktree::{self, WorktreeError, WorktreeSession};
use toolhost_jsonrpc::message::ErrorObject;
use toolhost_protocol::lsp_ext::{
    SessionChangedParams, WatchSessionParams, WorktreeApplyParams, WorktreeApplyResult,
    WorktreeDiscardParams, WorktreeInfo, WorktreeNewParams, methods,
};

/// How often the watched session's log is looked at.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The session the editor shows besides its own, and the task watching it.
#[derive(Default)]
pub struct Watched(Mutex<Option<(String, tokio::task::JoinHandle<()>)>>);

impl Drop for Watched {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.0.lock()
            && let Some((_, task)) = slot.take()
        {
            task.abort();
        }
    }
}

fn error(err: WorktreeError) -> ErrorObject {
    ErrorObject::invalid_params(err.to_string()).with_data(json!({"code": err.code()}))
}

/// The sessions folder and the workspace root of this connection.
fn places(state: &ServerState) -> Result<(PathBuf, PathBuf), ErrorObject> {
    let host = state.host()?;
    let opened = state.opened.get().ok_or_else(|| ErrorObject::internal("no session"))?;
    Ok((opened.sessions_dir.clone(), host.root().to_path_buf()))
}

fn find(state: &ServerState, which: &str) -> Result<WorktreeSession, ErrorObject> {
    let (sessions, root) = places(state)?;
    worktree::find(&sessions, &root, which)
        .ok_or_else(|| error(WorktreeError::Unknown(which.to_owned())))
}

/// This workspace's worktree sessions as shown.
pub async fn infos(state: &ServerState) -> Result<Vec<WorktreeInfo>, ErrorObject> {
    let (sessions, root) = places(state)?;
    Ok(worktree::infos(&sessions, &root).await)
}

/// The log of worktree session `id` of this workspace, when it is one.
pub fn log_of(state: &ServerState, id: &str) -> Option<PathBuf> {
    let (sessions, root) = places(state).ok()?;
    let session = worktree::find(&sessions, &root, id).filter(|s| s.session_id == id)?;
    worktree::log_path(&sessions, &session)
}

pub async fn new(
    state: &ServerState,
    params: WorktreeNewParams,
) -> Result<WorktreeInfo, ErrorObject> {
    let (sessions, root) = places(state)?;
    let made = worktree::create(&sessions, &root, params.name.as_deref()).await.map_err(error)?;
    Ok(worktree::info(&sessions, &made).await)
}

pub async fn apply(
    state: &Arc<ServerState>,
    params: WorktreeApplyParams,
) -> Result<WorktreeApplyResult, ErrorObject> {
    let session = find(state, &params.name)?;
    let Some(arguments) = worktree::apply_arguments(&session, !params.all).await.map_err(error)?
    else {
        return Ok(WorktreeApplyResult { call: None });
    };
    let call = run_call(state, CallRequest::new(worktree::APPLY_TOOL, arguments)).await?;
    Ok(WorktreeApplyResult { call: Some(call) })
}

pub async fn discard(
    state: &ServerState,
    params: WorktreeDiscardParams,
) -> Result<serde_json::Value, ErrorObject> {
    let session = find(state, &params.name)?;
    let (sessions, _) = places(state)?;
    worktree::discard(&sessions, &session).await.map_err(error)?;
    Ok(serde_json::Value::Null)
}

/// `toolhost/watchSession`: watches the named session's log (one at a time per editor).
pub fn watch(
    state: &Arc<ServerState>,
    params: WatchSessionParams,
) -> Result<serde_json::Value, ErrorObject> {
    let mut slot = state.watched.0.lock().map_err(|_| ErrorObject::internal("poisoned"))?;
    if let Some((_, task)) = slot.take() {
        task.abort();
    }
    let Some(id) = params.session_id else { return Ok(serde_json::Value::Null) };
    let log = log_of(state, &id).ok_or_else(|| {
        ErrorObject::invalid_params(format!("no worktree session with session id {id}"))
            .with_data(json!({"code": "WORKTREE_UNKNOWN"}))
    })?;
    let editor = state.editor.clone();
    let watched = id.clone();
    let task = state.runtime.spawn(async move {
        let size = |log: &PathBuf| std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
        let mut seen = size(&log);
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let now = size(&log);
            if now != seen {
                seen = now;
                let params = SessionChangedParams { session_id: watched.clone() };
                editor.notify(methods::SESSION_CHANGED, &params);
            }
        }
    });
    *slot = Some((id, task));
    Ok(serde_json::Value::Null)
}
