//! The shell tools' settings (`[shell]` in configuration; docs/configuration.md).

use std::time::Duration;

/// Limits and environment policy of `bash` and the background jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
    /// Whether `bash`, the job tools and the terminals are registered at all.
    pub enabled: bool,
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
    /// The types `terminal_open` offers (of `TERMINAL_TYPES`; others answer that no backend is
    /// registered). `["shell"]` offers only the plain shell.
    pub terminal_types: Vec<String>,
}

/// The default credential patterns: names matching `KEY|PASSWORD|SECRET|TOKEN`.
pub const DEFAULT_SCRUB: [&str; 4] = ["KEY", "PASSWORD", "SECRET", "TOKEN"];

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            enabled: true,
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
            terminal_types: crate::terminal::TERMINAL_TYPES
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
        }
    }
}

/// `[shell]` as one source gives it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellSection {
    enabled: Option<bool>,
    default_timeout_ms: Option<u64>,
    max_timeout_ms: Option<u64>,
    max_output_bytes: Option<usize>,
    max_spill_bytes: Option<u64>,
    background: Option<bool>,
    max_jobs: Option<usize>,
    kill_grace_ms: Option<u64>,
    sandbox: Option<crate::sandbox::SandboxMode>,
    /// Program-starting or credential-exposing: user config or a trusted workspace only.
    shell: Option<String>,
    scrub: Option<Vec<String>>,
    env: std::collections::BTreeMap<String, String>,
    terminal_types: Option<Vec<String>>,
}

impl toolhost_contract::config::Section for ShellSection {
    type Settings = ShellConfig;

    fn apply(self, shell: &mut ShellConfig, _layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(enabled) = self.enabled {
            shell.enabled = enabled;
        }
        if let Some(v) = self.default_timeout_ms.filter(|v| *v > 0) {
            shell.default_timeout_ms = v;
        }
        if let Some(v) = self.max_timeout_ms.filter(|v| *v > 0) {
            shell.max_timeout_ms = v;
        }
        if let Some(v) = self.max_output_bytes.filter(|v| *v > 0) {
            shell.max_output_bytes = v;
        }
        if let Some(v) = self.max_spill_bytes {
            shell.max_spill_bytes = v;
        }
        if let Some(v) = self.background {
            shell.background = v;
        }
        if let Some(v) = self.max_jobs {
            shell.max_jobs_per_owner = v;
        }
        if let Some(mode) = self.sandbox {
            shell.sandbox = mode;
        }
        if let Some(ms) = self.kill_grace_ms {
            shell.kill_grace = Duration::from_millis(ms);
        }
        if let Some(program) = self.shell.filter(|p| !p.is_empty()) {
            shell.shell = program;
        }
        if let Some(scrub) = self.scrub {
            shell.scrub = scrub;
        }
        for (name, value) in self.env {
            shell.env.retain(|(n, _)| *n != name);
            shell.env.push((name, value));
        }
        if let Some(types) = self.terminal_types {
            shell.terminal_types = types;
        }
    }

