//! The `workflow` tool (docs/tools.md "workflow"): a JavaScript script that orchestrates child
//! runs of the own agent — `agent(prompt, {label, phase, schema})`, `parallel`, `pipeline`,
//! `phase`, `log` — on `run_code`'s runtime (`toolhost_tools_code::program`), each child a
//! `subagent` call under the workflow's call (`workflow_run`). Foreground or as a background job
//! (`workflow-<n>`), journaled so `{resume: "<runId>"}` re-runs the script with the answers
//! already given (`workflow_journal`), within a budget of tokens, cost and agents.
//!
//! Registered with `subagent` (only when `[agent]` can reach a model); `ralph` is its sibling
//! (`crate::ralph`).

use crate::host::{Host, HostError};
use crate::workflow_background::{self as background, ActiveRuns};
use crate::workflow_journal::{self as journal, EndRecord, Recorded, RunRecord};
use crate::workflow_run::{AgentEntry, Ask, Asked, Budget, Orchestra, RunUsage, new_run_id};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use std::time::Duration;
use toolhost_agent::AgentSettings;
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::schemars::JsonSchema;
use toolhost_contract::tasks::TaskEnd;
use toolhost_contract::{CancellationToken, Tool, ToolContext, ToolError};
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_tools_code::CodeConfig;
use toolhost_tools_code::program::{self, Dispatch, Program, Request, WORKFLOW};

pub const NAME: &str = "workflow";
/// The job kind of a background run (`workflow-<n>`).
pub const JOB_KIND: &str = "workflow";
/// Where the Return value's JSON is clipped, in UTF-16 code units.
pub const MAX_RESULT_CHARS: usize = 50_000;
/// How long a script may run, waiting for its children included (its budget bounds the cost).
const WALL: Duration = Duration::from_secs(24 * 60 * 60);

