//! A call's arguments as the host takes them: screened before the call is presented, recorded
//! in the session log and dispatched, so what a caller adds beyond the tool's input schema, or
//! piles into one call, never reaches the log in bulk (docs/tools.md, "Arguments").
//!
//! - **Undeclared properties** (names the schema's `properties` do not list), by the schema's
//!   `additionalProperties`:
//!   - `false`: the call fails `INVALID_ARGS` (the tool's own check, naming the property). It is
//!     still recorded and carded as that failure, but the property's value is kept only when
//!     small ([`KEPT_UNDECLARED_BYTES`] of JSON; a larger one becomes a note of its size) and a
//!     name longer than [`KEPT_NAME_BYTES`] is shortened — at any depth the schema refuses them.
//!   - not said: the property is dropped (top level) before anything sees the call; a tool
//!     whose schema says nothing about other properties does not read them (the built-in
//!     tools' arguments ignore unknown names).
//!   - `true` or a schema (or `patternProperties`): kept as sent.
//! - **Size.** Strings over the session's `LARGE_STRING_BYTES` go to the blob store; what is left
//!   in the line (names, numbers, small strings) may hold at most [`MAX_INLINE_ARGUMENT_BYTES`].
//!   Arguments over it are replaced by `{"toolhost/arguments_too_large": "<why>"}` — the record
//!   keeps that, and the tool refuses it `INVALID_ARGS`. A tool whose schema would accept that
//!   object keeps its arguments as sent (the record is then as large as the call).

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use toolhost_registry::Registry;
use toolhost_session::LARGE_STRING_BYTES;

/// An undeclared property's value is recorded as sent up to this many bytes of JSON.
pub const KEPT_UNDECLARED_BYTES: usize = 256;
/// An undeclared property's name longer than this (bytes) is shortened.
pub const KEPT_NAME_BYTES: usize = 256;
/// The bytes a call's arguments may hold in its `tool/call` line, strings kept apart excluded.
pub const MAX_INLINE_ARGUMENT_BYTES: usize = 1024 * 1024;
/// The property that stands for arguments over [`MAX_INLINE_ARGUMENT_BYTES`].
pub const TOO_LARGE: &str = "toolhost/arguments_too_large";

/// How the schema wording (tools/contract) names an undeclared property.
const UNDECLARED_SUFFIX: &str = "\" is not a declared property (additionalProperties: false)";
/// The characters a shortened name keeps.
const SHORT_NAME_CHARS: usize = 64;

/// `arguments` as the call is presented, recorded and dispatched with (see the module doc).
pub fn screen(registry: &Registry, name: &str, mut arguments: Value) -> Value {
    match extras_of(registry, name).as_deref() {
        Some(Extras::Refused) => {
            // Small arguments hold no value or name over the kept sizes: nothing to shorten.
            if json_bytes(&arguments, usize::MAX) > KEPT_UNDECLARED_BYTES.min(KEPT_NAME_BYTES) {
                let undeclared = undeclared_labels(registry, name, &arguments);
                if !undeclared.is_empty() {
                    shrink_undeclared(&mut arguments, &mut String::new(), &undeclared);
                }
            }
        }
        Some(Extras::Dropped(declared)) => {
            if let Value::Object(map) = &mut arguments
                && map.keys().any(|k| !declared.contains(k))
            {
                map.retain(|key, _| declared.contains(key));
            }
        }
        Some(Extras::Kept) | None => {}
    }
    let inline = inline_bytes(&arguments);
    if inline <= MAX_INLINE_ARGUMENT_BYTES {
        return arguments;
    }
    let mut marker = Map::new();
    marker.insert(
        TOO_LARGE.to_owned(),
        Value::String(format!(
            "the arguments hold {inline} bytes besides their long strings, over the \
             {MAX_INLINE_ARGUMENT_BYTES} bytes a call's record keeps: not recorded, not run"
        )),
    );
    let marker = Value::Object(marker);
    // Only where the tool is sure to refuse the stand-in: it must never run with it.
    match registry.argument_violations(name, &marker) {
        Some(violations) if violations.is_empty() => {
            tracing::warn!(tool = name, inline, "arguments over the record's size kept as sent");
            arguments
        }
        _ => marker,
    }
}