    /// Only the user may turn confinement off (`sandbox = "off"` over workspace-write), choose
    /// the program every command runs in (`shell`), expose credentials (`scrub` may only add
    /// patterns: it is taken as the configured list plus its own) or set the commands'
    /// environment (`env`, `LD_PRELOAD`). The tools may be switched off, not on; every limit may
    /// be lowered, not raised.
    fn restrict_untrusted(&mut self, applied: &ShellConfig) -> Vec<String> {
        use crate::sandbox::SandboxMode;
        let mut dropped = toolhost_contract::config::Dropped::new();
        dropped.only_off("shell.enabled", &mut self.enabled, applied.enabled);
        dropped.cap(
            "shell.default_timeout_ms",
            &mut self.default_timeout_ms,
            applied.default_timeout_ms,
        );
        dropped.cap("shell.max_timeout_ms", &mut self.max_timeout_ms, applied.max_timeout_ms);
        dropped.cap("shell.max_output_bytes", &mut self.max_output_bytes, applied.max_output_bytes);
        dropped.cap("shell.max_spill_bytes", &mut self.max_spill_bytes, applied.max_spill_bytes);
        dropped.only_off("shell.background", &mut self.background, applied.background);
        dropped.cap("shell.max_jobs", &mut self.max_jobs, applied.max_jobs_per_owner);
        let grace = u64::try_from(applied.kill_grace.as_millis()).unwrap_or(u64::MAX);
        dropped.cap("shell.kill_grace_ms", &mut self.kill_grace_ms, grace);
        dropped.unless("shell.sandbox", &mut self.sandbox, |mode| {
            *mode != SandboxMode::Off || applied.sandbox == SandboxMode::Off
        });
        dropped.always("shell.shell", &mut self.shell);
        if let Some(asked) = self.scrub.take() {
            if applied.scrub.iter().any(|p| !asked.contains(p)) {
                dropped.push("shell.scrub");
            }
            let mut scrub = applied.scrub.clone();
            scrub.extend(asked.into_iter().filter(|p| !applied.scrub.contains(p)));
            self.scrub = Some(scrub);
        }
        if !std::mem::take(&mut self.env).is_empty() {
            dropped.push("shell.env");
        }
        // Terminal types start programs: a workspace may offer fewer, not others.
        if let Some(types) = self.terminal_types.as_mut()
            && types.iter().any(|t| !applied.terminal_types.contains(t))
        {
            types.retain(|t| applied.terminal_types.contains(t));
            dropped.push("shell.terminal_types");
        }
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxMode;
    use toolhost_contract::config::Section;

    #[test]
    fn an_untrusted_source_cannot_loosen_the_shell() {
        let applied = ShellConfig { sandbox: SandboxMode::WorkspaceWrite, ..Default::default() };
        let mut section = ShellSection {
            enabled: Some(true),
            default_timeout_ms: Some(10_000_000),
            max_timeout_ms: Some(10_000_000),
            max_output_bytes: Some(1 << 30),
            max_spill_bytes: Some(1 << 40),
            background: Some(true),
            max_jobs: Some(1000),
            kill_grace_ms: Some(600_000),
            sandbox: Some(SandboxMode::Off),
            shell: Some("/tmp/evil".into()),
            scrub: Some(Vec::new()),
            env: [("LD_PRELOAD".to_owned(), "x".to_owned())].into(),
            terminal_types: Some(vec!["shell".into(), "fish".into()]),
        };
        assert_eq!(
            section.restrict_untrusted(&applied),
            ["shell.default_timeout_ms/shell.max_timeout_ms/shell.max_output_bytes/\
              shell.max_spill_bytes/shell.max_jobs/shell.kill_grace_ms/shell.sandbox/shell.shell/\
              shell.scrub/shell.env/shell.terminal_types"]
        );
        // `enabled`/`background` = true over true change nothing; `scrub` keeps every pattern.
        assert_eq!((section.enabled, section.background), (Some(true), Some(true)));
        assert_eq!(section.scrub, Some(applied.scrub.clone()));
        assert!(section.sandbox.is_none() && section.shell.is_none() && section.env.is_empty());
        assert!(section.max_timeout_ms.is_none() && section.kill_grace_ms.is_none());
        assert_eq!(section.terminal_types, Some(vec!["shell".to_owned()]));
    }

    #[test]
    fn an_untrusted_source_may_tighten_the_shell() {
        let applied = ShellConfig { enabled: false, background: false, ..Default::default() };
        let mut section =
            ShellSection { enabled: Some(true), background: Some(true), ..Default::default() };
        assert_eq!(section.restrict_untrusted(&applied), ["shell.enabled/shell.background"]);
        let mut section = ShellSection {
            enabled: Some(false),
            default_timeout_ms: Some(1000),
            max_timeout_ms: Some(2000),
            max_output_bytes: Some(100),
            max_spill_bytes: Some(0),
            background: Some(false),
            max_jobs: Some(1),
            kill_grace_ms: Some(10),
            sandbox: Some(SandboxMode::WorkspaceWrite),
            scrub: Some(vec![
                "KEY".into(),
                "PASSWORD".into(),
                "SECRET".into(),
                "TOKEN".into(),
                "AWS".into(),
            ]),
            ..Default::default()
        };
        assert!(section.restrict_untrusted(&ShellConfig::default()).is_empty());
        assert_eq!(section.sandbox, Some(SandboxMode::WorkspaceWrite));
        assert_eq!(section.max_jobs, Some(1));
        assert_eq!(section.scrub.as_ref().map(Vec::len), Some(5));
    }
}