/// A phase a workflow announces.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields)]
pub struct PhaseInfo {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a workflow is.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Meta {
    /// A short name (the card's title).
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_use: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Vec<PhaseInfo>>,
}

/// `workflow`'s arguments: a new run (`meta`, `script`, `args`) or a resumed one (`resume`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields)]
pub struct WorkflowArgs {
    #[serde(default)]
    pub meta: Option<Meta>,
    /// The body of an async JavaScript function ending in `return <json>`.
    #[serde(default)]
    pub script: Option<String>,
    /// What the script sees as `args`.
    #[serde(default)]
    #[schemars(with = "Value")]
    pub args: Option<Value>,
    /// Stop cleanly once the children used this much (a resumed run keeps its budget unless
    /// given one).
    #[serde(default)]
    pub budget: Option<Budget>,
    /// The id of an earlier run to resume: its script runs again, and the children that had
    /// answered are not asked again.
    #[serde(default)]
    pub resume: Option<String>,
    /// Run as a background job (`job_output` shows its progress).
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// `workflow`'s value.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(rename_all = "camelCase")]
pub struct WorkflowOutput {
    pub run_id: String,
    pub agents_started: u64,
    /// What the script returned (`null` for a background start or a run stopped at its budget).
    #[schemars(with = "Value")]
    pub result: Value,
    /// `completed`, `budget-limited` or `background`.
    pub status: String,
    /// The workflow's name (`meta.name`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// What stopped the run at its budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    pub usage: RunUsage,
    /// Every child: its label, phase, usage (and, at the budget, its answer).
    pub agents: Vec<AgentEntry>,
}

/// Registers `workflow` when `subagent` is (a model is reachable).
pub fn install(
    host: &Arc<Host>,
    settings: &AgentSettings,
    config: &crate::config::Config,
) -> Result<(), HostError> {
    if settings.missing_key().is_some() {
        return Ok(());
    }
    let mut code = config.code.clone();
    code.wall = WALL;
    let tool = WorkflowTool { host: Arc::downgrade(host), code, active: ActiveRuns::default() };
    let _ = host.registry().register(tool)?;
    host.agent_permissions().add_delegating_tool(NAME);
    Ok(())
}

struct WorkflowTool {
    host: Weak<Host>,
    code: CodeConfig,
    /// The runs going on in this process (a resume of one is refused).
    active: ActiveRuns,
}

/// `s` clipped at `max` UTF-16 code units, with how much more there was.
pub fn clip_utf16(s: &str, max: usize) -> String {
    let total: usize = s.chars().map(char::len_utf16).sum();
    if total <= max {
        return s.to_owned();
    }
    let mut kept = 0;
    let mut end = 0;
    for (at, c) in s.char_indices() {
        if kept + c.len_utf16() > max {
            break;
        }
        kept += c.len_utf16();
        end = at + c.len_utf8();
    }
    format!("{}\n… [truncated: {} more characters]", &s[..end], total - kept)
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "agent" } else { "agents" }
}

/// The Native text of a run.
pub fn render_text(output: &WorkflowOutput) -> String {
    match output.status.as_str() {
        "background" => format!(
            "started background workflow job {} (run {})",
            output.job_id.as_deref().unwrap_or("?"),
            output.run_id
        ),
        "budget-limited" => {
            let partial: Vec<Value> =
                output.agents.iter().map(|a| json!({"step": a.step, "label": a.label, "phase": a.phase, "tokens": a.tokens, "result": a.result})).collect();
            let json = serde_json::to_string_pretty(&partial).unwrap_or_default();
            format!(
                "workflow \"{}\" stopped at its budget ({}) after {} {}; resume it with \
                 {{\"resume\": \"{}\"}} and a larger budget.\nPartial results:\n{}",
                output.name,
                output.limit.as_deref().unwrap_or("budget reached"),
                output.agents_started,
                plural(output.agents_started),
                output.run_id,
                clip_utf16(&json, MAX_RESULT_CHARS)
            )
        }
        _ => {
            let json = serde_json::to_string_pretty(&output.result).unwrap_or_default();
            format!(
                "workflow \"{}\" completed ({} {}).\nReturn value:\n{}",
                output.name,
                output.agents_started,
                plural(output.agents_started),
                clip_utf16(&json, MAX_RESULT_CHARS)
            )
        }
    }
}

/// A run ready to go: new, or resumed from the journal.
struct Prepared {
    run_id: String,
    meta: Meta,
    script: String,
    args: Value,
    budget: Budget,
    recorded: Recorded,
    resumed: bool,
}

async fn prepare(host: &Host, args: &WorkflowArgs) -> Result<Prepared, ToolError> {
    if let Some(run_id) = &args.resume {
        if args.meta.is_some() || args.script.is_some() || args.args.is_some() {
            return Err(ToolError::plain(
                "a resumed workflow runs its recorded meta, script and args: give only `resume` \
                 (and a budget)",
            ));
        }
        let recorded = journal::load(host, run_id)
            .await
            .map_err(|e| ToolError::plain(format!("cannot read the journal: {e}")))?
            .ok_or_else(|| ToolError::plain(format!("no workflow run {run_id} in this session")))?;
        let start = recorded.start.clone().ok_or_else(|| ToolError::plain("no run start"))?;
        if start.tool != NAME {
            return Err(ToolError::plain(format!(
                "run {run_id} is a {} run; resume it with that tool",
                start.tool
            )));
        }
        let a = &start.arguments;
        let meta: Meta = serde_json::from_value(a["meta"].clone())
            .map_err(|e| ToolError::plain(format!("the recorded run is unreadable: {e}")))?;
        let budget = match &args.budget {
            Some(budget) => budget.clone(),
            None => serde_json::from_value(a["budget"].clone()).unwrap_or_default(),
        };
        return Ok(Prepared {
            run_id: run_id.clone(),
            meta,
            script: a["script"].as_str().unwrap_or_default().to_owned(),
            args: a.get("args").cloned().unwrap_or(Value::Null),
            budget,
            recorded,
            resumed: true,
        });
    }
    let (Some(meta), Some(script)) = (args.meta.clone(), args.script.clone()) else {
        return Err(ToolError::plain("a workflow needs `meta` and `script` (or `resume`)"));
    };
    if meta.name.trim().is_empty() {
        return Err(ToolError::plain("invalid meta.name: expected a non-empty string"));
    }
    Ok(Prepared {
        run_id: new_run_id(),
        meta,
        script,
        args: args.args.clone().unwrap_or(Value::Null),
        budget: args.budget.clone().unwrap_or_default(),
        recorded: Recorded::default(),
        resumed: false,
    })
}

/// What the script's requests do: `agent` asks a child, `phase` names the phase.
fn dispatch(orchestra: &Arc<Orchestra>) -> Dispatch {
    let orchestra = Arc::clone(orchestra);
    Arc::new(move |request: Request| {
        let orchestra = Arc::clone(&orchestra);
        Box::pin(async move {
            match request.name.as_str() {
                "phase" => {
                    let title = request.arguments["title"].as_str().unwrap_or_default();
                    orchestra.set_phase(title);
                    Ok(Value::Null)
                }
                "agent" => {
                    let ask = Ask::from_request(&request.arguments);
                    match orchestra.ask(ask, &request.cancel).await {
                        Asked::Value(value) => Ok(value),
                        Asked::Fatal(message) => Err((message, Some("FATAL".to_owned()))),
                        Asked::Stopped => {
                            // The run is stopping (its budget, or cancelled): this never settles.
                            request.cancel.cancelled().await;
                            Err(("the run stopped".to_owned(), None))
                        }
                    }
                }
                other => Err((format!("unknown request {other}"), Some("FATAL".to_owned()))),
            }
        })
    })
}

/// Runs a prepared workflow to its end.
async fn run(
    host: Arc<Host>,
    prepared: Prepared,
    call_id: String,
    code: CodeConfig,
    signal: CancellationToken,
    progress: Option<crate::workflow_run::Progress>,
) -> Result<WorkflowOutput, ToolError> {
    let arguments = json!({
        "meta": prepared.meta, "script": prepared.script, "args": prepared.args,
        "budget": prepared.budget,
    });
    let start = RunRecord {
        run_id: prepared.run_id.clone(),
        tool: NAME.to_owned(),
        call_id: call_id.clone(),
        arguments,
        resumed: prepared.resumed,
    };
    journal::record(&host, journal::RUN, &start).await;
    let title = format!("workflow \"{}\"", prepared.meta.name);
    let orchestra = Orchestra::new(
        Arc::clone(&host),
        prepared.run_id.clone(),
        call_id,
        title,
        prepared.recorded,
        prepared.budget,
        &signal,
        progress,
    );
    let logs: toolhost_tools_code::Progress = {
        let orchestra = Arc::clone(&orchestra);
        Arc::new(move |text: String| orchestra.set_logs(text))
    };
    let ran = program::run(Program {
        kind: WORKFLOW,
        code: prepared.script,
        data: json!({ "args": prepared.args }),
        config: code,
        signal: orchestra.stop.clone(),
        dispatch: dispatch(&orchestra),
        progress: Some(logs),
    })
    .await;
    let limit = orchestra.limit();
    let (status, result) = match ran.outcome {
        Ok(result) => ("completed", Ok(result.unwrap_or(Value::Null))),
        Err(_) if limit.is_some() && !signal.is_cancelled() => ("budget-limited", Ok(Value::Null)),
        Err(failure) if signal.is_cancelled() => ("cancelled", Err(failure)),
        Err(failure) => ("failed", Err(failure)),
    };
    // The run's end is journaled however it ended.
    journal::record(
        &host,
        journal::END,
        EndRecord {
            run_id: orchestra.run_id.clone(),
            status: status.to_owned(),
            agents_started: orchestra.agents_started(),
        },
    )
    .await;
    let result = match result {
        Ok(result) => result,
        Err(failure) => {
            let mut message = if status == "cancelled" {
                "workflow run was cancelled".to_owned()
            } else {
                format!("workflow run failed: {}", failure.message)
            };
            if !ran.logs.is_empty() {
                message.push_str("\nLogs:\n");
                message.push_str(&ran.logs.join("\n"));
            }
            return Err(ToolError::plain(message));
        }
    };
    Ok(WorkflowOutput {
        run_id: orchestra.run_id.clone(),
        agents_started: orchestra.agents_started(),
        result,
        status: status.to_owned(),
        name: prepared.meta.name,
        job_id: None,
        limit: if status == "budget-limited" { limit } else { None },
        usage: orchestra.usage(),
        agents: orchestra.agents(status == "budget-limited"),
    })
}

const ABOUT: &str = "Runs a workflow: a JavaScript script that orchestrates fresh child agents \
(each with its own conversation, on the same workspace and tools) and returns a JSON value. \
`script` is the body of an async function: use top-level `await` and end with `return <json>`. \
Its globals: `args` (the call's `args`); `agent(prompt, {label, phase, schema})` starts a child \
and resolves to its final text, or, given a JSON Schema `schema`, to its answer as a value \
matching it, or `null` if the child failed; `parallel(thunks)` runs functions together and \
resolves to all their results; `pipeline(items, ...stages)` passes each item through the stages \
`(prev, item, i)` in turn, items independently; `phase(title)` names the phase later agents \
belong to; `log(msg)` writes a progress line. Unknown agent options, a bad schema or a cap \
(1,000 agents a run, 4,096 items per parallel/pipeline call) fail the run. Scripts must be \
deterministic: there is no `Date.now()`, no `new Date()` without a time and no `Math.random()`, \
so `{resume: \"<runId>\"}` can re-run a stopped run (after a crash or at its budget) and reuse \
the answers its agents already gave. `budget: {tokens, cost, agents}` stops the run cleanly \
with its partial results; `run_in_background` makes it a job that job_output follows.";

impl Tool for WorkflowTool {
    type Args = WorkflowArgs;
    type Output = WorkflowOutput;

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> String {
        ABOUT.to_owned()
    }

