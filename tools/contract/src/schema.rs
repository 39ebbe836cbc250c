//! Schema compilation (JSON Schema 2020-12 via the jsonschema crate) and the argument-violation
//! wording of docs/tools.md for argument and output violations.

use crate::error::RegistrationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// A schema compiled once at registration.
pub struct CompiledSchema {
    raw: Value,
    validator: Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").field("raw", &self.raw).finish()
    }
}

impl CompiledSchema {
    /// Compiles `raw`; external `$ref`s and schemas that do not compile are refused, naming the
    /// tool and the schema path.
    pub fn compile(tool: &str, label: &str, raw: Value) -> Result<Self, RegistrationError> {
        if let Some((path, reference)) = find_external_ref(&raw) {
            return Err(RegistrationError::UnsupportedSchema {
                tool: tool.to_owned(),
                path: format!("{label}{path}"),
                detail: format!("external $ref \"{reference}\" is not supported"),
            });
        }
        if !(raw.is_object() || raw.is_boolean()) {
            return Err(RegistrationError::UnsupportedSchema {
                tool: tool.to_owned(),
                path: label.to_owned(),
                detail: "a schema must be an object or a boolean".to_owned(),
            });
        }
        let validator = jsonschema::options().build(&raw).map_err(|err| {
            RegistrationError::UnsupportedSchema {
                tool: tool.to_owned(),
                path: format!("{label}{}", pointer_to_path(err.schema_path().as_str())),
                detail: err.to_string(),
            }
        })?;
        Ok(CompiledSchema { raw, validator })
    }

    /// The schema as JSON.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Every violation of `instance`, in the documented wording, with `root` naming the root
    /// (`arguments` for parameters, `value` for outputs).
    pub fn violations(&self, instance: &Value, root: &str) -> Vec<String> {
        let mut out = Vec::new();
        for err in self.validator.iter_errors(instance) {
            describe(&err, instance, root, &mut out);
        }
        out
    }
}

/// Violations of tool arguments against an input schema, in the documented wording (root
/// `arguments`, top-level keys bare).
pub fn argument_violations(schema: &CompiledSchema, args: &Value) -> Vec<String> {
    schema.violations(args, "arguments")
}

fn pointer_to_path(pointer: &str) -> String {
    if pointer.is_empty() { String::new() } else { format!("#{pointer}") }
}

/// Finds the first `$ref` that does not point inside the schema itself.
fn find_external_ref(schema: &Value) -> Option<(String, String)> {
    let mut stack = vec![(String::new(), schema)];
    while let Some((path, node)) = stack.pop() {
        match node {
            Value::Object(map) => {
                for (key, child) in map {
                    if (key == "$ref" || key == "$dynamicRef")
                        && let Some(reference) = child.as_str()
                        && !reference.starts_with('#')
                    {
                        return Some((format!("{path}/{key}"), reference.to_owned()));
                    }
                    stack.push((format!("{path}/{key}"), child));
                }
            }
            Value::Array(items) => {
                for (idx, child) in items.iter().enumerate() {
                    stack.push((format!("{path}/{idx}"), child));
                }
            }
            _ => {}
        }
    }
    None
}

/// Renders an instance location: top-level keys bare, nested `a.b[0].c`, the empty root as `root`.
fn instance_label(err: &ValidationError<'_>, root: &str, extra: Option<&str>) -> String {
    let mut out = String::new();
    let push_key = |out: &mut String, key: &str| {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
    };
    for segment in err.instance_path().iter() {
        match segment {
            LocationSegment::Property(key) => push_key(&mut out, &key),
            LocationSegment::Index(idx) => out.push_str(&format!("[{idx}]")),
        }
    }
    if let Some(extra) = extra {
        push_key(&mut out, extra);
    }
    if out.is_empty() { root.to_owned() } else { out }
}

fn article(kind: &str) -> &'static str {
    match kind {
        "object" => "an object",
        "array" => "an array",
        "string" => "a string",
        "number" => "a number",
        "integer" => "an integer",
        "boolean" => "a boolean",
        "null" => "null",
        _ => "a valid value",
    }
}

