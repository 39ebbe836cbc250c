//! The views a card's kind gets from its outcome: diff hunks (from a unified patch or the meta's
//! diffs, or a preview before the call ran), a read window, a search listing; and the patch
//! parser they share.

use super::*;

/// The lines of a text as a hunk side shows them: split at `\n`, a final newline ends the last
/// line rather than starting an empty one, and a `\r` before a newline is not shown.
pub fn text_lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned()).collect()
}

fn typed_lines(diff: &PreviewDiff) -> (Vec<HunkLine>, u64, u64) {
    let old = diff.old_text.as_deref().map(text_lines).unwrap_or_default();
    let new = text_lines(&diff.new_text);
    let (old_len, new_len) = (old.len() as u64, new.len() as u64);
    let mut lines: Vec<HunkLine> =
        old.into_iter().map(|text| HunkLine { op: "-".into(), text }).collect();
    lines.extend(new.into_iter().map(|text| HunkLine { op: "+".into(), text }));
    (lines, old_len, new_len)
}

/// A pending call's preview: not placed in the file yet.
pub(super) fn preview_hunk(diff: &PreviewDiff) -> Hunk {
    let (lines, old_lines, new_lines) = typed_lines(diff);
    let mut hunk = Hunk {
        path: diff.path.clone(),
        old_start: 0,
        old_lines,
        new_start: 0,
        new_lines,
        lines,
        preview: true,
        header: String::new(),
    };
    hunk.header = hunk_header(&hunk);
    hunk
}

/// A preview shown as the result: the new text from line 1 (the old text, if any, before it).
fn placed_preview_hunk(diff: &PreviewDiff) -> Hunk {
    let (lines, old_lines, new_lines) = typed_lines(diff);
    let start = |n: u64| u64::from(n > 0);
    Hunk::new(
        diff.path.clone(),
        (start(old_lines), old_lines),
        (start(new_lines), new_lines),
        lines,
    )
}

pub(super) fn stats_of(hunks: &[Hunk]) -> Stats {
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

pub(super) fn fill_result_view(
    card: &mut Card,
    presentation: &CallPresentation,
    root: &str,
    content: &[ContentBlock],
    meta: Option<&Value>,
) {
    match &presentation.kind {
        CardKind::Read => {
            if let Some(view) = meta.and_then(|m| read_view(m, content, root)) {
                card.kind = CardKind::Read;
                card.read = Some(view);
            }
        }
        CardKind::Diff => {
            let path = presentation
                .locations
                .first()
                .map(|l| l.path.as_str())
                .or_else(|| presentation.preview.first().map(|p| p.path.as_str()))
                .unwrap_or("");
            let hunks = meta.and_then(|m| diff_hunks(path, m)).or_else(|| {
                (presentation.preview_is_result && !presentation.preview.is_empty())
                    .then(|| presentation.preview.iter().map(placed_preview_hunk).collect())
            });
            if let Some(hunks) = hunks {
                card.kind = CardKind::Diff;
                if let (Some(first), Some(loc)) = (hunks.first(), card.locations.first_mut()) {
                    loc.line = first.new_start.max(1);
                }
                // A change whose files are known only from its result (a revert): point at each.
                if card.locations.is_empty() {
                    for hunk in &hunks {
                        let path = absolute_path(root, &hunk.path);
                        if !hunk.path.is_empty() && !card.locations.iter().any(|l| l.path == path) {
                            card.locations.push(CardLocation { path, line: hunk.new_start.max(1) });
                        }
                    }
                }
                card.stats = Some(stats_of(&hunks));
                card.hunks = Some(hunks);
            }
        }
        CardKind::Search => {
            if let Some((view, locations)) = meta.and_then(|m| search_view(m, root)) {
                card.kind = CardKind::Search;
                card.search = Some(view);
                if !locations.is_empty() {
                    card.locations = locations;
                }
            }
        }
        CardKind::Generic => {}
        CardKind::Terminal => {
            card.kind = CardKind::Terminal;
            if let Some(call) = &presentation.terminal {
                card.terminal = Some(TerminalView::from_text(call, &joined_text(content)));
            }
            card.data = meta.cloned();
        }
        other => {
            card.kind = other.clone();
            card.data = meta.cloned().or_else(|| presentation.data.clone());
        }
    }
}

/// The hunks of diff meta: its unified `patch` when present (malformed ⇒ none), else its
/// non-empty, well-formed `diffs` (`{path, oldText, newText}`, placed when they
/// carry line numbers).
fn diff_hunks(path: &str, meta: &Value) -> Option<Vec<Hunk>> {
    if let Some(patch) = meta.get("patch") {
        return patch.as_str().and_then(|p| parse_patch(path, p)).filter(|h| !h.is_empty());
    }
    let diffs = meta.get("diffs")?.as_array()?;
    if diffs.is_empty() {
        return None;
    }
    let mut hunks = Vec::new();
    for diff in diffs {
        let preview: PreviewDiff = serde_json::from_value(diff.clone()).ok()?;
        let number = |key: &str| diff.get(key).and_then(Value::as_u64);
        let (lines, old_lines, new_lines) = typed_lines(&preview);
        match (number("oldStart"), number("newStart")) {
            (Some(old_start), Some(new_start)) => hunks.push(Hunk::new(
                preview.path.clone(),
                (old_start, old_lines),
                (new_start, new_lines),
                lines,
            )),
            _ => hunks.push(preview_hunk(&preview)),
        }
    }
    Some(hunks)
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
    // A read window is shown only over the read envelope it came from: a policy that replaced
    // the text keeps the meta, and the card must not show a window the model never saw.
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
    // A patch over several files (a revert's) names each one: its hunks carry that path.
    let (mut minus, mut current): (Option<&str>, Option<String>) = (None, None);
    while let Some(line) = lines.next() {
        if let Some(old) = line.strip_prefix("--- ") {
            minus = Some(old.strip_prefix("a/").unwrap_or(old));
            continue;
        }
        if let Some(new) = line.strip_prefix("+++ ") {
            let new = new.strip_prefix("b/").unwrap_or(new);
            current = Some(if new == "/dev/null" { minus.unwrap_or(new) } else { new }.to_owned());
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let header = line.strip_prefix("@@ -")?;
        let (ranges, _) = header.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let (old_start, old_lines) = parse_range(old)?;
        let (new_start, new_lines) = parse_range(new)?;
        let mut typed = Vec::new();
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
            typed.push(HunkLine { op: op.to_owned(), text: text.to_owned() });
        }
        if seen_old != old_lines || seen_new != new_lines {
            return None;
        }
        while lines.peek().is_some_and(|l| l.starts_with('\\')) {
            lines.next();
        }
        let file = current.as_deref().unwrap_or(path);
        hunks.push(Hunk::new(file, (old_start, old_lines), (new_start, new_lines), typed));
    }
    Some(hunks)
}

fn parse_range(range: &str) -> Option<(u64, u64)> {
    match range.split_once(',') {
        Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
        None => Some((range.parse().ok()?, 1)),
    }
}
