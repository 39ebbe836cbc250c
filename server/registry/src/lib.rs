//! The registry side of the tool contract: the [`Registry`] of tools and policies, the dispatch
//! pipeline of docs/design.md §3 (argument snapshot → pre-execute → approval → guards → execute
//! wrappers → body → normalization → post-execute → cancellation override → finalize → result
//! observers), the policy extension points, the built-in timeout and spill policies, and a
//! temp-dir spill store for hosts without a session.
//!
//! Every successful body value is snapshotted losslessly, validated against the tool's output
//! schema, deserialized back into the typed output, and only then rendered and projected (the
//! tool side of that lives in `toolhost-contract`). Results are sealed to the execution that
//! produced them, so a wrapper's authored or cached result is re-normalized under the active
//! declaration.
//!
//! Module graph (no cycles): `execution` ← `policy` ← `pipeline` ← `registry`; `timeout` and
//! `spill` are policies; `temp_store` stands alone.

mod execution;
mod pipeline;
mod policy;
mod registry;
pub mod spill;
mod temp_store;
mod timeout;

pub use execution::{CallInput, CanonicalResult, ExecToken, Execution, Finalized};
pub use policy::{
    ApprovalChannel, ApprovalOutcome, AuthoredResult, ExecNext, ExecuteWrapper, Guard,
    PostDecision, PostExecute, PostNext, PreDecision, PreExecute, PreNext, ResultObserver,
    WrapperOutcome,
};
pub use registry::{Registry, RegistryConfig};
pub use spill::{SpillPolicy, SpillSection};
pub use temp_store::TempDirSpillStore;
