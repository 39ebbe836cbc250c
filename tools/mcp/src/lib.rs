//! The MCP bridge: tools of external MCP servers inside toolhost's registry, with the same
//! contract as every other tool (docs/tools.md "MCP servers", docs/configuration.md `[mcp]`).
//!
//! - [`config`]: a server's transport (stdio child or streamable HTTP), call timeout, startup
//!   strictness and reconnect policy; the scrubbed environment; `${VAR}` in headers.
//! - [`naming`]: public names `mcp__<server>__<raw>`, sanitized and hashed when needed.
//! - [`result`]: the canonical value `{content, structuredContent?}`, the output schema from a
//!   usable advertised `outputSchema`, and the Native text.
//! - `bridge`: the supervisor of each server — discovery, generation swap, `list_changed`
//!   re-sync, calls, reconnect, shutdown — and [`McpBridge`], what the host holds.
//! - `client`: toolhost's side of a connection (roots, refused sampling, progress, and
//!   elicitation through `elicit`, which turns a form into questions for the person).
//! - `tap`: reads `execution.taskSupport` from a stdio server's listings, which the typed MCP
//!   model drops.

mod bridge;
mod client;
pub mod config;
mod elicit;
pub mod naming;
mod resolve;
pub mod result;
pub mod section;
mod tap;

pub use bridge::{BridgeOptions, McpBridge, ServerStatus};
pub use config::{McpServerConfig, McpTransport, ReconnectPolicy};
