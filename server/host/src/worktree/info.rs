//! What an editor or `toolhost sessions` shows of a worktree session: branch, whether a toolhost
//! works in it now, how many files it changed, and who made its latest call.

use super::{WorktreeSession, changes, in_use};
use std::path::{Path, PathBuf};
use toolhost_protocol::lsp_ext::{WorktreeInfo, WorktreeState};

/// Where a worktree session's log is.
pub fn log_path(sessions_dir: &Path, session: &WorktreeSession) -> Option<PathBuf> {
    let key = crate::session::workspace_key_of(&session.root);
    toolhost_session::session_dir(sessions_dir, &key, &session.session_id)
        .ok()
        .map(|dir| dir.join(toolhost_session::LOG_FILE_NAME))
}

/// The caller of the latest call in a session's log.
fn latest_caller(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines().rev().find_map(|line| {
        let record: serde_json::Value = serde_json::from_str(line).ok()?;
        let caller = record["data"]["caller"].as_str().map(str::to_owned);
        (record["type"] == "tool/call").then_some(caller)?
    })
}

/// One worktree session as shown.
pub async fn info(sessions_dir: &Path, session: &WorktreeSession) -> WorktreeInfo {
    WorktreeInfo {
        name: session.name.clone(),
        session_id: session.session_id.clone(),
        root: session.root.to_string_lossy().into_owned(),
        branch: session.branch.clone(),
        state: if in_use(sessions_dir, session) {
            WorktreeState::InUse
        } else {
            WorktreeState::Idle
        },
        changed_files: changes(session).await.ok().map(|c| c.len() as u64),
        agent: log_path(sessions_dir, session).as_deref().and_then(latest_caller),
        created_at: session.created_ms,
    }
}

/// The workspace's worktree sessions as shown, newest first.
pub async fn infos(sessions_dir: &Path, workspace: &Path) -> Vec<WorktreeInfo> {
    let mut out = Vec::new();
    for session in super::list(sessions_dir, workspace) {
        out.push(info(sessions_dir, &session).await);
    }
    out
}
