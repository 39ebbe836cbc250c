//! Confined workspace filesystem: resolve-beneath path confinement, atomic durable writes,
//! per-path locks, the observation ledger (read-before-write by content hash) and the in-process
//! glob/grep engine built on ripgrep's crates.
//!
//! The file tools reach all of it through [`Workspace`]: [`Workspace::read_file`],
//! [`Workspace::write_file`] and [`Workspace::begin_edit`] / [`EditTxn::commit`]. Paths are
//! confined twice: lexically (every path must fall under a root) and by the kernel (every open
//! goes through the root's directory handle with `RESOLVE_BENEATH`), so a directory swapped for
//! a symlink between check and use still cannot lead out.
//!
//! Inside an editor the text of writable files can come from and go to the editor's buffers
//! instead of the disk: see [`TextBackend`] and [`Workspace::set_text_backend`].

mod atomic;
mod backend;
pub mod config;
mod dirty;
mod error;
mod ledger;
mod lexical;
mod line_index;
mod locks;
mod resolve;
pub mod search;
mod workspace;

#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use atomic::TEMP_PREFIX;
pub use backend::{BackendFuture, TextBackend};
pub use dirty::DirtyBuffers;
pub use error::{FsError, Op, SandboxReason};
pub use ledger::{Ledger, Observation, ObserveHook, VersionHasher, content_version};
pub use locks::PathLock;
pub use resolve::{EntryKind, EntryState, Root};
pub use workspace::{
    BINARY_SNIFF_BYTES, ChangeKeeper, DEFAULT_PROTECTED, DIFF_BASIS_MAX_BYTES, EditTxn,
    INVALIDATED_PREFIX, KeepError, LineSink, ReadFile, ResolvedPath, SettleStep, StreamedFile,
    TextSink, WORLD_READ_MAX_BYTES, Workspace, WorkspaceConfig, WriteEvent, WriteListener,
    WriteOperation, WriteOutcome, world_fs_error,
};
