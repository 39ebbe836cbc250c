//! Results of bridged calls: the canonical value `McpResult = {content, structuredContent?}`
//! (the server's content blocks verbatim, images included), the output schema a tool gets from
//! its advertised `outputSchema`, and the Native text the model reads (`render`). Pure.

use base64::Engine;
use serde_json::{Map, Value, json};
use toolhost_contract::CompiledSchema;
use toolhost_protocol::ContentBlock;

/// What a `tools/call` answer turns into.
#[derive(Clone, Debug, PartialEq)]
pub enum CallOutcome {
    /// The canonical value.
    Value(Value),
    /// `isError: true`: the failure message is the Native text of the error's content.
    ToolError(String),
    /// The answer is not a tool result at all.
    Invalid(String),
}

/// Turns a raw `tools/call` result (JSON) into the canonical value. A legacy answer
/// (`{toolResult}` instead of `content`) becomes one text block of the value's JSON.
pub fn canonical(raw_name: &str, result: Value) -> CallOutcome {
    let Value::Object(mut result) = result else {
        return CallOutcome::Invalid("the result is not a JSON object".to_owned());
    };
    if !result.contains_key("content")
        && let Some(legacy) = result.remove("toolResult")
    {
        let text = match &legacy {
            Value::Null => "(no output)".to_owned(),
            other => other.to_string(),
        };
        return CallOutcome::Value(json!({"content": [{"type": "text", "text": text}]}));
    }
    let content = match result.remove("content") {
        None => Vec::new(),
        Some(Value::Array(blocks)) => blocks,
        Some(_) => {
            return CallOutcome::Invalid("\"content\" is not an array".to_owned());
        }
    };
    let mut value = Map::new();
    value.insert("content".into(), Value::Array(content));
    if let Some(structured) = result.remove("structuredContent") {
        value.insert("structuredContent".into(), structured);
    }
    let value = Value::Object(value);
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return CallOutcome::ToolError(native_text(raw_name, &value));
    }
    CallOutcome::Value(value)
}

/// The output schema of a bridged tool, and whether the advertised `outputSchema` is used.
/// A usable schema (an object schema that compiles here) makes `structuredContent` required
/// and validated; anything else falls back to "any JSON, optional" instead of pretending.
pub fn output_schema(tool: &str, advertised: Option<&Value>) -> (Value, bool) {
    if let Some(schema) = advertised
        && let Some(wrapped) = embed(schema)
        && CompiledSchema::compile(tool, "output", wrapped.clone()).is_ok()
    {
        return (wrapped, true);
    }
    (envelope(json!({}), false, Map::new()), false)
}

fn envelope(structured: Value, required: bool, defs: Map<String, Value>) -> Value {
    let mut schema = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "content": {"type": "array"},
            "structuredContent": structured,
        },
        "required": if required { json!(["content", "structuredContent"]) } else { json!(["content"]) },
    });
    if !defs.is_empty()
        && let Some(obj) = schema.as_object_mut()
    {
        obj.insert("$defs".into(), Value::Object(defs));
    }
    schema
}

/// Places an advertised schema under `properties.structuredContent` of the envelope. Its local
/// definitions move to the envelope's root and its local `$ref`s are rewritten, so references
/// resolve as they did in the advertised document. A schema with its own `$id` is a resource of
/// its own and is embedded unchanged.
fn embed(schema: &Value) -> Option<Value> {
    let Value::Object(obj) = schema else { return None };
    let declared = obj.get("type");
    if declared.is_some_and(|t| t != "object") {
        return None;
    }
    if obj.contains_key("$id") {
        return Some(envelope(schema.clone(), true, Map::new()));
    }
    let mut body = obj.clone();
    body.remove("$schema");
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(found)) = body.remove(key) {
            for (name, def) in found {
                // Both spellings end up in `$defs`; a clash means the schema is not usable.
                if defs.insert(def_key(key, &name), def).is_some() {
                    return None;
                }
            }
        }
    }
    // `#/$defs/x` stays, `#/definitions/x` → `#/$defs/definitions.x`; any other local pointer
    // now lives under the envelope's `structuredContent`.
    let mut body = Value::Object(body);
    rewrite_refs(&mut body);
    let mut moved = Map::new();
    for (name, mut def) in defs {
        rewrite_refs(&mut def);
        moved.insert(name, def);
    }
    Some(envelope(body, true, moved))
}

