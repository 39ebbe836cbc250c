//! toolhost's own agent (docs/agent.md): a model loop that calls the registry's tools and
//! shows their cards. This crate holds what the loop talks to the model with:
//!
//! - [`model`]: the messages, tool specs and usage of an OpenAI-compatible chat completions API,
//!   and [`ModelClient`], which streams one assistant turn — text, reasoning and tool calls
//!   accumulated by index, usage from the final chunk — with retries on 429/5xx (honouring
//!   `Retry-After`) and on a stream that breaks before it ends, and cancellation at any point.
//!
//! - [`agent`]: the loop — ask the model, run its tool calls through a [`ToolRunner`] (concurrency-
//!   safe calls of one turn overlap, any other call is a barrier; answers in the model's order),
//!   repeat until an answer, a recorded structured value, the turn limit, the token budget or
//!   cancellation; long conversations are pruned, then summarized, before the context limit.
//!
//! - [`log`]: the conversation as session-log records (`agent/*` events), and back.
//!
//! - [`settings`]: `[agent]` — the model, the permission mode and the bounds of a run.
//!
//! The crate reaches the registry only through a trait the host implements (never a tool
//! crate); see docs/design.md, "Crates and boundaries".

pub mod agent;
pub mod log;
pub mod model;
pub mod settings;

pub use agent::{
    AgentEvent, AgentOptions, Compaction, CompactionOptions, CostBudget, RunOutcome, StopReason,
    ToolOutcome, ToolRunner,
};
pub use model::{
    ModelClient, ModelConfig, ModelError, Price, RetryPolicy, StreamEvent, ToolSpec, Turn, Usage,
};
pub use settings::{AgentSettings, PermissionMode};
