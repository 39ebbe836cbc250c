//! Sessions in worktrees (docs/agent.md, "Sessions in worktrees"): several agents working at once,
//! each in its own checkout, their changes brought back hunk by hunk.
//!
//! In a git repository a worktree session starts from the workspace exactly as it is — uncommitted
//! and untracked (not ignored) files included: they are committed, through an index of our own
//! so the person's index and branch stay untouched, into a fork commit the new branch
//! `toolhost/<name>` starts from. That commit is the common ancestor every later merge is made
//! against. Without git the workspace is copied (reflinked where the filesystem can), and a second
//! copy keeps the ancestor.
//!
//! Each worktree session is described by `<name>.json` beside its checkout under
//! `<state>/toolhost/worktrees/<workspace key>/`; its toolhost session lives with the others, keyed
//! by the checkout's path. Discarding removes checkout, branch, description and session log, and
//! is refused while a toolhost process holds the session.

mod changes;
mod git;
mod info;

pub use changes::{changes, line_counts};
use git::{git, line};
pub use info::{info, infos, log_path};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
pub use toolhost_tools_fs::IncomingFile;

/// The branch prefix of every worktree session.
pub const BRANCH_PREFIX: &str = "toolhost/";

/// Why a worktree session could not be made, found or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("{command} failed: {why}")]
    Git { command: String, why: String },
    #[error("{0}")]
    Io(String),
    #[error("a worktree session named \"{0}\" exists already")]
    NameTaken(String),
    #[error(
        "\"{0}\" is not a valid worktree session name (letters, digits, '-', '_' and '.', at most 64)"
    )]
    BadName(String),
    #[error("no worktree session \"{0}\" in this workspace (see `toolhost sessions`)")]
    Unknown(String),
    #[error("worktree session {0} is in use by a running toolhost; stop it first")]
    InUse(String),
    #[error("{0}")]
    Session(#[from] toolhost_session::SessionError),
}

impl WorktreeError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            WorktreeError::Git { .. } => "WORKTREE_GIT_FAILED",
            WorktreeError::Io(_) => "WORKTREE_IO",
            WorktreeError::NameTaken(_) => "WORKTREE_NAME_TAKEN",
            WorktreeError::BadName(_) => "WORKTREE_BAD_NAME",
            WorktreeError::Unknown(_) => "WORKTREE_UNKNOWN",
            WorktreeError::InUse(_) => "WORKTREE_IN_USE",
            WorktreeError::Session(e) => e.code(),
        }
    }
}

fn io(what: impl std::fmt::Display, err: std::io::Error) -> WorktreeError {
    WorktreeError::Io(format!("{what}: {err}"))
}

/// How the checkout was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckoutKind {
    /// A git worktree on its own branch.
    Git,
    /// A copy of the folder (no git repository here).
    Copy,
}

/// One worktree session, as `<name>.json` describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeSession {
    pub name: String,
    /// The toolhost session working in it.
    pub session_id: String,
    pub kind: CheckoutKind,
    /// The workspace it was made from.
    pub workspace: PathBuf,
    /// The checkout: the worktree's top, or the copy.
    pub checkout: PathBuf,
    /// Where the session works: the workspace's place inside the checkout.
    pub root: PathBuf,
    /// The workspace's path inside its repository (`""` at the top).
    pub prefix: String,
    /// The branch (git).
    pub branch: Option<String>,
    /// The fork commit (git): the workspace as it was, uncommitted changes included.
    pub base: Option<String>,
    /// Milliseconds since the epoch.
    pub created_ms: u64,
}

/// Where a workspace's worktree sessions live: beside the sessions folder.
pub fn worktrees_dir(sessions_dir: &Path, workspace: &Path) -> PathBuf {
    let parent = sessions_dir.parent().unwrap_or(sessions_dir);
    parent.join("worktrees").join(crate::session::workspace_key_of(workspace))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A fresh name: `wt-<6 hex>`.
fn fresh_name() -> String {
    format!("wt-{:06x}", rand::random::<u32>() & 0xff_ffff)
}

fn description_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// Writes the description atomically (temp file, fsync, rename).
fn save(dir: &Path, session: &WorktreeSession) -> Result<(), WorktreeError> {
    let path = description_path(dir, &session.name);
    let temp = dir.join(format!(".{}.json.tmp", session.name));
    let text = serde_json::to_vec_pretty(session).map_err(|e| WorktreeError::Io(e.to_string()))?;
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&temp, &path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|e| io(format!("cannot write {}", path.display()), e))
}

