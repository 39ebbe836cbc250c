//! run_code's tests: programs over a test double of the nested-call seam (a few fake tools that
//! count what runs at once). The host's side of the seam is tested with the host.

// Helpers outside #[test] functions unwrap too: a poisoned lock or a bad fixture is a failed test.
#![allow(clippy::unwrap_used)]

mod bindings;
mod declarations;
mod fake;
mod limits;
mod program;
mod scheduling;
mod support;
mod tool;
