//! The `lsp` tool (docs/tools.md, lsp): argument checks, the workspace (confinement
//! before any provider work), the optional `symbol` column fix, the provider query, and the
//! additive per-location `snippet`s read through the workspace.

use crate::render::{bound, locations_meta, locations_text};
use crate::symbol::{resolve_symbol, snippet};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::lsp::{
    LspAnswer, LspLocation, LspOperation, LspPosition, LspRange, LspRequest, codes, file_uri,
    file_uri_path, lsp_error, no_provider, provider,
};
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::ContentBlock;
use toolhost_protocol::card::{CallPresentation, CardKind, format_number};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_workspace::{FsError, Ledger, Workspace};

/// The tool's caps (the documented defaults plus the card and snippet bounds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NavLimits {
    /// Locations rendered in the Native text (`maxLocations`).
    pub max_locations: usize,
    /// The Native text bound in UTF-16 units (`maxResultChars`).
    pub max_result_chars: usize,
    /// Deadline of one call (queueing, start, open, request, close).
    pub timeout: Duration,
    /// Bound of the card metadata, in bytes.
    pub meta_max_bytes: usize,
    /// Largest source file sent to a server (`maxDocumentBytes`).
    pub max_document_bytes: u64,
    /// Distinct files read for snippets per call (later files get an empty snippet).
    pub max_snippet_files: usize,
}

impl Default for NavLimits {
    fn default() -> Self {
        NavLimits {
            max_locations: 100,
            max_result_chars: 16_000,
            timeout: Duration::from_secs(60),
            meta_max_bytes: 64 * 1024,
            max_document_bytes: 4_000_000,
            max_snippet_files: 100,
        }
    }
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct LspArgs {
    /// goToDefinition, findReferences (includes the declaration), goToImplementation or hover.
    pub operation: LspOperation,
    /// The file, relative to the workspace or absolute.
    pub file_path: String,
    /// One-based line.
    pub line: f64,
    /// One-based column (UTF-16 code units), as shown by `read`.
    pub character: f64,
    /// The identifier at that position; when given, the column is moved onto it (on the line,
    /// or the nearest line within ±3), so a slightly wrong column still hits the symbol.
    pub symbol: Option<String>,
}

/// One location: zero-based UTF-16 range plus the trimmed source line (≤ 200 chars; empty when
/// the file is outside the workspace or unreadable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocationOut {
    pub uri: String,
    pub range: LspRange,
    pub snippet: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HoverOut {
    pub contents: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<LspRange>,
}

/// The canonical value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
pub enum LspOutput {
    #[serde(rename = "locations", rename_all = "camelCase")]
    Locations { locations: Vec<LocationOut>, resolved_workspace_uri: String },
    #[serde(rename = "hover")]
    Hover { hover: Option<HoverOut> },
}

/// The `lsp` tool.
pub struct LspTool {
    limits: NavLimits,
}

impl LspTool {
    pub fn new(limits: NavLimits) -> Self {
        LspTool { limits }
    }
}

fn one_based(value: f64, what: &str) -> Result<u32, ToolError> {
    if value.is_finite() && value.fract() == 0.0 && value >= 1.0 && value <= f64::from(u32::MAX) {
        Ok(value as u32)
    } else {
        Err(ToolError::plain(format!("{what} must be a positive integer (one-based)")))
    }
}

fn fs_failure(err: FsError) -> ToolError {
    ToolError::typed(err.name(), err.code(), err.to_string())
}

impl LspTool {
    /// Snippets for every location, each distinct file read once (through the workspace, with
    /// a throwaway ledger: looking at a line is not an observation that authorizes edits).
    async fn with_snippets(
        &self,
        view: &Workspace,
        request: &LspRequest,
        locations: Vec<LspLocation>,
    ) -> Vec<LocationOut> {
        let mut texts: HashMap<String, Option<Arc<str>>> = HashMap::new();
        texts.insert(request.uri.clone(), Some(Arc::clone(&request.text)));
        let mut read = 0usize;
        let mut out = Vec::with_capacity(locations.len());
        for location in locations {
            if !texts.contains_key(&location.uri) {
                let text = match file_uri_path(&location.uri) {
                    Some(path) if read < self.limits.max_snippet_files => {
                        read += 1;
                        let path = path.to_string_lossy().into_owned();
                        view.read_file_limited(&path, self.limits.max_document_bytes)
                            .await
                            .ok()
                            .map(|f| Arc::from(f.text))
                    }
                    _ => None,
                };
                texts.insert(location.uri.clone(), text);
            }
            let snippet = texts
                .get(&location.uri)
                .and_then(Option::as_ref)
                .map(|text| snippet(text, location.range.start.line))
                .unwrap_or_default();
            out.push(LocationOut { uri: location.uri, range: location.range, snippet });
        }
        out
    }
}

impl Tool for LspTool {
    type Args = LspArgs;
    type Output = LspOutput;

    fn name(&self) -> &str {
        "lsp"
    }

