//! The tool contract: what tool crates compile against. Typed and raw tool definitions ([`Tool`],
//! [`RawTool`]) and their erasure ([`tool::ErasedTool`]), the [`Registrar`] tools are registered
//! into, the execution context ([`ToolContext`], [`Capabilities`]), errors, schema compilation,
//! the argument-violation wording and the standard terms every published schema is put in
//! ([`standard_schema`]), the lossless snapshot, and the capability traits the host implements
//! (workspace aside): events, change history, review, questions and session state, skills,
//! language servers, the blob cache, the spill store, nested calls of a program, background tasks
//! and the execution world a session's files and processes may live in; and the shape of the configuration
//! section each crate owns ([`config::Section`]).
//!
//! A tool body returns only its canonical value; the Native text and the presentation metadata
//! are pure projections of (args, value), computed by the registry (`toolhost-registry`) after
//! the value round-tripped through validated JSON.

pub mod cache;
mod capabilities;
pub mod config;
mod context;
mod error;
pub mod events;
mod future;
pub mod history;
pub mod interact;
pub mod lsp;
pub mod nested;
mod registrar;
pub mod regular_file;
pub mod review;
mod schema;
mod snapshot;
pub mod spill;
pub mod standard_schema;
pub mod tasks;
pub mod tool;
pub mod world;

pub use cache::{BlobCache, BlobCacheHandle, MemoryBlobCache};
pub use capabilities::Capabilities;
pub use context::{AdditionalContext, SideChannels, ToolContext};
pub use error::{RegistrationError, ToolError};
pub use events::{EventsHandle, HostEvents, Notice};
pub use future::BoxFuture;
pub use history::{ChangeHistory, History, HistoryCall, HistoryError, HistoryHandle, HistoryTurn};
pub use interact::{
    InteractionHandle, InteractionState, LoadedSkill, QuestionError, QuestionRequest,
    QuestionsHandle, ResourceBase, SkillCatalog, SkillEntry, SkillsHandle, UserQuestions,
    answers_of,
};
pub use nested::{ExposedTool, NestedCall, NestedCalls, NestedCallsHandle, NestedOutcome};
pub use registrar::{Disposer, RESERVED_NAME, Registrar, ToolDef, UnknownToolResolver};
pub use review::{ReviewGate, ReviewHandle, ReviewRequest, ReviewVerdict};
pub use schema::{CompiledSchema, argument_violations};
pub use snapshot::{SnapshotError, lossless_value, to_lossless_value};
pub use tasks::{BackgroundTasks, TaskControl, TaskEnd, TaskWork, TasksHandle};
pub use tool::{RawTool, Tool};
pub use world::{
    ExecutionWorld, WorldCommand, WorldEntry, WorldFailure, WorldGrepHit, WorldPath, WorldProcess,
    WorldProcessControl, WorldProcessEvent, WorldResult, WorldTerminalState,
};

/// Re-exported so tool crates name one version of these.
pub use schemars;
pub use tokio_util::sync::CancellationToken;
pub use toolhost_protocol as protocol;
