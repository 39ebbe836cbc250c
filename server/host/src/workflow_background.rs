//! What `workflow` and `ralph` share around one run: the runs going on in this process — a
//! `{resume: "<runId>"}` of one of them is refused with `RUN_ACTIVE` (two runs over one journal
//! would ask the same children twice and interleave their records), naming the job or call to
//! follow instead — and starting a run as a background job (`workflow-<n>`, `ralph-<n>`) that
//! keeps its run claimed until it ends.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_contract::tasks::{TaskControl, TaskEnd, TaskWork};
use toolhost_contract::{CancellationToken, TasksHandle, ToolContext, ToolError};

/// The error type name of a run refused because it is going on.
pub const ERROR_NAME: &str = "WorkflowError";
/// `{resume}` of a run that is still running in this process.
pub const RUN_ACTIVE: &str = "RUN_ACTIVE";

/// Where a running run can be followed.
#[derive(Clone, Debug)]
enum Follow {
    /// A foreground run: the call that runs it.
    Call(String),
    /// A background run: its job.
    Job(String),
}

/// The runs of one tool going on in this process, by run id.
#[derive(Clone, Default)]
pub struct ActiveRuns {
    runs: Arc<Mutex<HashMap<String, Follow>>>,
}

/// A run claimed as going on; dropping it (the run ended, however) releases it.
pub struct Claim {
    runs: ActiveRuns,
    run_id: String,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.runs.lock().remove(&self.run_id);
    }
}

impl ActiveRuns {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Follow>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `run_id` for the call `call_id`; `RUN_ACTIVE` when it is already going on.
    pub fn claim(&self, tool: &str, run_id: &str, call_id: &str) -> Result<Claim, ToolError> {
        let mut runs = self.lock();
        if let Some(follow) = runs.get(run_id) {
            let message = match follow {
                Follow::Job(job) => format!(
                    "{tool} run {run_id} is still running in this process as job {job}: read \
                     it with job_output {{\"job_id\": \"{job}\"}} (resume a run only once it \
                     stopped)"
                ),
                Follow::Call(call) => format!(
                    "{tool} run {run_id} is still running in this process (call {call}): wait \
                     for its result (resume a run only once it stopped)"
                ),
            };
            return Err(ToolError::typed(ERROR_NAME, RUN_ACTIVE, message));
        }
        runs.insert(run_id.to_owned(), Follow::Call(call_id.to_owned()));
        Ok(Claim { runs: self.clone(), run_id: run_id.to_owned() })
    }

    /// Run `run_id` now goes on as job `job` (unless it already ended).
    fn in_job(&self, run_id: &str, job: &str) {
        if let Some(follow) = self.lock().get_mut(run_id) {
            *follow = Follow::Job(job.to_owned());
        }
    }
}

/// Starts `run` as a background job of `kind` labelled `label`: it gets the job's stop signal
/// and progress, and its run stays claimed until it ends. `what` names the tool in the error
/// when this context keeps no jobs. Returns the job's id.
pub fn start<F, Fut>(
    cx: &ToolContext,
    kind: &str,
    label: &str,
    what: &str,
    claim: Claim,
    run: F,
) -> Result<String, ToolError>
where
    F: FnOnce(CancellationToken, crate::workflow_run::Progress) -> Fut + Send + 'static,
    Fut: Future<Output = TaskEnd> + Send + 'static,
{
    let Some(tasks) = cx.capability::<TasksHandle>() else {
        return Err(ToolError::plain(format!("{what} cannot run in the background here")));
    };
    let runs = claim.runs.clone();
    let run_id = claim.run_id.clone();
    let work: TaskWork = Box::new(move |control: TaskControl| {
        Box::pin(async move {
            let _claim = claim;
            run(control.stop, control.progress).await
        })
    });
    let job_id = tasks.start(kind, label, cx, work)?;
    runs.in_job(&run_id, &job_id);
    Ok(job_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_run_is_claimed_once_until_it_ends() {
        let runs = ActiveRuns::default();
        let claim = runs.claim("workflow", "wf_1", "c1").unwrap();
        let refused = runs.claim("workflow", "wf_1", "c2").err().unwrap();
        assert_eq!(refused.code(), Some(RUN_ACTIVE));
        assert!(refused.message.contains("call c1"), "{}", refused.message);
        runs.in_job("wf_1", "workflow-3");
        let refused = runs.claim("workflow", "wf_1", "c2").err().unwrap();
        assert!(refused.message.contains("job_output {\"job_id\": \"workflow-3\"}"));
        drop(claim);
        assert!(runs.claim("workflow", "wf_1", "c3").is_ok(), "released when the run ended");
        runs.in_job("wf_2", "workflow-4");
        assert!(runs.claim("workflow", "wf_2", "c4").is_ok(), "an ended job is not re-listed");
    }
}
