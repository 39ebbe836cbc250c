//! `[mcp]` settings as the MCP server uses them (the binary reads them from the configuration
//! files).

use crate::handler::ToolMeta;
use crate::results::ResultsMode;
use serde_json::{Map, Value, json};

/// How `toolhost mcp` presents tools and results.
#[derive(Clone, Debug, PartialEq)]
pub struct McpConfig {
    /// `[mcp] results`: `auto`, `structured` or `text`.
    pub results: ResultsMode,
    /// `[mcp.meta.<tool>]` (`"*"`: every tool): `_meta` entries each listed tool carries.
    pub tool_meta: ToolMeta,
    /// Longest line read from the client (bytes); a longer one is answered `-32600`.
    pub max_line_bytes: usize,
}

/// `_meta` every tool is listed with unless configured otherwise: Claude Code hides MCP tools
/// behind its tool search without `anthropic/alwaysLoad`.
pub fn default_tool_meta() -> ToolMeta {
    let mut all = Map::new();
    all.insert("anthropic/alwaysLoad".to_owned(), json!(true));
    ToolMeta::from([("*".to_owned(), all)])
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            results: ResultsMode::Auto,
            tool_meta: default_tool_meta(),
            max_line_bytes: 64 * 1024 * 1024,
        }
    }
}

/// A `_meta` table from configuration, checked to be objects per tool.
pub fn tool_meta_from(value: &Value) -> Option<ToolMeta> {
    let map = value.as_object()?;
    let mut out = ToolMeta::new();
    for (tool, entries) in map {
        out.insert(tool.clone(), entries.as_object()?.clone());
    }
    Some(out)
}

/// `[mcp]`'s own keys (how `toolhost mcp` presents tools and results) as one source gives them;
/// `[mcp.servers]` belongs to the MCP bridge.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSection {
    results: Option<ResultsMode>,
    /// `_meta` per listed tool (`"*"`: every tool); tables merge key by key across sources.
    meta: ToolMeta,
    max_line_bytes: Option<usize>,
}

impl toolhost_contract::config::Section for McpSection {
    type Settings = McpConfig;

    fn apply(self, config: &mut McpConfig, _layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(results) = self.results {
            config.results = results;
        }
        if let Some(max) = self.max_line_bytes {
            config.max_line_bytes = max;
        }
        for (tool, entries) in self.meta {
            config.tool_meta.entry(tool).or_default().extend(entries);
        }
    }
}
