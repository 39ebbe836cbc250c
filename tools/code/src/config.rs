//! `[code]`: the limits of one `run_code` run (docs/configuration.md). Every key is a cap, so an
//! untrusted source (a cloned repository's `toolhost.toml`) may lower any of them and raise none.

use std::time::Duration;
use toolhost_contract::config::{Dropped, Layer, Section};

/// How a model is offered the tools (`[code] mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeMode {
    /// Every tool as a function, `run_code` not offered.
    #[default]
    Native,
    /// Only `run_code`: the model writes programs over the other tools.
    Code,
    /// Every tool and `run_code`.
    Both,
}

/// The limits of one run, and how models are offered the tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeConfig {
    /// `native`, `code` or `both`; unset, each front end offers its default (the own agent
    /// `native`: every request carries the tool list; an MCP agent `both`: it lists tools once
    /// and picks).
    pub mode: Option<CodeMode>,
    /// CPU time the program's thread may spend (awaiting a tool does not count).
    pub compute: Duration,
    /// Time from the start of the run to its end, waiting included.
    pub wall: Duration,
    /// Bytes the JavaScript heap may hold.
    pub memory_bytes: usize,
    /// Bytes of native stack JavaScript may use (deep recursion stops there).
    pub stack_bytes: usize,
    /// Bytes of output: the logs, the result and every value nested calls returned, as JSON.
    pub output_bytes: u64,
    /// Nested calls one run may make.
    pub max_calls: u64,
    /// Concurrency-safe nested calls that may run at once (1 runs every call alone).
    pub max_parallel_calls: usize,
    /// Up to this many tools, the description declares each; beyond it, programs look tools up
    /// with `tools.$search`.
    pub declare_max_tools: usize,
}

impl Default for CodeConfig {
    fn default() -> Self {
        CodeConfig {
            mode: None,
            compute: Duration::from_millis(60_000),
            wall: Duration::from_millis(600_000),
            memory_bytes: 512 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            output_bytes: 64 * 1024 * 1024,
            max_calls: 10_000,
            max_parallel_calls: 10,
            declare_max_tools: 60,
        }
    }
}

/// `[code]` as one source gives it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeSection {
    mode: Option<CodeMode>,
    compute_ms: Option<u64>,
    wall_ms: Option<u64>,
    memory_mib: Option<u64>,
    stack_kib: Option<u64>,
    max_output_bytes: Option<u64>,
    max_calls: Option<u64>,
    max_parallel_calls: Option<u64>,
    declare_max_tools: Option<u64>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn size(n: u64, unit: u64) -> usize {
    usize::try_from(n.saturating_mul(unit)).unwrap_or(usize::MAX)
}

impl Section for CodeSection {
    type Settings = CodeConfig;

    fn apply(self, config: &mut CodeConfig, _layer: &mut Layer<'_>) {
        if let Some(mode) = self.mode {
            config.mode = Some(mode);
        }
        // Zero would stop every run at once (or allow no call at all); 1 is the smallest limit.
        if let Some(ms) = self.compute_ms {
            config.compute = Duration::from_millis(ms.max(1));
        }
        if let Some(ms) = self.wall_ms {
            config.wall = Duration::from_millis(ms.max(1));
        }
        if let Some(mib) = self.memory_mib {
            config.memory_bytes = size(mib.max(1), 1024 * 1024);
        }
        if let Some(kib) = self.stack_kib {
            config.stack_bytes = size(kib.max(64), 1024);
        }
        if let Some(bytes) = self.max_output_bytes {
            config.output_bytes = bytes.max(1);
        }
        if let Some(calls) = self.max_calls {
            config.max_calls = calls;
        }
        if let Some(parallel) = self.max_parallel_calls {
            config.max_parallel_calls = usize::try_from(parallel.max(1)).unwrap_or(usize::MAX);
        }
        if let Some(n) = self.declare_max_tools {
            config.declare_max_tools = usize::try_from(n).unwrap_or(usize::MAX);
        }
    }

    /// Every limit bounds a run, so each is held to at most what the trusted sources set.
    /// `mode` and `declare_max_tools` only change how the model is shown the same tools (a
    /// program's calls go through the same policies as direct ones): any value may stay.
    fn restrict_untrusted(&mut self, applied: &CodeConfig) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.cap("code.compute_ms", &mut self.compute_ms, millis(applied.compute));
        dropped.cap("code.wall_ms", &mut self.wall_ms, millis(applied.wall));
        let mib = u64::try_from(applied.memory_bytes / (1024 * 1024)).unwrap_or(u64::MAX);
        dropped.cap("code.memory_mib", &mut self.memory_mib, mib);
        let kib = u64::try_from(applied.stack_bytes / 1024).unwrap_or(u64::MAX);
        dropped.cap("code.stack_kib", &mut self.stack_kib, kib);
        dropped.cap("code.max_output_bytes", &mut self.max_output_bytes, applied.output_bytes);
        dropped.cap("code.max_calls", &mut self.max_calls, applied.max_calls);
        let parallel = u64::try_from(applied.max_parallel_calls).unwrap_or(u64::MAX);
        dropped.cap("code.max_parallel_calls", &mut self.max_parallel_calls, parallel);
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(section: CodeSection) -> CodeConfig {
        let mut config = CodeConfig::default();
        let mut warnings = Vec::new();
        let mut layer =
            Layer { source: "test", root: std::path::Path::new("/"), warnings: &mut warnings };
        section.apply(&mut config, &mut layer);
        config
    }

    #[test]
    fn an_untrusted_source_may_lower_limits_and_raise_none() {
        let applied = CodeConfig::default();
        let mut section = CodeSection {
            compute_ms: Some(1_000),
            wall_ms: Some(10_000_000),
            memory_mib: Some(4096),
            max_calls: Some(5),
            max_parallel_calls: Some(100),
            declare_max_tools: Some(1000),
            ..Default::default()
        };
        assert_eq!(
            section.restrict_untrusted(&applied),
            ["code.wall_ms/code.memory_mib/code.max_parallel_calls"]
        );
        let config = apply(section);
        assert_eq!(config.compute, Duration::from_millis(1_000));
        assert_eq!(config.wall, applied.wall);
        assert_eq!(config.memory_bytes, applied.memory_bytes);
        assert_eq!(config.max_calls, 5);
        assert_eq!(config.declare_max_tools, 1000);
    }

    #[test]
    fn the_section_reads_its_keys() {
        let section: CodeSection = toml::from_str(
            "mode = \"both\"\ncompute_ms = 5\nwall_ms = 7\nmemory_mib = 16\nstack_kib = 256\n\
             max_output_bytes = 100\nmax_calls = 3\nmax_parallel_calls = 0\n",
        )
        .unwrap();
        let config = apply(section);
        assert_eq!(config.mode, Some(CodeMode::Both));
        assert_eq!(config.compute, Duration::from_millis(5));
        assert_eq!(config.wall, Duration::from_millis(7));
        assert_eq!(config.memory_bytes, 16 * 1024 * 1024);
        assert_eq!(config.stack_bytes, 256 * 1024);
        assert_eq!((config.output_bytes, config.max_calls), (100, 3));
        assert_eq!(config.max_parallel_calls, 1, "0 parallel calls means one at a time");
    }
}
