//! The toolhost server: configuration, the host that wires tools, capabilities and policies for
//! one workspace and session, the `toolhost` command line, and (wave 1 · 4/7) the LSP server.

pub mod acp;
pub mod agent;
pub mod attach;
pub mod cli;
pub mod config;
pub mod editor;
pub mod editor_lsp;
pub mod events;
pub mod history;
pub mod host;
pub mod interact;
pub mod mcp;
pub mod review;
pub mod serve;
pub mod session;
pub mod skills;
pub mod subagent;
pub mod terminal_ask;
#[cfg(feature = "test-tools")]
pub mod test_tools;
pub mod transport;
pub mod watcher;
