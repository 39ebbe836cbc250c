//! `grep`: regex search over file contents (docs/tools.md, grep; files sorted by path, lines
//! ascending).

use crate::glob::{Recovery, bound_meta, run_search};
use crate::{FsLimits, fs_failure, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use toolhost_contract::spill::{OwnSpill, SpillMode, head_bytes};
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock};
use toolhost_workspace::search::{self, GrepOptions, SearchTool};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// A regular expression (Rust regex syntax, case-sensitive).
    pub pattern: String,
    /// A directory or file to search (default: the workspace root).
    pub path: Option<String>,
    /// One glob restricting which files are searched, e.g. `*.rs` or `*.{ts,tsx}`.
    pub include: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepMatchOut {
    pub path: String,
    pub line_number: u64,
    pub line: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GrepOutput {
    /// Every match: files in path order, lines ascending within a file.
    pub matches: Vec<GrepMatchOut>,
}

pub struct GrepTool {
    limits: FsLimits,
}

impl GrepTool {
    pub fn new(limits: FsLimits) -> Self {
        GrepTool { limits }
    }
}

fn preview(line: &str, max: u64) -> String {
    if line.len() as u64 <= max {
        return line.to_owned();
    }
    format!("{} (line truncated)", head_bytes(line, max as usize))
}

/// Matches grouped by path in first-seen order, lines previewed.
fn grouped(matches: &[GrepMatchOut], max_line: u64) -> Vec<(String, Vec<(u64, String)>)> {
    let mut groups: Vec<(String, Vec<(u64, String)>)> = Vec::new();
    for m in matches {
        let line = (m.line_number, preview(&m.line, max_line));
        match groups.iter_mut().find(|(p, _)| *p == m.path) {
            Some((_, lines)) => lines.push(line),
            None => groups.push((m.path.clone(), vec![line])),
        }
    }
    groups
}

fn groups_text(groups: &[(String, Vec<(u64, String)>)]) -> String {
    groups
        .iter()
        .map(|(path, lines)| {
            let mut block = path.clone();
            for (n, line) in lines {
                block.push_str(&format!("\nLine {n}: {line}"));
            }
            block
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn found(n: usize) -> String {
    if n == 1 { "Found 1 match".to_owned() } else { format!("Found {n} matches") }
}

pub(crate) fn render_grep(out: &GrepOutput, limits: &FsLimits, recovery: Recovery<'_>) -> String {
    if out.matches.is_empty() {
        return "No matches found".to_owned();
    }
    let total = out.matches.len();
    let cap = limits.grep_max_matches as usize;
    let kept = &out.matches[..total.min(cap)];
    let body = groups_text(&grouped(kept, limits.grep_max_line_bytes));
    if total <= cap {
        return format!("{}\n\n{body}", found(total));
    }
    let recovery = match recovery {
        Recovery::Stored { locator, hint } => {
            format!("Full grep result stored at: {locator}. {hint}")
        }
        Recovery::Unsaved => {
            "The complete result could not be saved; narrow pattern, path, or include to see more."
                .to_owned()
        }
    };
    format!("Found {} of {total} matches\n\n{body}\n\n({recovery})", kept.len())
}

/// The complete formatted list (what the tool-owned spill stores).
pub(crate) fn full_grep_text(out: &GrepOutput, limits: &FsLimits) -> String {
    format!(
        "{}\n\n{}",
        found(out.matches.len()),
        groups_text(&grouped(&out.matches, limits.grep_max_line_bytes))
    )
}

fn validate_include(include: &str) -> Result<(), ToolError> {
    if include.trim().is_empty() {
        return Err(ToolError::plain("include must be a non-empty glob when given"));
    }
    if include.starts_with('!') {
        return Err(ToolError::plain(
            "include must be a positive glob filter; negated patterns (\"!…\") are not supported",
        ));
    }
    let mut depth = 0i32;
    for ch in include.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth <= 0 => {
                return Err(ToolError::plain(
                    "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

impl Tool for GrepTool {
    type Args = GrepArgs;
    type Output = GrepOutput;

    fn name(&self) -> &str {
        "grep"
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        crate::present::search("Grep", args, true)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::READ_ONLY
    }

    fn description(&self) -> String {
        format!(
            "Search file contents with a regular expression (case-sensitive; .gitignore honoured, hidden and \
             binary files skipped). Narrow with path and include (one glob). Matches are grouped by file; \
             at most {} are shown.",
            self.limits.grep_max_matches
        )
    }

    async fn call(&self, args: GrepArgs, cx: ToolContext) -> Result<GrepOutput, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::plain("pattern must be a non-empty string"));
        }
        if args.path.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(ToolError::plain("path must be a non-empty string when given"));
        }
        if let Some(include) = &args.include {
            validate_include(include)?;
        }
        let ws = workspace(&cx)?;
        let workdir = ws.primary_root().canonical().to_path_buf();
        let resolved = match &args.path {
            Some(path) => Some(ws.resolve(path).await.map_err(fs_failure)?),
            None => None,
        };
        if let Some(world) = ws.world() {
            let path = crate::glob::world_search_root(resolved.as_ref());
            let search =
                world.grep(&args.pattern, path.as_deref(), args.include.as_deref(), cx.signal());
            let hits = crate::glob::run_world_search(SearchTool::Grep, cx.signal(), search).await?;
            let matches = hits
                .into_iter()
                .map(|m| GrepMatchOut { path: m.path, line_number: m.line_number, line: m.line })
                .collect();
            return Ok(GrepOutput { matches });
        }
        let search_root = resolved.map_or_else(|| workdir.clone(), |r| r.real_path);
        // Moved, not cloned: a pattern may be up to the search's length cap (or far over it,
        // until the search refuses it).
        let (pattern, include) = (args.pattern, args.include);
        let found = run_search(SearchTool::Grep, cx.signal(), move |cancelled| {
            search::grep(&GrepOptions::new(
                &workdir,
                &search_root,
                &pattern,
                include.as_deref(),
                cancelled,
            ))
        })
        .await?;
        Ok(GrepOutput {
            matches: found
                .into_iter()
                .map(|m| GrepMatchOut { path: m.path, line_number: m.line_number, line: m.line })
                .collect(),
        })
    }

    fn spill_mode(&self) -> SpillMode {
        SpillMode::Own
    }

    /// Over its match cap, the complete formatted list is stored and the page's footer names
    /// its locator.
    fn spill_over(&self, _args: &GrepArgs, out: &GrepOutput) -> Option<OwnSpill> {
        if out.matches.len() as u64 <= self.limits.grep_max_matches {
            return None;
        }
        let (out, limits) = (out.clone(), self.limits.clone());
        Some(OwnSpill {
            file_name: "grep-results.txt".to_owned(),
            content: full_grep_text(&out, &limits),
            page: Box::new(move |locator, hint| {
                vec![ContentBlock::text(render_grep(
                    &out,
                    &limits,
                    Recovery::Stored { locator, hint },
                ))]
            }),
        })
    }

    fn render(&self, _args: &GrepArgs, out: &GrepOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_grep(out, &self.limits, Recovery::Unsaved))]
    }

    fn presentation_meta(&self, _args: &GrepArgs, out: &GrepOutput) -> Option<Value> {
        let total = out.matches.len();
        let kept = &out.matches[..total.min(self.limits.grep_max_matches as usize)];
        let files: Vec<Value> = grouped(kept, self.limits.grep_max_line_bytes)
            .into_iter()
            .map(|(path, lines)| {
                let matches: Vec<Value> = lines
                    .into_iter()
                    .map(|(n, line)| json!({"lineNumber": n, "line": line}))
                    .collect();
                json!({"path": path, "matches": matches})
            })
            .collect();
        let truncated = kept.len() < total;
        Some(bound_meta(
            files,
            truncated,
            self.limits.search_meta_max_bytes,
            |files, truncated| json!({"shape": "matches", "files": files, "truncated": truncated, "total": total}),
        ))
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(path: &str, n: u64, line: &str) -> GrepMatchOut {
        GrepMatchOut { path: path.into(), line_number: n, line: line.into() }
    }

    #[test]
    fn pinned_examples() {
        let out = GrepOutput {
            matches: vec![
                m("a.ts", 3, "const x = 1"),
                m("a.ts", 9, "const y = 2"),
                m("b.ts", 1, "const z = 3"),
            ],
        };
        assert_eq!(
            render_grep(&out, &FsLimits::default(), Recovery::Unsaved),
            "Found 3 matches\n\na.ts\nLine 3: const x = 1\nLine 9: const y = 2\n\nb.ts\nLine 1: const z = 3"
        );
        let out = GrepOutput {
            matches: vec![m("a.ts", 1, "one"), m("a.ts", 2, "two"), m("b.ts", 1, "three")],
        };
        let limits = FsLimits { grep_max_matches: 2, ..FsLimits::default() };
        assert_eq!(
            render_grep(
                &out,
                &limits,
                Recovery::Stored { locator: "/spill/grep-results.txt", hint: "<hint>" }
            ),
            "Found 2 of 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\n(Full grep result stored at: /spill/grep-results.txt. <hint>)"
        );
        assert_eq!(
            full_grep_text(&out, &limits),
            "Found 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\nb.ts\nLine 1: three"
        );
    }

    #[test]
    fn singular_and_preview() {
        let out = GrepOutput { matches: vec![m("a", 1, "aéaéaéaé")] };
        let limits = FsLimits { grep_max_line_bytes: 7, ..FsLimits::default() };
        assert_eq!(
            render_grep(&out, &limits, Recovery::Unsaved),
            "Found 1 match\n\na\nLine 1: aéaéa (line truncated)"
        );
    }

    #[test]
    fn include_validation() {
        assert!(validate_include("*.{ts,tsx}").is_ok());
        assert!(validate_include("!*.ts").is_err());
        assert!(validate_include("*.ts,*.js").is_err());
        assert!(validate_include(" ").is_err());
    }
}
