//! Client of real language servers (clangd, pyright, …) for the `lsp` tool: bounded framing,
//! lifecycle, a per-workspace pool, cancellation and restarts. [`LspHost`] implements the
//! contract's `LspProvider` capability and picks the server for each file: a configured one,
//! then the editor (when the client offered `toolhost/lspQuery`), then a well-known server on
//! `PATH`.
//!
//! On exit call [`LspHost::shutdown_all`] (bounded by [`LspHostConfig::shutdown_budget`]);
//! dropping the host SIGKILLs every server's process group anyway.

pub mod config;
mod connection;
pub mod encoding;
mod error;
mod instance;
pub mod normalize;
mod pool;
mod process;
pub mod servers;
mod shapes;
mod uri_map;
mod watch;

pub use error::LspHostError;
pub use pool::{LspHost, LspHostConfig};
pub use servers::ServerSpec;
pub use watch::{FileChange, FileChangeKind};