/// What a tool's input schema says about properties it does not declare (top level).
#[derive(Debug, PartialEq)]
enum Extras {
    /// `additionalProperties: false`.
    Refused,
    /// Not said: the declared names, the others dropped.
    Dropped(HashSet<String>),
    /// Allowed (`true`, a schema, `patternProperties`), or a schema not read here.
    Kept,
}

impl Extras {
    fn of(schema: &Value) -> Extras {
        let Some(schema) = schema.as_object() else { return Extras::Kept };
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => return Extras::Refused,
            Some(_) => return Extras::Kept,
            None => {}
        }
        // Properties this schema does not list may still be declared elsewhere.
        let elsewhere = [
            "patternProperties",
            "$ref",
            "allOf",
            "anyOf",
            "oneOf",
            "if",
            "unevaluatedProperties",
            "dependentSchemas",
        ];
        if elsewhere.iter().any(|k| schema.contains_key(*k)) {
            return Extras::Kept;
        }
        match schema.get("properties").and_then(Value::as_object) {
            Some(properties) => Extras::Dropped(properties.keys().cloned().collect()),
            None => Extras::Kept,
        }
    }
}

/// The tools' [`Extras`] for one registry at one generation: read from the schemas once per
/// change of the tool list, not per call.
struct Cached {
    changes: tokio::sync::watch::Receiver<u64>,
    generation: u64,
    tools: HashMap<String, Arc<Extras>>,
}

static CACHE: Mutex<Option<Cached>> = Mutex::new(None);

fn extras_of(registry: &Registry, name: &str) -> Option<Arc<Extras>> {
    let changes = registry.changes();
    let generation = *changes.borrow();
    let mut cache = CACHE.lock().ok()?;
    let fresh = cache
        .as_ref()
        .is_some_and(|c| c.generation == generation && c.changes.same_channel(&changes));
    if !fresh {
        let tools = registry
            .descriptors()
            .into_iter()
            .map(|d| (d.name, Arc::new(Extras::of(&d.input_schema))))
            .collect();
        *cache = Some(Cached { changes, generation, tools });
    }
    cache.as_ref()?.tools.get(name).cloned()
}

/// The labels (schema wording: `key`, `a.b`, `a[0].b`) of the undeclared properties the tool's
/// schema refuses.
fn undeclared_labels(registry: &Registry, name: &str, arguments: &Value) -> HashSet<String> {
    let Some(violations) = registry.argument_violations(name, arguments) else {
        return HashSet::new();
    };
    violations
        .into_iter()
        .filter_map(|v| Some(v.strip_prefix('"')?.strip_suffix(UNDECLARED_SUFFIX)?.to_owned()))
        .collect()
}

/// Shortens the undeclared properties named in `undeclared` under `value` (at `label`).
fn shrink_undeclared(value: &mut Value, label: &mut String, undeclared: &HashSet<String>) {
    match value {
        Value::Object(map) => {
            let had = label.len();
            let mut members: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for at in 0..members.len() {
                let (key, mut member) = std::mem::take(&mut members[at]);
                if !label.is_empty() {
                    label.push('.');
                }
                label.push_str(&key);
                if undeclared.contains(label.as_str()) {
                    let taken = |name: &str| {
                        map.contains_key(name) || members[at + 1..].iter().any(|(k, _)| k == name)
                    };
                    map.insert(short_name(&key, taken), note_of(member));
                } else {
                    shrink_undeclared(&mut member, label, undeclared);
                    map.insert(key, member);
                }
                label.truncate(had);
            }
        }
        Value::Array(items) => {
            let had = label.len();
            for (index, item) in items.iter_mut().enumerate() {
                label.push_str(&format!("[{index}]"));
                shrink_undeclared(item, label, undeclared);
                label.truncate(had);
            }
        }
        _ => {}
    }
}

