//! The shape of tools and results on the MCP side — a policy, because clients disagree:
//!
//! - `structured`: a tool publishes its output schema and a success returns the canonical value
//!   as `structuredContent` plus the Native text as `content`. Strict clients (the TypeScript SDK,
//!   Python `mcp`) require `structuredContent` once an output schema is published.
//! - `text`: no output schema; a success returns the Native text, with the canonical value under
//!   `_meta["toolhost/value"]` for programs. Claude Code, Codex and Copilot CLI show the model
//!   only the JSON of `structuredContent` when there is one, dropping the Native text toolhost
//!   tuned for the model — so they get this shape.
//! - `auto`: `text` for those clients (by `clientInfo.name`), `structured` for everyone else.
//!
//! MCP's `structuredContent` is a JSON object: a tool whose values are not always objects
//! publishes `{"value": <its schema>}` and returns `{"value": <its value>}`. Failures are
//! `isError: true` with the Native error text and `_meta["toolhost/error"] = {code, name}`.

use rmcp::model::{CallToolResult, ContentBlock as McpContent};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolhost_protocol::{ContentBlock, ToolExecutionResult};

/// The configured policy (`[mcp] results`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultsMode {
    #[default]
    Auto,
    Structured,
    Text,
}

/// The shape one client gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Structured,
    Text,
}

impl Shape {
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::Structured => "structured",
            Shape::Text => "text",
        }
    }
}

/// Clients measured to show the model only `structuredContent` when a result has one.
const TEXT_FIRST_CLIENTS: &[&str] =
    &["claude-code", "codex-mcp-client", "copilot", "github-copilot"];

/// The shape for a client of this name under `mode`.
pub fn shape_for(mode: ResultsMode, client: Option<&str>) -> Shape {
    match mode {
        ResultsMode::Structured => Shape::Structured,
        ResultsMode::Text => Shape::Text,
        ResultsMode::Auto => {
            let name = client.unwrap_or("").to_ascii_lowercase();
            if TEXT_FIRST_CLIENTS
                .iter()
                .any(|known| name == *known || name.starts_with(&format!("{known}-")))
            {
                Shape::Text
            } else {
                Shape::Structured
            }
        }
    }
}

/// Whether every value the schema admits is a JSON object (so it can be `structuredContent`
/// as it is).
fn always_object(schema: &Value, defs: &Value) -> bool {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or("");
        return defs.get(name).is_some_and(|target| always_object(target, defs));
    }
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return true;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            return !branches.is_empty() && branches.iter().all(|b| always_object(b, defs));
        }
    }
    false
}

/// Whether a tool's values are wrapped as `{"value": …}` under `structured` (the second half of
/// [`published_output_schema`], without building the schema: asked on every call).
pub fn output_is_wrapped(schema: &Value) -> bool {
    let defs = schema.get("$defs").unwrap_or(&Value::Null);
    !(schema.is_object() && always_object(schema, defs))
}

/// The output schema a tool publishes under `structured`, and whether its values are wrapped as
/// `{"value": …}`.
pub fn published_output_schema(schema: &Value) -> (Map<String, Value>, bool) {
    let mut schema = schema.clone();
    objects_for_booleans(&mut schema);
    let schema = &schema;
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    if always_object(schema, &defs)
        && let Value::Object(map) = schema
    {
        // MCP requires `"type": "object"` at the top of an output schema, even when every
        // branch of a `oneOf` is an object already.
        let mut map = map.clone();
        map.entry("type").or_insert_with(|| json!("object"));
        return (map, false);
    }
    let mut inner = schema.clone();
    let mut wrapper = Map::new();
    if let Value::Object(map) = &mut inner {
        // The definitions move to the root, where `#/$defs/…` references resolve.
        if let Some(defs) = map.remove("$defs") {
            wrapper.insert("$defs".to_owned(), defs);
        }
        map.remove("$schema");
    }
    wrapper.insert("type".to_owned(), json!("object"));
    wrapper.insert("properties".to_owned(), json!({"value": inner}));
    wrapper.insert("required".to_owned(), json!(["value"]));
    (wrapper, true)
}

/// Replaces the boolean subschemas of `schema` (`"result": true`: any value) by their object
/// forms (`{}`, `{"not": {}}`): JSON Schema allows both, but the TypeScript SDK's validator of
/// `tools/list` rejects a boolean where it expects a property's or an item's schema, and then
/// the client cannot list any tool. `additionalProperties` keeps its boolean (accepted there).
fn objects_for_booleans(schema: &mut Value) {
    fn object_form(value: &mut Value) {
        match value {
            Value::Bool(true) => *value = json!({}),
            Value::Bool(false) => *value = json!({"not": {}}),
            other => objects_for_booleans(other),
        }
    }
    let Value::Object(map) = schema else { return };
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(members)) = map.get_mut(key) {
            members.values_mut().for_each(object_form);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(branches)) = map.get_mut(key) {
            branches.iter_mut().for_each(object_form);
        }
    }
    for key in ["items", "not", "if", "then", "else", "contains"] {
        if let Some(sub) = map.get_mut(key) {
            object_form(sub);
        }
    }
}

