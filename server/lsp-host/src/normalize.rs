//! Normalization of server answers into the provider's closed shapes: `Location` /
//! `LocationLink` (single or array, `null` ⇒ none) and hover (`MarkupContent`, `MarkedString`,
//! arrays joined by a blank line; empty ⇒ none). Anything else is `LSP_MALFORMED_RESPONSE`.

use crate::error::LspHostError;
use serde_json::Value;
use toolhost_contract::lsp::{LspHover, LspLocation, LspPosition, LspRange};

fn malformed(what: &str, detail: &str) -> LspHostError {
    LspHostError::Malformed(format!("malformed {what} response from the language server: {detail}"))
}

fn coordinate(value: Option<&Value>) -> Option<u32> {
    let n = value?.as_u64()?;
    u32::try_from(n).ok()
}

fn position(value: &Value) -> Option<LspPosition> {
    Some(LspPosition {
        line: coordinate(value.get("line"))?,
        character: coordinate(value.get("character"))?,
    })
}

/// A `Range` with non-negative integer coordinates.
pub fn range(value: &Value) -> Option<LspRange> {
    Some(LspRange { start: position(value.get("start")?)?, end: position(value.get("end")?)? })
}

fn location(value: &Value) -> Option<LspLocation> {
    if let Some(uri) = value.get("targetUri").and_then(Value::as_str) {
        let range = range(value.get("targetSelectionRange")?)?;
        return Some(LspLocation { uri: uri.to_owned(), range });
    }
    let uri = value.get("uri")?.as_str()?;
    Some(LspLocation { uri: uri.to_owned(), range: range(value.get("range")?)? })
}

/// Navigation results: `null` ⇒ `[]`; a `Location`/`LocationLink` or an array of them.
/// `result` is `None` when the response had no `result` member at all.
pub fn locations(op: &str, result: Option<&Value>) -> Result<Vec<LspLocation>, LspHostError> {
    let Some(result) = result else {
        return Err(malformed(op, "the result is missing"));
    };
    match result {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| location(item).ok_or_else(|| malformed(op, "not a Location")))
            .collect(),
        Value::Object(_) => {
            location(result).map(|l| vec![l]).ok_or_else(|| malformed(op, "not a Location"))
        }
        _ => Err(malformed(op, "not a Location")),
    }
}

fn marked_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => {
            let text = map.get("value")?.as_str()?;
            match map.get("language").and_then(Value::as_str) {
                Some(language) if map.get("kind").is_none() => {
                    Some(format!("```{language}\n{text}\n```"))
                }
                _ => Some(text.to_owned()),
            }
        }
        _ => None,
    }
}

/// Hover: `null` ⇒ none; `{contents, range?}` with `MarkupContent`, `MarkedString` or an array
/// of `MarkedString`s (joined by a blank line); empty text ⇒ none.
pub fn hover(result: Option<&Value>) -> Result<Option<LspHover>, LspHostError> {
    let Some(result) = result else {
        return Err(malformed("hover", "the result is missing"));
    };
    if result.is_null() {
        return Ok(None);
    }
    let contents = result.get("contents").ok_or_else(|| malformed("hover", "no contents"))?;
    let text = match contents {
        Value::Array(items) => items
            .iter()
            .map(marked_string)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| malformed("hover", "bad contents"))?
            .join("\n\n"),
        other => marked_string(other).ok_or_else(|| malformed("hover", "bad contents"))?,
    };
    let range = match result.get("range") {
        None | Some(Value::Null) => None,
        Some(value) => Some(range(value).ok_or_else(|| malformed("hover", "bad range"))?),
    };
    if text.is_empty() {
        return Ok(None);
    }
    Ok(Some(LspHover { contents: text, range }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn r(l: u32, c: u32) -> Value {
        json!({"start": {"line": l, "character": c}, "end": {"line": l, "character": c + 1}})
    }

    #[test]
    fn navigation_shapes() {
        assert!(locations("definition", Some(&Value::Null)).unwrap().is_empty());
        assert!(locations("definition", None).is_err());
        let one = locations("definition", Some(&json!({"uri": "file:///a", "range": r(1, 2)})));
        assert_eq!(one.unwrap()[0].range.start, LspPosition { line: 1, character: 2 });
        let links = json!([{"targetUri": "file:///b", "targetRange": r(0, 0),
                            "targetSelectionRange": r(3, 4)}]);
        let got = locations("definition", Some(&links)).unwrap();
        assert_eq!((got[0].uri.as_str(), got[0].range.start.line), ("file:///b", 3));
        let negative = json!([{"uri": "file:///a", "range": r(0, 0)}, {"uri": "x",
            "range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}}]);
        assert!(locations("references", Some(&negative)).is_err());
        assert!(locations("references", Some(&json!("x"))).is_err());
        assert!(
            locations(
                "references",
                Some(&json!([{"uri": "file:///a", "range": {
            "start": {"line": 1.5, "character": 0}, "end": {"line": 2, "character": 0}}}]))
            )
            .is_err()
        );
    }

    #[test]
    fn hover_shapes() {
        let markup = json!({"contents": {"kind": "markdown", "value": "**x**"}});
        assert_eq!(hover(Some(&markup)).unwrap().unwrap().contents, "**x**");
        let marked = json!({"contents": [{"language": "c", "value": "int x"}, "doc"],
                            "range": r(0, 1)});
        let got = hover(Some(&marked)).unwrap().unwrap();
        assert_eq!(got.contents, "```c\nint x\n```\n\ndoc");
        assert_eq!(got.range.unwrap().start.character, 1);
        assert_eq!(hover(Some(&json!({"contents": ""}))).unwrap(), None);
        assert_eq!(hover(Some(&Value::Null)).unwrap(), None);
        assert!(hover(Some(&json!({"contents": "x", "range": {"start": 1}}))).is_err());
        assert!(hover(Some(&json!({"value": 1}))).is_err());
        assert!(hover(None).is_err());
    }
}