    /// `LSP <operation> <file_path>:<line>:<character>` as a search card at that line.
    fn present_call(&self, args: &Value) -> CallPresentation {
        let text = |key: &str| args.get(key).and_then(Value::as_str);
        let number = |key: &str| args.get(key).and_then(Value::as_f64);
        let path = text("file_path").unwrap_or("");
        let title = format!(
            "LSP {} {path}:{}:{}",
            text("operation").unwrap_or(""),
            number("line").map(format_number).unwrap_or_default(),
            number("character").map(format_number).unwrap_or_default()
        );
        let presentation = CallPresentation::new(CardKind::Search, title);
        if path.is_empty() {
            return presentation;
        }
        let line = number("line").filter(|n| *n >= 1.0).map_or(1, |n| n as u64);
        presentation.with_location(path, line)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::READ_ONLY
    }

    fn description(&self) -> String {
        format!(
            "Ask the language server about the symbol at a position: goToDefinition, findReferences \
             (includes the declaration), goToImplementation, or hover (type and docs). line and \
             character are one-based, as shown by `read`. Pass `symbol` (the identifier you mean) \
             so a slightly wrong column still lands on it. Locations print as `path:line:character` \
             (paths relative to the workspace), at most {} of them; output is capped at {} characters.",
            self.limits.max_locations, self.limits.max_result_chars
        )
    }

    async fn call(&self, args: LspArgs, cx: ToolContext) -> Result<LspOutput, ToolError> {
        if args.file_path.trim().is_empty() {
            return Err(ToolError::plain("file_path must be a non-empty string"));
        }
        let line = one_based(args.line, "line")?;
        let character = one_based(args.character, "character")?;
        if args.symbol.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(ToolError::plain("symbol must be a non-empty string"));
        }
        let workspace = cx.capability::<Workspace>().ok_or_else(|| {
            lsp_error(codes::WORKSPACE_REQUIRED, "the lsp tool requires a session workspace cwd")
        })?;
        let view = workspace.with_ledger(Arc::new(Ledger::new()));
        let file = view
            .read_file_limited(&args.file_path, self.limits.max_document_bytes)
            .await
            .map_err(fs_failure)?;
        let text: Arc<str> = Arc::from(file.text.strip_prefix('\u{feff}').unwrap_or(&file.text));
        let mut position = LspPosition { line: line - 1, character: character - 1 };
        if let Some(symbol) = args.symbol.as_deref().map(str::trim) {
            position = resolve_symbol(&text, position, symbol).ok_or_else(|| {
                ToolError::plain(format!(
                    "symbol \"{symbol}\" does not occur within 3 lines of line {line} of \"{}\"",
                    file.display
                ))
            })?;
        }
        let provider = provider(&cx).ok_or_else(|| no_provider(&file.display))?;
        // Paths are shown relative to the primary root (as the file tools show them), but the
        // language server runs on the workspace folder that holds the file: started on another
        // folder it cannot resolve the file's imports.
        let root = workspace.primary_root().canonical().to_path_buf();
        let server_root = workspace
            .roots()
            .iter()
            .filter(|r| !r.is_read_only() && file.real_path.starts_with(r.canonical()))
            .max_by_key(|r| r.canonical().components().count())
            .map_or_else(|| root.clone(), |r| r.canonical().to_path_buf());
        let request = LspRequest {
            operation: args.operation,
            uri: file_uri(&file.real_path),
            workspace_root: server_root,
            path: file.real_path,
            display: file.display,
            position,
            text,
        };
        match provider.query(&request, cx.signal()).await? {
            LspAnswer::Hover(hover) => Ok(LspOutput::Hover {
                hover: hover.map(|h| HoverOut { contents: h.contents, range: h.range }),
            }),
            LspAnswer::Locations(locations) => Ok(LspOutput::Locations {
                locations: self.with_snippets(&view, &request, locations).await,
                resolved_workspace_uri: file_uri(&root),
            }),
        }
    }

    fn render(&self, _args: &LspArgs, output: &LspOutput) -> Vec<ContentBlock> {
        let max = self.limits.max_result_chars;
        let text = match output {
            LspOutput::Locations { locations, resolved_workspace_uri } => bound(
                locations_text(locations, resolved_workspace_uri, self.limits.max_locations),
                "locations",
                max,
            ),
            LspOutput::Hover { hover: None } => bound("No hover information.".into(), "hover", max),
            LspOutput::Hover { hover: Some(hover) } => bound(hover.contents.clone(), "hover", max),
        };
        vec![ContentBlock::text(text)]
    }

    fn presentation_meta(&self, _args: &LspArgs, output: &LspOutput) -> Option<Value> {
        match output {
            LspOutput::Locations { locations, resolved_workspace_uri } => Some(locations_meta(
                locations,
                resolved_workspace_uri,
                self.limits.max_locations,
                self.limits.meta_max_bytes,
            )),
            LspOutput::Hover { .. } => None,
        }
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.limits.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_protocol::card::legacy;

    /// Older logs replay through `card::legacy`; the declaration must give the same card.
    #[test]
    fn the_declaration_matches_the_presentation_older_logs_replay_with() {
        let tool = LspTool::new(crate::NavLimits::default());
        for args in [
            json!({"operation": "hover", "file_path": "a.c", "line": 3, "character": 5}),
            json!({"operation": "goToDefinition", "file_path": "a.c", "line": 0, "character": 1.5}),
            json!({"file_path": ""}),
            json!({}),
            json!(null),
        ] {
            assert_eq!(tool.present_call(&args), legacy::presentation("lsp", &args), "{args}");
        }
    }
}
