//! Normalization of server answers into the provider's closed shapes: `Location` /
//! `LocationLink` (single or array, `null` ⇒ none) and hover (`MarkupContent`, `MarkedString`,
//! arrays joined by a blank line; empty ⇒ none). Anything else is `LSP_MALFORMED_RESPONSE`.
//!
//! The items are `gen-lsp-types`' structs (`Location`, `LocationLink`, `Hover`), so their fields
//! are checked as the protocol defines them (non-negative integer coordinates, a URI). The unions
//! around the navigation items are ours: the crate's `DefinitionResponse` takes a `Location`, an
//! array of `Location`s or an array of `LocationLink`s, but servers also answer one bare
//! `LocationLink` or an array mixing both, and those answers are usable.

use crate::error::LspHostError;
// MarkedString is deprecated in favour of MarkupContent, but servers still send it, so it is read.
#[allow(deprecated)]
use gen_lsp_types::MarkedString;
use gen_lsp_types::{Contents, Hover, Location, LocationLink, Position, Range};
use serde::Deserialize;
use serde_json::Value;
use toolhost_contract::lsp::{LspHover, LspLocation, LspPosition, LspRange};

fn malformed(what: &str, detail: &str) -> LspHostError {
    LspHostError::Malformed(format!("malformed {what} response from the language server: {detail}"))
}

/// The provider's position from the protocol's.
pub(crate) fn position(p: Position) -> LspPosition {
    LspPosition { line: p.line, character: p.character }
}

/// The provider's range from the protocol's.
pub(crate) fn lsp_range(r: Range) -> LspRange {
    LspRange { start: position(r.start), end: position(r.end) }
}

/// A `Range` with non-negative integer coordinates.
pub fn range(value: &Value) -> Option<LspRange> {
    Range::deserialize(value).ok().map(lsp_range)
}

/// One navigation target as servers send it (a link first: a `Location` has no `targetUri`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Target {
    Link(LocationLink),
    Plain(Location),
}

impl From<Target> for LspLocation {
    fn from(target: Target) -> Self {
        // A link points at its target's name (`targetSelectionRange`), like a `Location` would.
        let (uri, range) = match target {
            Target::Link(link) => (link.target_uri, link.target_selection_range),
            Target::Plain(location) => (location.uri, location.range),
        };
        LspLocation { uri: uri.into(), range: lsp_range(range) }
    }
}

/// A navigation answer: one target or an array of them (`null` is handled before).
#[derive(Deserialize)]
#[serde(untagged)]
enum Targets {
    Many(Vec<Target>),
    One(Target),
}

/// Navigation results: `null` ⇒ `[]`; a `Location`/`LocationLink` or an array of them.
/// `result` is `None` when the response had no `result` member at all.
pub fn locations(op: &str, result: Option<&Value>) -> Result<Vec<LspLocation>, LspHostError> {
    let Some(result) = result else {
        return Err(malformed(op, "the result is missing"));
    };
    match Option::<Targets>::deserialize(result) {
        Ok(None) => Ok(Vec::new()),
        Ok(Some(Targets::One(target))) => Ok(vec![target.into()]),
        Ok(Some(Targets::Many(targets))) => Ok(targets.into_iter().map(Into::into).collect()),
        Err(_) => Err(malformed(op, "not a Location")),
    }
}

#[allow(deprecated)]
fn marked_string(marked: MarkedString) -> String {
    match marked {
        MarkedString::String(text) => text,
        MarkedString::MarkedStringWithLanguage(code) => {
            format!("```{}\n{}\n```", code.language, code.value)
        }
    }
}

/// Hover: `null` ⇒ none; `{contents, range?}` with `MarkupContent`, `MarkedString` or an array
/// of `MarkedString`s (joined by a blank line); empty text ⇒ none.
pub fn hover(result: Option<&Value>) -> Result<Option<LspHover>, LspHostError> {
    let Some(result) = result else {
        return Err(malformed("hover", "the result is missing"));
    };
    let hover = match Option::<Hover>::deserialize(result) {
        Ok(Some(hover)) => hover,
        Ok(None) => return Ok(None),
        Err(err) => return Err(malformed("hover", &err.to_string())),
    };
    let text = match hover.contents {
        Contents::MarkupContent(markup) => markup.value,
        Contents::MarkedString(marked) => marked_string(marked),
        Contents::MarkedStringList(items) => {
            items.into_iter().map(marked_string).collect::<Vec<_>>().join("\n\n")
        }
    };
    if text.is_empty() {
        return Ok(None);
    }
    Ok(Some(LspHover { contents: text, range: hover.range.map(lsp_range) }))
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
        // Outside the spec but seen: one bare link, and an array mixing both kinds.
        let bare = json!({"targetUri": "file:///b", "targetRange": r(0, 0),
                          "targetSelectionRange": r(5, 6)});
        assert_eq!(locations("definition", Some(&bare)).unwrap()[0].range.start.line, 5);
        let mixed = json!([{"uri": "file:///a", "range": r(1, 0)}, bare]);
        let got = locations("definition", Some(&mixed)).unwrap();
        assert_eq!((got[0].range.start.line, got[1].uri.as_str()), (1, "file:///b"));
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
        // A URI keeps its spelling (percent escapes included).
        let escaped = json!({"uri": "file:///w/a%20b.c", "range": r(0, 0)});
        assert_eq!(locations("definition", Some(&escaped)).unwrap()[0].uri, "file:///w/a%20b.c");
    }

    #[test]
    fn hover_shapes() {
        let markup = json!({"contents": {"kind": "markdown", "value": "**x**"}});
        assert_eq!(hover(Some(&markup)).unwrap().unwrap().contents, "**x**");
        // A MarkupKind outside the two named ones is still text.
        let other = json!({"contents": {"kind": "rst", "value": "x"}, "range": null});
        assert_eq!(
            hover(Some(&other)).unwrap().unwrap(),
            LspHover { contents: "x".into(), range: None }
        );
        let marked = json!({"contents": [{"language": "c", "value": "int x"}, "doc"],
                            "range": r(0, 1)});
        let got = hover(Some(&marked)).unwrap().unwrap();
        assert_eq!(got.contents, "```c\nint x\n```\n\ndoc");
        assert_eq!(got.range.unwrap().start.character, 1);
        let single = json!({"contents": {"language": "python", "value": "def f()"}});
        assert_eq!(hover(Some(&single)).unwrap().unwrap().contents, "```python\ndef f()\n```");
        assert_eq!(hover(Some(&json!({"contents": ""}))).unwrap(), None);
        assert_eq!(hover(Some(&Value::Null)).unwrap(), None);
        assert!(hover(Some(&json!({"contents": "x", "range": {"start": 1}}))).is_err());
        assert!(hover(Some(&json!({"value": 1}))).is_err());
        assert!(hover(None).is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(range(&r(2, 3)).unwrap().end, LspPosition { line: 2, character: 4 });
        assert_eq!(range(&json!({"start": {"line": 0, "character": 0}})), None);
    }
}