fn mcp_content(blocks: Vec<ContentBlock>) -> Vec<McpContent> {
    blocks
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text { text } => McpContent::text(text),
            ContentBlock::Image { data, mime_type } => McpContent::image(data, mime_type),
        })
        .collect()
}

/// The MCP result of one call. Takes the result whole: its text and value move into the
/// answer rather than being copied (a read's page is tens of kilobytes of each).
pub fn to_mcp_result(
    result: ToolExecutionResult,
    shape: Shape,
    wrapped: bool,
    call_id: &str,
) -> CallToolResult {
    let mut meta = Map::new();
    meta.insert("toolhost/callId".to_owned(), json!(call_id));
    let (value, content) = match result {
        ToolExecutionResult::Failure { error, content, .. } => {
            if let Some(info) = error.info {
                meta.insert(
                    "toolhost/error".to_owned(),
                    json!({"code": info.code, "name": info.name}),
                );
            }
            let mut out = CallToolResult::error(mcp_content(content));
            out.meta = Some(meta.into());
            return out;
        }
        ToolExecutionResult::Success { value, content, .. } => (value, content),
    };
    let mut out = CallToolResult::success(mcp_content(content));
    match shape {
        Shape::Structured => {
            out.structured_content = Some(if wrapped { json!({ "value": value }) } else { value });
        }
        Shape::Text => {
            meta.insert("toolhost/value".to_owned(), value);
        }
    }
    out.meta = Some(meta.into());
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolhost_protocol::result::ErrorInfo;

    #[test]
    fn auto_gives_text_to_clients_that_drop_the_native_text() {
        assert_eq!(shape_for(ResultsMode::Auto, Some("claude-code")), Shape::Text);
        assert_eq!(shape_for(ResultsMode::Auto, Some("codex-mcp-client")), Shape::Text);
        assert_eq!(shape_for(ResultsMode::Auto, Some("mcp")), Shape::Structured);
        assert_eq!(shape_for(ResultsMode::Auto, None), Shape::Structured);
        assert_eq!(shape_for(ResultsMode::Text, Some("mcp")), Shape::Text);
        assert_eq!(shape_for(ResultsMode::Structured, Some("claude-code")), Shape::Structured);
    }

    #[test]
    fn non_object_schemas_are_wrapped() {
        let object = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert!(!published_output_schema(&object).1);
        assert!(!output_is_wrapped(&object));
        assert!(output_is_wrapped(&json!(true)) && published_output_schema(&json!(true)).1);
        let either = json!({"oneOf": [{"type": "object"}, {"$ref": "#/$defs/X"}], "$defs": {"X": {"type": "object"}}});
        let (published, wrapped) = published_output_schema(&either);
        assert_eq!(output_is_wrapped(&either), wrapped);
        assert!(!wrapped);
        assert_eq!(published["type"], "object");
        let list = json!({"type": "array", "items": {"$ref": "#/$defs/X"}, "$defs": {"X": {"type": "string"}}});
        let (schema, wrapped) = published_output_schema(&list);
        assert_eq!(output_is_wrapped(&list), wrapped);
        assert!(wrapped);
        assert_eq!(schema["properties"]["value"]["type"], "array");
        assert_eq!(schema["$defs"]["X"]["type"], "string");
    }

    #[test]
    fn boolean_subschemas_are_published_as_objects() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"logs": {"type": "array", "items": true}, "result": true, "never": false}});
        let (published, wrapped) = published_output_schema(&schema);
        assert!(!wrapped);
        assert_eq!(published["properties"]["result"], json!({}));
        assert_eq!(published["properties"]["never"], json!({"not": {}}));
        assert_eq!(published["properties"]["logs"]["items"], json!({}));
        assert_eq!(published["additionalProperties"], json!(false));
    }

    #[test]
    fn results_carry_the_native_text_and_the_value_where_the_shape_says() {
        let ok = ToolExecutionResult::Success {
            value: json!({"n": 1}),
            content: vec![ContentBlock::text("one")],
            meta: None,
        };
        let structured = to_mcp_result(ok.clone(), Shape::Structured, false, "c1");
        assert_eq!(structured.structured_content, Some(json!({"n": 1})));
        assert_eq!(structured.is_error, Some(false));
        let text = to_mcp_result(ok, Shape::Text, false, "c1");
        assert_eq!(text.structured_content, None);
        let meta = serde_json::to_value(&text.meta).unwrap();
        assert_eq!(meta["toolhost/value"], json!({"n": 1}));
        let failed = ToolExecutionResult::failure(
            "cannot read \"a\": not found",
            Some(ErrorInfo::new("FsError", "FS_NOT_FOUND")),
        );
        let err = to_mcp_result(failed, Shape::Structured, false, "c2");
        assert_eq!(err.is_error, Some(true));
        assert_eq!(err.structured_content, None);
        let meta = serde_json::to_value(&err.meta).unwrap();
        assert_eq!(meta["toolhost/error"]["code"], "FS_NOT_FOUND");
    }
}
