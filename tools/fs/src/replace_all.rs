//! Replacing several files as one change: every file's expected current bytes are checked under
//! its lock as it is written, a journal holding both sides is made durable before the first file
//! changes and removed after the last, a failure puts back the files already done, and a crash in
//! between is rolled back by the host when it next opens the session. `revert`, `checkpoint`
//! restores and `apply_changes` all write this way.

use crate::fs_failure;
use crate::revert::history_failure;
use toolhost_contract::{ChangeHistory, ToolError};
use toolhost_protocol::session_log::{RevertJournal, RevertJournalFile};
use toolhost_workspace::{Workspace, content_version};

/// One file's replacement.
pub(crate) struct Replacement {
    /// The file's real path.
    pub real_path: String,
    /// What the file must hold now (`None`: it must not exist).
    pub current: Option<Vec<u8>>,
    /// What it is to hold (`None`: it is removed).
    pub next: Option<Vec<u8>>,
}

/// Writes every replacement or none: one file atomically, several under a journal.
pub(crate) async fn replace_all(
    ws: &Workspace,
    history: &dyn ChangeHistory,
    call_id: &str,
    replacements: &[Replacement],
) -> Result<(), ToolError> {
    let restore = |one: &Replacement| {
        let expected = one.current.as_deref().map(content_version);
        let content = one.next.clone();
        let path = one.real_path.clone();
        async move { ws.restore(&path, expected.as_deref(), content.as_deref()).await }
    };
    if let [only] = replacements {
        restore(only).await.map_err(fs_failure)?;
        return Ok(());
    }
    let mut files = Vec::new();
    for one in replacements {
        let original = match &one.current {
            Some(bytes) => Some(history.keep(bytes.clone()).await.map_err(history_failure)?),
            None => None,
        };
        let target = match &one.next {
            Some(bytes) => Some(history.keep(bytes.clone()).await.map_err(history_failure)?),
            None => None,
        };
        files.push(RevertJournalFile { path: one.real_path.clone(), original, target });
    }
    history
        .begin_journal(RevertJournal { call_id: call_id.to_owned(), files })
        .await
        .map_err(history_failure)?;
    for (done, one) in replacements.iter().enumerate() {
        if let Err(err) = restore(one).await {
            // Put back what was already changed, newest first, then drop the journal. A file that
            // cannot be put back keeps the journal, so the next open of the session retries.
            let mut clean = true;
            for undo in replacements[..done].iter().rev() {
                let expected = undo.next.as_deref().map(content_version);
                let back =
                    ws.restore(&undo.real_path, expected.as_deref(), undo.current.as_deref());
                clean &= back.await.is_ok();
            }
            if clean {
                let _ = history.end_journal().await;
            }
            return Err(fs_failure(err));
        }
    }
    history.end_journal().await.map_err(history_failure)
}
