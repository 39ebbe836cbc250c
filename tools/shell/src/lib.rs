//! Shell tools: `bash` (one command per call, foreground or as a background job), the job tools
//! `job_output`, `job_list`, `job_kill`, and the terminal tools `terminal_open`, `terminal_send`,
//! `terminal_read`, `terminal_signal`, `terminal_close`, `terminal_list` (interactive sessions
//! on a pseudo-terminal). docs/tools.md documents their arguments, values and
//! Native text byte for byte.
//!
//! Commands start only through `toolhost-process` (their own process group, killed and reaped as
//! a group, never outliving the server); the working directory is confined by the `Workspace`
//! capability; output is captured with a bounded tail in memory and the whole stream spilled
//! through the `SpillStore` capability; live output goes to the `HostEvents` capability. The
//! shell process itself is, by design, not confined to the workspace: it runs with the user's
//! rights (docs/design.md §7, Shell).

mod bash;
mod capture;
mod config;
mod env;
mod exec;
mod job_tools;
mod jobs;
mod live;
mod render;
pub mod sandbox;
mod sanitize;
mod terminal;
mod terminal_tools;
mod world_exec;

pub use bash::{BashArgs, BashOutput, BashTool, ForegroundOutput, Millis, StreamOutput};
pub use config::{DEFAULT_SCRUB, ShellConfig, ShellSection};
pub use env::{FIXED as FIXED_ENV, command_env, is_scrubbed};
pub use job_tools::{JobKillTool, JobListTool, JobOutputTool};
pub use jobs::{JobRegistry, JobSnapshot, JobStatus};
pub use live::LIVE_INTERVAL;
pub use terminal::{SessionStatus, TERMINAL_TYPES, TerminalRegistry, TerminalSnapshot, WaitReason};
pub use terminal_tools::MAX_RESULT_BYTES as TERMINAL_MAX_RESULT_BYTES;

use std::sync::Arc;
use toolhost_contract::{Disposer, Registrar, RegistrationError};

/// What the host keeps of the shell tools: their jobs and terminals, to stop them at the end.
pub struct ShellHandles {
    pub jobs: Arc<JobRegistry>,
    pub terminals: Arc<TerminalRegistry>,
}

impl ShellHandles {
    /// Stops every job and terminal (the connection is going away).
    pub fn stop_all(&self) {
        self.jobs.stop_all();
        self.terminals.close_all();
    }
}

/// Registers `bash`, the job tools and the terminal tools.
pub fn register(
    registry: &dyn Registrar,
    config: ShellConfig,
) -> Result<(Vec<Disposer>, ShellHandles), RegistrationError> {
    let config = Arc::new(config);
    let jobs = Arc::new(JobRegistry::new(Arc::clone(&config)));
    let terminals = Arc::new(TerminalRegistry::new(Arc::clone(&config)));
    let mut disposers = vec![registry.register(BashTool::new(config, Arc::clone(&jobs)))?];
    disposers.push(registry.register(JobOutputTool::new(Arc::clone(&jobs)))?);
    disposers.push(registry.register(JobListTool::new(Arc::clone(&jobs)))?);
    disposers.push(registry.register(JobKillTool::new(Arc::clone(&jobs)))?);
    let (open, send, read, signal, close, list) = terminal_tools::tools(&terminals, &jobs);
    disposers.push(registry.register(open)?);
    disposers.push(registry.register(send)?);
    disposers.push(registry.register(read)?);
    disposers.push(registry.register(signal)?);
    disposers.push(registry.register(close)?);
    disposers.push(registry.register(list)?);
    Ok((disposers, ShellHandles { jobs, terminals }))
}
