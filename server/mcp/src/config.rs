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
    /// `[mcp] http_auth`: whether MCP over HTTP requires the bearer token written at start.
    pub http_auth: bool,
    /// `[mcp] http_allowed_hosts`: `Host` values accepted besides the loopback names.
    pub http_allowed_hosts: Vec<String>,
    /// `[mcp] http_allowed_origins`: browser `Origin`s accepted besides loopback ones.
    pub http_allowed_origins: Vec<String>,
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
            http_auth: true,
            http_allowed_hosts: Vec::new(),
            http_allowed_origins: Vec::new(),
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
    http_auth: Option<bool>,
    http_allowed_hosts: Option<Vec<String>>,
    http_allowed_origins: Option<Vec<String>>,
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
        if let Some(auth) = self.http_auth {
            config.http_auth = auth;
        }
        if let Some(hosts) = self.http_allowed_hosts {
            config.http_allowed_hosts = hosts;
        }
        if let Some(origins) = self.http_allowed_origins {
            config.http_allowed_origins = origins;
        }
        for (tool, entries) in self.meta {
            config.tool_meta.entry(tool).or_default().extend(entries);
        }
    }

    /// `results` only chooses how the same result is shaped and `meta` only describes
    /// toolhost's own tools to the agent's client (hints such as `anthropic/alwaysLoad`: no tool
    /// does more, nothing starts or is reached), so both stay; `max_line_bytes` is a cap, kept
    /// when lower. Over HTTP, a cloned repository may require the token but never drop it, and
    /// never let other hosts or web pages reach the server.
    fn restrict_untrusted(&mut self, applied: &McpConfig) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        dropped.cap("mcp.max_line_bytes", &mut self.max_line_bytes, applied.max_line_bytes);
        dropped.only_on("mcp.http_auth", &mut self.http_auth, applied.http_auth);
        dropped.always("mcp.http_allowed_hosts", &mut self.http_allowed_hosts);
        dropped.always("mcp.http_allowed_origins", &mut self.http_allowed_origins);
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::config::Section;

    #[test]
    fn an_untrusted_source_may_shape_results_and_describe_tools_but_not_raise_the_line_cap() {
        let mut section = McpSection {
            results: Some(ResultsMode::Text),
            meta: ToolMeta::from([("read".to_owned(), Map::new())]),
            max_line_bytes: Some(usize::MAX),
            ..Default::default()
        };
        let applied = McpConfig::default();
        assert_eq!(section.restrict_untrusted(&applied), ["mcp.max_line_bytes"]);
        assert_eq!(section.results, Some(ResultsMode::Text));
        assert_eq!(section.meta.len(), 1);
        assert_eq!(section.max_line_bytes, None);
        let mut lower = McpSection { max_line_bytes: Some(1024), ..Default::default() };
        assert!(lower.restrict_untrusted(&applied).is_empty());
        assert_eq!(lower.max_line_bytes, Some(1024));
    }

    #[test]
    fn an_untrusted_source_may_not_open_http_wider() {
        let mut section = McpSection {
            http_auth: Some(false),
            http_allowed_hosts: Some(vec!["evil.example".to_owned()]),
            http_allowed_origins: Some(vec!["https://evil.example".to_owned()]),
            ..Default::default()
        };
        let applied = McpConfig::default();
        assert_eq!(
            section.restrict_untrusted(&applied),
            ["mcp.http_auth/mcp.http_allowed_hosts/mcp.http_allowed_origins"]
        );
        assert_eq!(section.http_auth, None);
        let mut on = McpSection { http_auth: Some(true), ..Default::default() };
        assert!(on.restrict_untrusted(&applied).is_empty());
    }
}
