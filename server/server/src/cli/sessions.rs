//! `toolhost sessions`: this workspace's sessions (every workspace's with `--all`), newest
//! first, then its worktree sessions (branch, state, changed files, agent); `--prune` deletes old ones, `--delete <id>` one; `toolhost sessions repair <id>`
//! rewrites a damaged log without its damage (moved aside beside it, never deleted).

use super::{Common, Failure, load_config, sessions_dir, workspace_root};
use toolhost_host::session;
use toolhost_host::worktree;
use toolhost_protocol::lsp_ext::WorktreeState;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Every workspace's sessions.
    #[arg(long)]
    all: bool,
    #[arg(long)]
    json: bool,
    /// Delete sessions older than --older-than (default 30d).
    #[arg(long)]
    prune: bool,
    /// Age for --prune, e.g. 30d, 12h.
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    older_than: String,
    /// Delete one session of this workspace.
    #[arg(long, value_name = "ID")]
    delete: Option<String>,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Repair a damaged session log of this workspace: keep every readable record, move the
    /// damaged lines to session.damaged beside the log, and let the session continue.
    Repair {
        /// The session id.
        #[arg(value_name = "ID")]
        id: String,
        #[command(flatten)]
        common: Common,
    },
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    if let Some(Action::Repair { id, common }) = args.action {
        // Options may come before `repair` or after it.
        let common = Common {
            workspace: common.workspace.or(args.common.workspace),
            session: common.session.or(args.common.session),
            session_dir: common.session_dir.or(args.common.session_dir),
        };
        return repair(&common, &id);
    }
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let dir = sessions_dir(&config, &args.common)?;
    if args.prune {
        let age = toolhost_session::parse_duration(&args.older_than)
            .map_err(|e| Failure::usage(e.to_string()))?;
        let n =
            toolhost_session::prune_sessions(&dir, age).map_err(|e| Failure::env(e.to_string()))?;
        println!("pruned {n} session(s) older than {}", args.older_than);
        return Ok(0);
    }
    if let Some(id) = args.delete {
        let key = session::workspace_key_of(&root);
        toolhost_session::delete_session(&dir, &key, &id)
            .map_err(|e| Failure::env(e.to_string()))?;
        println!("deleted session {id}");
        return Ok(0);
    }
    let mut list = session::list(&dir, &root, args.all);
    list.worktrees = worktree::infos(&dir, &root).await;
    if args.json {
        let text = serde_json::to_string(&list).map_err(|e| Failure::env(e.to_string()))?;
        println!("{text}");
        return Ok(0);
    }
    if list.sessions.is_empty() {
        println!("no sessions");
    }
    for row in &list.sessions {
        println!("{}  {} call(s)  {}", row.id, row.calls, row.cwd);
    }
    if !list.worktrees.is_empty() {
        println!("\nworktree sessions:");
    }
    for row in &list.worktrees {
        let branch = row.branch.as_deref().unwrap_or("(a copy)");
        let changed = match row.changed_files {
            Some(n) => format!("{n} changed file(s)"),
            None => "changes unknown".to_owned(),
        };
        let agent = row.agent.as_deref().unwrap_or("no agent yet");
        let state = match row.state {
            WorktreeState::InUse => "in use",
            WorktreeState::Idle => "idle",
        };
        println!(
            "{}  session {}  {branch}  {state}  {changed}  {agent}  {}",
            row.name, row.session_id, row.root
        );
    }
    Ok(0)
}

/// `toolhost sessions repair <id>`.
fn repair(common: &Common, id: &str) -> Result<u8, Failure> {
    let root = workspace_root(common)?;
    let config = load_config(&root)?;
    let dir = sessions_dir(&config, common)?;
    let report = toolhost_session::repair_session(&dir, &root, id).map_err(|e| match e {
        toolhost_session::SessionError::InvalidSessionId(_) => Failure::usage(e.to_string()),
        toolhost_session::SessionError::Locked(_) => Failure::env(format!(
            "{e}: close the toolhost that has it open (an editor, `toolhost mcp`), then repair it"
        )),
        _ => Failure::env(e.to_string()),
    })?;
    if report.moved.is_empty() {
        println!("session {id} has no damaged records; nothing was changed");
        return Ok(0);
    }
    let lines: usize = report.moved.iter().map(|s| s.lines).sum();
    let bytes: u64 = report.moved.iter().map(|s| s.bytes).sum();
    println!(
        "repaired session {id}: kept {} record(s); moved {lines} damaged line(s) ({bytes} bytes) to {}",
        report.kept,
        report.moved_to.display()
    );
    for stretch in &report.moved {
        let last = stretch.line + stretch.lines - 1;
        println!(
            "  lines {}-{last} (bytes {}..{}): {}",
            stretch.line,
            stretch.offset,
            stretch.offset + stretch.bytes,
            stretch.reason
        );
    }
    if report.renumbered > 0 {
        println!("  {} later record(s) renumbered to close the gap", report.renumbered);
    }
    if report.header_rewritten {
        println!("  the unreadable header was written anew for {}", root.display());
    }
    println!("continue it with --session {id}");
    Ok(0)
}
