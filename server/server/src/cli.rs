//! The `toolhost` command line: the subcommands (one module each), the flags they share, and
//! the process around them — the subreaper, the runtime, and the exit codes: 0 success; 1 the
//! tool result is a failure; 2 unusable flags or argument text that is not JSON; 3 environment
//! or internal error. No panic reaches the user: a panic becomes exit code 3 with a message.

mod agent;
mod best_of;
mod call;
mod checkpoint;
mod exec_server;
mod log;
mod mcp_servers;
mod replay;
mod revert;
mod sandbox;
mod servers;
mod session_actions;
mod sessions;
mod skills;
mod terminal_ask;
mod terminal_review;
mod tools;
mod trust;
mod world;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_host::Host;
use toolhost_host::config::Config;
use toolhost_host::session::{self, OpenedSession};
use toolhost_protocol::card::Card;

/// The agent tool runtime that lives in the editor.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one tool through the full pipeline and print its Native text.
    Call(call::Args),
    /// Run toolhost's own agent on a task: the model calls the tools here (cards on stderr, the
    /// answer on stdout) until it answers. Flags override `[agent]` in the configuration.
    Agent(agent::Args),
    /// Undo the file changes of a call of a session (or, with --since, of every call from it on,
    /// newest first, all or nothing). Runs in the editor's toolhost when it holds the session.
    Revert(revert::Args),
    /// Mark the session's current point as a named checkpoint, list its checkpoints (named ones
    /// and the start of each agent turn), or restore one: every file change after it undone as
    /// one call, itself revertible. Runs in the editor's toolhost when it holds the session.
    Checkpoint(checkpoint::Args),
    /// List the skills the `skill` tool can load here (workspace and user folders).
    Skills(skills::Args),
    /// List the tools with their schemas.
    Tools(tools::Args),
    /// Start the MCP servers configured here (`[mcp.servers.<name>]`), wait for each to answer
    /// or fail, and show their state, protocol version, tools and errors; then stop them.
    #[command(name = "mcp-servers")]
    McpServers(mcp_servers::Args),
    /// List the sessions of this workspace (or of every workspace with --all) and its worktree
    /// sessions, or prune them.
    Sessions(sessions::Args),
    /// Start a session (with --worktree: in a worktree of its own), bring a worktree session's
    /// changes back hunk by hunk (`apply`), or remove one (`discard`).
    Session(session_actions::Args),
    /// Print the cards of a session (by id, or a path to its session.jsonl), rebuilt from the log.
    Replay(replay::Args),
    /// Run the LSP server over stdio (what editors start).
    Serve(servers::ServeArgs),
    /// Serve the tools over MCP on stdio (what agents start: `claude mcp add toolhost -- toolhost
    /// mcp`). Calls run in the editor's toolhost for this workspace when one is open, else here.
    Mcp(servers::McpArgs),
    /// Run toolhost's own agent as an Agent Client Protocol agent on stdio (what Zed, JetBrains
    /// or an ACP client in Neovim or Emacs starts). Each ACP session is a toolhost session.
    Acp(servers::AcpArgs),
    /// Trust this workspace: its toolhost.toml may then configure language-server commands.
    Trust(trust::Args),
    /// Serve a folder as an execution world over JSON-RPC on stdio (what a toolhost starts over
    /// ssh or in a container): files, search and processes, confined beneath `--root` here.
    #[command(name = "exec-server")]
    ExecServer(exec_server::Args),
    /// Reach the execution world `[world]` configures (ssh or a container): `check` that it
    /// answers, or `run -- <command>` there with its output streamed here.
    World(world::Args),
    /// Internal (`[shell] sandbox`): confine writes to the given folders with Landlock, then
    /// execute the command in this process. `--probe` prints what the kernel enforces.
    #[command(name = "sandbox-exec", hide = true)]
    SandboxExec(sandbox::Args),
}

/// The workspace and session flags most subcommands take.
#[derive(Debug, clap::Args)]
struct Common {
    /// The workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Continue (or create) this session instead of starting a new one; `last` continues this
    /// workspace's newest session that no running toolhost holds.
    #[arg(long, value_name = "ID|last")]
    session: Option<String>,
    /// Where session logs live (default: $XDG_STATE_HOME/toolhost/sessions).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
}

/// A failure outside the tool result, with its exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Failure { code: 2, message: message.into() }
    }
    fn env(message: impl Into<String>) -> Self {
        Failure { code: 3, message: message.into() }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return match err.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    if let Command::SandboxExec(args) = &cli.command {
        return sandbox::run(args);
    }
    // Descendants orphaned by a child's death (a language server's helper, a command's
    // background job) are re-parented here rather than to init, so they are reaped here too.
    if let Err(err) = toolhost_process::become_subreaper() {
        eprintln!("toolhost: warning: cannot become the reaper of its descendants: {err}");
    }
    // A panic anywhere below is reported as an internal error (exit 3), never a raw abort.
    let outcome = std::panic::catch_unwind(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::env(format!("cannot start the runtime: {e}")))?;
        let outcome = runtime.block_on(async {
            let outcome = run(cli).await;
            // Whatever subsystem started a child, it does not outlive the command.
            toolhost_process::terminate_all(std::time::Duration::from_millis(500)).await;
            outcome
        });
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
        outcome
    });
    // No child is left behind, not even as a zombie for an init that does not reap.
    toolhost_process::reap_all(std::time::Duration::from_millis(500));
    match outcome {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(failure)) => {
            eprintln!("toolhost: {}", failure.message);
            ExitCode::from(failure.code)
        }
        Err(_) => {
            eprintln!("toolhost: internal error (a panic); please report it");
            ExitCode::from(3)
        }
    }
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Call(args) => call::run(args).await,
        Command::Agent(args) => agent::run(args).await,
        Command::Revert(args) => revert::run(args).await,
        Command::Checkpoint(args) => checkpoint::run(args).await,
        Command::Skills(args) => skills::run(args),
        Command::Tools(args) => tools::run(args).await,
        Command::McpServers(args) => mcp_servers::run(args).await,
        Command::Sessions(args) => sessions::run(args).await,
        Command::Session(args) => session_actions::run(args).await,
        Command::Replay(args) => replay::run(args),
        Command::Serve(args) => servers::serve(args).await,
        Command::Mcp(args) => servers::mcp(args).await,
        Command::Acp(args) => servers::acp(args).await,
        Command::Trust(args) => trust::run(args),
        Command::ExecServer(args) => exec_server::run(args).await,
        Command::World(args) => world::run(args).await,
        // Handled in `main` before any runtime starts.
        Command::SandboxExec(_) => Ok(2),
    }
}

