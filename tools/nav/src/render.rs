//! The `lsp` tool's pure projections: the Native text of docs/tools.md (lsp: grouped
//! `path:line:character` lines, the omission line, hover text, the whole text bounded in UTF-16
//! units with the documented truncation notice) and the card metadata `{locations: [{path, line,
//! character, snippet}]}` bounded in bytes.

use crate::display::display_uri;
use crate::tool::LocationOut;
use serde_json::{Value, json};

/// Native text of a locations answer (before bounding).
pub fn locations_text(
    locations: &[LocationOut],
    workspace_uri: &str,
    max_locations: usize,
) -> String {
    if locations.is_empty() {
        return "No results.".to_owned();
    }
    let shown = &locations[..locations.len().min(max_locations)];
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for location in shown {
        let path = display_uri(&location.uri, workspace_uri);
        let line = format!(
            "{path}:{}:{}",
            u64::from(location.range.start.line) + 1,
            u64::from(location.range.start.character) + 1
        );
        match groups.iter_mut().find(|(p, _)| *p == path) {
            Some((_, lines)) => lines.push(line),
            None => groups.push((path, vec![line])),
        }
    }
    let mut lines: Vec<String> = groups.into_iter().flat_map(|(_, lines)| lines).collect();
    if locations.len() > shown.len() {
        lines.push(format!(
            "… {} more location(s) omitted (limit {max_locations}).",
            locations.len() - shown.len()
        ));
    }
    lines.join("\n")
}

fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The longest prefix of `text` of at most `units` UTF-16 code units (cut at a char boundary,
/// so a surrogate pair at the edge is dropped whole — one unit short of a UTF-16 slice).
fn utf16_prefix(text: &str, units: usize) -> &str {
    let mut seen = 0;
    for (idx, ch) in text.char_indices() {
        seen += ch.len_utf16();
        if seen > units {
            return &text[..idx];
        }
    }
    text
}

/// Bounds `text` to `max` UTF-16 units: a prefix plus
/// `\n… <what> truncated (limit <max> characters).` so that the total is exactly `max`
/// (a cap shorter than the notice keeps a prefix of the notice).
pub fn bound(text: String, what: &str, max: usize) -> String {
    if utf16_len(&text) <= max {
        return text;
    }
    let notice = format!("\n… {what} truncated (limit {max} characters).");
    let notice_len = utf16_len(&notice);
    if max <= notice_len {
        return utf16_prefix(&notice, max).to_owned();
    }
    let mut out = utf16_prefix(&text, max - notice_len).to_owned();
    out.push_str(&notice);
    out
}

/// Card metadata for a locations answer: the first `max_locations` entries (one-based line and
/// character, display path, snippet) while the JSON stays within `max_bytes`; `truncated` and
/// `total` are present only when entries were left out.
pub fn locations_meta(
    locations: &[LocationOut],
    workspace_uri: &str,
    max_locations: usize,
    max_bytes: usize,
) -> Value {
    // Room for `{"locations":[],"truncated":true,"total":<n>}`.
    let reserve = 64;
    let mut used = reserve;
    let mut entries = Vec::new();
    for location in locations.iter().take(max_locations) {
        let entry = json!({
            "path": display_uri(&location.uri, workspace_uri),
            "line": u64::from(location.range.start.line) + 1,
            "character": u64::from(location.range.start.character) + 1,
            "snippet": location.snippet,
        });
        let size = entry.to_string().len() + 1;
        if used + size > max_bytes {
            break;
        }
        used += size;
        entries.push(entry);
    }
    let mut meta = json!({ "locations": entries });
    if entries_len(&meta) < locations.len()
        && let Some(obj) = meta.as_object_mut()
    {
        obj.insert("truncated".into(), Value::Bool(true));
        obj.insert("total".into(), json!(locations.len()));
    }
    meta
}

fn entries_len(meta: &Value) -> usize {
    meta.get("locations").and_then(Value::as_array).map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::lsp::{LspPosition, LspRange};

    fn loc(uri: &str, line: u32, character: u32) -> LocationOut {
        let p = LspPosition { line, character };
        LocationOut { uri: uri.into(), range: LspRange { start: p, end: p }, snippet: "s".into() }
    }

    const WS: &str = "file:///w";

    #[test]
    fn grouped_in_first_seen_order() {
        let locs = [
            loc("file:///w/a.c", 0, 0),
            loc("file:///w/b.c", 4, 2),
            loc("file:///w/a.c", 9, 1),
            loc("file:///x/c.c", 2, 0),
        ];
        assert_eq!(locations_text(&locs, WS, 100), "a.c:1:1\na.c:10:2\nb.c:5:3\n/x/c.c:3:1");
        assert_eq!(
            locations_text(&locs, WS, 2),
            "a.c:1:1\nb.c:5:3\n… 2 more location(s) omitted (limit 2)."
        );
        assert_eq!(locations_text(&[], WS, 100), "No results.");
    }

    #[test]
    fn bounding_makes_the_total_exactly_the_cap() {
        let text = "x".repeat(100);
        let out = bound(text.clone(), "hover", 60);
        assert_eq!(out.encode_utf16().count(), 60);
        assert!(out.ends_with("\n… hover truncated (limit 60 characters)."));
        assert_eq!(bound(text.clone(), "hover", 100), text);
        let tiny = bound(text, "locations", 10);
        assert_eq!(tiny, "\n… locatio");
    }

    #[test]
    fn meta_is_bounded() {
        let locs: Vec<_> = (0..50).map(|i| loc("file:///w/a.c", i, 0)).collect();
        let meta = locations_meta(&locs, WS, 100, 65_536);
        assert_eq!(entries_len(&meta), 50);
        assert!(meta.get("truncated").is_none());
        assert_eq!(
            meta["locations"][1],
            json!({"path": "a.c", "line": 2, "character": 1, "snippet": "s"})
        );
        let small = locations_meta(&locs, WS, 100, 400);
        assert!(small.to_string().len() <= 400, "{}", small.to_string().len());
        assert_eq!(small["truncated"], json!(true));
        assert_eq!(small["total"], json!(50));
        let capped = locations_meta(&locs, WS, 10, 65_536);
        assert_eq!(entries_len(&capped), 10);
        assert_eq!(capped["total"], json!(50));
    }
}
