//! `glob`: files matching a pattern, oldest modification first (docs/tools.md, glob; mtime ties by
//! path).

use crate::{FsLimits, fs_failure, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use toolhost_contract::spill::{OwnSpill, SpillMode};
use toolhost_contract::{CancellationToken, Tool, ToolContext, ToolError};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock};
use toolhost_workspace::search::{self, GlobOptions, SearchError, SearchTool};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// A glob such as `**/*.rs` or `*.md` (without `/` it matches file names at any depth).
    pub pattern: String,
    /// The directory to search in (default: the workspace root).
    pub path: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GlobOutput {
    /// `.` for the workspace root, else the searched directory as displayed.
    pub root: String,
    /// Every matching file (workspace-relative where possible), oldest modification first.
    pub paths: Vec<String>,
}

/// How the model can get the rest of an over-cap result.
pub(crate) enum Recovery<'a> {
    Unsaved,
    Stored { locator: &'a str, hint: &'a str },
}

/// Runs a search off the async threads, polling `signal`, and answers as soon as `signal` fires
/// even if the search is stuck in a system call it cannot be interrupted in: the call must not
/// wait on it (the search notices the signal at its next poll and ends by itself).
pub(crate) async fn run_search<T, F>(
    tool: SearchTool,
    signal: &CancellationToken,
    search: F,
) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&(dyn Fn() -> bool + Sync)) -> Result<T, SearchError> + Send + 'static,
{
    let polled = signal.clone();
    let task = tokio::task::spawn_blocking(move || search(&move || polled.is_cancelled()));
    let outcome = tokio::select! {
        joined = task => joined.map_err(|e| {
            let message = format!("{} search failed: {e}", tool.name());
            ToolError::typed("SearchError", "SEARCH_FAILED", message)
        })?,
        () = signal.cancelled() => Err(SearchError::Aborted(tool)),
    };
    outcome.map_err(|e| ToolError::typed("SearchError", e.code(), e.to_string()))
}

/// A search run in the session's execution world (the same engine, where the files are):
/// cancelled with the call, its refusals typed as the local search types them.
pub(crate) async fn run_world_search<T>(
    tool: SearchTool,
    signal: &CancellationToken,
    search: impl std::future::Future<Output = toolhost_contract::WorldResult<T>>,
) -> Result<T, ToolError> {
    let outcome = tokio::select! {
        outcome = search => outcome,
        () = signal.cancelled() => {
            let aborted = SearchError::Aborted(tool);
            return Err(ToolError::typed("SearchError", aborted.code(), aborted.to_string()));
        }
    };
    outcome.map_err(|failure| {
        let code = if failure.code.starts_with("SEARCH_") {
            failure.code.as_str()
        } else {
            "SEARCH_FAILED"
        };
        ToolError::typed("SearchError", code, failure.message)
    })
}

/// The search root as a path beneath the world's root (`None`: the root itself).
pub(crate) fn world_search_root(
    resolved: Option<&toolhost_workspace::ResolvedPath>,
) -> Option<String> {
    resolved.map(|r| r.real_rel.to_string_lossy().into_owned()).filter(|rel| !rel.is_empty())
}

pub struct GlobTool {
    limits: FsLimits,
}

impl GlobTool {
    pub fn new(limits: FsLimits) -> Self {
        GlobTool { limits }
    }
}

fn first_segment<'a>(root: &str, path: &'a str) -> &'a str {
    let mut rel = path;
    if root != "." && !root.is_empty() {
        let prefix = root.trim_end_matches('/');
        if let Some(rest) = rel.strip_prefix(prefix).filter(|r| r.starts_with('/')) {
            rel = rest;
        }
    }
    let rel = rel.trim_start_matches("./").trim_start_matches('/');
    rel.split('/').next().unwrap_or(rel)
}

