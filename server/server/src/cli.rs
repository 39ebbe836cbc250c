//! The `toolhost` command line. Exit codes: 0 success; 1 the tool result is a failure; 2 unusable
//! flags or argument text that is not JSON; 3 environment or internal error. No panic reaches the
//! user: a panic becomes exit code 3 with a message.

use crate::config::{self, Config, Sources};
use crate::host::{Host, HostOptions, new_call_id};
use crate::session;
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_contract::CancellationToken;
use toolhost_protocol::card::{Card, CardKind};
use toolhost_protocol::lsp_ext::{CallToolResult, ConversationRecord, ListToolsResult};
use toolhost_workspace::Ledger;

mod agent;

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
    Call {
        /// The tool name (see `toolhost tools`).
        tool: String,
        /// The arguments as a JSON object (default `{}`).
        args: Option<String>,
        #[command(flatten)]
        common: Common,
        /// Print `{sessionId, callId, result, card}` as JSON.
        #[arg(long)]
        json: bool,
        /// The JSON Schema `structured_output` validates against in this session's run (a new
        /// run starts when it differs from the session's current one).
        #[arg(long, value_name = "JSON_SCHEMA")]
        structured_schema: Option<String>,
    },
    /// Run toolhost's own agent on a task: the model calls the tools here (cards on stderr, the
    /// answer on stdout) until it answers. Flags override `[agent]` in the configuration.
    Agent {
        /// What to do.
        task: String,
        #[command(flatten)]
        common: Common,
        /// Print the run as JSON lines (text, tool calls and results with their cards, usage,
        /// and a closing `end` line).
        #[arg(long)]
        json: bool,
        /// The model's name (default: deepseek-v4-flash).
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// An OpenAI-compatible endpoint (default: https://api.deepseek.com).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The environment variable holding the API key (empty: send none).
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        /// ask, accept-edits, plan or auto.
        #[arg(long, value_name = "MODE")]
        mode: Option<String>,
        #[arg(long, value_name = "N")]
        max_turns: Option<u32>,
        /// Stop making requests once this many tokens were used.
        #[arg(long, value_name = "TOKENS")]
        token_budget: Option<u64>,
        /// Stop making requests once the run cost this many US dollars (needs `[agent] price`).
        #[arg(long, value_name = "USD")]
        cost_budget: Option<f64>,
        /// The model's context window (compaction starts before it; 0: never).
        #[arg(long, value_name = "TOKENS")]
        context_limit: Option<u64>,
        /// End the run with a value valid against this JSON Schema (`structured_output`).
        #[arg(long, value_name = "JSON_SCHEMA")]
        structured_schema: Option<String>,
    },
    /// Undo the file changes of a call of a session (or, with --since, of every call from it on,
    /// newest first, all or nothing). Runs in the editor's toolhost when it holds the session.
    Revert {
        /// The session id (see `toolhost sessions`), or `last`.
        #[arg(value_name = "SESSION")]
        which: String,
        /// The call whose changes to undo (a card's call id).
        #[arg(long = "call", value_name = "CALL_ID")]
        call: String,
        /// Undo every change of the session from that call on.
        #[arg(long)]
        since: bool,
        #[command(flatten)]
        common: Common,
        /// Print `{sessionId, callId, result, card}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the skills the `skill` tool can load here (workspace and user folders).
    Skills {
        #[command(flatten)]
        common: Common,
        /// Print `{skills: [{name, description, provider, path, modelInvocable}]}`.
        #[arg(long)]
        json: bool,
    },
    /// List the tools with their schemas.
    Tools {
        #[command(flatten)]
        common: Common,
        /// Print `{tools: [{name, description, inputSchema, outputSchema}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Start the MCP servers configured here (`[mcp.servers.<name>]`), wait for each to answer
    /// or fail, and show their state, protocol version, tools and errors; then stop them.
    #[command(name = "mcp-servers")]
    McpServers {
        #[command(flatten)]
        common: Common,
        /// Print `{servers: [{name, transport, state, tools, protocolVersion?, error?, attempts}]}`.
        #[arg(long)]
        json: bool,
    },
    /// List the sessions of this workspace (or of every workspace with --all), or prune them.
    Sessions {
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
    },
    /// Print the cards of a session (by id, or a path to its session.jsonl), rebuilt from the log.
    Replay {
        /// A session id of this workspace, or a path to a session.jsonl.
        #[arg(value_name = "SESSION")]
        which: String,
        #[command(flatten)]
        common: Common,
        /// One JSON card per line.
        #[arg(long)]
        json: bool,
    },
    /// Run the LSP server over stdio (what editors start).
    Serve {
        /// Accepted for compatibility with clients that pass it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
        /// Session directory override.
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
        /// Cap on one incoming message body (bytes).
        #[arg(long, value_name = "BYTES", default_value_t = crate::transport::DEFAULT_MAX_BODY, hide = true)]
        max_message_bytes: usize,
    },
    /// Serve the tools over MCP on stdio (what agents start: `claude mcp add toolhost -- toolhost
    /// mcp`). Calls run in the editor's toolhost for this workspace when one is open, else here.
    Mcp {
        #[command(flatten)]
        common: Common,
        /// Never attach to the editor: run the tools in this process.
        #[arg(long)]
        standalone: bool,
    },
    /// Run toolhost's own agent as an Agent Client Protocol agent on stdio (what Zed, JetBrains
    /// or an ACP client in Neovim or Emacs starts). Each ACP session is a toolhost session.
    Acp {
        /// Where session logs live (default: $XDG_STATE_HOME/toolhost/sessions).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// Trust this workspace: its toolhost.toml may then configure language-server commands.
    Trust {
        #[command(flatten)]
        common: Common,
    },
    /// Internal (`[shell] sandbox`): confine writes to the given folders with Landlock, then
    /// execute the command in this process. `--probe` prints what the kernel enforces.
    #[command(name = "sandbox-exec", hide = true)]
    SandboxExec {
        #[arg(long = "write", value_name = "DIR")]
        write: Vec<PathBuf>,
        #[arg(long)]
        probe: bool,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<std::ffi::OsString>,
    },
}

/// `toolhost sandbox-exec`: applies the confinement and replaces this process with the command.
/// Exit 126 (with `toolhost sandbox: …` on stderr) when the confinement cannot be applied, so the
/// command never runs unconfined by accident; 127 when the command cannot be executed.
fn sandbox_exec(write: &[PathBuf], probe: bool, command: &[std::ffi::OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let enforcement = match toolhost_tools_shell::sandbox::confine_writes(write) {
        Ok(enforcement) => enforcement,
        Err(err) => {
            eprintln!("toolhost sandbox: {err}");
            return ExitCode::from(126);
        }
    };
    if probe {
        println!("{}", enforcement.as_str());
        return ExitCode::SUCCESS;
    }
    let Some((program, args)) = command.split_first() else {
        eprintln!("toolhost sandbox: no command to run");
        return ExitCode::from(126);
    };
    let err = std::process::Command::new(program).args(args).exec();
    eprintln!("toolhost sandbox: cannot run {}: {err}", program.to_string_lossy());
    ExitCode::from(127)
}

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
    if let Command::SandboxExec { write, probe, command } = &cli.command {
        return sandbox_exec(write, *probe, command);
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
    Ok(root)
}

pub(crate) fn load_config(root: &Path) -> Result<Config, Failure> {
    let user = config::user_config_path();
    let sources = Sources::load(root, user.as_deref()).map_err(|e| Failure::env(e.to_string()))?;
    let config = sources.resolve(root);
    for warning in &config.warnings {
        eprintln!("toolhost: warning: {warning}");
    }
    Ok(config)
}

/// Parses the CLI's JSON argument text: empty means `{}`; anything not JSON is a usage error.
pub fn parse_args_text(text: Option<&str>) -> Result<Value, Failure> {
    match text.map(str::trim) {
        None | Some("") => Ok(json!({})),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| Failure::usage(format!("the arguments are not valid JSON: {e}"))),
    }
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Agent {
            task,
            common,
            json,
            model,
            base_url,
            api_key_env,
            mode,
            max_turns,
            token_budget,
            cost_budget,
            context_limit,
            structured_schema,
        } => {
            let schema = structured_schema
                .map(|text| {
                    serde_json::from_str::<Value>(&text).map_err(|e| {
                        Failure::usage(format!("--structured-schema is not JSON: {e}"))
                    })
                })
                .transpose()?;
            let mode = mode
                .map(|m| {
                    crate::agent::PermissionMode::parse(&m).ok_or_else(|| {
                        Failure::usage(format!(
                            "--mode {m}: expected ask, accept-edits, plan or auto"
                        ))
                    })
                })
                .transpose()?;
            let root = workspace_root(&common)?;
            let mut config = load_config(&root)?;
            let settings = &mut config.agent;
            if let Some(model) = model {
                settings.model = model;
            }
            if let Some(url) = base_url {
                settings.base_url = url;
            }
            if let Some(name) = api_key_env {
                settings.api_key_env = Some(name).filter(|n| !n.is_empty());
            }
            if let Some(mode) = mode {
                settings.mode = mode;
            }
            if let Some(turns) = max_turns {
                settings.max_turns = turns.max(1);
            }
            if let Some(budget) = token_budget {
                settings.token_budget = Some(budget).filter(|b| *b > 0);
            }
            if let Some(budget) = cost_budget {
                if !budget.is_finite() || budget < 0.0 {
                    return Err(Failure::usage(format!(
                        "--cost-budget {budget}: expected a number of US dollars, 0 or more"
                    )));
                }
                if budget > 0.0 && settings.price.is_none() {
                    return Err(Failure::usage(
                        "--cost-budget needs [agent] price in the configuration to count the cost",
                    ));
                }
                settings.cost_budget = Some(budget).filter(|b| *b > 0.0);
            }
            if let Some(limit) = context_limit {
                settings.context_limit = Some(limit).filter(|l| *l > 0);
            }
            let sessions = session::sessions_dir(&config, common.session_dir.as_deref())
                .map_err(|e| Failure::env(e.to_string()))?;
            let (id, opened) = session::open_named(&sessions, &root, common.session.as_deref())
                .map_err(|e| Failure::env(e.to_string()))?;
            if opened.report.created && !json {
                eprintln!("toolhost: session {id}");
            }
            let host = open_host(&config, &root, Some(&opened), Some(id))?;
            if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
                host.questions().set_editor(Some(Arc::new(crate::terminal_ask::TerminalAsker)));
            }
            if let Some(schema) = schema {
                host.interaction()
                    .ensure_run(schema)
                    .await
                    .map_err(|e| Failure::usage(format!("--structured-schema: {e}")))?;
            }
            host.start_mcp_servers();
            let code = agent::run_headless(&host, config.agent.clone(), &task, json).await;
            host.shutdown().await;
            opened.log.flush().await.map_err(|e| Failure::env(e.to_string()))?;
            Ok(code)
        }
        Command::Revert { which, call, since, common, json } => {
            let mut args = serde_json::json!({ "call_id": call });
            if since {
                args["since"] = Value::Bool(true);
            }
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let sessions = session::sessions_dir(&config, common.session_dir.as_deref())
                .map_err(|e| Failure::env(e.to_string()))?;
            match session::open_named(&sessions, &root, Some(&which)) {
                Ok((id, opened)) => {
                    let host = open_host(&config, &root, Some(&opened), Some(id))?;
                    run_one_call(&host, &opened, "revert", args, json).await
                }
                // The editor's toolhost holds the session: ask it to revert there.
                Err(toolhost_session::SessionError::Locked(_)) => {
                    revert_in_editor(&root, &which, args, json).await
                }
                Err(e) => Err(Failure::env(e.to_string())),
            }
        }
        Command::Call { tool, args, common, json, structured_schema } => {
            let args = parse_args_text(args.as_deref())?;
            let schema = structured_schema
                .map(|text| {
                    serde_json::from_str::<Value>(&text).map_err(|e| {
                        Failure::usage(format!("--structured-schema is not JSON: {e}"))
                    })
                })
                .transpose()?;
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let sessions = session::sessions_dir(&config, common.session_dir.as_deref())
                .map_err(|e| Failure::env(e.to_string()))?;
            let (id, opened) = session::open_named(&sessions, &root, common.session.as_deref())
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
            let host = open_host(&config, &root, Some(&opened), Some(id))?;
            // A person at a terminal answers the call's questions there.
            if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
                host.questions().set_editor(Some(Arc::new(crate::terminal_ask::TerminalAsker)));
            }
            if let Some(schema) = schema {
                host.interaction()
                    .ensure_run(schema)
                    .await
                    .map_err(|e| Failure::usage(format!("--structured-schema: {e}")))?;
            }
            run_one_call(&host, &opened, &tool, args, json).await
        }
        Command::Skills { common, json } => {
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let catalog = crate::skills::SkillDirs::new(&[root], &config.skill_dirs);
            let skills = toolhost_contract::SkillCatalog::skills(&catalog);
            let mut stdout = std::io::stdout().lock();
            if json {
                let listed: Vec<Value> = skills
                    .iter()
                    .map(|s| {
                        json!({
                            "name": s.name, "description": s.description, "provider": s.provider,
                            "path": s.path, "modelInvocable": s.model_invocable,
                        })
                    })
                    .collect();
                let _ = writeln!(stdout, "{}", json!({ "skills": listed }));
            } else if skills.is_empty() {
                let _ = writeln!(
                    stdout,
                    "no skills: add <name>/SKILL.md under .toolhost/skills/, .claude/skills/ or \
                     .agents/skills/ (or ~/.config/toolhost/skills/)"
                );
            } else {
                for skill in skills {
                    let manual = if skill.model_invocable { "" } else { " (user only)" };
                    let _ = writeln!(
                        stdout,
                        "{:<20} {}{manual}\n{:<20} {}",
                        skill.name, skill.description, "", skill.path
                    );
                }
            }
            Ok(0)
        }
        Command::Tools { common, json } => {
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let host = open_host(&config, &root, None, None)?;
            // Every MCP server's tools are part of the list (each started, then stopped).
            host.start_all_mcp_servers();
            let strict = host.mcp_ready().await;
            let tools = host.registry().descriptors();
            host.shutdown().await;
            strict.map_err(Failure::env)?;
            let mut stdout = std::io::stdout().lock();
            if json {
                let text = serde_json::to_string_pretty(&ListToolsResult { tools })
                    .map_err(|e| Failure::env(e.to_string()))?;
                let _ = writeln!(stdout, "{text}");
            } else {
                for tool in tools {
                    let summary: String = tool.description.chars().take(100).collect();
                    let _ = writeln!(stdout, "{:<8} {summary}", tool.name);
                }
            }
            Ok(0)
        }
        Command::McpServers { common, json } => {
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let host = open_host(&config, &root, None, None)?;
            host.start_all_mcp_servers();
            let _ = host.mcp_ready().await;
            let servers = host.mcp_status();
            host.shutdown().await;
            let mut stdout = std::io::stdout().lock();
            if json {
                let _ = writeln!(stdout, "{}", json!({ "servers": servers }));
            } else if servers.is_empty() {
                let _ = writeln!(
                    stdout,
                    "no MCP servers: add [mcp.servers.<name>] with command (stdio) or url \
                     (streamable HTTP) to the user config or a trusted toolhost.toml"
                );
            } else {
                for server in &servers {
                    let _ = writeln!(stdout, "{}", mcp_server_line(server));
                    for tool in &server.tools {
                        let _ = writeln!(stdout, "    {tool}");
                    }
                }
            }
            let failed = servers.iter().any(|s| s.state == "failed");
            Ok(if failed { 1 } else { 0 })
        }
        Command::Sessions { common, all, json, prune, older_than, delete } => {
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let dir = session::sessions_dir(&config, common.session_dir.as_deref())
                .map_err(|e| Failure::env(e.to_string()))?;
            let key = session::workspace_key_of(&root);
            if prune {
                let age = toolhost_session::parse_duration(&older_than)
                    .map_err(|e| Failure::usage(e.to_string()))?;
                let n = toolhost_session::prune_sessions(&dir, age)
                    .map_err(|e| Failure::env(e.to_string()))?;
                println!("pruned {n} session(s) older than {older_than}");
                return Ok(0);
            }
            if let Some(id) = delete {
                toolhost_session::delete_session(&dir, &key, &id)
                    .map_err(|e| Failure::env(e.to_string()))?;
                println!("deleted session {id}");
                return Ok(0);
            }
            let list = session::list(&dir, &root, all);
            if json {
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
        Command::Replay { which, common, json } => {
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let path = if which.ends_with(".jsonl") || which.contains('/') {
                PathBuf::from(&which)
            } else {
                let dir = session::sessions_dir(&config, common.session_dir.as_deref())
                    .map_err(|e| Failure::env(e.to_string()))?;
                let key = session::workspace_key_of(&root);
                let which = if which == session::LAST_SESSION {
                    let newest = session::list(&dir, &root, false).sessions.into_iter().next();
                    newest
                        .map(|s| s.id)
                        .ok_or_else(|| Failure::usage("this workspace has no sessions"))?
                } else {
                    which
                };
                toolhost_session::session_dir(&dir, &key, &which)
                    .map_err(|e| Failure::usage(e.to_string()))?
                    .join(toolhost_session::LOG_FILE_NAME)
            };
            let host = open_host(&config, &root, None, None)?;
            let (calls, conversation) = session::replay_with_conversation(host.registry(), &path)
                .map_err(|e| Failure::env(e.to_string()))?;
            let mut stdout = std::io::stdout().lock();
            let color = stdout.is_terminal();
            // The agent's records go between the cards, after the call that precedes each.
            let mut items: Vec<Result<&ConversationRecord, &Card>> = Vec::new();
            let mut records = conversation.iter().peekable();
            items
                .extend(std::iter::from_fn(|| records.next_if(|r| r.after_call.is_none())).map(Ok));
            for call in &calls {
                items.push(Err(&call.card));
                let after = Some(call.card.call_id.as_str());
                items.extend(
                    std::iter::from_fn(|| records.next_if(|r| r.after_call.as_deref() == after))
                        .map(Ok),
                );
            }
            let mut first = true;
            for item in items {
                let text = match (item, json) {
                    (Ok(record), true) => serde_json::to_string(record).ok(),
                    (Err(card), true) => serde_json::to_string(card).ok(),
                    (Ok(record), false) => agent::record_text(record),
                    (Err(card), false) if color => Some(colored_card(card)),
                    (Err(card), false) => Some(card.rendered.clone()),
                };
                let Some(text) = text else { continue };
                if !json && !first {
                    let _ = writeln!(stdout);
                }
                first = false;
                let _ = writeln!(stdout, "{text}");
            }
            Ok(0)
        }
        Command::Serve { stdio: _, session_dir, max_message_bytes } => {
            init_server_log("info");
            let code =
                crate::serve::serve(crate::serve::ServeOptions { session_dir, max_message_bytes })
                    .await;
            Ok(code)
        }
        Command::Mcp { common, standalone } => {
            // Started by another toolhost's MCP bridge: serve here, never through the editor's
            // toolhost (whose registry holds this server's own tools).
            let standalone = standalone || crate::host::started_by_bridge();
            // rmcp's per-message info lines would drown the agent's stderr log.
            init_server_log("info,rmcp=warn");
            let root = workspace_root(&common)?;
            let config = load_config(&root)?;
            let sessions = session::sessions_dir(&config, common.session_dir.as_deref())
                .map_err(|e| Failure::env(e.to_string()))?;
            let (stdin, stdout) = (
                crate::serve::stdio_file(std::io::stdin().as_fd()),
                crate::serve::stdio_file(std::io::stdout().as_fd()),
            );
            let (stdin, stdout) = match (stdin, stdout) {
                (Ok(stdin), Ok(stdout)) => (stdin, stdout),
                (Err(err), _) | (_, Err(err)) => {
                    return Err(Failure::env(format!("cannot use stdio: {err}")));
                }
            };
            let mcp_config = config.mcp.clone();
            let backend = crate::mcp::McpBackend::new(
                config,
                root,
                sessions,
                common.session.clone(),
                standalone,
            )
            .await;
            let served = toolhost_mcp::serve(backend.clone(), mcp_config, stdin, stdout).await;
            backend.shutdown().await;
            served.map_err(|e| Failure::env(e.to_string()))?;
            Ok(0)
        }
        Command::Acp { session_dir } => {
            init_server_log("info");
            crate::acp::serve(crate::acp::AcpOptions { session_dir })
                .await
                .map_err(Failure::env)?;
            Ok(0)
        }
        Command::Trust { common } => {
            let root = workspace_root(&common)?;
            let user = config::user_config_path().ok_or_else(|| {
                Failure::env("cannot locate the user config (set HOME or XDG_CONFIG_HOME)")
            })?;
            let added =
                config::trust_workspace(&user, &root).map_err(|e| Failure::env(e.to_string()))?;
            let verb = if added { "trusted" } else { "already trusted" };
            println!("{} is {verb} (recorded in {})", root.display(), user.display());
            Ok(0)
        }
        // Handled in `main` before any runtime starts.
        Command::SandboxExec { .. } => Ok(2),
    }
}

/// Runs one call in `host` (its session `opened`), prints it as `toolhost call` does and returns
/// the exit code (1 when the tool failed).
async fn run_one_call(
    host: &Host,
    opened: &session::OpenedSession,
    tool: &str,
    args: Value,
    json: bool,
) -> Result<u8, Failure> {
    let call_id = new_call_id();
    let outcome = host.call(&call_id, tool, args, CancellationToken::new()).await;
    // Language servers the call started stop (and are reaped) before the answer.
    host.shutdown().await;
    let outcome = outcome.map_err(|e| Failure::env(e.to_string()))?;
    opened.log.flush().await.map_err(|e| Failure::env(e.to_string()))?;
    print_call(
        CallToolResult {
            session_id: host.session_id().map(str::to_owned),
            call_id: outcome.call_id,
            result: outcome.finalized.result,
            card: outcome.card,
        },
        json,
    )
}

/// One server of `toolhost mcp-servers`: `name  state  transport  N tools  [protocol]  error`.
fn mcp_server_line(server: &toolhost_tools_mcp::ServerStatus) -> String {
    let tools = match server.tools.len() {
        1 => "1 tool".to_owned(),
        n => format!("{n} tools"),
    };
    let mut line =
        format!("{:<16} {:<12} {:<15} {tools}", server.name, server.state, server.transport);
    if let Some(version) = &server.protocol_version {
        line.push_str(&format!("  (MCP {version})"));
    }
    if server.attempts > 0 {
        line.push_str(&format!("  after {} reconnect attempts", server.attempts));
    }
    if let Some(error) = &server.error {
        line.push_str(&format!("\n    error: {error}"));
    }
    line
}

/// Prints a call's Native text (and, on a terminal, a diff card in colour) or its JSON.
fn print_call(body: CallToolResult, json: bool) -> Result<u8, Failure> {
    let is_error = body.result.is_error();
    let mut stdout = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string(&body).map_err(|e| Failure::env(e.to_string()))?;
        let _ = writeln!(stdout, "{text}");
    } else {
        let text = toolhost_protocol::content::joined_text(body.result.content());
        let _ = writeln!(stdout, "{text}");
        if stdout.is_terminal() && body.card.kind == CardKind::Diff && !is_error {
            let _ = writeln!(stdout, "\n{}", colored_card(&body.card));
        }
    }
    Ok(u8::from(is_error))
}

