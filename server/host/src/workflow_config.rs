//! `[workflow]` (docs/configuration.md): the settings of the `workflow` and `ralph` tools. An
//! untrusted source (a cloned repository's `toolhost.toml`) may turn the completion check on and
//! lower the round ceiling, never the reverse.

use toolhost_contract::config::{Dropped, Layer, Section};

/// The most rounds a `ralph` run may have.
pub const MAX_ROUNDS: u32 = 256;

/// `[workflow]` as applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowSettings {
    /// A `ralph` worker's `complete` report is checked by one more fresh child that sees only
    /// the objective and the evidence; the run continues when it disagrees.
    pub verify_completion: bool,
    /// The ceiling of `ralph`'s `maxRounds` (and its default).
    pub max_rounds: u32,
}

impl Default for WorkflowSettings {
    fn default() -> Self {
        WorkflowSettings { verify_completion: true, max_rounds: MAX_ROUNDS }
    }
}

/// `[workflow]` as one source gives it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkflowSection {
    verify_completion: Option<bool>,
    max_rounds: Option<u32>,
}

impl Section for WorkflowSection {
    type Settings = WorkflowSettings;

    fn apply(self, settings: &mut WorkflowSettings, _layer: &mut Layer<'_>) {
        if let Some(on) = self.verify_completion {
            settings.verify_completion = on;
        }
        if let Some(rounds) = self.max_rounds {
            settings.max_rounds = rounds.clamp(1, MAX_ROUNDS);
        }
    }

    fn restrict_untrusted(&mut self, applied: &WorkflowSettings) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.only_on(
            "workflow.verify_completion",
            &mut self.verify_completion,
            applied.verify_completion,
        );
        dropped.cap("workflow.max_rounds", &mut self.max_rounds, applied.max_rounds);
        dropped.group()
    }
}
