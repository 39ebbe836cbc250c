//! Optional write confinement of shell commands (`[shell] sandbox = "workspace-write"`): Landlock
//! limits writes to the workspace's writable roots, the temp folder and `/dev` (for `/dev/null`
//! and terminals); everything stays readable. The host's binary applies it to itself and then
//! executes the command (`toolhost sandbox-exec`), because a ruleset must be installed by the
//! process it confines, after fork and before exec, where allocating is not safe.
//!
//! What the kernel enforced is reported, never assumed: `full`, `partial` (an older Landlock that
//! knows fewer write rights) or `unavailable` (no Landlock: nothing is confined).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How commands are confined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Not confined (the default).
    #[default]
    Off,
    /// Writes only beneath the writable roots, the temp folder and `/dev`.
    WorkspaceWrite,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

/// What the kernel enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    Full,
    Partial,
    Unavailable,
}

impl Enforcement {
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Full => "full",
            Enforcement::Partial => "partial",
            Enforcement::Unavailable => "unavailable",
        }
    }

    pub fn parse(text: &str) -> Option<Enforcement> {
        match text.trim() {
            "full" => Some(Enforcement::Full),
            "partial" => Some(Enforcement::Partial),
            "unavailable" => Some(Enforcement::Unavailable),
            _ => None,
        }
    }
}

/// Confines the calling process (and what it executes next) to writing beneath `writable`.
pub fn confine_writes(writable: &[PathBuf]) -> Result<Enforcement, String> {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        path_beneath_rules,
    };
    let abi = ABI::V5;
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let mut allowed: Vec<&Path> = writable.iter().map(PathBuf::as_path).collect();
    allowed.push(Path::new("/dev"));
    let status = Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&allowed, all)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::Unavailable,
    })
}

/// Whether a sandboxed command's failure looks like a denied write: a non-zero exit and stderr
/// naming a permission error.
pub fn looks_denied(exit_code: Option<i32>, stderr: &str) -> bool {
    exit_code.is_some_and(|c| c != 0)
        && (stderr.contains("Permission denied") || stderr.contains("Operation not permitted"))
}