/// `toolhost revert` of a session the editor's `toolhost serve` holds: the revert runs there
/// (over the attach socket), so the editor's unsaved buffers are respected and its card shows up
/// in the editor.
async fn revert_in_editor(
    root: &Path,
    which: &str,
    args: Value,
    json: bool,
) -> Result<u8, Failure> {
    use toolhost_protocol::lsp_ext::{AttachParams, AttachResult, CallToolParams, CallerInfo};
    let locked = || {
        Failure::env(format!(
            "session {which} is in use by another toolhost that does not serve this workspace's editor"
        ))
    };
    let socket = crate::attach::socket_path(root);
    let client = crate::attach::AttachClient::connect(&socket).await.map_err(|_| locked())?;
    let never = CancellationToken::new();
    let params = AttachParams {
        caller: CallerInfo { name: "toolhost revert".to_owned(), version: None },
        protocol_version: None,
        results: None,
    };
    let attached: AttachResult = client
        .request(toolhost_protocol::lsp_ext::methods::ATTACH, &params, &never)
        .await
        .map_err(|e| Failure::env(e.message))?;
    if attached.session_id.as_deref() != Some(which) {
        return Err(locked());
    }
    let params = CallToolParams {
        name: "revert".to_owned(),
        arguments: args,
        call_id: None,
        can_ask: false,
    };
    let body: CallToolResult = client
        .request(toolhost_protocol::lsp_ext::methods::CALL_TOOL, &params, &never)
        .await
        .map_err(|e| Failure::env(e.message))?;
    print_call(body, json)
}

