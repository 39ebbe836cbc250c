//! `toolhost replay <session>`: a session's cards rebuilt from its log alone (by id, `last`, or
//! a path to a `session.jsonl`), with the own agent's prompts and answers between them. A damaged
//! log replays what can be read, with a notice on stderr of what was skipped.

use super::{Common, Failure, colored_card, load_config, open_host, sessions_dir, workspace_root};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use toolhost_host::session;
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::ConversationRecord;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A session id of this workspace, or a path to a session.jsonl.
    #[arg(value_name = "SESSION")]
    which: String,
    #[command(flatten)]
    common: Common,
    /// One JSON card per line.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<u8, Failure> {
    let root = workspace_root(&args.common)?;
    let config = load_config(&root)?;
    let which = args.which;
    let path = if which.ends_with(".jsonl") || which.contains('/') {
        PathBuf::from(&which)
    } else {
        let dir = sessions_dir(&config, &args.common)?;
        let key = session::workspace_key_of(&root);
        let which = if which == session::LAST_SESSION {
            let newest = session::list(&dir, &root, false).sessions.into_iter().next();
            newest.map(|s| s.id).ok_or_else(|| Failure::usage("this workspace has no sessions"))?
        } else {
            which
        };
        toolhost_session::session_dir(&dir, &key, &which)
            .map_err(|e| Failure::usage(e.to_string()))?
            .join(toolhost_session::LOG_FILE_NAME)
    };
    let host = open_host(&config, &root, None)?;
    let replayed = session::replay_salvaging(host.registry(), &path)
        .map_err(|e| Failure::env(e.to_string()))?;
    let (calls, conversation) = (replayed.cards, replayed.conversation);
    // On stderr, so `--json` output stays one card per line; before the cards, so it is seen.
    let id = path.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned());
    if let Some(notice) = session::damage_notice(id.as_deref().unwrap_or("?"), &replayed.skipped) {
        eprintln!("toolhost: notice: {notice}");
    }
    let mut stdout = std::io::stdout().lock();
    let color = stdout.is_terminal();
    // The agent's records go between the cards, after the call that precedes each.
    let mut items: Vec<Result<&ConversationRecord, &Card>> = Vec::new();
    let mut records = conversation.iter().peekable();
    items.extend(std::iter::from_fn(|| records.next_if(|r| r.after_call.is_none())).map(Ok));
    for call in &calls {
        items.push(Err(&call.card));
        let after = Some(call.card.call_id.as_str());
        items.extend(
            std::iter::from_fn(|| records.next_if(|r| r.after_call.as_deref() == after)).map(Ok),
        );
    }
    let mut first = true;
    for item in items {
        let text = match (item, args.json) {
            (Ok(record), true) => serde_json::to_string(record).ok(),
            (Err(card), true) => serde_json::to_string(card).ok(),
            (Ok(record), false) => toolhost_host::agent::record_text(record),
            (Err(card), false) if color => Some(colored_card(card)),
            (Err(card), false) => Some(card.rendered.clone()),
        };
        let Some(text) = text else { continue };
        if !args.json && !first {
            let _ = writeln!(stdout);
        }
        first = false;
        let _ = writeln!(stdout, "{text}");
    }
    Ok(0)
}
