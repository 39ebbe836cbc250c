//! `toolhost agent "<task>"`: one run of toolhost's own agent in this process, headless. The
//! answer streams to stdout and each call's card is a line on stderr; with `--json` every event
//! is a JSON line on stdout instead (for scripts and CI). Ctrl-C cancels the run (calls already
//! started finish; the others are answered as aborted), and the exit code says how it ended: 0
//! answered (or recorded its structured value), 1 stopped before that or the model failed.

use super::{Common, Failure, load_config, open_host, sessions_dir, workspace_root};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use toolhost_agent::agent::{AgentEvent, StopReason};
use toolhost_agent::model::StreamEvent;
use toolhost_agent::settings::CALLER;
use toolhost_agent::{AgentSettings, PermissionMode};
use toolhost_contract::CancellationToken;
use toolhost_host::Host;
use toolhost_host::agent::{self as own_agent, RunRequest, RunUpdate};
use toolhost_host::presentation::ToolPresentation;
use toolhost_host::session;
use toolhost_protocol::card::CardStatus;

#[derive(Debug, clap::Args)]
pub struct Args {
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
    /// How the model is offered the tools: native (every tool a function), code (only
    /// run_code, whose programs call the tools) or both (default: `[code] mode`).
    #[arg(long, value_name = "MODE")]
    tools: Option<String>,
    /// End the run with a value valid against this JSON Schema (`structured_output`).
    #[arg(long, value_name = "JSON_SCHEMA")]
    structured_schema: Option<String>,
    /// Run the task N times at once (2 to 8), each in a worktree session of its own, then show
    /// what each changed (and its --check) so one is applied.
    #[arg(long, value_name = "N")]
    best_of: Option<u32>,
    /// With --best-of: a command run in each worktree after its run (`sh -c`); its exit code
    /// says whether the run passed.
    #[arg(long, value_name = "COMMAND", requires = "best_of")]
    check: Option<String>,
}

