//! Shapes of toolhost's custom LSP methods (`toolhost/…`), camelCase on the wire.

use crate::card::Card;
use crate::result::ToolExecutionResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as listed by `toolhost/listTools` and `toolhost tools --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
}

/// Result of `toolhost/listTools`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListToolsResult {
    pub tools: Vec<ToolDescriptor>,
}

/// Params of `toolhost/callTool`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// Result of `toolhost/callTool` (and of `toolhost call --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub session_id: Option<String>,
    pub call_id: String,
    pub result: ToolExecutionResult,
    pub card: Card,
}
