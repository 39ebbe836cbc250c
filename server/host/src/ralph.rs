//! The `ralph` tool (docs/tools.md "ralph"): an objective worked on round by round, each round
//! one fresh child that sees only the objective, the round number and cap, that the workspace is
//! the authority, and the previous round's report; it answers with a report (`continue`,
//! `complete` or `blocked`). A `complete` report is checked by one more fresh child that sees
//! only the objective and the evidence (`[workflow] verify_completion`): when it disagrees, the
//! run goes on with its reason in the next round's handoff, so "done" is not the worker's word
//! alone. Children, journal, resume, budget and background are `workflow`'s (`workflow_run`).

use crate::host::{Host, HostError};
use crate::workflow_background::{self as background, ActiveRuns};
use crate::workflow_config::WorkflowSettings;
use crate::workflow_journal::{self as journal, EndRecord, Recorded, RunRecord};
use crate::workflow_run::{
    AgentEntry, Ask, Asked, Budget, Orchestra, Progress, RunUsage, new_run_id,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::schemars::JsonSchema;
use toolhost_contract::tasks::TaskEnd;
use toolhost_contract::{CancellationToken, Tool, ToolContext, ToolError};
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;

pub const NAME: &str = "ralph";
pub const JOB_KIND: &str = "ralph";
/// The Native text's bound, in characters.
pub const MAX_TEXT_CHARS: usize = 16_384;

/// `ralph`'s arguments: a new run (`objective`, `maxRounds`) or a resumed one (`resume`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RalphArgs {
    /// What the rounds work towards, with everything a fresh worker needs to know.
    #[serde(default)]
    pub objective: Option<String>,
    /// At most this many rounds (at most 256, the default).
    #[serde(default)]
    pub max_rounds: Option<u32>,
    #[serde(default)]
    pub budget: Option<Budget>,
    /// The id of an earlier run to resume (its rounds that had reported are not run again).
    #[serde(default)]
    pub resume: Option<String>,
    #[serde(default, rename = "run_in_background")]
    pub run_in_background: Option<bool>,
}

/// How the run ended.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(rename_all = "camelCase")]
pub struct RalphResult {
    /// `complete`, `blocked` or `budget-limited` (its budget or its rounds ran out).
    pub status: String,
    pub rounds_started: u64,
    /// The last good report (`null` when no round reported).
    #[schemars(with = "Value")]
    pub report: Value,
}

/// `ralph`'s value.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(rename_all = "camelCase")]
pub struct RalphOutput {
    pub run_id: String,
    pub agents_started: u64,
    /// `null` for a background start.
    pub result: Option<RalphResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    pub usage: RunUsage,
    pub agents: Vec<AgentEntry>,
}

/// Registers `ralph` when `subagent` is (a model is reachable).
pub fn install(
    host: &Arc<Host>,
    agent: &toolhost_agent::AgentSettings,
    settings: &WorkflowSettings,
) -> Result<(), HostError> {
    if agent.missing_key().is_some() {
        return Ok(());
    }
    let tool = RalphTool {
        host: Arc::downgrade(host),
        settings: settings.clone(),
        active: ActiveRuns::default(),
    };
    let _ = host.registry().register(tool)?;
    host.agent_permissions().add_delegating_tool(NAME);
    Ok(())
}

struct RalphTool {
    host: Weak<Host>,
    settings: WorkflowSettings,
    /// The runs going on in this process (a resume of one is refused).
    active: ActiveRuns,
}

/// A worker's report.
pub fn report_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["status", "summary", "evidence", "nextSteps", "blocker"],
        "properties": {
            "status": {"enum": ["continue", "complete", "blocked"]},
            "summary": {"type": "string"},
            "evidence": strings,
            "nextSteps": strings,
            "blocker": {"type": ["string", "null"]},
        },
    })
}

fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["agree", "reason"],
        "properties": {"agree": {"type": "boolean"}, "reason": {"type": "string"}},
    })
}

