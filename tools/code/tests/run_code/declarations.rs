//! The TypeScript declarations: byte-stable for a tool set, checked against an expect file
//! (`UPDATE_EXPECT=1` rewrites it).

use crate::fake::exposed;
use serde_json::json;
use toolhost_contract::ExposedTool;
use toolhost_tools_code::declarations::typescript;

fn check(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expect").join(name);
    if std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(actual, expected, "{} differs; UPDATE_EXPECT=1 rewrites it", path.display());
}

fn rich() -> ExposedTool {
    ExposedTool {
        name: "read".to_owned(),
        description: "Reads a file.\n\nLong details that stay out of the doc comment.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file."},
                "offset": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["text", "bytes"]},
                "range": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]},
                "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                "opts": {"$ref": "#/$defs/Opts"},
                "weird key": {"not": {"type": "string"}}
            },
            "required": ["path"],
            "additionalProperties": false,
            "$defs": {"Opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}}}
        }),
        output_schema: Some(json!({
            "type": "object",
            "properties": {
                "lines": {"type": "array", "items": {"type": "string"}},
                "total": {"type": ["integer", "null"]},
                "kind": {"const": "file"},
                "meta": {"type": "object", "additionalProperties": {"type": "number"}}
            },
            "required": ["lines", "kind"]
        })),
    }
}

#[test]
fn declarations_are_byte_stable_and_sorted() {
    let mut tools = exposed();
    tools.push(rich());
    let text = typescript(&tools);
    check("declarations.ts", &text);
    tools.reverse();
    assert_eq!(typescript(&tools), text, "the order tools come in does not matter");
}