pub(crate) fn open_host(
    config: &Config,
    root: &Path,
    opened: Option<&session::OpenedSession>,
    session_id: Option<String>,
) -> Result<Arc<Host>, Failure> {
    let options = match opened {
        Some(opened) => HostOptions {
            roots: vec![root.to_path_buf()],
            read_only_roots: vec![opened.blob_dir()],
            session_id,
            ledger: Arc::clone(&opened.ledger),
            spill: Some(opened.spill()),
            session: Some(Arc::clone(&opened.log)),
        },
        None => HostOptions {
            roots: vec![root.to_path_buf()],
            read_only_roots: Vec::new(),
            session_id,
            ledger: Arc::new(Ledger::new()),
            spill: None,
            session: None,
        },
    };
    let host = Host::new(config, options).map_err(|e| Failure::env(e.to_string()))?;
    if let Some(opened) = opened {
        host.restore_session_state(&opened.report);
    }
    Ok(host.shared())
}

/// The server's log goes to stderr (editors show it in their output panel), or appended to the
/// file `TOOLHOST_LOG_FILE` names (test runs keep it and show it only on failure);
/// `TOOLHOST_LOG` takes an env-filter directive (default `info`).
fn init_server_log(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_target(false);
    let file = std::env::var_os("TOOLHOST_LOG_FILE").filter(|p| !p.is_empty()).and_then(|path| {
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => Some(file),
            Err(err) => {
                eprintln!(
                    "toolhost: cannot open the log file {}: {err}; logging to stderr",
                    PathBuf::from(&path).display()
                );
                None
            }
        }
    });
    let _ = match file {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file)).try_init(),
        None => builder.with_writer(std::io::stderr).try_init(),
    };
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
