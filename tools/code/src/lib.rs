//! `run_code` (docs/tools.md, "run_code"): a program — JavaScript, or TypeScript whose types
//! erase — that calls the host's tools, in one call instead of one model turn per step.
//!
//! Each run gets a fresh QuickJS runtime on a thread of its own ([`vm`]); its global scope holds
//! only `tools`, `ToolCallError` and `console`. Nested calls go through the host's
//! [`NestedCalls`](toolhost_contract::NestedCalls) seam and are scheduled here ([`runner`]): in
//! submission order, read-only calls overlapping, exclusive calls alone. Limits (compute time,
//! wall clock, memory, stack, output bytes, nested calls) are `[code]` ([`config`]); every
//! failure is one `CODE_RUN_FAILED` error with its kind ([`failure`]). The same runtime runs
//! programs of other kinds — another prelude, another dispatcher ([`program`]): `workflow`
//! scripts, whose `agent()` calls the host answers with child runs.

pub mod config;
pub mod declarations;
pub mod failure;
pub mod program;
pub mod render;
mod runner;
mod strip;
mod tool;
mod vm;

pub use config::{CodeConfig, CodeMode, CodeSection};
pub use failure::{ERROR_CODE, ERROR_NAME, Failure, FailureKind};
pub use runner::{Progress, Ran};
pub use tool::{
    INVALID_DESCRIPTION, JOB_KIND, RunCodeArgs, RunCodeOutput, RunCodeTool, ToolSource,
    description, present, run_program,
};