/// Why a schema-valid report breaks the round contract (`None`: it keeps it).
pub fn contract_broken(report: &Value) -> Option<&'static str> {
    let list = |key: &str| report.get(key).and_then(Value::as_array).map_or(0, Vec::len);
    let blocker = report.get("blocker").and_then(Value::as_str).map_or("", str::trim);
    match report.get("status").and_then(Value::as_str) {
        Some("continue") if list("nextSteps") == 0 => Some("a `continue` report needs nextSteps"),
        Some("complete") if list("evidence") == 0 => Some("a `complete` report needs evidence"),
        Some("complete") if list("nextSteps") > 0 => Some("a `complete` report has no nextSteps"),
        Some("blocked") if blocker.is_empty() => Some("a `blocked` report needs a blocker"),
        _ => None,
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn round_prompt(
    objective: &str,
    round: u64,
    max: u64,
    previous: &Value,
    rejected: Option<&str>,
) -> String {
    let mut prompt = format!(
        "You are one round of a task worked on in rounds, each by a fresh worker.\n\n\
         Objective:\n{objective}\n\nThis is round {round} of at most {max}. The workspace is the \
         authority: check the current state of the files yourself rather than trusting any \
         report.\n\n"
    );
    if previous.is_null() {
        prompt.push_str("This is the first round: there is no earlier report.\n");
    } else {
        prompt.push_str(&format!("The previous round's report:\n{}\n", pretty(previous)));
    }
    if let Some(reason) = rejected {
        prompt.push_str(&format!(
            "\nThe previous round reported the objective complete, but an independent check \
             disagreed: {reason}\n"
        ));
    }
    prompt.push_str(
        "\nDo as much of the objective as you can, then report: status `continue` with the \
         nextSteps left, `complete` with the evidence (and no nextSteps), or `blocked` with the \
         blocker.",
    );
    prompt
}

fn check_prompt(objective: &str, evidence: &Value) -> String {
    format!(
        "Check a claim that an objective is complete.\n\nObjective:\n{objective}\n\nEvidence \
         offered:\n{}\n\nThe workspace is the authority: verify the evidence against the files \
         yourself. Agree only if the objective is met.",
        pretty(evidence)
    )
}

/// The Native text, bounded to [`MAX_TEXT_CHARS`].
pub fn render_text(output: &RalphOutput) -> String {
    let Some(result) = &output.result else {
        return format!(
            "started background ralph job {} (run {})",
            output.job_id.as_deref().unwrap_or("?"),
            output.run_id
        );
    };
    let head = match result.status.as_str() {
        "complete" => "Ralph worker reported completion",
        "blocked" => "Ralph worker reported a blocker",
        _ => "Ralph run stopped at its budget",
    };
    let text = format!(
        "{head} after {} round(s).\nFinal report:\n{}",
        result.rounds_started,
        pretty(&result.report)
    );
    bounded(&text)
}

fn bounded(text: &str) -> String {
    const MORE: &str = "\n… [truncated]";
    if text.chars().count() <= MAX_TEXT_CHARS {
        return text.to_owned();
    }
    let keep = MAX_TEXT_CHARS - MORE.chars().count();
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(MORE);
    out
}

struct Prepared {
    run_id: String,
    objective: String,
    max_rounds: u32,
    budget: Budget,
    recorded: Recorded,
    resumed: bool,
}

async fn prepare(
    host: &Host,
    args: &RalphArgs,
    settings: &WorkflowSettings,
) -> Result<Prepared, ToolError> {
    let ceiling = settings.max_rounds;
    if let Some(run_id) = &args.resume {
        let recorded = journal::load(host, run_id)
            .await
            .map_err(|e| ToolError::plain(format!("cannot read the journal: {e}")))?
            .ok_or_else(|| ToolError::plain(format!("no ralph run {run_id} in this session")))?;
        let start = recorded.start.clone().ok_or_else(|| ToolError::plain("no run start"))?;
        if start.tool != NAME {
            return Err(ToolError::plain(format!(
                "run {run_id} is a {} run; resume it with that tool",
                start.tool
            )));
        }
        let a = &start.arguments;
        let budget = match &args.budget {
            Some(budget) => budget.clone(),
            None => serde_json::from_value(a["budget"].clone()).unwrap_or_default(),
        };
        let max_rounds = a["maxRounds"].as_u64().and_then(|n| u32::try_from(n).ok());
        return Ok(Prepared {
            run_id: run_id.clone(),
            objective: a["objective"].as_str().unwrap_or_default().to_owned(),
            max_rounds: max_rounds.unwrap_or(ceiling).min(ceiling),
            budget,
            recorded,
            resumed: true,
        });
    }
    let objective = args.objective.clone().filter(|o| !o.trim().is_empty()).ok_or_else(|| {
        ToolError::plain("invalid objective: expected a non-empty string (or `resume`)")
    })?;
    let max_rounds = args.max_rounds.unwrap_or(ceiling);
    if max_rounds == 0 || max_rounds > ceiling {
        return Err(ToolError::plain(format!("invalid maxRounds: expected 1 to {ceiling}")));
    }
    Ok(Prepared {
        run_id: new_run_id(),
        objective,
        max_rounds,
        budget: args.budget.clone().unwrap_or_default(),
        recorded: Recorded::default(),
        resumed: false,
    })
}

async fn run(
    host: Arc<Host>,
    prepared: Prepared,
    call_id: String,
    verify: bool,
    signal: CancellationToken,
    progress: Option<Progress>,
) -> Result<RalphOutput, ToolError> {
    let start = RunRecord {
        run_id: prepared.run_id.clone(),
        tool: NAME.to_owned(),
        call_id: call_id.clone(),
        arguments: json!({
            "objective": prepared.objective, "maxRounds": prepared.max_rounds,
            "budget": prepared.budget,
        }),
        resumed: prepared.resumed,
    };
    journal::record(&host, journal::RUN, &start).await;
    let orchestra = Orchestra::new(
        Arc::clone(&host),
        prepared.run_id.clone(),
        call_id,
        "ralph".to_owned(),
        prepared.recorded,
        prepared.budget,
        &signal,
        progress,
    );
    let max = u64::from(prepared.max_rounds);
    let objective = prepared.objective;
    let mut report = Value::Null;
    let mut rejected: Option<String> = None;
    let mut rounds = 0u64;
    let mut status = "budget-limited";
    let token = orchestra.stop.clone();
    let failed = |round: u64, why: &str, report: &Value| {
        ToolError::plain(format!(
            "ralph round {round} failed: {why}\nLast good report:\n{}",
            pretty(report)
        ))
    };
    while rounds < max {
        rounds += 1;
        orchestra.set_phase(&format!("round {rounds} of {max}"));
        let ask = Ask {
            prompt: round_prompt(&objective, rounds, max, &report, rejected.as_deref()),
            label: Some(format!("round {rounds}")),
            phase: None,
            schema: Some(report_schema()),
        };
        let answer = match orchestra.ask(ask, &token).await {
            Asked::Value(value) => value,
            Asked::Fatal(message) => return Err(failed(rounds, &message, &report)),
            Asked::Stopped => {
                rounds -= 1;
                break;
            }
        };
        if signal.is_cancelled() {
            return Err(ToolError::plain("ralph run was cancelled"));
        }
        if answer.is_null() {
            return Err(failed(rounds, "the worker gave no valid report", &report));
        }
        if let Some(why) = contract_broken(&answer) {
            return Err(failed(rounds, why, &report));
        }
        report = answer;
        rejected = None;
        match report["status"].as_str() {
            Some("blocked") => {
                status = "blocked";
                break;
            }
            Some("complete") if !verify => {
                status = "complete";
                break;
            }
            Some("complete") => {
                let ask = Ask {
                    prompt: check_prompt(&objective, &report["evidence"]),
                    label: Some(format!("check {rounds}")),
                    phase: None,
                    schema: Some(verdict_schema()),
                };
                match orchestra.ask(ask, &token).await {
                    Asked::Value(verdict) if verdict["agree"] == true => {
                        status = "complete";
                        break;
                    }
                    Asked::Value(verdict) => {
                        let reason = verdict["reason"].as_str().unwrap_or(
                            "the completion check gave no verdict, so completion is not confirmed",
                        );
                        rejected = Some(reason.to_owned());
                    }
                    Asked::Fatal(message) => return Err(failed(rounds, &message, &report)),
                    Asked::Stopped => break,
                }
            }
            _ => {}
        }
    }
    if signal.is_cancelled() {
        return Err(ToolError::plain("ralph run was cancelled"));
    }
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
    Ok(RalphOutput {
        run_id: orchestra.run_id.clone(),
        agents_started: orchestra.agents_started(),
        result: Some(RalphResult { status: status.to_owned(), rounds_started: rounds, report }),
        job_id: None,
        usage: orchestra.usage(),
        agents: orchestra.agents(false),
    })
}

const ABOUT: &str = "Works on an objective in rounds: each round is a fresh child agent that \
sees only the objective, the round number, and the previous round's report (the workspace is \
the authority), does what it can and reports `continue` (with nextSteps), `complete` (with \
evidence) or `blocked` (with a blocker). A `complete` report is checked by one more fresh agent \
that sees only the objective and the evidence; if it disagrees, the rounds go on. `maxRounds` \
is at most 256 (the default). `budget: {tokens, cost, agents}` stops the run cleanly with the \
last report; `{resume: \"<runId>\"}` continues a stopped run without redoing its reported \
rounds; `run_in_background` makes it a job that job_output follows.";

impl Tool for RalphTool {
    type Args = RalphArgs;
    type Output = RalphOutput;

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> String {
        ABOUT.to_owned()
    }

    async fn call(&self, args: RalphArgs, cx: ToolContext) -> Result<RalphOutput, ToolError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| ToolError::plain("ralph is not available in this process"))?;
        let prepared = prepare(&host, &args, &self.settings).await?;
        let verify = self.settings.verify_completion;
        let call_id = cx.call_id().to_owned();
        let claim = self.active.claim(NAME, &prepared.run_id, &call_id)?;
        if args.run_in_background != Some(true) {
            let _claim = claim;
            return Box::pin(run(host, prepared, call_id, verify, cx.signal().clone(), None)).await;
        }
        let run_id = prepared.run_id.clone();
        let label: String = prepared.objective.chars().take(60).collect();
        let job_id = background::start(&cx, JOB_KIND, &label, "ralph", claim, {
            move |stop, progress| async move {
                match run(host, prepared, call_id, verify, stop, Some(progress)).await {
                    Ok(output) => TaskEnd {
                        failed: false,
                        detail: output
                            .result
                            .as_ref()
                            .map_or("ended", |r| r.status.as_str())
                            .to_owned(),
                        output: render_text(&output),
                    },
                    Err(err) => {
                        TaskEnd { failed: true, detail: "failed".to_owned(), output: err.message }
                    }
                }
            }
        })?;
        Ok(RalphOutput {
            run_id,
            agents_started: 0,
            result: None,
            job_id: Some(job_id),
            usage: RunUsage::default(),
            agents: Vec::new(),
        })
    }

    fn render(&self, _args: &RalphArgs, output: &RalphOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_text(output))]
    }

    /// The run, its status and what its children used (each, and in all), on its card.
    fn presentation_meta(&self, _args: &RalphArgs, output: &RalphOutput) -> Option<Value> {
        Some(json!({
            "runId": output.run_id,
            "status": output.result.as_ref().map(|r| r.status.clone()),
            "usage": output.usage, "agents": output.agents,
        }))
    }

    fn concurrency_safe(&self, _args: &RalphArgs) -> bool {
        true
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let title = match (args.get("objective").and_then(Value::as_str), args.get("resume")) {
            (Some(objective), _) => {
                let line = objective.lines().next().unwrap_or_default();
                let short: String = line.chars().take(60).collect();
                format!("Ralph: {short}")
            }
            (None, Some(run)) => format!("Ralph: resume {}", run.as_str().unwrap_or("?")),
            (None, None) => "Ralph".to_owned(),
        };
        CallPresentation::new(CardKind::Generic, title)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_contract_is_checked_beyond_the_schema() {
        let report = |status: &str, evidence: &[&str], next: &[&str], blocker: Value| json!({"status": status, "summary": "s", "evidence": evidence, "nextSteps": next, "blocker": blocker});
        assert_eq!(contract_broken(&report("continue", &[], &["a"], Value::Null)), None);
        assert!(contract_broken(&report("continue", &[], &[], Value::Null)).is_some());
        assert_eq!(contract_broken(&report("complete", &["e"], &[], Value::Null)), None);
        assert!(contract_broken(&report("complete", &["e"], &["more"], Value::Null)).is_some());
        assert!(contract_broken(&report("blocked", &[], &[], Value::Null)).is_some());
        assert_eq!(contract_broken(&report("blocked", &[], &[], json!("no key"))), None);
    }

    #[test]
    fn the_text_is_bounded() {
        let long = "x".repeat(20_000);
        let text = bounded(&long);
        assert_eq!(text.chars().count(), MAX_TEXT_CHARS);
        assert!(text.ends_with("\n… [truncated]"));
    }
}