/// `[agent]` with the flags on top.
fn settings(mut settings: AgentSettings, args: &Args) -> Result<AgentSettings, Failure> {
    if let Some(model) = &args.model {
        settings.model = model.clone();
    }
    if let Some(url) = &args.base_url {
        settings.base_url = url.clone();
    }
    if let Some(name) = &args.api_key_env {
        settings.api_key_env = Some(name.clone()).filter(|n| !n.is_empty());
    }
    if let Some(mode) = &args.mode {
        settings.mode = PermissionMode::parse(mode).ok_or_else(|| {
            Failure::usage(format!("--mode {mode}: expected ask, accept-edits, plan or auto"))
        })?;
    }
    if let Some(turns) = args.max_turns {
        settings.max_turns = turns.max(1);
    }
    if let Some(budget) = args.token_budget {
        settings.token_budget = Some(budget).filter(|b| *b > 0);
    }
    if let Some(budget) = args.cost_budget {
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
    if let Some(limit) = args.context_limit {
        settings.context_limit = Some(limit).filter(|l| *l > 0);
    }
    Ok(settings)
}

pub async fn run(args: Args) -> Result<u8, Failure> {
    if let Some(n) = args.best_of {
        if args.common.session.is_some() {
            return Err(Failure::usage("--best-of makes a session per run: leave out --session"));
        }
        return super::best_of::run(&args.common, &args.task, n, args.check, args.json).await;
    }
    let schema = super::schema_flag(args.structured_schema.clone())?;
    let root = workspace_root(&args.common)?;
    let mut config = load_config(&root)?;
    // The flags are the run's `[agent]`, and its subagents' too (the host keeps it for them).
    config.agent = settings(config.agent, &args)?;
    if let Some(tools) = &args.tools {
        let presentation = ToolPresentation::parse(tools).ok_or_else(|| {
            Failure::usage(format!("--tools {tools}: expected native, code or both"))
        })?;
        config.code.mode = Some(presentation.into());
    }
    let sessions = sessions_dir(&config, &args.common)?;
    let which = super::session_or_worktree(&config, &args.common, &root);
    let (id, opened) = session::open_named(&sessions, &root, which.as_deref())
        .map_err(|e| Failure::env(e.to_string()))?;
    if opened.report.created && !args.json {
        eprintln!("toolhost: session {id}");
    }
    let host = open_host(&config, &root, Some(&opened))?;
    super::call::answer_on_the_terminal(&host);
    if let Some(schema) = schema {
        host.interaction()
            .ensure_run(schema)
            .await
            .map_err(|e| Failure::usage(format!("--structured-schema: {e}")))?;
    }
    host.start_mcp_servers();
    let code = run_headless(&host, config.agent.clone(), &args.task, args.json).await;
    host.shutdown().await;
    opened.log.flush().await.map_err(|e| Failure::env(e.to_string()))?;
    Ok(code)
}

fn print_line(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    let _ = stdout.flush();
}

async fn run_headless(host: &Arc<Host>, settings: AgentSettings, task: &str, json: bool) -> u8 {
    if let Some(name) = settings.missing_key() {
        eprintln!("toolhost: warning: {name} is not set: the model request is sent without a key");
    }
    if json {
        print_line(
            &json!({
                "type": "start", "sessionId": host.session_id(), "model": settings.model,
                "mode": settings.mode.as_str(),
            })
            .to_string(),
        );
    }
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    let interrupt = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("toolhost: stopping the run (Ctrl-C)");
            on_interrupt.cancel();
        }
    });
    // Whether the last text written to stdout ended its line.
    let open_line = Arc::new(Mutex::new(false));
    let text_line = Arc::clone(&open_line);
    let mut on_event = move |event: &AgentEvent| {
        if json {
            if let Some(line) = own_agent::event_json(event) {
                print_line(&line.to_string());
            }
            return;
        }
        match event {
            AgentEvent::Model(StreamEvent::Text(text)) => {
                let mut stdout = std::io::stdout().lock();
                let _ = write!(stdout, "{text}");
                let _ = stdout.flush();
                if let Ok(mut open) = text_line.lock() {
                    *open = !text.ends_with('\n');
                }
            }
            AgentEvent::Model(StreamEvent::Restart { attempt, delay, reason }) => eprintln!(
                "toolhost: model request failed ({reason}); retry {attempt} in {} ms",
                delay.as_millis()
            ),
            AgentEvent::Compacted(c) => eprintln!(
                "toolhost: conversation compacted ({} → {} tokens{}{})",
                c.tokens_before,
                c.tokens_after,
                if c.pruned > 0 { format!(", {} outputs pruned", c.pruned) } else { String::new() },
                if c.summary.is_some() { ", summarized" } else { "" },
            ),
            _ => {}
        }
    };
    let card_line = Arc::clone(&open_line);
    let on_update = move |update: RunUpdate| {
        if json {
            print_line(&own_agent::update_json(&update).to_string());
            return;
        }
        // A card starts on a line of its own.
        if let Ok(mut open) = card_line.lock()
            && *open
        {
            print_line("");
            *open = false;
        }
        match update {
            RunUpdate::CallStarted { card } => eprintln!("→ {}", card.title),
            RunUpdate::CallFinished { card, text, .. } => match card.status {
                CardStatus::Failed => {
                    let first = text.lines().next().unwrap_or_default();
                    eprintln!("✗ {}: {first}", card.title);
                }
                _ => eprintln!("✓ {}", card.title),
            },
        }
    };
    let request = RunRequest {
        settings: settings.clone(),
        prompt: task.to_owned(),
        history: None,
        caller: CALLER.to_owned(),
        run_id: None,
        parent: None,
        mode: None,
        presentation: None,
    };
    let report = own_agent::run(host, request, &cancel, &mut on_event, on_update).await;
    interrupt.abort();
    if json {
        print_line(&own_agent::end_json(&report, host.session_id()).to_string());
        return report.exit_code();
    }
    if open_line.lock().is_ok_and(|open| *open) {
        print_line("");
    }
    match &report.outcome {
        Ok(outcome) => {
            if let Some(value) = &report.structured {
                print_line(&serde_json::to_string_pretty(value).unwrap_or_default());
            }
            let why = match outcome.stop {
                StopReason::Answered | StopReason::Structured => None,
                StopReason::TurnLimit => Some(format!("the turn limit ({} turns)", outcome.turns)),
                StopReason::TokenBudget => Some("the token budget".to_owned()),
                StopReason::CostBudget => Some("the cost budget".to_owned()),
                StopReason::Cancelled => Some("cancellation".to_owned()),
            };
            if let Some(why) = why {
                eprintln!("toolhost: the run stopped at {why} before an answer");
            }
            eprintln!(
                "toolhost: {} turns, {}",
                outcome.turns,
                own_agent::usage_line(&outcome.usage, report.cost)
            );
        }
        Err(err) => eprintln!("toolhost: the model failed: {} ({})", err, err.code()),
    }
    report.exit_code()
}
