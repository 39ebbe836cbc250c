//! The `toolhost` binary's front ends over the host (`toolhost-host`): the command line
//! ([`cli`]), the LSP server editors start ([`serve`], with the editor connection in [`editor`]
//! and [`editor_lsp`]), the MCP backend of `toolhost mcp` ([`mcp`], reaching an
//! editor's host through the attach socket of `toolhost-attach`) and the ACP agent ([`acp`]).

pub mod acp;
pub mod cli;
pub mod editor;
pub mod editor_lsp;
pub mod mcp;
pub mod serve;
#[cfg(feature = "test-tools")]
pub mod test_tools;
