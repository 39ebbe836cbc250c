//! How a model is offered the tools (docs/configuration.md `[code] mode`): every tool as a
//! function (`native`), only `run_code` whose programs call the others (`code`), or both. The
//! choice is the model's view only: the editor, the CLI and a program's nested calls reach every
//! tool whatever the mode.

use serde::{Deserialize, Serialize};
use toolhost_contract::RESERVED_NAME;
use toolhost_tools_code::CodeMode;

/// How a model is offered the tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolPresentation {
    /// Every tool as a function, `run_code` not offered.
    #[default]
    Native,
    /// Only `run_code`: the model writes programs over the other tools.
    Code,
    /// Every tool and `run_code`.
    Both,
}

impl ToolPresentation {
    /// Whether a model offered tools this way sees the tool `name`.
    pub fn shows(self, name: &str) -> bool {
        match self {
            ToolPresentation::Native => name != RESERVED_NAME,
            ToolPresentation::Code => name == RESERVED_NAME,
            ToolPresentation::Both => true,
        }
    }

    /// Parses `native`, `code` or `both`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "native" => Some(ToolPresentation::Native),
            "code" => Some(ToolPresentation::Code),
            "both" => Some(ToolPresentation::Both),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolPresentation::Native => "native",
            ToolPresentation::Code => "code",
            ToolPresentation::Both => "both",
        }
    }
}

impl From<CodeMode> for ToolPresentation {
    fn from(mode: CodeMode) -> Self {
        match mode {
            CodeMode::Native => ToolPresentation::Native,
            CodeMode::Code => ToolPresentation::Code,
            CodeMode::Both => ToolPresentation::Both,
        }
    }
}

impl From<ToolPresentation> for CodeMode {
    fn from(presentation: ToolPresentation) -> Self {
        match presentation {
            ToolPresentation::Native => CodeMode::Native,
            ToolPresentation::Code => CodeMode::Code,
            ToolPresentation::Both => CodeMode::Both,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_presentation_shows_its_tools() {
        let shown = |p: ToolPresentation| -> Vec<&str> {
            ["read", RESERVED_NAME, "edit"].into_iter().filter(|n| p.shows(n)).collect()
        };
        assert_eq!(shown(ToolPresentation::Native), ["read", "edit"]);
        assert_eq!(shown(ToolPresentation::Code), [RESERVED_NAME]);
        assert_eq!(shown(ToolPresentation::Both), ["read", RESERVED_NAME, "edit"]);
        for p in [ToolPresentation::Native, ToolPresentation::Code, ToolPresentation::Both] {
            assert_eq!(ToolPresentation::parse(p.as_str()), Some(p));
        }
    }
}
