//! The `subagent` tool (docs/tools.md, docs/agent.md): a child run of toolhost's own agent on a
//! task of its own — its own conversation, turn limit and token budget, the same registry and
//! session (so its calls are ordinary calls with their cards, caller `subagent`, and its
//! conversation is recorded as an `agent/run` whose `parentCallId` is the `subagent` call).
//!
//! Foreground (the default), the call ends with the child's answer: the value is
//! `{kind: "foreground", runId, output}` with `output` the answer's content blocks, and the Native
//! text their text. A run that ends any other way fails the call with why, the error it hit and
//! what it had said so far. With `run_in_background: true` the child runs as a background job
//! (`subagent-<n>`, read with `job_output`, stopped with `job_kill`, a notice when it ends) and
//! the call answers `{kind: "background", jobId}` at once.
//!
//! The tool needs a model: it is registered only when `[agent]` can reach one (its key variable
//! is set, or it names none), and only a host that is shared (`Host::shared`) can start children.
//! Children inherit the mode of the run that asked for them and may nest at most
//! [`MAX_DEPTH`] levels below a top-level run.

use crate::agent::{self as own_agent, RunRequest};
use crate::host::{Host, HostError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use toolhost_agent::agent::StopReason;
use toolhost_agent::{AgentSettings, PermissionMode};
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::schemars::JsonSchema;
use toolhost_contract::{CancellationToken, Tool, ToolContext, ToolError};
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;

pub const NAME: &str = "subagent";
/// How deep subagents may nest below a top-level run.
pub const MAX_DEPTH: u32 = 3;
/// Who the cards of a subagent's calls name as the caller.
pub const CALLER: &str = "subagent";

/// Arguments of `subagent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields)]
pub struct SubagentArgs {
    /// A short (3-5 word) description of the task, shown on the card.
    pub description: String,
    /// The task for the subagent: everything it needs to know, since it sees nothing of this
    /// conversation.
    pub prompt: String,
    /// Run it as a background job (read its answer later with job_output).
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// The value of a `subagent` call.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SubagentOutput {
    /// The child answered: its final content blocks, and what its run used.
    #[serde(rename_all = "camelCase")]
    Foreground {
        run_id: String,
        output: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<ChildUsage>,
    },
    /// The child runs as a background job.
    #[serde(rename_all = "camelCase")]
    Background { job_id: String },
}

/// What a child run used: its tokens and, with `[agent.price]`, its cost in dollars (a workflow
/// sums these against its budget).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ChildUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// Registers `subagent` on `host` when `[agent]` can reach a model (its key variable is set, or
/// it names none).
pub fn install(host: &Arc<Host>, settings: &AgentSettings) -> Result<(), HostError> {
    if settings.missing_key().is_some() {
        return Ok(());
    }
    let tool = SubagentTool { host: Arc::downgrade(host), settings: settings.clone() };
    let _ = host.registry().register(tool)?;
    host.agent_permissions().add_delegating_tool(NAME);
    Ok(())
}

/// The `subagent` tool: the host it starts children on (weakly: the host holds the tool) and
/// `[agent]`.
struct SubagentTool {
    host: Weak<Host>,
    settings: AgentSettings,
}

impl SubagentTool {
    fn host(&self) -> Result<Arc<Host>, ToolError> {
        self.host
            .upgrade()
            .ok_or_else(|| ToolError::plain("subagents are not available in this process"))
    }
}

/// A child run's outcome as the tool reports it.
struct ChildEnd {
    run_id: String,
    answer: Option<String>,
    /// Why the run did not complete (the call fails with it).
    failure: Option<String>,
    usage: Option<ChildUsage>,
}

async fn run_child(
    host: Arc<Host>,
    settings: AgentSettings,
    prompt: String,
    parent: (String, u32),
    cancel: CancellationToken,
) -> ChildEnd {
    let request = RunRequest {
        settings,
        prompt,
        history: None,
        caller: CALLER.to_owned(),
        run_id: None,
        parent: Some(parent),
        mode: None,
        presentation: None,
    };
    // The child's calls are children of the `subagent` call: listed, cancellable from their
    // cards, and their cards reach every listener of the host like any call's.
    let report = own_agent::run(&host, request, &cancel, &mut |_| {}, |_| {}).await;
    let answer = report.outcome.as_ref().ok().and_then(|o| o.answer.clone());
    let failure = match &report.outcome {
        Ok(o) => match o.stop {
            StopReason::Answered | StopReason::Structured => None,
            StopReason::Cancelled => Some("subagent run was cancelled".to_owned()),
            StopReason::TokenBudget => {
                Some("subagent run hit its token limit before finishing".to_owned())
            }
            StopReason::CostBudget => {
                Some("subagent run hit its cost limit before finishing".to_owned())
            }
            StopReason::TurnLimit => {
                Some(format!("subagent run ended abnormally ({})", o.stop.as_str()))
            }
        },
        Err(err) => Some(format!("subagent run failed\nDiagnostic: {}: {err}", err.code())),
    };
    let failure = failure.map(|mut message| {
        if let Some(partial) = answer.as_deref().filter(|a| !a.trim().is_empty()) {
            message.push_str(&format!("\nPartial output before the run ended:\n{partial}"));
        }
        message
    });
    let usage = report.outcome.as_ref().ok().map(|o| ChildUsage {
        prompt_tokens: o.usage.prompt_tokens,
        completion_tokens: o.usage.completion_tokens,
        total_tokens: o.usage.total_tokens,
        cost: report.cost,
    });
    ChildEnd { run_id: report.run_id, answer, failure, usage }
}

impl Tool for SubagentTool {
    type Args = SubagentArgs;
    type Output = SubagentOutput;

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> String {
        "Starts a subagent: a fresh run of the agent with its own conversation and budget, on \
         the same workspace and tools, for a self-contained task (research across many files, \
         a side investigation). It sees nothing of this conversation, so the prompt must say \
         everything it needs. Returns the subagent's final answer; with run_in_background it \
         runs as a background job whose answer job_output reads later."
            .to_owned()
    }

    async fn call(&self, args: SubagentArgs, cx: ToolContext) -> Result<SubagentOutput, ToolError> {
        let host = self.host()?;
        // The run that asked: its mode and depth (none when another program asked).
        let asking = host.agent_permissions().call(cx.call_id());
        let depth = asking.as_ref().map_or(0, |a| a.depth) + 1;
        if depth > MAX_DEPTH {
            return Err(ToolError::plain(format!(
                "subagent depth limit reached: subagents nest at most {MAX_DEPTH} levels deep"
            )));
        }
        let mut settings = self.settings.clone();
        // A child asks as its parent does; one started by another program runs as configured.
        if let Some(asking) = &asking {
            settings.mode = asking.mode;
        }
        if settings.mode == PermissionMode::Plan && !host.interaction().plan_active() {
            settings.mode = PermissionMode::AcceptEdits;
        }
        let parent = (cx.call_id().to_owned(), depth);
        if args.run_in_background == Some(true) {
            let jobs = host.shell_jobs().ok_or_else(|| {
                ToolError::plain("background subagents need the shell's jobs ([shell] enabled)")
            })?;
            let child_host = Arc::clone(&host);
            let prompt = args.prompt.clone();
            let job_id = jobs.start_task(NAME, &args.description, &cx, move |stop| async move {
                let end = run_child(child_host, settings, prompt, parent, stop).await;
                match end.failure {
                    None => (
                        toolhost_tools_shell::JobStatus::Completed,
                        format!("run {}", end.run_id),
                        end.answer.unwrap_or_default(),
                    ),
                    Some(failure) => (
                        toolhost_tools_shell::JobStatus::Failed,
                        failure.lines().next().unwrap_or_default().to_owned(),
                        failure,
                    ),
                }
            })?;
            return Ok(SubagentOutput::Background { job_id });
        }
        let end =
            Box::pin(run_child(host, settings, args.prompt, parent, cx.signal().clone())).await;
        if let Some(failure) = end.failure {
            return Err(ToolError::plain(failure));
        }
        let output = end
            .answer
            .filter(|a| !a.is_empty())
            .map(|text| vec![json!({"type": "text", "text": text})])
            .unwrap_or_default();
        Ok(SubagentOutput::Foreground { run_id: end.run_id, output, usage: end.usage })
    }

    fn render(&self, _args: &SubagentArgs, output: &SubagentOutput) -> Vec<ContentBlock> {
        let text = match output {
            SubagentOutput::Foreground { output, .. } => output
                .iter()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect::<String>(),
            SubagentOutput::Background { job_id } => {
                format!("started background subagent job {job_id}")
            }
        };
        vec![ContentBlock::text(text)]
    }

    /// The child's run and what it used, on its card (a workflow's children are compared by it).
    fn presentation_meta(&self, _args: &SubagentArgs, output: &SubagentOutput) -> Option<Value> {
        match output {
            SubagentOutput::Foreground { run_id, usage, .. } => {
                Some(json!({"runId": run_id, "usage": usage}))
            }
            SubagentOutput::Background { .. } => None,
        }
    }

    fn concurrency_safe(&self, _args: &SubagentArgs) -> bool {
        true
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let description = args.get("description").and_then(Value::as_str).unwrap_or("task");
        CallPresentation::new(CardKind::Generic, format!("Subagent: {description}"))
    }

    fn annotations(&self) -> ToolAnnotations {
        // Its children's calls may change anything; each is checked on its own.
        ToolAnnotations::default()
    }
}
