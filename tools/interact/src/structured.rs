//! `structured_output`: the run's typed result. The caller (the CLI's `--structured-schema`,
//! `toolhost/structuredOutput`, the agent) supplies the schema; the arguments are the value,
//! validated against it. The value is recorded only when the call succeeds, and then the run is
//! complete: the host refuses every later call of the run ([`already_recorded`]).

use crate::SESSION_ONLY;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{CompiledSchema, InteractionHandle, Tool, ToolContext, ToolError};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StructuredOutput {
    /// Always `true`.
    pub recorded: bool,
}

pub struct StructuredOutputTool;

/// The refusal of a call made after the run's structured output was recorded.
pub fn already_recorded(tool: &str) -> String {
    format!("structured output already recorded: the run is complete, so `{tool}` is not executed")
}

impl Tool for StructuredOutputTool {
    type Args = Map<String, Value>;
    type Output = StructuredOutput;

    fn name(&self) -> &str {
        "structured_output"
    }

    fn description(&self) -> String {
        "Record the final result of this run as structured data: the arguments are the value, \
         and they must match the schema the caller asked for. Call it once, last; the run ends \
         with it."
            .to_owned()
    }

    fn annotations(&self) -> ToolAnnotations {
        SESSION_ONLY
    }

    fn present_call(&self, _args: &Value) -> CallPresentation {
        CallPresentation::new(CardKind::Structured, "Structured output")
    }

    async fn call(
        &self,
        args: Map<String, Value>,
        cx: ToolContext,
    ) -> Result<StructuredOutput, ToolError> {
        let value = Value::Object(args);
        let state = cx.capability::<InteractionHandle>();
        if let Some(schema) = state.as_ref().and_then(|s| s.structured_schema()) {
            let compiled = CompiledSchema::compile(self.name(), "structured output schema", schema)
                .map_err(|e| {
                    ToolError::plain(format!("the structured output schema is unusable: {e}"))
                })?;
            let violations = compiled.violations(&value, "arguments");
            if !violations.is_empty() {
                return Err(ToolError::typed(
                    "ToolArgsError",
                    "INVALID_ARGS",
                    format!("invalid arguments: {}", violations.join("; ")),
                ));
            }
        }
        if let Some(state) = state {
            state.stage_structured(cx.call_id(), value);
        }
        cx.conclude_turn();
        Ok(StructuredOutput { recorded: true })
    }

    fn render(&self, _args: &Map<String, Value>, _output: &StructuredOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text("Structured output recorded.")]
    }

    fn presentation_meta(
        &self,
        args: &Map<String, Value>,
        _output: &StructuredOutput,
    ) -> Option<Value> {
        Some(json!({ "value": args }))
    }
}
