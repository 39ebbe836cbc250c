//! The host: what every front end of toolhost shares. One [`Host`] per workspace and session
//! holds the registry with every tool and policy and the capabilities tools reach the world
//! through; every call of every front end goes through [`Host::call`] (the one call path, see
//! [`call`]), which owns the running calls, the barrier, the cards, the session log's records,
//! cancellation, live output, the caller's label, the asking route and parent/child calls.
//!
//! Beside it: opening sessions ([`session`]) and hosts ([`open`]), the configuration and the
//! trust rule ([`config`]), review ([`review`]), the question channel ([`questions`]), plan mode
//! and the structured run ([`interaction`]), the change history and revert's recovery
//! ([`history`]), skills ([`skills`]), events and listeners ([`events`]), the workspace watcher
//! ([`watcher`]), the own agent on a host ([`agent`], [`subagent`]), a program's nested calls
//! ([`nested`]), tools' background tasks ([`tasks`]), and the orchestration tools `workflow` and
//! `ralph` ([`workflow`], [`ralph`]: child runs under one call, journaled and resumable, with a
//! budget).
//!
//! Front ends (`toolhost serve`, `toolhost mcp`, `toolhost acp`, the CLI) live in the binary and
//! reach tools only through a host; nothing here knows LSP, MCP or ACP wire formats.

pub mod acp_config;
pub mod agent;
pub mod arguments;
pub mod call;
mod calls;
pub mod code;
pub mod config;
pub mod events;
pub mod history;
pub mod host;
pub mod interaction;
pub mod nested;
pub mod open;
pub mod permissions;
pub mod presentation;
pub mod questions;
pub mod ralph;
mod record_gate;
pub mod review;
pub mod session;
pub mod session_tools;
pub mod session_tools_log;
pub mod session_tools_owners;
pub mod session_tools_run;
pub mod skills;
pub mod subagent;
pub mod tasks;
pub mod watcher;
pub mod workflow;
pub mod workflow_answer;
pub mod workflow_background;
pub mod workflow_config;
pub mod workflow_journal;
pub mod workflow_run;
pub mod worktree;
pub mod world_config;

pub use call::{CallHandle, CallRequest};
pub use calls::Lane;
pub use events::HostListener;
pub use host::{
    BRIDGED_ENV, CallOutcome, Host, HostError, HostOptions, new_call_id, started_by_bridge,
};
pub use open::{load_config, open_host, share};

/// What a host running an agent over ACP feeds the `agent_step` calls that record the agent's
/// own tools' steps, and the hunks a person reviews of a step's proposed edit.
pub mod agent_steps {
    pub use toolhost_tools_fs::diff::Change;
    pub use toolhost_tools_fs::{AGENT_STEP, AgentSteps, StepEnd, StepEvent, StepStatus};
}
