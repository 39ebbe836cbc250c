//! Code mode on a host (docs/tools.md "run_code", docs/configuration.md `[code]`): which tools a
//! model sees — every tool as a function (`native`), only `run_code` whose programs call the
//! others (`code`), or both — and the TypeScript declarations programs are written against.
//!
//! The choice is the model's view only: the editor, the CLI and a program's nested calls reach
//! every tool whatever the mode. A model's direct call of a tool its mode hides is answered as a
//! call of an unknown tool (`UNKNOWN_TOOL`), as if the tool did not exist.

use crate::host::Host;
use serde::{Deserialize, Serialize};
use toolhost_contract::{ExposedTool, NestedCallsHandle, RESERVED_NAME};
use toolhost_protocol::lsp_ext::ToolDescriptor;
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

impl Host {
    /// The tools a model offered them `presentation`'s way sees, sorted by name.
    pub fn model_tools(&self, presentation: ToolPresentation) -> Vec<ToolDescriptor> {
        let mut tools = self.registry().descriptors();
        tools.retain(|tool| presentation.shows(&tool.name));
        tools
    }

    /// The TypeScript declarations of the tools a program may call (`toolhost tools
    /// --typescript`), byte-stable for an unchanged tool set.
    pub fn program_declarations(&self) -> String {
        let tools: Vec<ExposedTool> = self
            .capabilities()
            .get::<NestedCallsHandle>()
            .map(|nested| nested.tools())
            .unwrap_or_default()
            .into_iter()
            .filter(|tool| tool.name != RESERVED_NAME)
            .collect();
        toolhost_tools_code::declarations::typescript(&tools)
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
