//! Presentations for `tool/call` events written before tools declared their cards (log format 1
//! without a `card` member). Those logs only hold calls of the first six tools — read, write,
//! edit, glob, grep, lsp — and of tools without a presenter, so this frozen copy of how cards
//! were derived then keeps every such log replaying to the cards it showed. New events always
//! carry the tool's own declaration; nothing else uses this module.

use super::{CallPresentation, CardKind, CardLocation, PreviewDiff, format_number};
use serde_json::Value;

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn num_arg(args: &Value, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

/// The presentation the card code derived from a call's tool name and arguments.
pub fn presentation(tool: &str, args: &Value) -> CallPresentation {
    let path = str_arg(args, "file_path").unwrap_or("");
    let title = match tool {
        "read" => {
            let mut title = format!("Read {path}");
            let offset = num_arg(args, "offset");
            match (offset, num_arg(args, "limit")) {
                (_, Some(limit)) if limit > 0.0 => {
                    let start = offset.unwrap_or(1.0);
                    title.push_str(&format!(
                        " ({} - {})",
                        format_number(start),
                        format_number(start + limit - 1.0)
                    ));
                }
                (Some(start), _) => {
                    title.push_str(&format!(" (from line {})", format_number(start)));
                }
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
            num_arg(args, "line").map(format_number).unwrap_or_default(),
            num_arg(args, "character").map(format_number).unwrap_or_default()
        ),
        _ => match str_arg(args, "description").or_else(|| str_arg(args, "file_path")) {
            Some(detail) => format!("{tool} {detail}"),
            None => tool.to_owned(),
        },
    };
    let kind = match tool {
        "write" | "edit" => CardKind::Diff,
        "read" => CardKind::Read,
        "glob" | "grep" | "lsp" => CardKind::Search,
        _ => CardKind::Generic,
    };
    let mut presentation = CallPresentation::new(kind, title);
    if let Some(file) = str_arg(args, "file_path").filter(|p| !p.is_empty()) {
        let line = match tool {
            "read" => num_arg(args, "offset"),
            "lsp" => num_arg(args, "line"),
            _ => None,
        }
        .filter(|n| *n >= 1.0)
        .map_or(1, |n| n as u64);
        presentation.locations.push(CardLocation { path: file.to_owned(), line });
    }
    if let Some(file) = str_arg(args, "file_path") {
        match tool {
            "write" => {
                if let Some(content) = str_arg(args, "content") {
                    presentation.preview.push(PreviewDiff {
                        path: file.to_owned(),
                        old_text: None,
                        new_text: content.to_owned(),
                    });
                    presentation.preview_is_result = true;
                }
            }
            "edit" => {
                if let Some(old) = str_arg(args, "old_string") {
                    presentation.preview.push(PreviewDiff {
                        path: file.to_owned(),
                        old_text: Some(old.to_owned()),
                        new_text: str_arg(args, "new_string").unwrap_or("").to_owned(),
                    });
                }
            }
            _ => {}
        }
    }
    presentation
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_as_they_were() {
        let title = |tool: &str, args: Value| presentation(tool, &args).title;
        assert_eq!(
            title("read", json!({"file_path": "a", "offset": 3, "limit": 2})),
            "Read a (3 - 4)"
        );
        assert_eq!(title("read", json!({"file_path": "a", "offset": 3})), "Read a (from line 3)");
        assert_eq!(
            title("grep", json!({"pattern": "x", "path": "src", "include": "*.rs"})),
            "Grep x in src (*.rs)"
        );
        assert_eq!(title("test_sleep", json!({"seconds": 1})), "test_sleep");
        assert_eq!(title("x", json!({"description": "does y"})), "x does y");
    }
}
