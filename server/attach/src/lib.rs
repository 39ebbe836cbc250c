//! The attach socket: how `toolhost mcp` reaches the editor's `toolhost serve` of the same
//! workspace, so an agent's calls run in the editor's host — its dirty-buffer guard, its
//! editor-backed lsp provider, its session — and show up as cards in the editor.
//!
//! One Unix socket per workspace, in the state directory (`~/.local/state/toolhost/run/`; folders
//! 0700, socket 0600; the server also checks the peer's uid) — [`socket_path`]. JSON-RPC, one
//! message per line (docs/protocol.md, Attach socket): `toolhost/attach {caller}` first, then
//! `toolhost/listTools` and `toolhost/callTool` as over LSP, `$/cancelRequest` to cancel, the
//! `toolhost/toolsChanged` and `toolhost/callOutput` notifications and `toolhost/askUser`
//! requests from the server. [`client`] is the agent's side, [`server`] the editor's.

pub mod client;
mod path;
pub mod server;

pub use client::AttachClient;
pub use path::{prepare_dir, socket_path};

/// Longest line either side accepts on the socket.
pub const MAX_LINE: usize = 128 * 1024 * 1024;