    async fn call(&self, args: WorkflowArgs, cx: ToolContext) -> Result<WorkflowOutput, ToolError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| ToolError::plain("workflows are not available in this process"))?;
        let prepared = prepare(&host, &args).await?;
        let code = self.code.clone();
        let call_id = cx.call_id().to_owned();
        let claim = self.active.claim(NAME, &prepared.run_id, &call_id)?;
        if args.run_in_background != Some(true) {
            let _claim = claim;
            return Box::pin(run(host, prepared, call_id, code, cx.signal().clone(), None)).await;
        }
        let (run_id, name) = (prepared.run_id.clone(), prepared.meta.name.clone());
        let job_id = background::start(&cx, JOB_KIND, &name, "workflows", claim, {
            move |stop, progress| async move {
                match run(host, prepared, call_id, code, stop, Some(progress)).await {
                    Ok(output) => TaskEnd {
                        failed: false,
                        detail: output.status.clone(),
                        output: render_text(&output),
                    },
                    Err(err) => {
                        TaskEnd { failed: true, detail: "failed".to_owned(), output: err.message }
                    }
                }
            }
        })?;
        Ok(WorkflowOutput {
            run_id,
            agents_started: 0,
            result: Value::Null,
            status: "background".to_owned(),
            name,
            job_id: Some(job_id),
            limit: None,
            usage: RunUsage::default(),
            agents: Vec::new(),
        })
    }

    fn render(&self, _args: &WorkflowArgs, output: &WorkflowOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_text(output))]
    }

    /// The run, its status and what its children used (each, and in all), on its card.
    fn presentation_meta(&self, _args: &WorkflowArgs, output: &WorkflowOutput) -> Option<Value> {
        let agents: Vec<AgentEntry> =
            output.agents.iter().map(|a| AgentEntry { result: None, ..a.clone() }).collect();
        Some(json!({
            "runId": output.run_id, "status": output.status, "usage": output.usage,
            "agents": agents,
        }))
    }

    fn concurrency_safe(&self, _args: &WorkflowArgs) -> bool {
        true
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let name = args.pointer("/meta/name").and_then(Value::as_str);
        let title = match (name, args.get("resume").and_then(Value::as_str)) {
            (Some(name), _) => format!("Workflow: {name}"),
            (None, Some(run)) => format!("Workflow: resume {run}"),
            (None, None) => "Workflow".to_owned(),
        };
        CallPresentation::new(CardKind::Generic, title)
    }

    fn annotations(&self) -> ToolAnnotations {
        // Its children's calls may change anything; each is checked on its own.
        ToolAnnotations::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_return_value_is_clipped_in_utf16_units() {
        assert_eq!(clip_utf16("abc", 3), "abc");
        assert_eq!(clip_utf16("abcd", 3), "abc\n… [truncated: 1 more characters]");
        // An astral character is two units and is never split.
        assert_eq!(clip_utf16("a😀b", 2), "a\n… [truncated: 3 more characters]");
    }

    #[test]
    fn the_native_text_names_the_workflow_and_its_agents() {
        let output = WorkflowOutput {
            run_id: "wf_1".to_owned(),
            agents_started: 1,
            result: json!({"a": 1}),
            status: "completed".to_owned(),
            name: "w".to_owned(),
            job_id: None,
            limit: None,
            usage: RunUsage::default(),
            agents: Vec::new(),
        };
        assert_eq!(
            render_text(&output),
            "workflow \"w\" completed (1 agent).\nReturn value:\n{\n  \"a\": 1\n}"
        );
    }
}
