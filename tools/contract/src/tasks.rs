//! The background-task seam: how a tool turns long work into a background job (`job_output`
//! reads it, `job_kill` stops it, a notice says when it ended) without depending on the crate
//! that keeps the jobs. The host implements it over the shell's job table.

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How a task ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEnd {
    /// The task failed (its job reads `failed`; otherwise `completed`, or `killed` when stopped).
    pub failed: bool,
    /// One line on how it ended (`exit code: 0`-like), shown in the notice.
    pub detail: String,
    /// Everything the task produced, what `job_output` shows once it ended.
    pub output: String,
}

/// What a running task gets: its stop signal (a `job_kill`) and where its output so far goes.
#[derive(Clone)]
pub struct TaskControl {
    pub stop: CancellationToken,
    /// Replaces the output `job_output` shows while the task runs.
    pub progress: Arc<dyn Fn(String) + Send + Sync>,
}

/// The work of a task, started once the job is admitted.
pub type TaskWork = Box<dyn FnOnce(TaskControl) -> BoxFuture<'static, TaskEnd> + Send>;

/// The host's table of background jobs.
pub trait BackgroundTasks: Send + Sync {
    /// Starts `work` as a job of `kind` (its id is `<kind>-<n>`) labelled `label`, for the
    /// session of `cx`; fails when the session's job limit is reached.
    fn start(
        &self,
        kind: &str,
        label: &str,
        cx: &ToolContext,
        work: TaskWork,
    ) -> Result<String, ToolError>;
}

/// The capability as tools get it.
pub type TasksHandle = Arc<dyn BackgroundTasks>;