/// The workspace's worktree sessions, newest first.
pub fn list(sessions_dir: &Path, workspace: &Path) -> Vec<WorktreeSession> {
    let dir = worktrees_dir(sessions_dir, workspace);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut out: Vec<WorktreeSession> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect();
    out.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The worktree session named `which` (its name or its session id).
pub fn find(sessions_dir: &Path, workspace: &Path, which: &str) -> Option<WorktreeSession> {
    list(sessions_dir, workspace).into_iter().find(|s| s.name == which || s.session_id == which)
}

/// The worktree session whose folder `root` is: a toolhost started there (an editor window on the
/// worktree, an agent's `toolhost mcp` run in it) continues that session by default.
pub fn of_root(sessions_dir: &Path, root: &Path) -> Option<WorktreeSession> {
    let root = root.canonicalize().ok()?;
    let all = sessions_dir.parent().unwrap_or(sessions_dir).join("worktrees");
    for key in std::fs::read_dir(all).ok()?.flatten() {
        let Ok(entries) = std::fs::read_dir(key.path()) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let Ok(bytes) = std::fs::read(entry.path()) else { continue };
            let Ok(session) = serde_json::from_slice::<WorktreeSession>(&bytes) else { continue };
            if session.root.canonicalize().is_ok_and(|r| r == root) {
                return Some(session);
            }
        }
    }
    None
}

/// The top of the git repository `dir` is in, or `None` outside one (or without git).
async fn repository_top(dir: &Path) -> Option<PathBuf> {
    let out = git(dir, &["rev-parse", "--show-toplevel"], &[]).await.ok()?;
    Some(PathBuf::from(line(&out)))
}

/// A tree of `checkout`'s files as they are now (untracked, not ignored files included), made
/// through a temporary index so the checkout's own index is untouched. `start`: the tree the index
/// starts from (so unchanged files cost nothing to hash).
async fn snapshot_tree(checkout: &Path, start: Option<&str>) -> Result<String, WorktreeError> {
    let scratch = tempfile::tempdir().map_err(|e| io("cannot make a temporary folder", e))?;
    let index = scratch.path().join("index");
    let env = [("GIT_INDEX_FILE", index.as_path())];
    if let Some(start) = start {
        git(checkout, &["read-tree", start], &env).await?;
    }
    git(checkout, &["add", "-A", "--", "."], &env).await?;
    Ok(line(&git(checkout, &["write-tree"], &env).await?))
}

/// A commit of `tree` (the fork commit a worktree session's branch starts from).
async fn commit(
    checkout: &Path,
    tree: &str,
    parent: Option<&str>,
    message: &str,
) -> Result<String, WorktreeError> {
    let mut args = vec!["commit-tree", tree, "-m", message];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    let identity = [
        ("GIT_AUTHOR_NAME", Path::new("toolhost")),
        ("GIT_AUTHOR_EMAIL", Path::new("toolhost@localhost")),
        ("GIT_COMMITTER_NAME", Path::new("toolhost")),
        ("GIT_COMMITTER_EMAIL", Path::new("toolhost@localhost")),
    ];
    Ok(line(&git(checkout, &args, &identity).await?))
}

/// Makes a worktree session of the workspace at `workspace`, named `name` (or a fresh name), and
/// opens its toolhost session (closed again: whoever works in it opens it by id).
pub async fn create(
    sessions_dir: &Path,
    workspace: &Path,
    name: Option<&str>,
) -> Result<WorktreeSession, WorktreeError> {
    let workspace =
        workspace.canonicalize().map_err(|e| io(format!("{}", workspace.display()), e))?;
    let name = name.map_or_else(fresh_name, str::to_owned);
    if !valid_name(&name) {
        return Err(WorktreeError::BadName(name));
    }
    let dir = worktrees_dir(sessions_dir, &workspace);
    std::fs::create_dir_all(&dir).map_err(|e| io(format!("cannot create {}", dir.display()), e))?;
    let checkout = dir.join(&name);
    if description_path(&dir, &name).exists() || checkout.exists() {
        return Err(WorktreeError::NameTaken(name));
    }
    let mut session = match repository_top(&workspace).await {
        Some(top) => create_git(&top, &workspace, &name, &checkout).await?,
        None => create_copy(&workspace, &name, &checkout, &dir).await?,
    };
    let (id, opened) = crate::session::open_named(sessions_dir, &session.root, None)?;
    drop(opened);
    session.session_id = id;
    if let Err(err) = save(&dir, &session) {
        let _ = remove_checkout(&session).await;
        return Err(err);
    }
    Ok(session)
}

async fn create_git(
    top: &Path,
    workspace: &Path,
    name: &str,
    checkout: &Path,
) -> Result<WorktreeSession, WorktreeError> {
    let head = git(top, &["rev-parse", "--verify", "-q", "HEAD^{commit}"], &[]).await.ok();
    let head = head.map(|out| line(&out)).filter(|h| !h.is_empty());
    let message = format!("toolhost: the workspace as worktree session {name} started from it");
    let tree = snapshot_tree(top, head.as_deref()).await?;
    let base = commit(top, &tree, head.as_deref(), &message).await?;
    let branch = format!("{BRANCH_PREFIX}{name}");
    let path = checkout.to_string_lossy().into_owned();
    git(top, &["worktree", "add", "--quiet", "-b", &branch, &path, &base], &[]).await?;
    let prefix = workspace
        .strip_prefix(top.canonicalize().unwrap_or_else(|_| top.to_path_buf()))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(WorktreeSession {
        name: name.to_owned(),
        session_id: String::new(),
        kind: CheckoutKind::Git,
        workspace: workspace.to_path_buf(),
        checkout: checkout.to_path_buf(),
        root: if prefix.is_empty() { checkout.to_path_buf() } else { checkout.join(&prefix) },
        prefix,
        branch: Some(branch),
        base: Some(base),
        created_ms: now_ms(),
    })
}

