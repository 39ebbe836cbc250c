//! The canonical success/failure union of one tool execution, as it crosses the wire.
//!
//! Serialized exactly as `{"isError":false,"value":…,"content":[…],"meta"?:…}` or
//! `{"isError":true,"error":{"message":…,"info"?:{"name":…,"code":…}},"content":[…],"meta"?:…}`.
//! A success without meta has no `meta` key; a failure never has `value`. The in-process extras of
//! the agent loop (`additionalContexts`, `concludesTurn`) are not part of this type.

use crate::content::ContentBlock;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The class name and stable code of a typed error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorInfo {
    pub name: String,
    pub code: String,
}

impl ErrorInfo {
    pub fn new(name: impl Into<String>, code: impl Into<String>) -> Self {
        ErrorInfo { name: name.into(), code: code.into() }
    }
}

/// The `error` member of a failed result: a message (without the `Error: ` prefix) and, for typed
/// errors only, their name and code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolErrorPayload {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<ErrorInfo>,
}

/// The outcome of one tool execution.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolExecutionResult {
    Success { value: Value, content: Vec<ContentBlock>, meta: Option<Value> },
    Failure { error: ToolErrorPayload, content: Vec<ContentBlock>, meta: Option<Value> },
}

impl ToolExecutionResult {
    /// Whether this is a failure.
    pub fn is_error(&self) -> bool {
        matches!(self, ToolExecutionResult::Failure { .. })
    }

    /// The model-facing content.
    pub fn content(&self) -> &[ContentBlock] {
        match self {
            ToolExecutionResult::Success { content, .. }
            | ToolExecutionResult::Failure { content, .. } => content,
        }
    }

    /// The presentation metadata, if any.
    pub fn meta(&self) -> Option<&Value> {
        match self {
            ToolExecutionResult::Success { meta, .. }
            | ToolExecutionResult::Failure { meta, .. } => meta.as_ref(),
        }
    }

    /// The canonical value of a success.
    pub fn value(&self) -> Option<&Value> {
        match self {
            ToolExecutionResult::Success { value, .. } => Some(value),
            ToolExecutionResult::Failure { .. } => None,
        }
    }

    /// The error of a failure.
    pub fn error(&self) -> Option<&ToolErrorPayload> {
        match self {
            ToolExecutionResult::Success { .. } => None,
            ToolExecutionResult::Failure { error, .. } => Some(error),
        }
    }

    /// The generic failure projection: `content = [text "Error: " + message]`.
    pub fn failure(message: impl Into<String>, info: Option<ErrorInfo>) -> Self {
        let message = message.into();
        let content = vec![ContentBlock::text(format!("Error: {message}"))];
        ToolExecutionResult::Failure {
            error: ToolErrorPayload { message, info },
            content,
            meta: None,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResult {
    is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ToolErrorPayload>,
    content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    meta: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireSuccessRef<'a> {
    is_error: bool,
    value: &'a Value,
    content: &'a [ContentBlock],
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireFailureRef<'a> {
    is_error: bool,
    error: &'a ToolErrorPayload,
    content: &'a [ContentBlock],
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<&'a Value>,
}

impl Serialize for ToolExecutionResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolExecutionResult::Success { value, content, meta } => {
                WireSuccessRef { is_error: false, value, content, meta: meta.as_ref() }
                    .serialize(serializer)
            }
            ToolExecutionResult::Failure { error, content, meta } => {
                WireFailureRef { is_error: true, error, content, meta: meta.as_ref() }
                    .serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for ToolExecutionResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = WireResult::deserialize(deserializer)?;
        if wire.is_error {
            if wire.value.is_some() {
                return Err(D::Error::custom("a failed result must not carry a value"));
            }
            let error = wire.error.ok_or_else(|| D::Error::missing_field("error"))?;
            Ok(ToolExecutionResult::Failure { error, content: wire.content, meta: wire.meta })
        } else {
            let value = wire.value.ok_or_else(|| D::Error::missing_field("value"))?;
            Ok(ToolExecutionResult::Success { value, content: wire.content, meta: wire.meta })
        }
    }
}

impl JsonSchema for ToolExecutionResult {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolExecutionResult".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let content = generator.subschema_for::<Vec<ContentBlock>>();
        let error = generator.subschema_for::<ToolErrorPayload>();
        schemars::json_schema!({
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "isError": { "const": false },
                        "value": true,
                        "content": content,
                        "meta": true
                    },
                    "required": ["isError", "value", "content"],
                    "additionalProperties": false
                },
                {
                    "type": "object",
                    "properties": {
                        "isError": { "const": true },
                        "error": error,
                        "content": content,
                        "meta": true
                    },
                    "required": ["isError", "error", "content"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn success_without_meta_has_no_meta_key() {
        let res = ToolExecutionResult::Success {
            value: json!({"a": 1}),
            content: vec![ContentBlock::text("x")],
            meta: None,
        };
        assert_eq!(
            serde_json::to_string(&res).unwrap(),
            r#"{"isError":false,"value":{"a":1},"content":[{"type":"text","text":"x"}]}"#
        );
    }

    #[test]
    fn failure_has_no_value_and_round_trips() {
        let res =
            ToolExecutionResult::failure("boom", Some(ErrorInfo::new("FsError", "FS_NOT_FOUND")));
        let text = serde_json::to_string(&res).unwrap();
        assert_eq!(
            text,
            r#"{"isError":true,"error":{"message":"boom","info":{"name":"FsError","code":"FS_NOT_FOUND"}},"content":[{"type":"text","text":"Error: boom"}]}"#
        );
        let back: ToolExecutionResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, res);
    }

    #[test]
    fn failure_with_value_is_rejected() {
        let text = r#"{"isError":true,"value":1,"error":{"message":"m"},"content":[]}"#;
        assert!(serde_json::from_str::<ToolExecutionResult>(text).is_err());
    }

    #[test]
    fn image_block_is_mcp_shaped() {
        let block = ContentBlock::Image { data: "AAA=".into(), mime_type: "image/png".into() };
        assert_eq!(
            serde_json::to_string(&block).unwrap(),
            r#"{"type":"image","data":"AAA=","mimeType":"image/png"}"#
        );
    }
}
