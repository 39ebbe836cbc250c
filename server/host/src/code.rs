//! Code mode on a host (docs/tools.md "run_code", docs/configuration.md `[code]`): which tools a
//! model sees — every tool as a function (`native`), only `run_code` whose programs call the
//! others (`code`), or both — and the TypeScript declarations programs are written against.
//!
//! The choice is the model's view only: the editor, the CLI and a program's nested calls reach
//! every tool whatever the mode. A model's direct call of a tool its mode hides is answered as a
//! call of an unknown tool (`UNKNOWN_TOOL`), as if the tool did not exist.

use crate::host::{Host, HostError};
use crate::nested::HostNestedCalls;
use crate::presentation::ToolPresentation;
use std::sync::Arc;
use toolhost_contract::{
    ExposedTool, NestedCalls as _, NestedCallsHandle, RESERVED_NAME, Registrar as _, ToolDef,
};
use toolhost_protocol::lsp_ext::ToolDescriptor;
use toolhost_tools_code::{CodeConfig, RunCodeTool, ToolSource};

/// Registers `run_code` on a host that is about to be shared, and gives it the nested-call
/// capability its programs call through (connected to the host by the caller once it is
/// shared: `HostNestedCalls::attach`).
pub(crate) fn install(
    host: &mut Host,
    config: &CodeConfig,
) -> Result<Arc<HostNestedCalls>, HostError> {
    let nested = Arc::new(HostNestedCalls::default());
    let handle: NestedCallsHandle = nested.clone();
    if !host.insert_capability(handle) {
        return Err(HostError::Internal("the host's capabilities are already shared".to_owned()));
    }
    // `run_code` declares the tools a program may call each time its description is asked
    // for: the host's tool set as it is then (MCP servers come and go).
    let program_tools: ToolSource = {
        let nested = Arc::clone(&nested);
        Arc::new(move || nested.tools())
    };
    let run_code = RunCodeTool::new(config.clone(), Some(program_tools));
    let _ = host.registry().add(ToolDef::reserved(run_code)?)?;
    // A program asks nothing itself: each of its nested calls asks in the run's mode.
    host.agent_permissions().add_delegating_tool(RESERVED_NAME);
    Ok(nested)
}

impl Host {
    /// The tools a model offered them `presentation`'s way sees, sorted by name.
    pub fn model_tools(&self, presentation: ToolPresentation) -> Vec<ToolDescriptor> {
        // Native leaves run_code out before its description (every tool's declaration) is made.
        let except = (presentation == ToolPresentation::Native).then_some(RESERVED_NAME);
        let mut tools = self.registry().descriptors_except(except);
        tools.retain(|tool| presentation.shows(&tool.name));
        tools
    }

    /// The TypeScript declarations of the tools a program may call (`toolhost tools
    /// --typescript`), byte-stable for an unchanged tool set.
    pub fn program_declarations(&self) -> String {
        // The nested-call capability lists every tool but run_code itself.
        let tools: Vec<ExposedTool> = self
            .capabilities()
            .get::<NestedCallsHandle>()
            .map(|nested| nested.tools())
            .unwrap_or_default();
        toolhost_tools_code::declarations::typescript(&tools)
    }
}