/// The shown page: the first `cap` paths, or (sampling) a round-robin over top-level entries,
/// emitted grouped. Returns the page and, when sampled, (groups sampled, groups total).
pub(crate) fn glob_page(
    out: &GlobOutput,
    cap: usize,
    sample: bool,
) -> (Vec<String>, Option<(usize, usize)>) {
    if out.paths.len() <= cap {
        return (out.paths.clone(), None);
    }
    if !sample {
        return (out.paths[..cap].to_vec(), None);
    }
    let mut groups: Vec<(&str, Vec<&String>)> = Vec::new();
    for path in &out.paths {
        let key = first_segment(&out.root, path);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(path),
            None => groups.push((key, vec![path])),
        }
    }
    if groups.len() == out.paths.len() {
        return (out.paths[..cap].to_vec(), None);
    }
    let mut taken = vec![0usize; groups.len()];
    let mut count = 0;
    'passes: loop {
        let mut progressed = false;
        for (idx, (_, members)) in groups.iter().enumerate() {
            if taken[idx] < members.len() {
                taken[idx] += 1;
                count += 1;
                progressed = true;
                if count == cap {
                    break 'passes;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    let sampled = taken.iter().filter(|t| **t > 0).count();
    let page = groups
        .iter()
        .zip(&taken)
        .flat_map(|((_, m), t)| m[..*t].iter().map(|p| (*p).clone()))
        .collect();
    (page, Some((sampled, groups.len())))
}

pub(crate) fn render_glob(out: &GlobOutput, limits: &FsLimits, recovery: Recovery<'_>) -> String {
    if out.paths.is_empty() {
        return "No files found".to_owned();
    }
    let cap = limits.glob_max_results as usize;
    if out.paths.len() <= cap {
        return out.paths.join("\n");
    }
    let (page, sampled) = glob_page(out, cap, limits.glob_sample_over_cap);
    let basis = match sampled {
        Some((s, t)) => {
            let mut b = format!(
                ", sampled across {s} of the {t} top-level entries this pattern matched instead of taken in modification-time order."
            );
            if s < t {
                b.push_str(" Narrow path to inspect a specific subtree.");
            }
            b
        }
        None => ".".to_owned(),
    };
    let recovery = match recovery {
        Recovery::Stored { locator, hint } => {
            format!("Full sorted result stored at: {locator}. {hint}")
        }
        Recovery::Unsaved => {
            "The complete result could not be saved; narrow pattern or path to see more.".to_owned()
        }
    };
    format!(
        "{}\n\n(Showing {} of {} paths{basis} {recovery})",
        page.join("\n"),
        page.len(),
        out.paths.len()
    )
}

/// Drops trailing items until the compact JSON of the meta fits `max` bytes (at least one kept).
pub(crate) fn bound_meta<T: Serialize>(
    mut items: Vec<T>,
    mut truncated: bool,
    max: u64,
    build: impl Fn(&[T], bool) -> Value,
) -> Value {
    loop {
        let meta = build(&items, truncated);
        let size = serde_json::to_string(&meta).map_or(0, |s| s.len()) as u64;
        if size <= max || items.len() <= 1 {
            return meta;
        }
        let drop = ((items.len() as u64 * (size - max)) / size).max(1) as usize;
        items.truncate(items.len().saturating_sub(drop).max(1));
        truncated = true;
    }
}

impl Tool for GlobTool {
    type Args = GlobArgs;
    type Output = GlobOutput;

    fn name(&self) -> &str {
        "glob"
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        crate::present::search("Glob", args, false)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::READ_ONLY
    }

    fn description(&self) -> String {
        format!(
            "Find files by glob pattern (e.g. `**/*.ts`, `src/**/mod.rs`; a pattern without `/` matches file \
             names at any depth). Hidden and ignored files are included, VCS folders excluded. Results are \
             ordered oldest-modified first; at most {} are shown.",
            self.limits.glob_max_results
        )
    }

    async fn call(&self, args: GlobArgs, cx: ToolContext) -> Result<GlobOutput, ToolError> {
        if args.pattern.trim().is_empty() {
            return Err(ToolError::plain("pattern must be a non-empty string"));
        }
        if args.path.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(ToolError::plain("path must be a non-empty string when given"));
        }
        let ws = workspace(&cx)?;
        let workdir = ws.primary_root().canonical().to_path_buf();
        let resolved = match &args.path {
            Some(path) => Some(ws.resolve(path).await.map_err(fs_failure)?),
            None => None,
        };
        let (search_root, root) = match &resolved {
            Some(resolved) => {
                let shown = match resolved.real_path.strip_prefix(&workdir) {
                    Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
                    Ok(rel) => rel.to_string_lossy().into_owned(),
                    Err(_) => resolved.display.clone(),
                };
                (resolved.real_path.clone(), shown)
            }
            None => (workdir.clone(), ".".to_owned()),
        };
        if let Some(world) = ws.world() {
            let path = world_search_root(resolved.as_ref());
            let search = world.glob(&args.pattern, path.as_deref(), cx.signal());
            let paths = run_world_search(SearchTool::Glob, cx.signal(), search).await?;
            return Ok(GlobOutput { root, paths });
        }
        // Moved, not cloned: a pattern may be far over the search's length cap until the
        // search refuses it.
        let pattern = args.pattern;
        let paths = run_search(SearchTool::Glob, cx.signal(), move |cancelled| {
            search::glob(&GlobOptions::new(&workdir, &search_root, &pattern, cancelled))
        })
        .await?;
        Ok(GlobOutput { root, paths })
    }

    fn render(&self, _args: &GlobArgs, out: &GlobOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_glob(out, &self.limits, Recovery::Unsaved))]
    }

    fn spill_mode(&self) -> SpillMode {
        SpillMode::Own
    }

    /// Over its item cap, the complete list is stored and the page's footer names its locator.
    fn spill_over(&self, _args: &GlobArgs, out: &GlobOutput) -> Option<OwnSpill> {
        if out.paths.len() as u64 <= self.limits.glob_max_results {
            return None;
        }
        let (out, limits) = (out.clone(), self.limits.clone());
        Some(OwnSpill {
            file_name: "glob-results.txt".to_owned(),
            content: out.paths.join("\n"),
            page: Box::new(move |locator, hint| {
                vec![ContentBlock::text(render_glob(
                    &out,
                    &limits,
                    Recovery::Stored { locator, hint },
                ))]
            }),
        })
    }

    fn presentation_meta(&self, _args: &GlobArgs, out: &GlobOutput) -> Option<Value> {
        let cap = self.limits.glob_max_results as usize;
        let (page, _) = glob_page(out, cap, self.limits.glob_sample_over_cap);
        let total = out.paths.len();
        let truncated = page.len() < total;
        Some(bound_meta(
            page,
            truncated,
            self.limits.search_meta_max_bytes,
            |paths, truncated| json!({"shape": "paths", "paths": paths, "truncated": truncated, "total": total}),
        ))
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(paths: &[&str]) -> GlobOutput {
        GlobOutput { root: ".".into(), paths: paths.iter().map(|p| (*p).to_owned()).collect() }
    }

    #[test]
    fn pinned_cap_example() {
        let limits = FsLimits { glob_max_results: 2, ..FsLimits::default() };
        let text = render_glob(
            &out(&["a.ts", "b.ts", "c.ts", "d.ts"]),
            &limits,
            Recovery::Stored { locator: "/spill/glob-results.txt", hint: "<hint>" },
        );
        assert_eq!(
            text,
            "a.ts\nb.ts\n\n(Showing 2 of 4 paths. Full sorted result stored at: /spill/glob-results.txt. <hint>)"
        );
    }

    #[test]
    fn pinned_sampling_example() {
        let limits = FsLimits { glob_max_results: 3, ..FsLimits::default() };
        let value = out(&[
            "vendor/a.ts",
            "vendor/b.ts",
            "vendor/c.ts",
            "src/d.ts",
            "guide/e.md",
            "top.txt",
        ]);
        let text = render_glob(&value, &limits, Recovery::Unsaved);
        assert_eq!(
            text,
            "vendor/a.ts\nsrc/d.ts\nguide/e.md\n\n(Showing 3 of 6 paths, sampled across 3 of the 4 top-level entries this pattern matched instead of taken in modification-time order. Narrow path to inspect a specific subtree. The complete result could not be saved; narrow pattern or path to see more.)"
        );
    }

    #[test]
    fn empty_and_under_cap() {
        assert_eq!(
            render_glob(&out(&[]), &FsLimits::default(), Recovery::Unsaved),
            "No files found"
        );
        assert_eq!(render_glob(&out(&["a", "b"]), &FsLimits::default(), Recovery::Unsaved), "a\nb");
    }
}
