//! The shell tools' settings (`[shell]` in configuration; docs/configuration.md).

use std::time::Duration;

/// Limits and environment policy of `bash` and the background jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
    /// Timeout of a foreground command when the call names none.
    pub default_timeout_ms: u64,
    /// The largest timeout a call may ask for (larger values are capped to it).
    pub max_timeout_ms: u64,
    /// Bytes of each stream kept in memory (the tail); the rest is only in the spill file.
    pub max_output_bytes: usize,
    /// Bytes of each stream kept in its spill file (the head), which then ends with a marker.
    pub max_spill_bytes: u64,
    /// Whether `bash` offers `run_in_background`.
    pub background: bool,
    /// Background jobs one session may have running at once.
    pub max_jobs_per_owner: usize,
    /// Environment variables whose names contain one of these (case-insensitive) are removed
    /// before a command runs, so credentials of the editor's environment do not reach it.
    pub scrub: Vec<String>,
    /// Variables set for every command (after scrubbing), e.g. a project's `CI=1`.
    pub env: Vec<(String, String)>,
    /// Between SIGTERM and SIGKILL when a command is stopped.
    pub kill_grace: Duration,
    /// The shell every command runs in (`bash`, found on PATH).
    pub shell: String,
    /// Write confinement of `bash` commands (off by default).
    pub sandbox: crate::sandbox::SandboxMode,
    /// The program that applies the confinement and then runs the command: the host's own
    /// binary (`toolhost sandbox-exec`). Without it, `sandbox` cannot be honoured and calls say so.
    pub sandbox_launcher: Option<std::path::PathBuf>,
}

/// The default credential patterns: names matching `KEY|PASSWORD|SECRET|TOKEN`.
pub const DEFAULT_SCRUB: [&str; 4] = ["KEY", "PASSWORD", "SECRET", "TOKEN"];

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            default_timeout_ms: 120_000,
            max_timeout_ms: 600_000,
            max_output_bytes: 64_000,
            max_spill_bytes: 64 * 1024 * 1024,
            background: true,
            max_jobs_per_owner: 10,
            scrub: DEFAULT_SCRUB.iter().map(|s| (*s).to_owned()).collect(),
            env: Vec::new(),
            kill_grace: Duration::from_millis(2000),
            shell: "bash".to_owned(),
            sandbox: crate::sandbox::SandboxMode::Off,
            sandbox_launcher: None,
        }
    }
}
