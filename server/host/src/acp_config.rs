//! `[acp]` (docs/configuration.md): the ACP agents `toolhost serve` can host — each a program that
//! speaks the Agent Client Protocol on its stdio — and how long a permission request the agent
//! makes may wait for the person. `[acp.agents.<name>]` starts programs, so only the user config
//! or a trusted workspace may set it; an untrusted source may only shorten the wait.

use std::collections::BTreeMap;
use toolhost_contract::config::{Dropped, Layer, Section};

/// How long an agent's permission request waits for the person before it is answered
/// `cancelled` (five minutes).
pub const DEFAULT_PERMISSION_TIMEOUT_MS: u64 = 300_000;

/// One configured agent: the program and how it is started.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpAgentConfig {
    /// The program (a name looked up on `PATH`, or a path).
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the environment toolhost was started with.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The agent's session mode to switch to once a session is open (`session/set_mode`), e.g.
    /// a mode that asks before each edit, so toolhost can look at the files first.
    #[serde(default)]
    pub mode: Option<String>,
}

/// `[acp]` as applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcpSettings {
    /// `[acp.agents.<name>]`, by name (these override the built-in entries of the same name).
    pub agents: BTreeMap<String, AcpAgentConfig>,
    /// `[acp] permission_timeout_ms`.
    pub permission_timeout_ms: u64,
    /// `[acp] offer_toolhost`: each agent gets toolhost's own tools as an MCP server
    /// (`toolhost mcp`, attached to this host).
    pub offer_toolhost: bool,
}

impl Default for AcpSettings {
    fn default() -> Self {
        AcpSettings {
            agents: BTreeMap::new(),
            permission_timeout_ms: DEFAULT_PERMISSION_TIMEOUT_MS,
            offer_toolhost: true,
        }
    }
}

/// `[acp]` as one source gives it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcpSection {
    agents: Option<BTreeMap<String, AcpAgentConfig>>,
    permission_timeout_ms: Option<u64>,
    offer_toolhost: Option<bool>,
}

impl Section for AcpSection {
    type Settings = AcpSettings;

    fn apply(self, settings: &mut AcpSettings, _layer: &mut Layer<'_>) {
        if let Some(agents) = self.agents {
            settings.agents.extend(agents);
        }
        if let Some(ms) = self.permission_timeout_ms {
            settings.permission_timeout_ms = ms.max(1);
        }
        if let Some(offer) = self.offer_toolhost {
            settings.offer_toolhost = offer;
        }
    }

    fn restrict_untrusted(&mut self, applied: &AcpSettings) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.always("acp.agents", &mut self.agents);
        dropped.cap(
            "acp.permission_timeout_ms",
            &mut self.permission_timeout_ms,
            applied.permission_timeout_ms,
        );
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_source_cannot_name_a_program() {
        let mut section: AcpSection =
            toml::from_str("permission_timeout_ms = 1000\n[agents.evil]\ncommand = \"/tmp/x\"\n")
                .expect("parses");
        let dropped = section.restrict_untrusted(&AcpSettings::default());
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert!(section.agents.is_none());
        assert_eq!(section.permission_timeout_ms, Some(1000));
    }
}
