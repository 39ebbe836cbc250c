//! Cards: the one client-neutral view model of a tool call, and its one plain-text rendering.
//!
//! `build` derives a card from the call's tool name, arguments and outcome (content, isError,
//! meta) — exactly what the session log keeps — so a replay rebuilds the same card without reading
//! the workspace. `to_text` is the plain rendering every client and the CLI show. Both are pure and
//! total: obsolete or hand-edited meta falls back to a generic card, never an error.

use crate::content::{ContentBlock, joined_text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Lifecycle state of the call a card shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CardStatus {
    Pending,
    Completed,
    Failed,
}

impl CardStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CardStatus::Pending => "pending",
            CardStatus::Completed => "completed",
            CardStatus::Failed => "failed",
        }
    }
}

/// Which view a client should draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CardKind {
    Diff,
    Read,
    Search,
    Terminal,
    Generic,
}

/// A place a card points at: an absolute path and a 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CardLocation {
    pub path: String,
    pub line: u64,
}

/// One line of a hunk: `op` is `" "`, `"+"` or `"-"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HunkLine {
    pub op: String,
    pub text: String,
}

/// One diff hunk with typed lines (unified-diff numbering).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub path: String,
    pub old_start: u64,
    pub old_lines: u64,
    pub new_start: u64,
    pub new_lines: u64,
    pub lines: Vec<HunkLine>,
}

/// Added and removed line counts over all hunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stats {
    pub additions: u64,
    pub deletions: u64,
}

/// One numbered line of a read card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NumberedLine {
    pub number: u64,
    pub text: String,
}

/// The window a read call showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadView {
    pub path: String,
    pub offset: u64,
    pub lines: Vec<NumberedLine>,
    pub total_lines: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
}

/// One grep match inside a file group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMatch {
    pub line_number: u64,
    pub line: String,
}

/// One file group of a grep card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchFile {
    pub path: String,
    pub matches: Vec<SearchMatch>,
}

/// One navigation result of an lsp card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchLocation {
    pub path: String,
    pub line: u64,
    pub character: u64,
    #[serde(default)]
    pub snippet: String,
}

/// What a search card lists: paths (glob), matches (grep) or locations (lsp).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchView {
    pub shape: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<SearchFile>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<SearchLocation>>,
    pub truncated: bool,
    pub total: u64,
}

/// The view model every client renders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    pub call_id: String,
    pub tool: String,
    pub status: CardStatus,
    pub kind: CardKind,
    pub title: String,
    /// The Native text: exactly what the model saw (empty while pending).
    pub text: String,
    /// `to_text(card)`, so no client reimplements it.
    pub rendered: String,
    pub locations: Vec<CardLocation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<Vec<Hunk>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchView>,
}

/// What is known about the call when the card is built.
#[derive(Clone, Copy, Debug)]
pub enum CardOutcome<'a> {
    /// The call has started and not ended.
    Pending,
    /// The call ended with this content, error flag and meta (as persisted).
    Done { content: &'a [ContentBlock], is_error: bool, meta: Option<&'a Value> },
}

/// Builds the card of one call. `root` makes relative paths absolute.
pub fn build(
    call_id: &str,
    tool: &str,
    args: &Value,
    root: &str,
    outcome: CardOutcome<'_>,
) -> Card {
    let mut card = Card {
        call_id: call_id.to_owned(),
        tool: tool.to_owned(),
        status: CardStatus::Pending,
        kind: CardKind::Generic,
        title: call_title(tool, args),
        text: String::new(),
        rendered: String::new(),
        locations: call_locations(tool, args, root),
        hunks: None,
        stats: None,
        read: None,
        search: None,
    };
    match outcome {
        CardOutcome::Pending => {
            card.kind = pending_kind(tool);
            if let Some(hunks) = preview_hunks(tool, args) {
                card.stats = Some(stats_of(&hunks));
                card.hunks = Some(hunks);
            }
        }
        CardOutcome::Done { content, is_error, meta } => {
            card.text = joined_text(content);
            if is_error {
                card.status = CardStatus::Failed;
            } else {
                card.status = CardStatus::Completed;
                fill_result_view(&mut card, args, root, content, meta);
            }
        }
    }
    card.rendered = to_text(&card);
    card
}

