//! The contract's `BackgroundTasks` over the shell's job table: a tool outside the shell crate
//! (a long `run_code` program) becomes a background job that `job_output` reads (its progress
//! while it runs, its output once done), `job_kill` stops, and whose end is a notice.

use std::sync::Arc;
use toolhost_contract::{BackgroundTasks, TaskControl, TaskWork, ToolContext, ToolError};
use toolhost_tools_shell::{JobRegistry, JobStatus};

/// Background tasks kept in the shell's job table.
pub struct ShellTasks {
    jobs: Arc<JobRegistry>,
}

impl ShellTasks {
    pub fn new(jobs: Arc<JobRegistry>) -> Self {
        ShellTasks { jobs }
    }
}

impl BackgroundTasks for ShellTasks {
    fn start(
        &self,
        kind: &str,
        label: &str,
        cx: &ToolContext,
        work: TaskWork,
    ) -> Result<String, ToolError> {
        self.jobs.start_reporting_task(kind, label, cx, move |stop, progress| {
            let running = work(TaskControl { stop, progress });
            async move {
                let end = running.await;
                let status = if end.failed { JobStatus::Failed } else { JobStatus::Completed };
                (status, end.detail, end.output)
            }
        })
    }
}
