//! `read`: a numbered window of a text file (docs/tools.md, read).

use crate::{FsLimits, fs_failure, require_non_empty, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_contract::spill::SpillMode;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The file to read, relative to the workspace or absolute.
    pub file_path: String,
    /// The 1-based line to start at (default 1).
    pub offset: Option<f64>,
    /// How many lines to read (default and maximum 2000).
    pub limit: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadLine {
    pub number: u64,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadOutput {
    pub path: String,
    pub offset: u64,
    pub lines: Vec<ReadLine>,
    pub total_lines: u64,
}

pub struct ReadTool {
    limits: FsLimits,
}

impl ReadTool {
    pub fn new(limits: FsLimits) -> Self {
        ReadTool { limits }
    }
}

fn positive_integer(value: Option<f64>, what: &str) -> Result<Option<u64>, ToolError> {
    match value {
        None => Ok(None),
        Some(v) if v >= 1.0 && v.fract() == 0.0 && v.is_finite() => Ok(Some(v as u64)),
        Some(_) => Err(ToolError::plain(format!("{what} must be a positive integer"))),
    }
}

/// Cuts `line` to at most `max` UTF-16 code units (at a char boundary) with the documented suffix.
fn truncate_line(line: &str, max: u64) -> String {
    let mut units = 0u64;
    for (idx, ch) in line.char_indices() {
        units += ch.len_utf16() as u64;
        if units > max {
            return format!("{}... (line truncated to {max} chars)", &line[..idx]);
        }
    }
    line.to_owned()
}

/// The windowing of docs/tools.md (read): lines split on `\n` (one trailing `\r` stripped), long
/// lines truncated, at most `limit` lines from `offset` within a byte budget; every line is
/// counted.
fn window(text: &str, offset: u64, limit: u64, limits: &FsLimits) -> (Vec<ReadLine>, u64, bool) {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut lines = Vec::new();
    let mut total = 0u64;
    let mut bytes = 0u64;
    let mut capped = false;
    if !text.is_empty() {
        for raw in body.split('\n') {
            total += 1;
            if total < offset || capped || lines.len() as u64 >= limit {
                continue;
            }
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let shown = truncate_line(raw, limits.read_max_line_length);
            let cost = shown.len() as u64 + u64::from(!lines.is_empty());
            if bytes + cost > limits.read_max_bytes {
                capped = true;
                continue;
            }
            bytes += cost;
            lines.push(ReadLine { number: total, text: shown });
        }
    }
    (lines, total, capped)
}

/// The language id of a path for syntax highlighting (lowercased final extension).
pub fn lang_of(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    Some(match ext.to_ascii_lowercase().as_str() {
        "ts" | "mts" | "cts" => "ts",
        "tsx" => "tsx",
        "js" | "mjs" | "cjs" => "js",
        "jsx" => "jsx",
        "json" | "jsonc" => "json",
        "py" => "py",
        "rb" => "rb",
        "go" => "go",
        "rs" => "rs",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" | "cxx" => "cpp",
        "cs" => "cs",
        "kt" => "kotlin",
        "swift" => "swift",
        "php" => "php",
        "sh" | "bash" | "zsh" => "sh",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "ini" => "ini",
        "md" | "markdown" => "md",
        "mdx" => "mdx",
        "html" | "htm" => "html",
        "css" => "css",
        "scss" => "scss",
        "less" => "less",
        "sql" => "sql",
        "xml" => "xml",
        "lua" => "lua",
        _ => return None,
    })
}

impl Tool for ReadTool {
    type Args = ReadArgs;
    type Output = ReadOutput;

    fn name(&self) -> &str {
        "read"
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        crate::present::read(args)
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::READ_ONLY
    }

    fn description(&self) -> String {
        format!(
            "Read a text file from the workspace. Returns numbered lines (`N: text`). Use offset (1-based) \
             and limit (at most {}) to page through long files; lines longer than {} characters are \
             truncated. Reading a file is required before editing or overwriting it.",
            self.limits.read_limit, self.limits.read_max_line_length
        )
    }

    async fn call(&self, args: ReadArgs, cx: ToolContext) -> Result<ReadOutput, ToolError> {
        require_non_empty(&args.file_path, "file_path")?;
        let offset = positive_integer(args.offset, "offset")?.unwrap_or(1);
        let limit = positive_integer(args.limit, "limit")?.unwrap_or(self.limits.read_limit);
        if limit > self.limits.read_limit {
            return Err(ToolError::plain(format!(
                "limit must be less than or equal to {}",
                self.limits.read_limit
            )));
        }
        let ws = workspace(&cx)?;
        let file = ws.read_file(&args.file_path).await.map_err(fs_failure)?;
        // A UTF-8 BOM is an encoding mark, not text the model should see.
        let text = crate::strip_bom(&file.text).1;
        let (lines, total, capped) = window(text, offset, limit, &self.limits);
        if offset > total && !(total == 0 && offset == 1) && !capped {
            return Err(ToolError::typed(
                "FsError",
                "FS_NOT_FOUND",
                format!("offset {offset} is out of range for \"{}\" ({total} lines)", file.display),
            ));
        }
        Ok(ReadOutput { path: file.display, offset, lines, total_lines: total })
    }

    /// `read` pages a file itself: its result is never spilled.
    fn spill_mode(&self) -> SpillMode {
        SpillMode::Never
    }

    fn render(&self, args: &ReadArgs, out: &ReadOutput) -> Vec<ContentBlock> {
        let limit = args.limit.filter(|l| *l >= 1.0).map_or(self.limits.read_limit, |l| l as u64);
        let end = out.lines.last().map_or(out.offset.saturating_sub(1), |l| l.number);
        let footer = if (out.lines.len() as u64) < limit && end < out.total_lines {
            format!(
                "(Output capped. Showing lines {}-{end}. Use offset={} to continue.)",
                out.offset,
                end + 1
            )
        } else if end < out.total_lines {
            format!(
                "(Showing lines {}-{end} of {}. Use offset={} to continue.)",
                out.offset,
                out.total_lines,
                end + 1
            )
        } else {
            format!("(End of file - total {} lines)", out.total_lines)
        };
        let mut text = format!("<path>{}</path>\n<type>file</type>\n<content>\n", out.path);
        for line in &out.lines {
            text.push_str(&format!("{}: {}\n", line.number, line.text));
        }
        if !out.lines.is_empty() {
            text.push('\n');
        }
        text.push_str(&footer);
        text.push_str("\n</content>");
        vec![ContentBlock::text(text)]
    }

    fn presentation_meta(&self, _args: &ReadArgs, out: &ReadOutput) -> Option<Value> {
        let mut meta = json!({
            "path": out.path,
            "offset": out.offset,
            "lines": out.lines,
            "totalLines": out.total_lines,
        });
        if let (Some(lang), Some(obj)) = (lang_of(&out.path), meta.as_object_mut()) {
            obj.insert("lang".into(), json!(lang));
        }
        Some(meta)
    }

    fn concurrency_safe(&self, _args: &ReadArgs) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> FsLimits {
        FsLimits::default()
    }

    #[test]
    fn line_counting_is_the_documented_one() {
        assert_eq!(window("", 1, 10, &limits()).1, 0);
        assert_eq!(window("\n", 1, 10, &limits()).1, 1);
        assert_eq!(window("a\nb\n", 1, 10, &limits()).1, 2);
        assert_eq!(window("a\nb", 1, 10, &limits()).1, 2);
        let (lines, _, _) = window("a\r\nb\rc\n", 1, 10, &limits());
        assert_eq!(lines[0].text, "a");
        assert_eq!(lines[1].text, "b\rc");
    }

    #[test]
    fn custom_caps() {
        let small = FsLimits { read_max_line_length: 5, ..limits() };
        let (lines, _, _) = window("abcdefgh\n", 1, 10, &small);
        assert_eq!(lines[0].text, "abcde... (line truncated to 5 chars)");
        let tiny = FsLimits { read_max_bytes: 9, ..limits() };
        let (lines, total, capped) = window("aaaa\nbbbb\ncccc", 1, 10, &tiny);
        assert_eq!((lines.len(), total, capped), (2, 3, true));
    }

    #[test]
    fn lang_table() {
        assert_eq!(lang_of("/a/b.TSX"), Some("tsx"));
        assert_eq!(lang_of("/a/.bashrc"), None);
        assert_eq!(lang_of("x.unknown"), None);
        assert_eq!(lang_of("Makefile"), None);
    }
}
