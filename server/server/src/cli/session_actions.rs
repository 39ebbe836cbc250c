//! `toolhost session new [--worktree [NAME]]`, `toolhost session apply <which> [--all]` and
//! `toolhost session discard <which> [--yes]`: sessions that work in a checkout of their own, and
//! bringing their changes back (docs/agent.md, "Sessions in worktrees").
//!
//! Applying is one `apply_changes` call on the workspace's session — in the editor's toolhost when
//! one serves the workspace (its review shows the hunks), else here (the terminal asks hunk by
//! hunk); `--all` takes every hunk that merges cleanly without asking. Conflicts are listed, never
//! written.

use super::revert::{InSession, run_in_session};
use super::{Common, Failure, load_config, sessions_dir};
use serde_json::json;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use toolhost_host::worktree::{self, WorktreeSession};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Start a session. With --worktree it works in a git worktree of its own (on a new branch
    /// `toolhost/<name>`, from the workspace as it is now, uncommitted files included), or in a
    /// copy of the folder outside git; run an agent in it with `--session <id>`.
    New {
        /// Make the session's own worktree.
        #[arg(long)]
        worktree: bool,
        /// The worktree session's name (default: a fresh one).
        #[arg(value_name = "NAME")]
        name: Option<String>,
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        json: bool,
    },
    /// Bring a worktree session's changes into the workspace: hunk by hunk (the editor's review,
    /// or the terminal), or with --all every hunk that merges cleanly. Conflicts with the
    /// workspace's own changes since the session started are listed and left alone; what is
    /// not applied stays in the worktree. One call, revertible as one.
    Apply {
        /// The worktree session's name or session id.
        #[arg(value_name = "SESSION")]
        which: String,
        /// Take every hunk that merges cleanly, without asking.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        common: Common,
        /// Print `{sessionId, callId, result, card}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a worktree session: its worktree, branch and session log (refused while a
    /// toolhost works in it).
    Discard {
        /// The worktree session's name or session id.
        #[arg(value_name = "SESSION")]
        which: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        common: Common,
    },
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    match args.action {
        Action::New { worktree, name, common, json } => new(&common, worktree, name, json).await,
        Action::Apply { which, all, common, json } => apply(&common, &which, all, json).await,
        Action::Discard { which, yes, common } => discard(&common, &which, yes).await,
    }
}

/// The workspace itself (never a worktree session's root: these commands name the session).
fn workspace(common: &Common) -> Result<PathBuf, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::env(format!("cannot read the current directory: {e}")))?;
    let root = common.workspace.as_ref().map_or(cwd.clone(), |dir| cwd.join(dir));
    if !root.is_dir() {
        return Err(Failure::usage(format!("workspace {} is not a directory", root.display())));
    }
    Ok(root)
}

fn failure(err: worktree::WorktreeError) -> Failure {
    match err {
        worktree::WorktreeError::BadName(_)
        | worktree::WorktreeError::NameTaken(_)
        | worktree::WorktreeError::Unknown(_) => Failure::usage(err.to_string()),
        _ => Failure::env(err.to_string()),
    }
}

/// The worktree session `which` of the workspace at `root`.
pub(super) fn find(sessions: &Path, root: &Path, which: &str) -> Result<WorktreeSession, Failure> {
    worktree::find(sessions, root, which)
        .ok_or_else(|| failure(worktree::WorktreeError::Unknown(which.to_owned())))
}

async fn new(
    common: &Common,
    in_worktree: bool,
    name: Option<String>,
    json: bool,
) -> Result<u8, Failure> {
    let root = workspace(common)?;
    let config = load_config(&root)?;
    let sessions = sessions_dir(&config, common)?;
    if !in_worktree {
        if name.is_some() {
            return Err(Failure::usage("a name is for a worktree session: add --worktree"));
        }
        let (id, opened) = toolhost_host::session::open_named(&sessions, &root, None)
            .map_err(|e| Failure::env(e.to_string()))?;
        drop(opened);
        if json {
            println!("{}", json!({ "sessionId": id, "root": root }));
        } else {
            println!("session {id}");
        }
        return Ok(0);
    }
    let made = worktree::create(&sessions, &root, name.as_deref()).await.map_err(failure)?;
    if json {
        println!("{}", serde_json::to_string(&made).map_err(|e| Failure::env(e.to_string()))?);
        return Ok(0);
    }
    println!("session {} in worktree session {}", made.session_id, made.name);
    println!("  folder: {}", made.root.display());
    match &made.branch {
        Some(branch) => println!("  branch: {branch} (from the workspace as it is now)"),
        None => println!("  no git repository here: the folder was copied"),
    }
    println!(
        "run an agent in it: toolhost agent --session {0} \"…\"  or  toolhost mcp --session {0}",
        made.session_id
    );
    println!("bring its changes back: toolhost session apply {}", made.name);
    Ok(0)
}

async fn apply(common: &Common, which: &str, all: bool, json: bool) -> Result<u8, Failure> {
    let root = workspace(common)?;
    let config = load_config(&root)?;
    let sessions = sessions_dir(&config, common)?;
    let session = find(&sessions, &root, which)?;
    let Some(arguments) = worktree::apply_arguments(&session, !all).await.map_err(failure)? else {
        println!("worktree session {} changed nothing", session.name);
        return Ok(0);
    };
    // The call is the workspace's: in the editor's toolhost, or the workspace's newest session.
    let workspace_common =
        Common { workspace: Some(root), session: None, session_dir: common.session_dir.clone() };
    let request =
        InSession { which: None, tool: worktree::APPLY_TOOL, caller: "toolhost session apply" };
    run_in_session(&workspace_common, request, arguments, json).await
}

/// Asks "yes or no" on the terminal; `false` without one.
pub(super) fn confirm(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return false;
    }
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "{question} [y/N] ");
    let _ = stderr.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

async fn discard(common: &Common, which: &str, yes: bool) -> Result<u8, Failure> {
    let root = workspace(common)?;
    let config = load_config(&root)?;
    let sessions = sessions_dir(&config, common)?;
    let session = find(&sessions, &root, which)?;
    let what = match &session.branch {
        Some(branch) => format!("its worktree {} and branch {branch}", session.checkout.display()),
        None => format!("its copy {}", session.checkout.display()),
    };
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(Failure::usage(format!(
                "discarding {} removes {what}: add --yes to confirm",
                session.name
            )));
        }
        if !confirm(&format!("Discard worktree session {} ({what}, and its log)?", session.name)) {
            println!("kept worktree session {}", session.name);
            return Ok(1);
        }
    }
    worktree::discard(&sessions, &session).await.map_err(failure)?;
    println!("discarded worktree session {} ({what})", session.name);
    Ok(0)
}
