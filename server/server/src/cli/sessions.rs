//! `toolhost sessions`: this workspace's sessions (every workspace's with `--all`), newest
//! first; `--prune` deletes old ones, `--delete <id>` one.

use super::{Common, Failure, load_config, sessions_dir, workspace_root};
use toolhost_host::session;

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
}

pub fn run(args: Args) -> Result<u8, Failure> {
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
    let list = session::list(&dir, &root, args.all);
    if args.json {
        let text = serde_json::to_string(&list).map_err(|e| Failure::env(e.to_string()))?;
        println!("{text}");
    } else if list.sessions.is_empty() {
        println!("no sessions");
    } else {
        for row in list.sessions {
            println!("{}  {} call(s)  {}", row.id, row.calls, row.cwd);
        }
    }
    Ok(0)
}
