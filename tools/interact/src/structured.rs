//! `structured_output`: the run's typed result. The caller (the CLI's `--structured-schema`,
//! `toolhost/structuredOutput`, the agent) supplies the schema; the arguments are the value,
//! validated against it by the body, so every violation — a non-object included — names its
//! place under `value` (`"value.answer" must be a number`). The value is recorded only when the
//! call succeeds, and then the run is complete: the host refuses every later call of the run
//! ([`already_recorded`]).
//!
//! Registered raw: the registry neither checks nor trims the arguments (the caller's schema,
//! not a fixed one, decides), and passes whatever JSON the model sent to the body.

use crate::SESSION_ONLY;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{CompiledSchema, InteractionHandle, RawTool, ToolContext, ToolError};

/// The tool's name.
pub const STRUCTURED_OUTPUT: &str = "structured_output";

/// The canonical value of a recorded result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StructuredOutput {
    /// Always `true`.
    pub recorded: bool,
}

/// The refusal of a call made after the run's structured output was recorded.
pub fn already_recorded(tool: &str) -> String {
    format!("structured output already recorded: the run is complete, so `{tool}` is not executed")
}

/// The label the schema wording gives the value itself while validating: a string no property
/// path can spell (it holds a NUL), so [`under_value`] tells the root from a key.
const ROOT_LABEL: &str = "\u{0}value";

/// A violation in the schema wording (top-level keys bare) with its place under `value`:
/// `"answer"` becomes `"value.answer"`, `"[0]"` `"value[0]"`, the root `"value"`.
fn under_value(violation: String) -> String {
    for prefix in ["missing required property \"", "\""] {
        if let Some(rest) = violation.strip_prefix(prefix) {
            let place = if let Some(after) = rest.strip_prefix(ROOT_LABEL) {
                after.to_owned()
            } else if rest.starts_with('[') {
                rest.to_owned()
            } else {
                format!(".{rest}")
            };
            return format!("{prefix}value{place}");
        }
    }
    violation
}

/// Every violation of `value` against the run's schema (`None`: any object), under `value`.
fn violations(value: &Value, schema: Option<Value>) -> Result<Vec<String>, ToolError> {
    if !value.is_object() {
        return Ok(vec!["\"value\" must be an object".to_owned()]);
    }
    let Some(schema) = schema else { return Ok(Vec::new()) };
    let compiled = CompiledSchema::compile(STRUCTURED_OUTPUT, "structured output schema", schema)
        .map_err(|e| {
        ToolError::plain(format!("the structured output schema is unusable: {e}"))
    })?;
    Ok(compiled.violations(value, ROOT_LABEL).into_iter().map(under_value).collect())
}

async fn record(value: Value, cx: ToolContext) -> Result<Value, ToolError> {
    let state = cx.capability::<InteractionHandle>();
    let found = violations(&value, state.as_ref().and_then(|s| s.structured_schema()))?;
    if !found.is_empty() {
        return Err(ToolError::invalid_args(&found));
    }
    if let Some(state) = state {
        state.stage_structured(cx.call_id(), value);
    }
    cx.conclude_turn();
    Ok(json!({ "recorded": true }))
}

/// The `structured_output` tool.
pub fn structured_output_tool() -> RawTool {
    let mut tool = RawTool::new(STRUCTURED_OUTPUT)
        .with_description(
            "Record the final result of this run as structured data: the arguments are the \
             value, and they must match the schema the caller asked for. Call it once, last; \
             the run ends with it.",
        )
        // Any object, every property kept as sent: the run's schema judges them in the body.
        .with_input_schema(json!({ "type": "object", "additionalProperties": true }))
        .with_output_schema(schemars::schema_for!(StructuredOutput).to_value())
        .with_execute(record)
        .with_render(|_, _| vec![ContentBlock::text("Structured output recorded.")])
        .with_presentation_meta(|args, _| Some(json!({ "value": args })))
        .with_present_call(|_| CallPresentation::new(CardKind::Structured, "Structured output"))
        .with_annotations(SESSION_ONLY);
    tool.validate_args = false;
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "answer": {"type": "number"},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": false
                }}
            },
            "required": ["answer"]
        })
    }

    fn found(value: Value) -> Vec<String> {
        violations(&value, Some(schema())).unwrap()
    }

    #[test]
    fn violations_name_their_place_under_value() {
        assert_eq!(found(json!({"answer": "x"})), ["\"value.answer\" must be a number"]);
        assert_eq!(found(json!({})), ["missing required property \"value.answer\""]);
        let mut nested = found(json!({"answer": 1, "items": [{"extra": 1}]}));
        nested.sort();
        assert_eq!(
            nested,
            [
                "\"value.items[0].extra\" is not a declared property (additionalProperties: false)",
                "missing required property \"value.items[0].name\"",
            ]
        );
        assert_eq!(found(json!([1])), ["\"value\" must be an object"]);
        assert_eq!(violations(&json!("x"), None).unwrap(), ["\"value\" must be an object"]);
        assert!(violations(&json!({"any": 1}), None).unwrap().is_empty());
    }

    #[test]
    fn a_root_violation_reads_value() {
        let root = json!({"type": "object", "properties": {}, "additionalProperties": false,
            "minProperties": 1});
        let compiled = CompiledSchema::compile("t", "s", root).unwrap();
        let got: Vec<String> =
            compiled.violations(&json!({}), ROOT_LABEL).into_iter().map(under_value).collect();
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("\"value\" "), "{got:?}");
    }
}