/// The name a definition gets in the envelope's `$defs` (the same for the key and, escaped as
/// it was, in pointers: `.` needs no escaping).
fn def_key(keyword: &str, name: &str) -> String {
    if keyword == "$defs" { name.to_owned() } else { format!("definitions.{name}") }
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            for (key, child) in obj.iter_mut() {
                if key == "$ref"
                    && let Value::String(reference) = child
                {
                    *reference = rewrite_ref(reference);
                } else {
                    rewrite_refs(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

fn rewrite_ref(reference: &str) -> String {
    let Some(pointer) = reference.strip_prefix('#') else { return reference.to_owned() };
    for key in ["$defs", "definitions"] {
        if let Some(rest) = pointer.strip_prefix(&format!("/{key}/")) {
            let (name, tail) = rest.split_once('/').map_or((rest, ""), |(n, t)| (n, t));
            let tail = if tail.is_empty() { String::new() } else { format!("/{tail}") };
            return format!("#/$defs/{}{tail}", def_key(key, name));
        }
    }
    format!("#/properties/structuredContent{pointer}")
}

/// The Native text of a value: one text block projecting every content block in order, or,
/// when the result holds well-formed images, text runs split by the images.
pub fn render(raw_name: &str, value: &Value) -> Vec<ContentBlock> {
    let blocks = value.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let images_ok = blocks
        .iter()
        .filter(|b| block_type(b) == Some("image"))
        .all(|b| image_problem(b).is_none());
    let mut out = Vec::new();
    let mut run: Vec<String> = Vec::new();
    for block in blocks {
        if images_ok && block_type(block) == Some("image") {
            if !run.is_empty() {
                out.push(ContentBlock::text(run.join("\n")));
                run.clear();
            }
            let data = block.get("data").and_then(Value::as_str).unwrap_or_default();
            let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or_default();
            out.push(ContentBlock::Image { data: data.to_owned(), mime_type: mime.to_owned() });
        } else if let Some(text) = project(block) {
            run.push(text);
        }
    }
    if !run.is_empty() {
        out.push(ContentBlock::text(run.join("\n")));
    }
    if out.is_empty() {
        out.push(ContentBlock::text(format!("({raw_name} returned no model-visible content)")));
    }
    out
}

/// The whole result as text (images as their diagnostic): what a failure's message says.
pub fn native_text(raw_name: &str, value: &Value) -> String {
    let blocks = value.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let parts: Vec<String> = blocks.iter().filter_map(project).collect();
    if parts.is_empty() {
        format!("({raw_name} returned no model-visible content)")
    } else {
        parts.join("\n")
    }
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// One block as text; `None` for a block that shows nothing (an empty text).
fn project(block: &Value) -> Option<String> {
    let Value::Object(obj) = block else {
        return Some("[unsupported MCP content block: expected an object]".to_owned());
    };
    let text = match obj.get("type").and_then(Value::as_str) {
        Some("text") => obj.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
        Some("resource_link") => {
            match (
                obj.get("name").and_then(Value::as_str),
                obj.get("uri").and_then(Value::as_str),
            ) {
                (Some(name), Some(uri)) => format!("Resource link: {name} ({uri})"),
                (None, _) => "[invalid resource_link block: missing \"name\"]".to_owned(),
                (_, None) => "[invalid resource_link block: missing \"uri\"]".to_owned(),
            }
        }
        Some("audio") => format!(
            "[audio result unsupported: {}; raw audio data remains available to programmatic callers]",
            mime_of(obj)
        ),
        Some("resource") => "[embedded resource unsupported; raw resource data remains available to programmatic callers]".to_owned(),
        Some("image") => format!(
            "[image unavailable: {}; {}; raw image data remains available to programmatic callers]",
            mime_of(obj),
            image_problem(block).unwrap_or("images are shown only when every image of the result is well-formed")
        ),
        Some(other) => format!("[unsupported MCP content type: {other}]"),
        None => "[unsupported MCP content type: (none)]".to_owned(),
    };
    (!text.is_empty()).then_some(text)
}

fn mime_of(obj: &Map<String, Value>) -> &str {
    obj.get("mimeType").and_then(Value::as_str).unwrap_or("unknown type")
}

/// Why an image block cannot be shown as an image: its type is not PNG, JPEG, WebP or GIF, its
/// data is not canonical base64, or the bytes are not what the type says.
fn image_problem(block: &Value) -> Option<&'static str> {
    let mime = block.get("mimeType").and_then(Value::as_str)?;
    let Some(data) = block.get("data").and_then(Value::as_str) else {
        return Some("the block has no data");
    };
    let magic: fn(&[u8]) -> bool = match mime {
        "image/png" => |b| b.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => |b| b.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => |b| b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a"),
        "image/webp" => |b| b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP",
        _ => return Some("unsupported image type"),
    };
    match base64::engine::general_purpose::STANDARD.decode(data) {
        Err(_) => Some("the data is not valid base64"),
        Ok(bytes) if !magic(&bytes) => Some("the data does not match its declared type"),
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(blocks: &[ContentBlock]) -> Vec<String> {
        blocks.iter().map(|b| b.as_text().unwrap_or("<image>").to_owned()).collect()
    }

    #[test]
    fn every_content_kind_projects_as_documented() {
        let value = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "resource_link", "name": "README", "uri": "file:///r/README.md"},
            {"type": "resource_link", "uri": "file:///x"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "a"}},
            {"type": "hologram"},
            "not an object",
            {"type": "image", "data": "@@@", "mimeType": "image/png"},
        ]});
        let blocks = render("tool", &value);
        assert_eq!(
            text_of(&blocks),
            ["hello\nResource link: README (file:///r/README.md)\n\
[invalid resource_link block: missing \"name\"]\n\
[audio result unsupported: audio/wav; raw audio data remains available to programmatic callers]\n\
[embedded resource unsupported; raw resource data remains available to programmatic callers]\n\
[unsupported MCP content type: hologram]\n\
[unsupported MCP content block: expected an object]\n\
[image unavailable: image/png; the data is not valid base64; raw image data remains available to programmatic callers]"]
        );
    }

    #[test]
    fn nothing_visible_names_the_tool() {
        assert_eq!(
            text_of(&render("echo", &json!({"content": []}))),
            ["(echo returned no model-visible content)"]
        );
        assert_eq!(
            text_of(&render("echo", &json!({"content": [{"type": "text", "text": ""}]}))),
            ["(echo returned no model-visible content)"]
        );
    }

    #[test]
    fn well_formed_images_split_the_text_runs() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nrest");
        let value = json!({"content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "text", "text": "c"},
        ]});
        let blocks = render("t", &value);
        assert_eq!(text_of(&blocks), ["a\nb", "<image>", "c"]);
        // One bad image turns every image into its diagnostic.
        let value = json!({"content": [
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "image", "data": png, "mimeType": "image/gif"},
        ]});
        let text = text_of(&render("t", &value)).join("|");
        assert!(text.starts_with("[image unavailable: image/png; images are shown only when"));
        assert!(
            text.contains(
                "[image unavailable: image/gif; the data does not match its declared type;"
            )
        );
    }

    #[test]
    fn errors_and_legacy_results() {
        let err = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
        assert_eq!(canonical("t", err), CallOutcome::ToolError("boom".to_owned()));
        assert_eq!(
            canonical("t", json!({"toolResult": {"a": 1}})),
            CallOutcome::Value(json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}))
        );
        assert_eq!(
            canonical("t", json!({"toolResult": null})),
            CallOutcome::Value(json!({"content": [{"type": "text", "text": "(no output)"}]}))
        );
        assert_eq!(
            canonical("t", json!({"content": [], "structuredContent": {"x": 1}, "_meta": {}})),
            CallOutcome::Value(json!({"content": [], "structuredContent": {"x": 1}}))
        );
        assert!(matches!(canonical("t", json!({"content": 5})), CallOutcome::Invalid(_)));
    }

    #[test]
    fn supported_schemas_are_required_and_unsupported_fall_back() {
        let advertised = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"item": {"$ref": "#/$defs/Item"}, "old": {"$ref": "#/definitions/Old"}},
            "required": ["item"],
            "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "definitions": {"Old": {"type": "string"}},
        });
        let (schema, used) = output_schema("t", Some(&advertised));
        assert!(used);
        assert_eq!(schema["required"], json!(["content", "structuredContent"]));
        let compiled = CompiledSchema::compile("t", "output", schema).expect("compiles");
        let ok = json!({"content": [], "structuredContent": {"item": {"n": 1}, "old": "x"}});
        assert!(compiled.violations(&ok, "value").is_empty());
        let bad = json!({"content": [], "structuredContent": {"item": {"n": "one"}}});
        assert!(!compiled.violations(&bad, "value").is_empty());
        let missing = json!({"content": []});
        assert!(!compiled.violations(&missing, "value").is_empty());

        for unusable in
            [json!({"type": "string"}), json!({"$ref": "https://example.com/s.json"}), json!(5)]
        {
            let (schema, used) = output_schema("t", Some(&unusable));
            assert!(!used, "{unusable}");
            assert_eq!(schema["required"], json!(["content"]));
            assert_eq!(schema["properties"]["structuredContent"], json!({}));
        }
        let (_, used) = output_schema("t", None);
        assert!(!used);
    }
}
