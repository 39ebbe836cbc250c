//! The Native text of a run: the logs, then the result — a string as is, anything else as
//! `JSON.stringify(v, null, 2)` would print it, except that containers five levels down print
//! compact (so deep values cost no indentation), and numbers as JavaScript's `String(n)`.

use serde_json::{Number, Value};

/// What a run with neither logs nor a result shows.
pub const NO_OUTPUT: &str = "(run_code completed with no output)";

/// Containers at this depth (the root is 0) and deeper print compact.
const COMPACT_DEPTH: usize = 5;

/// The text of a run's logs and result.
pub fn render_text(logs: &[String], result: Option<&Value>) -> String {
    let mut parts = Vec::with_capacity(2);
    let logs = logs.join("\n");
    if !logs.is_empty() {
        parts.push(logs);
    }
    if let Some(result) = result {
        let rendered = render_result(result);
        if !rendered.is_empty() {
            parts.push(rendered);
        }
    }
    if parts.is_empty() { NO_OUTPUT.to_owned() } else { parts.join("\n") }
}

/// A result: a string raw, anything else pretty JSON.
pub fn render_result(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            write_pretty(other, 0, &mut out);
            out
        }
    }
}

/// `value` as `JSON.stringify(value)` prints it (numbers JavaScript's way).
pub fn compact_json(value: &Value) -> String {
    let mut out = String::new();
    write_compact(value, &mut out);
    out
}

/// A number as JavaScript's `String(n)`: `1e+21`, `0.30000000000000004`, `5` (not `5.0`), and
/// `-0` as `0`. Integers beyond 2^53 print as the double JavaScript would hold.
pub fn js_number(n: &Number) -> String {
    const SAFE: u64 = 1 << 53;
    if let Some(u) = n.as_u64().filter(|u| *u <= SAFE) {
        return u.to_string();
    }
    if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= SAFE) {
        return i.to_string();
    }
    js_f64(n.as_f64().unwrap_or(f64::NAN))
}

/// A double as JavaScript's `String(n)`.
pub fn js_f64(f: f64) -> String {
    if f == 0.0 {
        // Both zeros print `0` (`String(-0)` is "0").
        return "0".to_owned();
    }
    ryu_js::Buffer::new().format(f).to_owned()
}

fn write_scalar(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => write_string(s, out),
        Value::Array(_) | Value::Object(_) => write_compact(value, out),
    }
}

fn write_string(s: &str, out: &mut String) {
    // serde_json escapes exactly as JSON.stringify does (control characters, `"` and `\`).
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

fn write_compact(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_compact(item, out);
            }
            out.push('}');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn indent(depth: usize, out: &mut String) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_pretty(value: &Value, depth: usize, out: &mut String) {
    let empty = match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => return write_scalar(value, out),
    };
    if empty || depth >= COMPACT_DEPTH {
        return write_compact(value, out);
    }
    match value {
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(depth + 1, out);
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            indent(depth, out);
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(depth + 1, out);
                write_string(key, out);
                out.push_str(": ");
                write_pretty(item, depth + 1, out);
            }
            out.push('\n');
            indent(depth, out);
            out.push('}');
        }
        _ => write_scalar(value, out),
    }
}
