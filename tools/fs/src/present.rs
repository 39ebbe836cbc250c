//! How the file tools' calls look before they run (their card declarations). Each presenter
//! takes the raw arguments, which may be invalid or from an older session, and never fails.

use serde_json::Value;
use std::borrow::Cow;
use toolhost_contract::spill::head_bytes;
use toolhost_protocol::card::{CallPresentation, CardKind, format_number};
use toolhost_workspace::search::MAX_PATTERN_BYTES;

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn num_arg(args: &Value, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

/// The file a call points at, at `line` (none when `file_path` is missing or empty).
fn at_file(presentation: CallPresentation, args: &Value, line: Option<f64>) -> CallPresentation {
    match str_arg(args, "file_path").filter(|p| !p.is_empty()) {
        Some(path) => {
            let line = line.filter(|n| *n >= 1.0).map_or(1, |n| n as u64);
            presentation.with_location(path, line)
        }
        None => presentation,
    }
}

/// `Read <file_path>`, then ` (<offset> - <last line>)` for a positive limit, else
/// ` (from line <offset>)` for an offset alone; it points at the first line asked for.
pub(crate) fn read(args: &Value) -> CallPresentation {
    let path = str_arg(args, "file_path").unwrap_or("");
    let mut title = format!("Read {path}");
    let offset = num_arg(args, "offset");
    match (offset, num_arg(args, "limit")) {
        (_, Some(limit)) if limit > 0.0 => {
            let start = offset.unwrap_or(1.0);
            let last = start + limit - 1.0;
            title.push_str(&format!(" ({} - {})", format_number(start), format_number(last)));
        }
        (Some(start), _) => title.push_str(&format!(" (from line {})", format_number(start))),
        _ => {}
    }
    at_file(CallPresentation::new(CardKind::Read, title), args, offset)
}

/// `Write <file_path>`, previewing the whole new content; for a new file that preview is the
/// change itself, so the completed card shows it when the meta carries no diff.
pub(crate) fn write(args: &Value) -> CallPresentation {
    let path = str_arg(args, "file_path").unwrap_or("");
    let mut presentation =
        at_file(CallPresentation::new(CardKind::Diff, format!("Write {path}")), args, None);
    if let (Some(path), Some(content)) = (str_arg(args, "file_path"), str_arg(args, "content")) {
        presentation = presentation.with_preview(path, None, content).preview_is_result();
    }
    presentation
}

/// `Edit <file_path>`, previewing `old_string` → `new_string` (not yet placed in the file).
pub(crate) fn edit(args: &Value) -> CallPresentation {
    let path = str_arg(args, "file_path").unwrap_or("");
    let mut presentation =
        at_file(CallPresentation::new(CardKind::Diff, format!("Edit {path}")), args, None);
    if let (Some(path), Some(old)) = (str_arg(args, "file_path"), str_arg(args, "old_string")) {
        let new = str_arg(args, "new_string").unwrap_or("");
        presentation = presentation.with_preview(path, Some(old.to_owned()), new);
    }
    presentation
}

/// The bytes of a refused pattern the title keeps.
const REFUSED_PATTERN_SHOWN_BYTES: usize = 80;

/// A pattern as a title shows it: whole when the search accepts its length; a longer one (which
/// the search refuses) by its start and size, so a refused 10 MiB pattern is not copied into the
/// card, the review state and the session record.
fn pattern_shown(pattern: &str) -> Cow<'_, str> {
    if pattern.len() <= MAX_PATTERN_BYTES {
        return Cow::Borrowed(pattern);
    }
    let head = head_bytes(pattern, REFUSED_PATTERN_SHOWN_BYTES);
    Cow::Owned(format!("{head}… ({} bytes)", pattern.len()))
}

/// `Glob <pattern>` / `Grep <pattern>`, then ` in <path>`, then (grep) ` (<include>)`.
pub(crate) fn search(verb: &str, args: &Value, with_include: bool) -> CallPresentation {
    let pattern = pattern_shown(str_arg(args, "pattern").unwrap_or(""));
    let mut title = format!("{verb} {pattern}");
    if let Some(dir) = str_arg(args, "path") {
        title.push_str(&format!(" in {dir}"));
    }
    if with_include && let Some(include) = str_arg(args, "include") {
        title.push_str(&format!(" ({})", pattern_shown(include)));
    }
    at_file(CallPresentation::new(CardKind::Search, title), args, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_protocol::card::legacy;

    /// Calls logged before tools declared their cards replay through `card::legacy`; today's
    /// declarations must give the same cards, or a resumed session would show two styles.
    #[test]
    fn declarations_match_the_presentations_older_logs_replay_with() {
        let corpus = [
            json!({"file_path": "a.txt"}),
            json!({"file_path": "a.txt", "offset": 3, "limit": 2}),
            json!({"file_path": "a.txt", "offset": 1.5}),
            json!({"file_path": "a.txt", "offset": 0, "limit": 0}),
            json!({"file_path": "a.txt", "limit": 7}),
            json!({"file_path": "", "content": "x"}),
            json!({"file_path": "a.txt", "content": "one\ntwo\n"}),
            json!({"file_path": "a.txt", "old_string": "a\nb", "new_string": "c"}),
            json!({"file_path": "a.txt", "old_string": "a"}),
            json!({"pattern": "*.rs", "path": "src", "include": "*.rs"}),
            json!({"pattern": "x"}),
            json!({}),
            json!("not an object"),
            json!({"file_path": 5, "offset": "x"}),
        ];
        for args in &corpus {
            assert_eq!(read(args), legacy::presentation("read", args), "read {args}");
            assert_eq!(write(args), legacy::presentation("write", args), "write {args}");
            assert_eq!(edit(args), legacy::presentation("edit", args), "edit {args}");
            assert_eq!(search("Glob", args, false), legacy::presentation("glob", args));
            assert_eq!(search("Grep", args, true), legacy::presentation("grep", args));
        }
    }

    #[test]
    fn a_refused_pattern_is_titled_by_its_start_and_size() {
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        let shown = search("Grep", &json!({"pattern": long, "include": long}), true);
        let head = "a".repeat(REFUSED_PATTERN_SHOWN_BYTES);
        let size = MAX_PATTERN_BYTES + 1;
        assert_eq!(shown.title, format!("Grep {head}… ({size} bytes) ({head}… ({size} bytes))"));
        let at_cap = "b".repeat(MAX_PATTERN_BYTES);
        assert_eq!(
            search("Glob", &json!({"pattern": at_cap}), false).title,
            format!("Glob {at_cap}")
        );
    }
}
