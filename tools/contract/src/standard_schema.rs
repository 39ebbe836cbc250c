//! Published schemas in standard JSON Schema 2020-12: what every client's validator accepts
//! without a warning.
//!
//! schemars describes Rust's numeric types with formats of its own (`uint64`, `uint`, `int32`,
//! `double`, …) and an optional argument with `#[serde(default)]` as `"default": null` even after
//! null was taken out of its type. Strict validators refuse both (ajv, which the TypeScript MCP
//! SDK uses, logs "unknown format" for each, on every `tools/list`). [`standardize`] rewrites a
//! schema once, where a tool's schemas are made (typed and raw alike), so the schema the
//! registry validates with is the one every front end publishes:
//!
//! - a format outside the standard set is dropped; an integer format's range is kept as
//!   `minimum`/`maximum` (bounds the schema already has stay);
//! - a `"default": null` where the schema does not allow null is dropped.
//!
//! Only schema positions are visited (`properties`, `$defs`, `items`, the combinators, …): a
//! `default`, `const`, `enum` or `examples` value is data and is never rewritten.

use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::{Map, Value, json};

/// The formats kept: those JSON Schema 2020-12 defines that ajv-formats (the TypeScript SDK's
/// format set) also knows. `idn-email`, `idn-hostname`, `iri` and `iri-reference` are standard
/// but unknown to ajv-formats, so a client would still warn about them.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The range an integer format stands for, as (`minimum`, `maximum`). 64-bit and wider formats
/// keep only their sign: their bounds are beyond what a JSON number holds exactly, and the
/// deserializer refuses an out-of-range value anyway.
fn integer_range(format: &str) -> Option<(Value, Option<Value>)> {
    Some(match format {
        "int8" => (json!(i8::MIN), Some(json!(i8::MAX))),
        "int16" => (json!(i16::MIN), Some(json!(i16::MAX))),
        "int32" => (json!(i32::MIN), Some(json!(i32::MAX))),
        "uint8" => (json!(0), Some(json!(u8::MAX))),
        "uint16" => (json!(0), Some(json!(u16::MAX))),
        "uint32" => (json!(0), Some(json!(u32::MAX))),
        "uint" | "uint64" | "uint128" => (json!(0), None),
        _ => return None,
    })
}

/// `schema` with only standard formats and valid defaults (see the module doc). Anything but an
/// object (a boolean schema, or a value the schema compiler will refuse) is returned unchanged.
pub fn standardize(schema: Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut schema = Schema::from(map);
            Standardize.transform(&mut schema);
            schema.to_value()
        }
        other => other,
    }
}

/// The schemars transform behind [`standardize`].
#[derive(Clone, Copy, Debug, Default)]
struct Standardize;

impl Transform for Standardize {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(obj) = schema.as_object_mut() {
            standard_format(obj);
            drop_invalid_null_default(obj);
        }
        transform_subschemas(self, schema);
    }
}

fn standard_format(obj: &mut Map<String, Value>) {
    let Some(format) = obj.get("format").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format.as_str()) {
        return;
    }
    // `shift_remove` keeps the other keys in place (a plain remove moves the last key there).
    obj.shift_remove("format");
    if !allows(obj, "integer") && !allows(obj, "number") {
        return;
    }
    if let Some((minimum, maximum)) = integer_range(&format) {
        obj.entry("minimum").or_insert(minimum);
        if let Some(maximum) = maximum {
            obj.entry("maximum").or_insert(maximum);
        }
    }
}

fn drop_invalid_null_default(obj: &mut Map<String, Value>) {
    if obj.get("default") == Some(&Value::Null) && !null_allowed(obj) {
        obj.shift_remove("default");
    }
}

/// Whether `obj`'s `type` names `kind` (a schema without `type` allows every kind).
fn allows(obj: &Map<String, Value>, kind: &str) -> bool {
    match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == kind,
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some(kind)),
        Some(_) => false,
    }
}

/// Whether null can validate against `obj`, judged by its own `type`, `const` and `enum` (a
/// combinator's branches are not second-guessed: the default then stays).
fn null_allowed(obj: &Map<String, Value>) -> bool {
    if obj.contains_key("type") && !allows(obj, "null") {
        return false;
    }
    if let Some(constant) = obj.get("const") {
        return constant.is_null();
    }
    if let Some(Value::Array(options)) = obj.get("enum") {
        return options.iter().any(Value::is_null);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_formats_become_ranges() {
        let out = standardize(json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "format": "uint64", "minimum": 0},
                "b": {"type": ["integer", "null"], "format": "int32"},
                "c": {"type": "integer", "format": "uint32", "minimum": 0},
                "d": {"type": "integer", "format": "uint8", "minimum": 5},
                "e": {"type": "number", "format": "double"},
                "f": {"type": "string", "format": "uri"},
                "g": {"type": "string", "format": "x-custom"}
            },
            "$defs": {"D": {"type": "integer", "format": "int64"}},
            "items": {"type": "integer", "format": "uint"}
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "minimum": 0},
                    "b": {"type": ["integer", "null"], "minimum": i32::MIN, "maximum": i32::MAX},
                    "c": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                    "d": {"type": "integer", "minimum": 5, "maximum": 255},
                    "e": {"type": "number"},
                    "f": {"type": "string", "format": "uri"},
                    "g": {"type": "string"}
                },
                "$defs": {"D": {"type": "integer"}},
                "items": {"type": "integer", "minimum": 0}
            })
        );
    }

    #[test]
    fn null_defaults_only_where_null_is_allowed() {
        let out = standardize(json!({
            "type": "object",
            "properties": {
                "a": {"type": "number", "default": null},
                "b": {"type": ["string", "null"], "default": null},
                "c": {"enum": ["x", "y"], "default": null},
                "d": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                "e": {"type": "boolean", "default": false}
            }
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "number"},
                    "b": {"type": ["string", "null"], "default": null},
                    "c": {"enum": ["x", "y"]},
                    "d": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                    "e": {"type": "boolean", "default": false}
                }
            })
        );
    }

    #[test]
    fn data_values_are_not_rewritten() {
        let schema = json!({
            "type": "object",
            "default": {"format": "uint64", "default": null},
            "const": {"format": "int32"},
            "properties": {"format": {"type": "string"}, "default": {"type": "number"}}
        });
        assert_eq!(standardize(schema.clone()), schema);
    }
}