/// The ancestor copy of a copied workspace.
fn base_copy(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.base"))
}

async fn copy_tree(from: &Path, to: &Path) -> Result<(), WorktreeError> {
    let mut command = tokio::process::Command::new("cp");
    command.arg("-a").arg("--reflink=auto").arg(from).arg(to);
    command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    let failed = |why: String| WorktreeError::Io(format!("cannot copy {}: {why}", from.display()));
    let group = toolhost_process::spawn(command, toolhost_process::SpawnOptions::default())
        .map_err(|e| failed(e.to_string()))?;
    match group.wait().await {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(failed(status.to_string())),
        None => Err(failed("cp was lost".to_owned())),
    }
}

async fn create_copy(
    workspace: &Path,
    name: &str,
    checkout: &Path,
    dir: &Path,
) -> Result<WorktreeSession, WorktreeError> {
    copy_tree(workspace, checkout).await?;
    if let Err(err) = copy_tree(workspace, &base_copy(dir, name)).await {
        let _ = std::fs::remove_dir_all(checkout);
        return Err(err);
    }
    Ok(WorktreeSession {
        name: name.to_owned(),
        session_id: String::new(),
        kind: CheckoutKind::Copy,
        workspace: workspace.to_path_buf(),
        checkout: checkout.to_path_buf(),
        root: checkout.to_path_buf(),
        prefix: String::new(),
        branch: None,
        base: None,
        created_ms: now_ms(),
    })
}

/// Removes the checkout (and branch, or the ancestor copy).
async fn remove_checkout(session: &WorktreeSession) -> Result<(), WorktreeError> {
    match session.kind {
        CheckoutKind::Git => {
            let path = session.checkout.to_string_lossy().into_owned();
            let top = &session.workspace;
            if session.checkout.exists() {
                git(top, &["worktree", "remove", "--force", "--force", &path], &[]).await?;
            }
            git(top, &["worktree", "prune"], &[]).await?;
            if let Some(branch) = &session.branch {
                let listed = git(top, &["branch", "--list", branch], &[]).await?;
                if !listed.is_empty() {
                    git(top, &["branch", "-D", branch], &[]).await?;
                }
            }
            Ok(())
        }
        CheckoutKind::Copy => {
            let dir = session.checkout.parent().unwrap_or(&session.checkout).to_path_buf();
            for path in [session.checkout.clone(), base_copy(&dir, &session.name)] {
                match std::fs::remove_dir_all(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(format!("cannot remove {}", path.display()), e)),
                }
            }
            Ok(())
        }
    }
}

/// Discards a worktree session: its session log (refused while a toolhost holds it), checkout,
/// branch and description.
pub async fn discard(sessions_dir: &Path, session: &WorktreeSession) -> Result<(), WorktreeError> {
    let key = crate::session::workspace_key_of(&session.root);
    match toolhost_session::delete_session(sessions_dir, &key, &session.session_id) {
        Ok(()) | Err(toolhost_session::SessionError::NotFound(_)) => {}
        Err(toolhost_session::SessionError::Locked(_)) => {
            return Err(WorktreeError::InUse(session.name.clone()));
        }
        Err(e) => return Err(e.into()),
    }
    remove_checkout(session).await?;
    let dir = worktrees_dir(sessions_dir, &session.workspace);
    match std::fs::remove_file(description_path(&dir, &session.name)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("cannot remove the description", e)),
    }
}

/// The arguments of the `apply_changes` call that brings the session's changes into its
/// workspace (`review`: hunk by hunk); `None` when it changed nothing.
pub async fn apply_arguments(
    session: &WorktreeSession,
    review: bool,
) -> Result<Option<serde_json::Value>, WorktreeError> {
    let files = changes(session).await?;
    if files.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::json!({
        "from": format!("worktree session {}", session.name),
        "files": files,
        "review": review,
    })))
}

/// The internal tool that applies a worktree session's changes.
pub const APPLY_TOOL: &str = toolhost_tools_fs::APPLY_CHANGES;

/// Whether a toolhost process holds the session now.
pub fn in_use(sessions_dir: &Path, session: &WorktreeSession) -> bool {
    let Some(log) = log_path(sessions_dir, session) else { return false };
    let Ok(file) = std::fs::File::open(log) else { return false };
    match file.try_lock_shared() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain() {
        assert!(valid_name("fix-1"));
        assert!(valid_name("a.b_c"));
        assert!(!valid_name(""));
        assert!(!valid_name("../x"));
        assert!(!valid_name(".hidden"));
        assert!(!valid_name("a/b"));
        assert!(valid_name(&fresh_name()));
    }
}
