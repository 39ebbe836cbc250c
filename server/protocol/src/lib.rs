//! Boundary types of toolhost: everything that crosses a process or a file boundary.
//!
//! This crate is the one place where tool results, content blocks, diff metadata, cards (the
//! client-neutral view model), session-log records and the custom LSP method shapes are defined.
//! It depends on nothing first-party and does no I/O: `card::build` and `card::to_text` are pure,
//! so the server, replay, the harness and every editor client see the same cards.

pub mod card;
pub mod content;
pub mod diff;
pub mod lsp_ext;
pub mod result;
pub mod session_log;
pub mod world;

pub use card::{CallOrigin, CallPresentation, Card, CardKind, CardOutcome, CardStatus};
pub use content::ContentBlock;
pub use diff::{DiffMeta, FileDiff};
pub use result::{ErrorInfo, ToolErrorPayload, ToolExecutionResult};