fn workspace_root(common: &Common) -> Result<PathBuf, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::env(format!("cannot read the current directory: {e}")))?;
    let root = match &common.workspace {
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    if !root.is_dir() {
        return Err(Failure::usage(format!("workspace {} is not a directory", root.display())));
    }
    // `--session` naming the session of one of this workspace's worktree sessions works in its
    // worktree.
    if let Some(which) = common.session.as_deref().filter(|w| *w != session::LAST_SESSION)
        && let Ok(config) = toolhost_host::load_config(&root)
        && let Ok(sessions) = config.sessions_dir(common.session_dir.as_deref())
        && let Some(found) = toolhost_host::worktree::find(&sessions, &root, which)
        && found.session_id == which
    {
        return Ok(found.root);
    }
    Ok(root)
}

/// The workspace's configuration, its ignored settings shown as warnings.
fn load_config(root: &Path) -> Result<Config, Failure> {
    let config = toolhost_host::load_config(root).map_err(|e| Failure::env(e.to_string()))?;
    for warning in &config.warnings {
        eprintln!("toolhost: warning: {warning}");
    }
    Ok(config)
}

/// `--session`, or — run in a worktree session's folder — that worktree session (unless a
/// toolhost works in it already).
fn session_or_worktree(config: &Config, common: &Common, root: &Path) -> Option<String> {
    if common.session.is_some() {
        return common.session.clone();
    }
    let sessions = config.sessions_dir(common.session_dir.as_deref()).ok()?;
    toolhost_host::worktree::of_root(&sessions, root)
        .filter(|w| !toolhost_host::worktree::in_use(&sessions, w))
        .map(|w| w.session_id)
}

/// Where this invocation's sessions live.
fn sessions_dir(config: &Config, common: &Common) -> Result<PathBuf, Failure> {
    config.sessions_dir(common.session_dir.as_deref()).map_err(|e| Failure::env(e.to_string()))
}

/// Opens the session `--session` names (or a new one), saying so on stderr when it is new or
/// was repaired.
fn open_session(config: &Config, root: &Path, common: &Common) -> Result<OpenedSession, Failure> {
    let sessions = sessions_dir(config, common)?;
    let which = session_or_worktree(config, common, root);
    let (id, opened) = session::open_named(&sessions, root, which.as_deref())
        .map_err(|e| Failure::env(e.to_string()))?;
    if opened.report.created {
        eprintln!("toolhost: session {id}");
    }
    if let Some(torn) = &opened.report.torn_tail {
        eprintln!(
            "toolhost: repaired session {id}: cut a torn last line of {} bytes",
            torn.bytes.len()
        );
    }
    Ok(opened)
}

/// A shared host on `opened` (or on no session).
fn open_host(
    config: &Config,
    root: &Path,
    opened: Option<&OpenedSession>,
) -> Result<Arc<Host>, Failure> {
    let host =
        toolhost_host::open_host(config, root, opened).map_err(|e| Failure::env(e.to_string()))?;
    #[cfg(feature = "test-tools")]
    crate::test_tools::install(&host);
    Ok(host)
}

/// A JSON Schema given as a flag's text.
fn schema_flag(text: Option<String>) -> Result<Option<Value>, Failure> {
    text.map(|text| {
        serde_json::from_str::<Value>(&text)
            .map_err(|e| Failure::usage(format!("--structured-schema is not JSON: {e}")))
    })
    .transpose()
}

/// Parses the CLI's JSON argument text: empty means `{}`; anything not JSON is a usage error.
pub fn parse_args_text(text: Option<&str>) -> Result<Value, Failure> {
    match text.map(str::trim) {
        None | Some("") => Ok(json!({})),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| Failure::usage(format!("the arguments are not valid JSON: {e}"))),
    }
}

/// `card::to_text` with ANSI colors on `+`/`-` lines and hunk headers.
pub fn colored_card(card: &Card) -> String {
    card.rendered
        .lines()
        .map(|line| {
            if line.starts_with("@@") {
                format!("\x1b[36m{line}\x1b[0m")
            } else if line.starts_with('+') {
                format!("\x1b[32m{line}\x1b[0m")
            } else if line.starts_with('-') {
                format!("\x1b[31m{line}\x1b[0m")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn argument_text_parsing() {
        assert_eq!(parse_args_text(None).unwrap(), json!({}));
        assert_eq!(parse_args_text(Some("  ")).unwrap(), json!({}));
        assert_eq!(parse_args_text(Some("{\"a\":1}")).unwrap(), json!({"a": 1}));
        assert_eq!(parse_args_text(Some("{a")).unwrap_err().code, 2);
    }
}