/// The one plain-text rendering of a card: a title line `<tool> <title> · <status>`, then hunks
/// (diff cards), `path:line` lines (search cards) or the Native text (everything else).
pub fn to_text(card: &Card) -> String {
    let mut out = format!("{} {} · {}", card.tool, card.title, card.status.as_str());
    let mut body: Vec<String> = Vec::new();
    match (card.kind, &card.hunks, &card.search) {
        (CardKind::Diff, Some(hunks), _) => {
            for hunk in hunks {
                body.push(format!(
                    "@@ -{},{} +{},{} @@",
                    hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines
                ));
                for line in &hunk.lines {
                    body.push(format!("{}{}", line.op, line.text));
                }
            }
        }
        (CardKind::Search, _, Some(search)) if card.status != CardStatus::Pending => {
            search_lines(search, &mut body);
        }
        _ => {
            if !card.text.is_empty() {
                body.push(card.text.clone());
            }
        }
    }
    for line in body {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

fn search_lines(search: &SearchView, body: &mut Vec<String>) {
    let mut shown = 0u64;
    if let Some(paths) = &search.paths {
        for path in paths {
            body.push(path.clone());
            shown += 1;
        }
    }
    if let Some(files) = &search.files {
        for file in files {
            for m in &file.matches {
                body.push(format!("{}:{}: {}", file.path, m.line_number, m.line));
                shown += 1;
            }
        }
    }
    if let Some(locations) = &search.locations {
        for loc in locations {
            if loc.snippet.is_empty() {
                body.push(format!("{}:{}:{}", loc.path, loc.line, loc.character));
            } else {
                body.push(format!("{}:{}:{}: {}", loc.path, loc.line, loc.character, loc.snippet));
            }
            shown += 1;
        }
    }
    if shown == 0 {
        body.push("(no results)".to_owned());
    } else if search.truncated || shown < search.total {
        body.push(format!("(showing {shown} of {})", search.total));
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn num_arg(args: &Value, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { format!("{n}") }
}

/// The call-time title (the seed's `presentCall` titles).
pub fn call_title(tool: &str, args: &Value) -> String {
    let path = str_arg(args, "file_path").unwrap_or("");
    match tool {
        "read" => {
            let mut title = format!("Read {path}");
            let offset = num_arg(args, "offset");
            match (offset, num_arg(args, "limit")) {
                (_, Some(limit)) if limit > 0.0 => {
                    let start = offset.unwrap_or(1.0);
                    title.push_str(&format!(
                        " ({} - {})",
                        fmt_num(start),
                        fmt_num(start + limit - 1.0)
                    ));
                }
                (Some(start), _) => title.push_str(&format!(" (from line {})", fmt_num(start))),
                _ => {}
            }
            title
        }
        "write" => format!("Write {path}"),
        "edit" => format!("Edit {path}"),
        "glob" | "grep" => {
            let verb = if tool == "glob" { "Glob" } else { "Grep" };
            let mut title = format!("{verb} {}", str_arg(args, "pattern").unwrap_or(""));
            if let Some(dir) = str_arg(args, "path") {
                title.push_str(&format!(" in {dir}"));
            }
            if tool == "grep"
                && let Some(include) = str_arg(args, "include")
            {
                title.push_str(&format!(" ({include})"));
            }
            title
        }
        "lsp" => format!(
            "LSP {} {}:{}:{}",
            str_arg(args, "operation").unwrap_or(""),
            path,
            num_arg(args, "line").map(fmt_num).unwrap_or_default(),
            num_arg(args, "character").map(fmt_num).unwrap_or_default()
        ),
        _ => match str_arg(args, "description").or_else(|| str_arg(args, "file_path")) {
            Some(detail) => format!("{tool} {detail}"),
            None => tool.to_owned(),
        },
    }
}

fn pending_kind(tool: &str) -> CardKind {
    match tool {
        "write" | "edit" => CardKind::Diff,
        "read" => CardKind::Read,
        "glob" | "grep" | "lsp" => CardKind::Search,
        _ => CardKind::Generic,
    }
}

/// Makes `path` absolute against `root` (pure string work: no filesystem access).
pub fn absolute_path(root: &str, path: &str) -> String {
    if path.starts_with('/') || root.is_empty() {
        return path.to_owned();
    }
    let rel = path.trim_start_matches("./");
    let root = root.trim_end_matches('/');
    if rel.is_empty() || rel == "." { root.to_owned() } else { format!("{root}/{rel}") }
}

fn call_locations(tool: &str, args: &Value, root: &str) -> Vec<CardLocation> {
    let Some(path) = str_arg(args, "file_path").filter(|p| !p.is_empty()) else {
        return Vec::new();
    };
    let line = match tool {
        "read" => num_arg(args, "offset").filter(|n| *n >= 1.0).map(|n| n as u64).unwrap_or(1),
        "lsp" => num_arg(args, "line").filter(|n| *n >= 1.0).map(|n| n as u64).unwrap_or(1),
        _ => 1,
    };
    vec![CardLocation { path: absolute_path(root, path), line }]
}

fn text_lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned()).collect()
}

fn preview_hunks(tool: &str, args: &Value) -> Option<Vec<Hunk>> {
    let path = str_arg(args, "file_path")?.to_owned();
    match tool {
        "write" => Some(vec![whole_file_hunk(path, str_arg(args, "content")?)]),
        "edit" => {
            let old = text_lines(str_arg(args, "old_string")?);
            let new = text_lines(str_arg(args, "new_string").unwrap_or(""));
            let mut lines: Vec<HunkLine> =
                old.iter().map(|t| HunkLine { op: "-".into(), text: t.clone() }).collect();
            lines.extend(new.iter().map(|t| HunkLine { op: "+".into(), text: t.clone() }));
            Some(vec![Hunk {
                path,
                old_start: 0,
                old_lines: old.len() as u64,
                new_start: 0,
                new_lines: new.len() as u64,
                lines,
            }])
        }
        _ => None,
    }
}

fn whole_file_hunk(path: String, content: &str) -> Hunk {
    let lines = text_lines(content);
    Hunk {
        path,
        old_start: 0,
        old_lines: 0,
        new_start: if lines.is_empty() { 0 } else { 1 },
        new_lines: lines.len() as u64,
        lines: lines.into_iter().map(|text| HunkLine { op: "+".into(), text }).collect(),
    }
}

fn stats_of(hunks: &[Hunk]) -> Stats {
    let mut stats = Stats { additions: 0, deletions: 0 };
    for line in hunks.iter().flat_map(|h| &h.lines) {
        match line.op.as_str() {
            "+" => stats.additions += 1,
            "-" => stats.deletions += 1,
            _ => {}
        }
    }
    stats
}

fn fill_result_view(
    card: &mut Card,
    args: &Value,
    root: &str,
    content: &[ContentBlock],
    meta: Option<&Value>,
) {
    match card.tool.as_str() {
        "read" => {
            if let Some(view) = meta.and_then(|m| read_view(m, content, root)) {
                card.kind = CardKind::Read;
                card.read = Some(view);
            }
        }
        "write" | "edit" => {
            let path = str_arg(args, "file_path").unwrap_or("").to_owned();
            let hunks = meta
                .and_then(|m| m.get("patch"))
                .and_then(Value::as_str)
                .and_then(|patch| parse_patch(&path, patch))
                .filter(|hunks| !hunks.is_empty());
            let hunks = match hunks {
                Some(hunks) => Some(hunks),
                None if card.tool == "write" => {
                    str_arg(args, "content").map(|c| vec![whole_file_hunk(path.clone(), c)])
                }
                None => None,
            };
            if let Some(hunks) = hunks {
                card.kind = CardKind::Diff;
                if let (Some(first), Some(loc)) = (hunks.first(), card.locations.first_mut()) {
                    loc.line = first.new_start.max(1);
                }
                card.stats = Some(stats_of(&hunks));
                card.hunks = Some(hunks);
            }
        }
        "glob" | "grep" | "lsp" => {
            if let Some((view, locations)) = meta.and_then(|m| search_view(m, root)) {
                card.kind = CardKind::Search;
                card.search = Some(view);
                if !locations.is_empty() {
                    card.locations = locations;
                }
            }
        }
        _ => {}
    }
}

fn read_view(meta: &Value, content: &[ContentBlock], root: &str) -> Option<ReadView> {
    let view: ReadView = serde_json::from_value(meta.clone()).ok()?;
    if view.offset < 1 {
        return None;
    }
    let mut prev = 0;
    for line in &view.lines {
        if line.number <= prev || line.number < view.offset || line.number > view.total_lines {
            return None;
        }
        prev = line.number;
    }
    // The seed's presenter only shows a read view over its own envelope.
    let [ContentBlock::Text { text }] = content else { return None };
    if !text.starts_with("<path>") || !text.ends_with("</content>") {
        return None;
    }
    Some(ReadView { path: absolute_path(root, &view.path), ..view })
}

fn search_view(meta: &Value, root: &str) -> Option<(SearchView, Vec<CardLocation>)> {
    let shape = meta
        .get("shape")
        .and_then(Value::as_str)
        .unwrap_or(if meta.get("locations").is_some() { "locations" } else { "" });
    let truncated = meta.get("truncated").and_then(Value::as_bool).unwrap_or(false);
    let mut locations = Vec::new();
    let view = match shape {
        "paths" => {
            let paths: Vec<String> = serde_json::from_value(meta.get("paths")?.clone()).ok()?;
            let total = meta.get("total").and_then(Value::as_u64).unwrap_or(paths.len() as u64);
            locations = paths
                .iter()
                .map(|p| CardLocation { path: absolute_path(root, p), line: 1 })
                .collect();
            SearchView {
                shape: shape.into(),
                paths: Some(paths),
                files: None,
                locations: None,
                truncated,
                total,
            }
        }
        "matches" => {
            let files: Vec<SearchFile> = serde_json::from_value(meta.get("files")?.clone()).ok()?;
            let counted: u64 = files.iter().map(|f| f.matches.len() as u64).sum();
            let total = meta.get("total").and_then(Value::as_u64).unwrap_or(counted);
            for file in &files {
                for m in &file.matches {
                    locations.push(CardLocation {
                        path: absolute_path(root, &file.path),
                        line: m.line_number,
                    });
                }
            }
            SearchView {
                shape: shape.into(),
                paths: None,
                files: Some(files),
                locations: None,
                truncated,
                total,
            }
        }
        "locations" => {
            let locs: Vec<SearchLocation> =
                serde_json::from_value(meta.get("locations")?.clone()).ok()?;
            let total = meta.get("total").and_then(Value::as_u64).unwrap_or(locs.len() as u64);
            locations = locs
                .iter()
                .map(|l| CardLocation { path: absolute_path(root, &l.path), line: l.line })
                .collect();
            SearchView {
                shape: shape.into(),
                paths: None,
                files: None,
                locations: Some(locs),
                truncated,
                total,
            }
        }
        _ => return None,
    };
    Some((view, locations))
}

/// Parses a unified diff into typed hunks; `None` when it is malformed (counts that do not add up,
/// unknown line prefixes), so a hand-edited patch degrades to a generic card.
pub fn parse_patch(path: &str, patch: &str) -> Option<Vec<Hunk>> {
    let mut hunks = Vec::new();
    let mut lines = patch.split('\n').peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("--- ") || line.starts_with("+++ ") || line.is_empty() {
            continue;
        }
        let header = line.strip_prefix("@@ -")?;
        let (ranges, _) = header.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let (old_start, old_lines) = parse_range(old)?;
        let (new_start, new_lines) = parse_range(new)?;
        let mut hunk = Hunk {
            path: path.to_owned(),
            old_start,
            old_lines,
            new_start,
            new_lines,
            lines: Vec::new(),
        };
        let (mut seen_old, mut seen_new) = (0, 0);
        while seen_old < old_lines || seen_new < new_lines {
            let body = lines.next()?;
            let (op, text) =
                body.split_at(body.char_indices().nth(1).map_or(body.len(), |(i, _)| i));
            match op {
                " " => {
                    seen_old += 1;
                    seen_new += 1;
                }
                "-" => seen_old += 1,
                "+" => seen_new += 1,
                "\\" => continue,
                _ => return None,
            }
            hunk.lines.push(HunkLine { op: op.to_owned(), text: text.to_owned() });
        }
        if seen_old != old_lines || seen_new != new_lines {
            return None;
        }
        while lines.peek().is_some_and(|l| l.starts_with('\\')) {
            lines.next();
        }
        hunks.push(hunk);
    }
    Some(hunks)
}

fn parse_range(range: &str) -> Option<(u64, u64)> {
    match range.split_once(',') {
        Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
        None => Some((range.parse().ok()?, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pending_write_card_previews_whole_file() {
        let args = json!({"file_path": "a.txt", "content": "one\ntwo\n"});
        let card = build("c1", "write", &args, "/w", CardOutcome::Pending);
        assert_eq!(card.kind, CardKind::Diff);
        assert_eq!(card.locations, vec![CardLocation { path: "/w/a.txt".into(), line: 1 }]);
        assert_eq!(card.rendered, "write Write a.txt · pending\n@@ -0,0 +1,2 @@\n+one\n+two");
    }

    #[test]
    fn edit_card_reads_patch_meta() {
        let args = json!({"file_path": "a.txt", "old_string": "OLD", "new_string": "NEW"});
        let meta = json!({
            "diffs": [],
            "patch": "--- a/a.txt\n+++ b/a.txt\n@@ -2,3 +2,3 @@\n b\n-OLD\n+NEW\n d\n"
        });
        let content = vec![ContentBlock::text("The file /w/a.txt has been updated successfully.")];
        let card = build(
            "c2",
            "edit",
            &args,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(card.kind, CardKind::Diff);
        assert_eq!(card.stats, Some(Stats { additions: 1, deletions: 1 }));
        assert_eq!(card.locations[0].line, 2);
        assert_eq!(
            card.rendered,
            "edit Edit a.txt · completed\n@@ -2,3 +2,3 @@\n b\n-OLD\n+NEW\n d"
        );
    }

    #[test]
    fn malformed_meta_falls_back_to_generic() {
        let args = json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"});
        let meta = json!({"patch": "@@ -1,5 +1,1 @@\n-x\n"});
        let content = vec![ContentBlock::text("done")];
        let card = build(
            "c3",
            "edit",
            &args,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(card.kind, CardKind::Generic);
        assert_eq!(card.rendered, "edit Edit a.txt · completed\ndone");
    }

    #[test]
    fn read_titles_follow_the_seed() {
        assert_eq!(
            call_title("read", &json!({"file_path": "a", "offset": 3, "limit": 2})),
            "Read a (3 - 4)"
        );
        assert_eq!(
            call_title("read", &json!({"file_path": "a", "offset": 3})),
            "Read a (from line 3)"
        );
        assert_eq!(
            call_title("grep", &json!({"pattern": "x", "path": "src", "include": "*.rs"})),
            "Grep x in src (*.rs)"
        );
    }
}
