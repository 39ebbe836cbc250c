//! toolhost's own agent (docs/agent.md): a model loop that calls the registry's tools and
//! shows their cards. This crate holds what the loop talks to the model with:
//!
//! - [`model`]: the messages, tool specs and usage of an OpenAI-compatible chat completions API,
//!   and [`ModelClient`], which streams one assistant turn — text, reasoning and tool calls
//!   accumulated by index, usage from the final chunk — with retries on 429/5xx (honouring
//!   `Retry-After`) and on a stream that breaks before it ends, and cancellation at any point.
//!
//! The crate reaches the registry only through a trait the binary implements (never a tool
//! crate); see docs/design.md, "Crates and boundaries".

pub mod model;

pub use model::{
    ModelClient, ModelConfig, ModelError, RetryPolicy, StreamEvent, ToolSpec, Turn, Usage,
};