/// An undeclared property's name as kept: itself when short, else its start and its length,
/// made unique among the object's other names.
fn short_name(key: &str, taken: impl Fn(&str) -> bool) -> String {
    if key.len() <= KEPT_NAME_BYTES {
        return key.to_owned();
    }
    let start: String = key.chars().take(SHORT_NAME_CHARS).collect();
    let base = format!("{start}…({} bytes)", key.len());
    let mut name = base.clone();
    let mut n = 1;
    while taken(&name) {
        n += 1;
        name = format!("{base} #{n}");
    }
    name
}

/// An undeclared property's value as kept: itself when small, else a note of its size.
fn note_of(value: Value) -> Value {
    let bytes = json_bytes(&value, usize::MAX);
    if bytes <= KEPT_UNDECLARED_BYTES {
        return value;
    }
    Value::String(format!(
        "(not kept: {bytes} bytes of JSON for a property the tool does not declare)"
    ))
}

/// The bytes `value` takes in a record's line: its JSON, with strings over
/// [`LARGE_STRING_BYTES`] (kept apart in the blob store) counted as `""`.
pub fn inline_bytes(value: &Value) -> usize {
    json_bytes(value, LARGE_STRING_BYTES)
}

/// `value`'s JSON length (escapes not counted), strings longer than `apart` counted as `""`.
fn json_bytes(value: &Value, apart: usize) -> usize {
    let string = |s: &str| if s.len() > apart { 2 } else { s.len() + 2 };
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        total = total.saturating_add(match node {
            Value::Null => 4,
            Value::Bool(b) => {
                if *b {
                    4
                } else {
                    5
                }
            }
            Value::Number(n) => n.to_string().len(),
            Value::String(s) => string(s),
            Value::Array(items) => {
                stack.extend(items.iter());
                items.len().max(1) + 1
            }
            Value::Object(map) => {
                stack.extend(map.values());
                // Each member's quoted name and colon, the commas and the braces.
                map.keys().map(|k| k.len() + 3).sum::<usize>() + map.len().max(1) + 1
            }
        });
    }
    total
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use toolhost_contract::RawTool;
    use toolhost_registry::RegistryConfig;

    /// A registry with a `strict`, a `silent` and an `open` tool, and what keeps them registered.
    fn tools() -> (Registry, Vec<toolhost_contract::Disposer>) {
        let registry = Registry::new(RegistryConfig::default());
        let mut kept = Vec::new();
        let strict = json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "todos": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"status": {"type": "string"}},
                    "additionalProperties": false
                }}
            },
            "required": ["file_path"],
            "additionalProperties": false
        });
        let silent = json!({"type": "object", "properties": {"seconds": {"type": "number"}}});
        let open = json!({
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
            "additionalProperties": true
        });
        for (name, schema) in [("strict", strict), ("silent", silent), ("open", open)] {
            let disposer = registry
                .register_raw(
                    RawTool::new(name)
                        .with_input_schema(schema)
                        .with_output_schema(json!({"type": "object"}))
                        .with_render(|_args, _value| Vec::new())
                        .with_execute(|_args, _cx| async move { Ok(json!({})) }),
                )
                .unwrap();
            kept.push(disposer);
        }
        (registry, kept)
    }

    #[test]
    fn a_large_undeclared_property_is_kept_as_a_note_of_its_size() {
        let (registry, _kept) = tools();
        let bulk = "x".repeat(1 << 20);
        let screened = screen(
            &registry,
            "strict",
            json!({"file_path": "a.txt", "junk": bulk, "typo": 1, "todos": [{"status": "s", "extra": bulk}]}),
        );
        assert_eq!(screened["file_path"], "a.txt");
        assert_eq!(screened["typo"], 1, "a small undeclared value is recorded as sent");
        let note = screened["junk"].as_str().unwrap();
        assert!(note.starts_with("(not kept: 1048578 bytes"), "{note}");
        let nested = screened["todos"][0]["extra"].as_str().unwrap();
        assert!(nested.starts_with("(not kept:"), "{nested}");
        assert!(inline_bytes(&screened) < 1024, "{screened}");
        // The tool still refuses the call, naming the properties.
        let violations = registry.argument_violations("strict", &screened).unwrap();
        assert_eq!(violations.len(), 3, "{violations:?}");
    }

    #[test]
    fn a_long_undeclared_name_is_shortened_and_still_refused() {
        let (registry, _kept) = tools();
        let long = "k".repeat(1 << 20);
        let mut arguments = Map::new();
        arguments.insert("file_path".to_owned(), json!("a.txt"));
        arguments.insert(long, json!(true));
        let screened = screen(&registry, "strict", Value::Object(arguments));
        let keys: Vec<&String> = screened.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 2);
        assert!(keys[1].len() < 100 && keys[1].ends_with("(1048576 bytes)"), "{keys:?}");
        assert!(!registry.argument_violations("strict", &screened).unwrap().is_empty());
    }

    #[test]
    fn a_schema_that_allows_other_properties_keeps_them_and_one_that_does_not_say_drops_them() {
        let (registry, _kept) = tools();
        let bulk = "x".repeat(100_000);
        let arguments = json!({"seconds": 1, "pad": bulk});
        assert_eq!(screen(&registry, "open", arguments.clone()), arguments);
        let mut long = Map::new();
        long.insert("seconds".to_owned(), json!(1));
        long.insert("k".repeat(1 << 20), json!(true));
        assert_eq!(screen(&registry, "silent", arguments), json!({"seconds": 1}));
        assert_eq!(screen(&registry, "silent", Value::Object(long)), json!({"seconds": 1}));
    }

    #[test]
    fn extras_follow_additional_properties() {
        assert_eq!(Extras::of(&json!({"additionalProperties": false})), Extras::Refused);
        assert_eq!(
            Extras::of(&json!({"properties": {}, "additionalProperties": {}})),
            Extras::Kept
        );
        assert_eq!(Extras::of(&json!({"properties": {}, "patternProperties": {}})), Extras::Kept);
        assert_eq!(Extras::of(&json!(true)), Extras::Kept);
        assert_eq!(
            Extras::of(&json!({"properties": {"a": {}}})),
            Extras::Dropped(HashSet::from(["a".to_owned()]))
        );
    }

    #[test]
    fn arguments_over_the_inline_bound_become_a_refused_stand_in() {
        let (registry, _kept) = tools();
        // Many short strings stay in the line: over the bound.
        let todos: Vec<Value> =
            (0..40_000).map(|i| json!({"status": format!("s{i:030}")})).collect();
        let screened = screen(&registry, "strict", json!({"file_path": "a", "todos": todos}));
        let marker = screened[TOO_LARGE].as_str().unwrap();
        assert!(marker.contains("1048576"), "{marker}");
        assert!(!registry.argument_violations("strict", &screened).unwrap().is_empty());
        // Long strings go to the blob store: they do not count.
        let long = "y".repeat(8 << 20);
        let screened = screen(&registry, "strict", json!({"file_path": long.clone()}));
        assert_eq!(screened["file_path"], long);
        // An unknown tool fails anyway: the stand-in is what is recorded.
        let screened = screen(&registry, "nope", json!({"todos": todos}));
        assert!(screened.get(TOO_LARGE).is_some());
    }

    #[test]
    fn inline_bytes_match_the_json_length_for_plain_values() {
        let value = json!({"a": [1, true, null, "xy"], "bc": {"d": -2.5}, "e": []});
        assert_eq!(inline_bytes(&value), serde_json::to_string(&value).unwrap().len());
    }
}