fn describe(err: &ValidationError<'_>, instance: &Value, root: &str, out: &mut Vec<String>) {
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let key = property.as_str().map(str::to_owned).unwrap_or_else(|| property.to_string());
            out.push(format!(
                "missing required property \"{}\"",
                instance_label(err, root, Some(&key))
            ));
        }
        ValidationErrorKind::Type { kind } => {
            let label = instance_label(err, root, None);
            let wanted: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![t.as_str()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
            };
            let primary = wanted.iter().find(|t| **t != "null").copied().unwrap_or("null");
            let is_non_finite_number =
                primary == "number" && instance_at(err, instance).is_some_and(Value::is_number);
            if is_non_finite_number {
                out.push(format!("\"{label}\" must be a finite JSON number"));
            } else {
                out.push(format!("\"{label}\" must be {}", article(primary)));
            }
        }
        ValidationErrorKind::Enum { options } => {
            out.push(format!(
                "\"{}\" must be one of {}",
                instance_label(err, root, None),
                compact(options)
            ));
        }
        ValidationErrorKind::Constant { expected_value } => {
            out.push(format!(
                "\"{}\" must be {}",
                instance_label(err, root, None),
                compact(expected_value)
            ));
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for key in unexpected {
                out.push(format!(
                    "\"{}\" is not a declared property (additionalProperties: false)",
                    instance_label(err, root, Some(key))
                ));
            }
        }
        ValidationErrorKind::OneOfNotValid { .. } => {
            out.push(format!(
                "\"{}\" must match exactly one oneOf branch (matched 0)",
                instance_label(err, root, None)
            ));
        }
        ValidationErrorKind::OneOfMultipleValid { context } => {
            out.push(format!(
                "\"{}\" must match exactly one oneOf branch (matched {})",
                instance_label(err, root, None),
                context.len().max(2)
            ));
        }
        _ => {
            out.push(format!("\"{}\" {}", instance_label(err, root, None), err));
        }
    }
}

fn instance_at<'v>(err: &ValidationError<'_>, instance: &'v Value) -> Option<&'v Value> {
    let mut node = instance;
    for segment in err.instance_path().iter() {
        node = match segment {
            LocationSegment::Property(key) => node.get(key.as_ref())?,
            LocationSegment::Index(idx) => node.get(idx)?,
        };
    }
    Some(node)
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> CompiledSchema {
        CompiledSchema::compile(
            "t",
            "inputSchema",
            json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "offset": {"type": "number"},
                    "todos": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"status": {"enum": ["pending", "in_progress", "completed"]}},
                        "additionalProperties": false
                    }}
                },
                "required": ["file_path"]
            }),
        )
        .unwrap()
    }

    #[test]
    fn documented_wording_for_arguments() {
        let s = schema();
        assert_eq!(
            argument_violations(&s, &json!({})),
            vec!["missing required property \"file_path\""]
        );
        assert_eq!(
            argument_violations(&s, &json!({"file_path": "a", "offset": "x"})),
            vec!["\"offset\" must be a number"]
        );
        assert_eq!(argument_violations(&s, &json!("raw")), vec!["\"arguments\" must be an object"]);
        assert_eq!(
            argument_violations(
                &s,
                &json!({"file_path": "a", "todos": [{"status": "done", "x": 1}]})
            ),
            {
                let mut v = vec![
                    "\"todos[0].status\" must be one of [\"pending\",\"in_progress\",\"completed\"]".to_owned(),
                    "\"todos[0].x\" is not a declared property (additionalProperties: false)".to_owned(),
                ];
                let got = argument_violations(
                    &s,
                    &json!({"file_path": "a", "todos": [{"status": "done", "x": 1}]}),
                );
                if got.first() != v.first() {
                    v.reverse();
                }
                v
            }
        );
    }

    #[test]
    fn external_ref_is_unsupported() {
        let err = CompiledSchema::compile(
            "t",
            "outputSchema",
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}}),
        )
        .unwrap_err();
        assert_eq!(err.code(), "UNSUPPORTED_SCHEMA");
        assert!(err.to_string().contains("outputSchema/properties/a/$ref"), "{err}");
    }

    #[test]
    fn schema_that_does_not_compile_is_unsupported() {
        let err =
            CompiledSchema::compile("t", "outputSchema", json!({"type": "nonsense"})).unwrap_err();
        assert_eq!(err.code(), "UNSUPPORTED_SCHEMA");
    }
}
