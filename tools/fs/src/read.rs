//! `read`: a numbered window of a text file (docs/tools.md, read).
//!
//! The file is streamed through a [`Window`] that keeps only the lines shown (each cut to the
//! longest line shown), so reading one line of a file of any size takes the memory of one line.
//! The workspace reads a file whole once and keeps its line index; paging through it afterwards
//! reads only each window (`Workspace::read_lines`), so a file paged in N windows costs one
//! scan and N windows, not N scans.

use crate::{FsLimits, fs_failure, require_non_empty, workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;
use toolhost_contract::spill::SpillMode;
use toolhost_contract::{Tool, ToolContext, ToolError};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_protocol::{CallPresentation, ContentBlock};
use toolhost_workspace::{FsError, Op};
use toolhost_workspace::{LineSink, TextSink};

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
fn truncate_line(line: String, max: u64) -> String {
    // A character's UTF-16 units never outnumber its UTF-8 bytes: a short line needs no count.
    if line.len() as u64 <= max {
        return line;
    }
    let mut units = 0u64;
    for (idx, ch) in line.char_indices() {
        units += ch.len_utf16() as u64;
        if units > max {
            return format!("{}... (line truncated to {max} chars)", &line[..idx]);
        }
    }
    line
}

/// The windowing of docs/tools.md (read), fed the file's text piece by piece: lines split on
/// `\n` (one trailing `\r` stripped), a leading BOM dropped, long lines truncated, at most
/// `limit` lines from `offset` within a byte budget; every line is counted (a last line without
/// `\n` counts, an empty text has no lines).
#[derive(Debug)]
struct Window {
    offset: u64,
    limit: u64,
    max_line_length: u64,
    max_bytes: u64,
    lines: Vec<ReadLine>,
    /// Lines ended so far.
    ended: u64,
    bytes: u64,
    capped: bool,
    /// Whether any text came yet (the BOM is looked for before the first).
    started: bool,
    /// Whether the current line has any text (an unterminated last line counts only if so).
    open: bool,
    /// The start of the current line while it is one to show: enough of it to cut it exactly
    /// (the first character past the longest line shown ends it).
    kept: String,
    kept_units: u64,
    /// Whether the current line goes on past `kept` (so its last character is not in `kept`).
    more: bool,
}

impl Window {
    fn new(offset: u64, limit: u64, limits: &FsLimits) -> Self {
        Window::fresh(offset, limit, limits.read_max_line_length, limits.read_max_bytes)
    }

    fn fresh(offset: u64, limit: u64, max_line_length: u64, max_bytes: u64) -> Self {
        Window {
            offset,
            limit,
            max_line_length,
            max_bytes,
            lines: Vec::new(),
            ended: 0,
            bytes: 0,
            capped: false,
            started: false,
            open: false,
            kept: String::new(),
            kept_units: 0,
            more: false,
        }
    }

    /// Whether the line being read (number `ended + 1`) may still be shown.
    fn wanted(&self) -> bool {
        let number = self.ended + 1;
        number >= self.offset && !self.capped && (self.lines.len() as u64) < self.limit
    }

    /// Keeps `text` of the current line, up to the first character past the longest line shown.
    fn keep(&mut self, text: &str) {
        if self.kept_units > self.max_line_length {
            self.more = true;
            return;
        }
        // ASCII (most source text) is one unit a byte: no per-character count.
        if text.is_ascii() && self.kept_units + text.len() as u64 <= self.max_line_length {
            self.kept_units += text.len() as u64;
            self.kept.push_str(text);
            return;
        }
        for (idx, ch) in text.char_indices() {
            self.kept_units += ch.len_utf16() as u64;
            if self.kept_units > self.max_line_length {
                let end = idx + ch.len_utf8();
                self.kept.push_str(&text[..end]);
                self.more = end < text.len();
                return;
            }
        }
        self.kept.push_str(text);
    }

    /// Ends the current line.
    fn end_line(&mut self) {
        if self.wanted() {
            // Everything past `kept` lies beyond the cut, so cutting `kept` cuts the line.
            let mut raw = std::mem::take(&mut self.kept);
            // Only the line's own last character is a line ending's `\r`.
            if !self.more && raw.ends_with('\r') {
                raw.pop();
            }
            let shown = truncate_line(raw, self.max_line_length);
            let cost = shown.len() as u64 + u64::from(!self.lines.is_empty());
            if self.bytes + cost > self.max_bytes {
                self.capped = true;
            } else {
                self.bytes += cost;
                self.lines.push(ReadLine { number: self.ended + 1, text: shown });
            }
        }
        self.kept.clear();
        self.kept_units = 0;
        self.more = false;
        self.ended += 1;
        self.open = false;
    }

    /// The shown lines, how many lines there are, and whether the byte budget cut the window.
    fn finish(mut self) -> (Vec<ReadLine>, u64, bool) {
        if self.open {
            self.end_line();
        }
        (self.lines, self.ended, self.capped)
    }
}

impl TextSink for Window {
    fn push(&mut self, mut text: &str) {
        if !self.started && !text.is_empty() {
            self.started = true;
            // A UTF-8 BOM is an encoding mark, not text the model should see.
            text = crate::strip_bom(text).1;
        }
        while !text.is_empty() {
            let (piece, rest, ends) = match text.find('\n') {
                Some(at) => (&text[..at], &text[at + 1..], true),
                None => (text, "", false),
            };
            if !piece.is_empty() {
                self.open = true;
                if self.wanted() {
                    self.keep(piece);
                }
            }
            if ends {
                self.end_line();
            }
            text = rest;
        }
    }
}

impl LineSink for Window {
    fn first_line(&self) -> u64 {
        self.offset
    }

    fn resume_at(&mut self, line: u64) {
        self.ended = line.saturating_sub(1);
        // The BOM, if any, was before the lines skipped.
        self.started = true;
    }

    fn full(&self) -> bool {
        self.capped || self.lines.len() as u64 >= self.limit
    }

    fn restart(&mut self) {
        *self = Window::fresh(self.offset, self.limit, self.max_line_length, self.max_bytes);
    }
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
        let window = Window::new(offset, limit, &self.limits);
        let read = ws.read_lines(&args.file_path, window, cx.signal());
        // The read stops at its next chunk once cancelled; the call answers at once.
        let (file, window, total) = tokio::select! {
            read = read => read.map_err(fs_failure)?,
            () = cx.signal().cancelled() => {
                let path = ws.display_path(&args.file_path).unwrap_or_default();
                return Err(fs_failure(FsError::Aborted { op: Op::Read, path }));
            }
        };
        // The window may have stopped early; the file's line count comes from the read.
        let (lines, _, capped) = window.finish();
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
        // Sized once: a page is tens of kilobytes, grown piece by piece it is copied many times.
        let body: usize = out.lines.iter().map(|l| l.text.len() + 24).sum();
        let mut text = String::with_capacity(body + out.path.len() + footer.len() + 64);
        text.push_str("<path>");
        text.push_str(&out.path);
        text.push_str("</path>\n<type>file</type>\n<content>\n");
        for line in &out.lines {
            // Writing into a String cannot fail.
            let _ = write!(text, "{}: ", line.number);
            text.push_str(&line.text);
            text.push('\n');
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

    /// The meta is the value with the language added: copied, not serialized again.
    fn presentation_meta_from_value(
        &self,
        args: &ReadArgs,
        out: &ReadOutput,
        value: &Value,
    ) -> Option<Value> {
        let Value::Object(fields) = value else { return self.presentation_meta(args, out) };
        let mut meta = fields.clone();
        if let Some(lang) = lang_of(&out.path) {
            meta.insert("lang".into(), json!(lang));
        }
        Some(Value::Object(meta))
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

    /// The text fed to a [`Window`] in pieces of `piece` characters.
    fn window_in(text: &str, piece: usize, offset: u64, limit: u64, limits: &FsLimits) -> Window {
        let mut window = Window::new(offset, limit, limits);
        let chars: Vec<char> = text.chars().collect();
        for part in chars.chunks(piece.max(1)) {
            window.push(&part.iter().collect::<String>());
        }
        window
    }

    fn window(
        text: &str,
        offset: u64,
        limit: u64,
        limits: &FsLimits,
    ) -> (Vec<ReadLine>, u64, bool) {
        window_in(text, usize::MAX, offset, limit, limits).finish()
    }

    /// The windowing as it was done on the whole text, before reads streamed: the oracle the
    /// streamed window must equal.
    fn whole(text: &str, offset: u64, limit: u64, limits: &FsLimits) -> (Vec<ReadLine>, u64, bool) {
        let text = crate::strip_bom(text).1;
        let body = text.strip_suffix('\n').unwrap_or(text);
        let mut lines = Vec::new();
        let (mut total, mut bytes, mut capped) = (0u64, 0u64, false);
        if !text.is_empty() {
            for raw in body.split('\n') {
                total += 1;
                if total < offset || capped || lines.len() as u64 >= limit {
                    continue;
                }
                let raw = raw.strip_suffix('\r').unwrap_or(raw);
                let shown = truncate_line(raw.to_owned(), limits.read_max_line_length);
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

    #[test]
    fn streamed_window_is_the_whole_text_window() {
        let texts = [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\r\nb\r\n",
            "\u{feff}",
            "\u{feff}\n",
            "\u{feff}x\ny",
            "abcdefgh\nabcdef\r\nabcde\r\nabc\r\r\n\rabcdef\r",
            "ééééééé\n𝄞𝄞𝄞\nab𝄞\n\u{feff}mid\n",
            "aaaa\nbbbb\ncccc\ndddd\n\n\neeee",
            "abcde\rX\nabcd\r\r\na\rb\n\r\r\r\n",
        ];
        let shapes = [
            limits(),
            FsLimits { read_max_line_length: 5, ..limits() },
            FsLimits { read_max_line_length: 1, read_max_bytes: 9, ..limits() },
            FsLimits { read_max_bytes: 0, ..limits() },
        ];
        for text in texts {
            for shape in &shapes {
                for offset in 1..=5 {
                    for limit in 1..=4 {
                        let expected = whole(text, offset, limit, shape);
                        for piece in [1, 2, 3, 7, usize::MAX] {
                            let got = window_in(text, piece, offset, limit, shape).finish();
                            assert_eq!(
                                got, expected,
                                "{text:?} {shape:?} {offset} {limit} {piece}"
                            );
                        }
                    }
                }
            }
        }
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
    fn the_meta_copied_from_the_value_is_the_meta() {
        let tool = ReadTool::new(limits());
        let args = ReadArgs { file_path: "a.rs".into(), offset: None, limit: None };
        for path in ["/w/a.rs", "/w/README"] {
            let out = ReadOutput {
                path: path.into(),
                offset: 2,
                lines: vec![ReadLine { number: 2, text: "fn main() {}\t\"x\"".into() }],
                total_lines: 9,
            };
            let value = toolhost_contract::to_lossless_value(&out).unwrap();
            let copied = tool.presentation_meta_from_value(&args, &out, &value).unwrap();
            let built = tool.presentation_meta(&args, &out).unwrap();
            assert_eq!(
                serde_json::to_string(&copied).unwrap(),
                serde_json::to_string(&built).unwrap()
            );
        }
    }

    #[test]
    fn lang_table() {
        assert_eq!(lang_of("/a/b.TSX"), Some("tsx"));
        assert_eq!(lang_of("/a/.bashrc"), None);
        assert_eq!(lang_of("x.unknown"), None);
        assert_eq!(lang_of("Makefile"), None);
    }
}
