//! `job_output`, `job_list` and `job_kill`: the background jobs of the calling session.

use crate::jobs::{JobRegistry, JobSnapshot, owner_of};
use crate::render;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;

/// How long `job_output` waits by default, and at most.
const DEFAULT_WAIT_MS: f64 = 30_000.0;
const MAX_WAIT_MS: f64 = 600_000.0;

fn check_job_id(id: &str) -> Result<(), ToolError> {
    if id.trim().is_empty() {
        let shown = serde_json::to_string(id).unwrap_or_default();
        return Err(ToolError::plain(format!(
            "invalid job_id: expected a non-empty string, got {shown}"
        )));
    }
    Ok(())
}

fn titled(verb: &str, args: &Value) -> CallPresentation {
    match args.get("job_id").and_then(Value::as_str) {
        Some(id) => CallPresentation::new(CardKind::Generic, format!("{verb} {id}")),
        None => CallPresentation::new(CardKind::Generic, verb),
    }
}

/// Arguments of `job_output`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct JobOutputArgs {
    /// The job's id (`bash-1`, …).
    pub job_id: String,
    /// Wait for the job to finish first (up to timeout_ms).
    #[serde(default)]
    pub wait: Option<bool>,
    /// How long to wait, in milliseconds (default 30000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<f64>,
}

/// Output not read before, and the job's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobOutputValue {
    pub text: String,
    pub job: JobSnapshot,
}

pub struct JobOutputTool {
    jobs: Arc<JobRegistry>,
}

impl JobOutputTool {
    pub fn new(jobs: Arc<JobRegistry>) -> Self {
        JobOutputTool { jobs }
    }
}

impl Tool for JobOutputTool {
    type Args = JobOutputArgs;
    type Output = JobOutputValue;

    fn name(&self) -> &str {
        "job_output"
    }

    fn description(&self) -> String {
        "Reads the output a background job wrote since the last job_output call, then its \
         status. With wait, first waits for the job to finish (up to timeout_ms, default 30000)."
            .to_owned()
    }

    async fn call(
        &self,
        args: JobOutputArgs,
        cx: ToolContext,
    ) -> Result<JobOutputValue, ToolError> {
        check_job_id(&args.job_id)?;
        let wait = match args.wait {
            Some(true) => {
                let ms = args.timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS);
                // Checked even when the job has already finished.
                if ms.is_nan() || ms <= 0.0 {
                    return Err(ToolError::plain(format!(
                        "invalid wait timeout: expected a positive number of milliseconds, got {}",
                        render::js_number(ms)
                    )));
                }
                Some(crate::bash::Millis(ms).duration())
            }
            _ => None,
        };
        let (text, job) = self.jobs.output(&args.job_id, &owner_of(&cx), wait, cx.signal()).await?;
        Ok(JobOutputValue { text, job })
    }

    fn render(&self, _args: &JobOutputArgs, output: &JobOutputValue) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render::job_output(&output.text, &output.job))]
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        titled("Output of", args)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: false,
            open_world: false,
        }
    }
}

/// Arguments of `job_list` (none).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct JobListArgs {}

pub struct JobListTool {
    jobs: Arc<JobRegistry>,
}

impl JobListTool {
    pub fn new(jobs: Arc<JobRegistry>) -> Self {
        JobListTool { jobs }
    }
}

impl Tool for JobListTool {
    type Args = JobListArgs;
    type Output = Vec<JobSnapshot>;

    fn name(&self) -> &str {
        "job_list"
    }

    fn description(&self) -> String {
        "Lists this session's background jobs: id, kind, status and command.".to_owned()
    }

    async fn call(
        &self,
        _args: JobListArgs,
        cx: ToolContext,
    ) -> Result<Vec<JobSnapshot>, ToolError> {
        Ok(self.jobs.list(&owner_of(&cx)))
    }

    fn render(&self, _args: &JobListArgs, output: &Vec<JobSnapshot>) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render::job_list(output))]
    }

    fn present_call(&self, _args: &Value) -> CallPresentation {
        CallPresentation::new(CardKind::Generic, "Background jobs")
    }

    fn concurrency_safe(&self, _args: &JobListArgs) -> bool {
        true
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::READ_ONLY
    }
}

/// Arguments of `job_kill`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct JobKillArgs {
    /// The job's id.
    pub job_id: String,
    /// Why it is stopped (shown to the person).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Whether a stop was requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KillOutcome {
    CancellationRequested,
    AlreadyFinished,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobKillValue {
    pub outcome: KillOutcome,
    pub job: JobSnapshot,
}

pub struct JobKillTool {
    jobs: Arc<JobRegistry>,
}

impl JobKillTool {
    pub fn new(jobs: Arc<JobRegistry>) -> Self {
        JobKillTool { jobs }
    }
}

impl Tool for JobKillTool {
    type Args = JobKillArgs;
    type Output = JobKillValue;

    fn name(&self) -> &str {
        "job_kill"
    }

    fn description(&self) -> String {
        "Stops a background job (SIGTERM to its process group, then SIGKILL).".to_owned()
    }

    async fn call(&self, args: JobKillArgs, cx: ToolContext) -> Result<JobKillValue, ToolError> {
        check_job_id(&args.job_id)?;
        let (requested, job) = self.jobs.kill(&args.job_id, &owner_of(&cx))?;
        let outcome = if requested {
            KillOutcome::CancellationRequested
        } else {
            KillOutcome::AlreadyFinished
        };
        Ok(JobKillValue { outcome, job })
    }

    fn render(&self, _args: &JobKillArgs, output: &JobKillValue) -> Vec<ContentBlock> {
        let text = match output.outcome {
            KillOutcome::CancellationRequested => {
                format!("requested cancellation of job {}", output.job.id)
            }
            KillOutcome::AlreadyFinished => format!(
                "job {} had already finished {}",
                output.job.id,
                render::status_line(&output.job)
            ),
        };
        vec![ContentBlock::text(text)]
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        titled("Stop", args)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { read_only: false, destructive: true, idempotent: true, open_world: false }
    }
}
