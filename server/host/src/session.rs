//! Opening the session of a workspace: the log (locked, repaired), the ledger restored from its
//! `fs/observed` events and wired to append new ones, and the blob store used for spills.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_contract::spill::SpillHandle;
use toolhost_protocol::lsp_ext::{ListSessionsResult, SessionInfo};
use toolhost_registry::Registry;
use toolhost_session::{
    BlobStore, Durability, OpenReport, ReplayedCall, SessionError, SessionLog, SkippedLines,
};
use toolhost_workspace::Ledger;

/// A session opened for appending.
pub struct OpenedSession {
    pub log: Arc<SessionLog>,
    pub report: OpenReport,
    pub ledger: Arc<Ledger>,
    pub blobs: BlobStore,
    /// The sessions directory it was opened under (siblings are listed and replayed from it).
    pub sessions_dir: PathBuf,
}

impl OpenedSession {
    /// The spill capability (the session's blob store).
    pub fn spill(&self) -> SpillHandle {
        Arc::new(self.blobs.clone())
    }

    /// The blob folder, a read-only root of the confined filesystem.
    pub fn blob_dir(&self) -> PathBuf {
        self.blobs.blob_dir().to_path_buf()
    }
}

/// Where sessions live: `dir` when one is configured, else the state directory.
pub fn sessions_dir(dir: Option<&Path>) -> Result<PathBuf, SessionError> {
    if let Some(dir) = dir {
        return Ok(dir.to_path_buf());
    }
    toolhost_session::state_dir().ok_or_else(|| SessionError::Io {
        context: "cannot locate the state directory".to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "neither XDG_STATE_HOME nor HOME is set",
        ),
    })
}

/// Opens (or creates) session `id` of the workspace at `root`.
pub fn open_session(
    sessions_dir: &Path,
    root: &Path,
    id: &str,
) -> Result<OpenedSession, SessionError> {
    let (log, report) = SessionLog::open(sessions_dir, root, id, true)?;
    let log = Arc::new(log);
    let ledger = Arc::new(Ledger::with_observer(log.observer()));
    // Restoring must not re-append what the log already holds, so it bypasses the observer.
    ledger.restore(report.observed.iter().map(|(p, v)| (p.clone(), v.clone())));
    let blobs = log.blobs().clone();
    // The blob folder is a read-only workspace root, so it must exist before the first spill.
    {
        use std::os::unix::fs::DirBuilderExt;
        let dir = blobs.blob_dir();
        if !dir.is_dir() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(
                |source| SessionError::Io {
                    context: format!("cannot create {}", dir.display()),
                    source,
                },
            )?;
        }
    }
    Ok(OpenedSession { log, report, ledger, blobs, sessions_dir: sessions_dir.to_path_buf() })
}

/// The `--session` value that continues the newest session.
pub const LAST_SESSION: &str = "last";

