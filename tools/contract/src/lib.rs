//! The tool contract: typed and raw tool definitions, the registry, and the dispatch pipeline of
//! docs/design.md §3 (argument snapshot → pre-execute → approval → guards → execute wrappers → body
//! → normalization → post-execute → cancellation override → finalize → result observers).
//!
//! Every successful body value is snapshotted losslessly, validated against the tool's output
//! schema, deserialized back into the typed output, and only then rendered (`render`) and projected
//! (`presentation_meta`, direct calls only). Results are sealed to the execution that produced
//! them, so a wrapper's authored or cached result is re-normalized under the active declaration.

pub mod cache;
mod capabilities;
mod context;
mod error;
pub mod events;
pub mod history;
pub mod interact;
pub mod lsp;
mod pipeline;
mod policy;
mod registry;
pub mod review;
mod schema;
mod snapshot;
pub mod spill;
mod tool;

pub use cache::{BlobCache, BlobCacheHandle, MemoryBlobCache};
pub use capabilities::Capabilities;
pub use context::{AdditionalContext, ToolContext};
pub use error::{RegistrationError, ToolError};
pub use events::{EventsHandle, HostEvents, Notice};
pub use history::{ChangeHistory, History, HistoryCall, HistoryError, HistoryHandle};
pub use interact::{
    InteractionHandle, InteractionState, LoadedSkill, QuestionError, QuestionRequest,
    QuestionsHandle, ResourceBase, SkillCatalog, SkillEntry, SkillsHandle, UserQuestions,
};
pub use pipeline::{CallInput, CanonicalResult, ExecNext, ExecToken, Execution, Finalized};
pub use policy::{
    ApprovalChannel, ApprovalOutcome, AuthoredResult, ExecuteWrapper, Guard, PostDecision,
    PostExecute, PostNext, PreDecision, PreExecute, PreNext, ResultObserver, WrapperOutcome,
};
pub use registry::{Disposer, Registry, RegistryConfig};
pub use review::{ReviewGate, ReviewHandle, ReviewRequest, ReviewVerdict};
pub use schema::{CompiledSchema, argument_violations};
pub use snapshot::{SnapshotError, lossless_value, to_lossless_value};
pub use tool::{BoxFuture, RawTool, Tool};

/// Re-exported so tool crates name one version of these.
pub use schemars;
pub use tokio_util::sync::CancellationToken;
pub use toolhost_protocol as protocol;
