//! Shell tools: `bash` (one command per call, foreground or as a background job) and the job
//! tools `job_output`, `job_list`, `job_kill`. docs/tools.md documents their arguments, values and
//! Native text byte for byte.
//!
//! Commands start only through `toolhost-process` (their own process group, killed and reaped as
//! a group, never outliving the server); the working directory is confined by the `Workspace`
//! capability; output is captured with a bounded tail in memory and the whole stream spilled
//! through the `SpillStore` capability; live output goes to the `HostEvents` capability. The
//! shell process itself is, by design, not confined to the workspace: it runs with the user's
//! rights (docs/design.md, Shell).

mod bash;
mod capture;
mod config;
mod env;
mod exec;
mod job_tools;
mod jobs;
mod live;
mod render;

pub use bash::{BashArgs, BashOutput, BashTool, ForegroundOutput, StreamOutput};
pub use config::{DEFAULT_SCRUB, ShellConfig};
pub use env::{FIXED as FIXED_ENV, command_env, is_scrubbed};
pub use job_tools::{JobKillTool, JobListTool, JobOutputTool};
pub use jobs::{JobRegistry, JobSnapshot, JobStatus};
pub use live::LIVE_INTERVAL;

use std::sync::Arc;
use toolhost_contract::{Disposer, RegistrationError, Registry};

/// Registers `bash` and the job tools; the returned registry of jobs lets the host stop them.
pub fn register(
    registry: &Registry,
    config: ShellConfig,
) -> Result<(Vec<Disposer>, Arc<JobRegistry>), RegistrationError> {
    let config = Arc::new(config);
    let jobs = Arc::new(JobRegistry::new(Arc::clone(&config)));
    let mut disposers = vec![registry.register(BashTool::new(config, Arc::clone(&jobs)))?];
    disposers.push(registry.register(JobOutputTool::new(Arc::clone(&jobs)))?);
    disposers.push(registry.register(JobListTool::new(Arc::clone(&jobs)))?);
    disposers.push(registry.register(JobKillTool::new(Arc::clone(&jobs)))?);
    Ok((disposers, jobs))
}