/// Opens session `which` of the workspace: an id (created when new), [`LAST_SESSION`] (the newest
/// session no running toolhost holds, or a new one when there is none), or a new session.
pub fn open_named(
    sessions_dir: &Path,
    root: &Path,
    which: Option<&str>,
) -> Result<(String, OpenedSession), SessionError> {
    match which {
        Some(LAST_SESSION) => {
            for row in list(sessions_dir, root, false).sessions {
                match open_session(sessions_dir, root, &row.id) {
                    Ok(opened) => return Ok((row.id, opened)),
                    Err(SessionError::Locked(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            let id = toolhost_session::new_session_id();
            let opened = open_session(sessions_dir, root, &id)?;
            Ok((id, opened))
        }
        Some(id) => Ok((id.to_owned(), open_session(sessions_dir, root, id)?)),
        None => {
            let id = toolhost_session::new_session_id();
            let opened = open_session(sessions_dir, root, &id)?;
            Ok((id, opened))
        }
    }
}

/// The workspace key of a root (docs/design.md §6), from its canonical path when it resolves.
pub fn workspace_key_of(root: &Path) -> String {
    toolhost_session::workspace_key(&root.canonicalize().unwrap_or_else(|_| root.to_path_buf()))
}

/// The sessions of the workspace at `root` (of every workspace with `all`), newest first.
pub fn list(sessions_dir: &Path, root: &Path, all: bool) -> ListSessionsResult {
    let key = workspace_key_of(root);
    let rows = toolhost_session::list_sessions(sessions_dir, if all { None } else { Some(&key) });
    ListSessionsResult {
        sessions: rows
            .into_iter()
            .map(|r| SessionInfo { id: r.id, cwd: r.cwd, created_at: r.created_at, calls: r.calls })
            .collect(),
        // Worktree sessions need git to describe: `worktree::infos` adds them where wanted.
        worktrees: Vec::new(),
    }
}

/// The own agent's conversation (`agent/*` records) of a session, each placed after the card of
/// the call that precedes it in the log.
fn conversation_of(
    view: toolhost_session::SessionView,
) -> Vec<toolhost_protocol::lsp_ext::ConversationRecord> {
    let mut calls = view.calls.iter().peekable();
    let mut after_call = None;
    let mut records = Vec::with_capacity(view.conversation.len());
    for (seq, kind, data) in view.conversation {
        while let Some(call) = calls.next_if(|c| c.seq < seq) {
            after_call = Some(call.call_id.clone());
        }
        records.push(toolhost_protocol::lsp_ext::ConversationRecord {
            seq,
            kind,
            data,
            after_call: after_call.clone(),
        });
    }
    records
}

/// The cards of the session logged at `log`, rebuilt from the log alone; the registry tells
/// which calls were rendered by another renderer version than today's.
pub fn replay(registry: &Registry, log: &Path) -> Result<Vec<ReplayedCall>, SessionError> {
    replay_with_conversation(registry, log).map(|(cards, _)| cards)
}

/// What [`replay_salvaging`] rebuilt from a log that may be damaged.
#[derive(Debug)]
pub struct SalvagedReplay {
    pub cards: Vec<ReplayedCall>,
    pub conversation: Vec<toolhost_protocol::lsp_ext::ConversationRecord>,
    /// The damaged stretches that were stepped over (empty for a sound log).
    pub skipped: Vec<SkippedLines>,
}

/// [`replay_with_conversation`] of a log that may be damaged: every record that can be read is
/// replayed and every stretch that cannot is listed (see [`damage_notice`]).
pub fn replay_salvaging(registry: &Registry, log: &Path) -> Result<SalvagedReplay, SessionError> {
    let view = toolhost_session::read_session_salvaging(log)?;
    let cards = toolhost_session::replay_cards(&view, &view.header.cwd, |tool| {
        registry.contains(tool).then(|| registry.renderer_version(tool))
    });
    let skipped = view.skipped.clone();
    Ok(SalvagedReplay { cards, conversation: conversation_of(view), skipped })
}

/// One sentence saying what a replay of session `id` skipped and what to run, or `None` when it
/// skipped nothing.
pub fn damage_notice(id: &str, skipped: &[SkippedLines]) -> Option<String> {
    let first = skipped.first()?;
    let lines: usize = skipped.iter().map(|s| s.lines).sum();
    let bytes: u64 = skipped.iter().map(|s| s.bytes).sum();
    let stretches = skipped
        .iter()
        .map(|s| match s.lines {
            1 => format!("line {}", s.line),
            n => format!("lines {}-{}", s.line, s.line + n - 1),
        })
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "the log of session {id} is damaged: {lines} line(s) ({bytes} bytes; {stretches}) could not \
         be read and were skipped, so calls recorded there are missing or incomplete (first: {}). \
         Run `toolhost sessions repair {id}` to keep the readable records, move the damaged lines \
         aside and continue the session",
        first.reason
    ))
}

/// [`replay`], and the agent's conversation placed between the cards.
pub fn replay_with_conversation(
    registry: &Registry,
    log: &Path,
) -> Result<(Vec<ReplayedCall>, Vec<toolhost_protocol::lsp_ext::ConversationRecord>), SessionError>
{
    let view = toolhost_session::read_session(log)?;
    let cards = toolhost_session::replay_cards(&view, &view.header.cwd, |tool| {
        registry.contains(tool).then(|| registry.renderer_version(tool))
    });
    Ok((cards, conversation_of(view)))
}

/// `[session]` as one source gives it: `dir`, where sessions live; `durability`, what a
/// read-only call's record promises; `id`, the session an editor asks for in its
/// `initializationOptions` (ignored in files).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSection {
    dir: Option<PathBuf>,
    durability: Option<Durability>,
    pub(crate) id: Option<String>,
}

/// What `[session]` configures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionSettings {
    /// Where sessions live (default: the state directory).
    pub dir: Option<PathBuf>,
    /// When a read-only call's `tool/result` is synced (a mutation's always is, before its
    /// answer).
    pub durability: Durability,
}

impl toolhost_contract::config::Section for SessionSection {
    type Settings = SessionSettings;

    fn apply(
        self,
        settings: &mut SessionSettings,
        _layer: &mut toolhost_contract::config::Layer<'_>,
    ) {
        if let Some(configured) = self.dir {
            settings.dir = Some(configured);
        }
        if let Some(durability) = self.durability {
            settings.durability = durability;
        }
    }

    /// `dir` would send the session log — every call's arguments and the bytes of every change
    /// — wherever the workspace says, so it is dropped. `durability` may only be made stricter
    /// (`every-call` over `batched`). `id` only picks a session of this workspace's own folder
    /// (a validated id) and stays.
    fn restrict_untrusted(&mut self, applied: &SessionSettings) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        dropped.always("session.dir", &mut self.dir);
        dropped.unless("session.durability", &mut self.durability, |d| {
            d.at_least_as_strict_as(applied.durability)
        });
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::config::Section;

    #[test]
    fn an_untrusted_source_cannot_move_the_session_log() {
        let mut section = SessionSection {
            dir: Some("/tmp/elsewhere".into()),
            durability: None,
            id: Some("abc".into()),
        };
        assert_eq!(section.restrict_untrusted(&SessionSettings::default()), ["session.dir"]);
        assert_eq!(section.dir, None);
        assert_eq!(section.id.as_deref(), Some("abc"));
    }

    #[test]
    fn an_untrusted_source_may_only_make_durability_stricter() {
        let strict = SessionSettings { dir: None, durability: Durability::EveryCall };
        let mut looser =
            SessionSection { durability: Some(Durability::Batched), ..Default::default() };
        assert_eq!(looser.restrict_untrusted(&strict), ["session.durability"]);
        assert_eq!(looser.durability, None);
        let mut stricter =
            SessionSection { durability: Some(Durability::EveryCall), ..Default::default() };
        assert!(stricter.restrict_untrusted(&SessionSettings::default()).is_empty());
        assert_eq!(stricter.durability, Some(Durability::EveryCall));
    }
}
