//! TypeScript declarations of the tools a program may call, generated from their input and
//! output schemas: what the model reads in `run_code`'s description, what `tools.$search`
//! returns and what `toolhost tools --typescript` prints. Byte-stable: tools in lexicographic
//! order, properties in schema order, no timestamps or counters.
//!
//! JSON Schema maps to TypeScript where it can (`type`, `properties`/`required`,
//! `additionalProperties`, `items`/`prefixItems`, `enum`, `const`, `anyOf`/`oneOf`/`allOf`, local
//! `$ref`s); anything else (`not`, `if`, remote references, recursion) is `unknown`.

use crate::render::compact_json;
use serde_json::{Map, Value};
use toolhost_contract::ExposedTool;

/// The longest tool description a declaration's doc comment keeps (its first paragraph).
const DOC_MAX_CHARS: usize = 400;

/// Declarations of `tools` and of the program's globals (`tools`, `ToolCallError`).
pub fn typescript(tools: &[ExposedTool]) -> String {
    let mut sorted: Vec<&ExposedTool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::new();
    out.push_str("type ToolArgsMap = {\n");
    for tool in &sorted {
        let args = ts_type(&tool.input_schema, &tool.input_schema, 1, &mut Vec::new());
        out.push_str(&format!("  {}: {args};\n", quoted(&tool.name)));
    }
    out.push_str("};\n");
    out.push_str("type ToolOutputMap = {\n");
    for tool in &sorted {
        out.push_str(&format!("  {}: {};\n", quoted(&tool.name), output_type(tool, 1)));
    }
    out.push_str("};\n");
    out.push_str("type ToolName = keyof ToolArgsMap;\n");
    out.push_str("declare const tools: {\n");
    for tool in &sorted {
        doc(&tool_doc(&tool.description), 1, &mut out);
        let name = quoted(&tool.name);
        out.push_str(&format!(
            "  {}(args: ToolArgsMap[{name}]): Promise<ToolOutputMap[{name}]>;\n",
            key(&tool.name)
        ));
    }
    out.push_str(SEARCH_DECLARATION);
    out.push_str("};\n");
    out.push_str(ERROR_DECLARATION);
    out
}

/// A list of the tools by name and the first line of their description: what the description
/// shows instead of every declaration when there are many tools.
pub fn catalogue(tools: &[ExposedTool]) -> String {
    let mut sorted: Vec<&ExposedTool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::new();
    for tool in sorted {
        let first = tool.description.lines().next().unwrap_or("").trim();
        out.push_str(&format!("- {}: {}\n", tool.name, cut(first, 120)));
    }
    out
}

const SEARCH_DECLARATION: &str = "  /** The tools whose name or description has the query's words, best match first, each with its declaration. */\n  \
     $search(query: string): Promise<{ name: string; description: string; declaration: string }[]>;\n";

const ERROR_DECLARATION: &str = "declare class ToolCallError extends Error {\n  \
     readonly name: \"ToolCallError\";\n  \
     /** The failure's stable code, when it has one. */\n  \
     readonly code: string | undefined;\n  \
     /** The tool that was called. */\n  \
     readonly toolName: string;\n}\n";

/// One tool's declaration, standalone (what `tools.$search` returns for it).
pub fn declaration(tool: &ExposedTool) -> String {
    let mut out = String::new();
    doc(&tool_doc(&tool.description), 0, &mut out);
    let args = ts_type(&tool.input_schema, &tool.input_schema, 0, &mut Vec::new());
    out.push_str(&format!(
        "tools{}(args: {args}): Promise<{}>;\n",
        access(&tool.name),
        output_type(tool, 0)
    ));
    out
}

/// `[{name, description, declaration}]` of `tools` in name order, as JSON (what the program's
/// `tools` object and `tools.$search` are built from).
pub fn catalog_json(tools: &[ExposedTool]) -> String {
    let mut sorted: Vec<&ExposedTool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let entries: Vec<Value> = sorted
        .into_iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "description": t.description,
                "declaration": declaration(t),
            })
        })
        .collect();
    serde_json::to_string(&entries).unwrap_or_else(|_| "[]".to_owned())
}

fn output_type(tool: &ExposedTool, depth: usize) -> String {
    match &tool.output_schema {
        Some(schema) => ts_type(schema, schema, depth, &mut Vec::new()),
        None => "unknown".to_owned(),
    }
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The first paragraph of a description, cut to a doc comment's length.
fn tool_doc(description: &str) -> String {
    let paragraph = description.trim().split("\n\n").next().unwrap_or("").trim();
    cut(paragraph, DOC_MAX_CHARS)
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

fn doc(text: &str, depth: usize, out: &mut String) {
    let text = text.trim().replace("*/", "*\\/");
    if text.is_empty() {
        return;
    }
    let pad = indent(depth);
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    if lines.len() == 1 {
        out.push_str(&format!("{pad}/** {} */\n", lines[0]));
        return;
    }
    out.push_str(&format!("{pad}/**\n"));
    for line in lines {
        if line.is_empty() {
            out.push_str(&format!("{pad} *\n"));
        } else {
            out.push_str(&format!("{pad} * {line}\n"));
        }
    }
    out.push_str(&format!("{pad} */\n"));
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn quoted(name: &str) -> String {
    serde_json::to_string(name).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A property or method name: bare when it is an identifier, else a string literal.
fn key(name: &str) -> String {
    if is_identifier(name) { name.to_owned() } else { quoted(name) }
}

fn access(name: &str) -> String {
    if is_identifier(name) { format!(".{name}") } else { format!("[{}]", quoted(name)) }
}

/// The schema `#/$defs/X` (or `#/definitions/X`) points at in `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    let mut node = root;
    for part in path.split('/') {
        let part = part.replace("~1", "/").replace("~0", "~");
        node = node.get(part.as_str())?;
    }
    Some(node)
}

fn union(mut members: Vec<String>) -> String {
    let mut seen = Vec::new();
    members.retain(|m| {
        let fresh = !seen.contains(m);
        seen.push(m.clone());
        fresh
    });
    if members.iter().any(|m| m == "unknown") {
        return "unknown".to_owned();
    }
    match members.len() {
        0 => "never".to_owned(),
        1 => members.remove(0),
        _ => members.join(" | "),
    }
}

/// Wraps a union or intersection for use as an array element.
fn element(t: String) -> String {
    if t.contains(" | ") || t.contains(" & ") { format!("({t})") } else { t }
}

/// The TypeScript type of `schema`; nested object types are laid out at `depth`.
fn ts_type(schema: &Value, root: &Value, depth: usize, refs: &mut Vec<String>) -> String {
    let obj = match schema {
        Value::Bool(true) => return "unknown".to_owned(),
        Value::Bool(false) => return "never".to_owned(),
        Value::Object(obj) => obj,
        _ => return "unknown".to_owned(),
    };
    if let Some(Value::String(reference)) = obj.get("$ref") {
        if refs.contains(reference) {
            return "unknown".to_owned();
        }
        let Some(target) = resolve(root, reference) else { return "unknown".to_owned() };
        refs.push(reference.clone());
        let t = ts_type(target, root, depth, refs);
        refs.pop();
        return t;
    }
    if let Some(value) = obj.get("const") {
        return compact_json(value);
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        return union(values.iter().map(compact_json).collect());
    }
    for combinator in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(combinator) {
            return union(branches.iter().map(|b| ts_type(b, root, depth, refs)).collect());
        }
    }
    if let Some(Value::Array(parts)) = obj.get("allOf") {
        let parts: Vec<String> = parts
            .iter()
            .map(|p| ts_type(p, root, depth, refs))
            .filter(|t| t != "unknown")
            .map(element)
            .collect();
        return if parts.is_empty() { "unknown".to_owned() } else { parts.join(" & ") };
    }
    match obj.get("type") {
        Some(Value::String(t)) => typed(t, obj, root, depth, refs),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| typed(t, obj, root, depth, refs))
                .collect(),
        ),
        _ if obj.contains_key("properties") => typed("object", obj, root, depth, refs),
        _ => "unknown".to_owned(),
    }
}

fn typed(
    t: &str,
    obj: &Map<String, Value>,
    root: &Value,
    depth: usize,
    refs: &mut Vec<String>,
) -> String {
    match t {
        "string" => "string".to_owned(),
        "number" | "integer" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => {
            if let Some(Value::Array(prefix)) = obj.get("prefixItems") {
                let items: Vec<String> =
                    prefix.iter().map(|p| ts_type(p, root, depth, refs)).collect();
                return format!("[{}]", items.join(", "));
            }
            match obj.get("items") {
                Some(items) => format!("{}[]", element(ts_type(items, root, depth, refs))),
                None => "unknown[]".to_owned(),
            }
        }
        "object" => object(obj, root, depth, refs),
        _ => "unknown".to_owned(),
    }
}

fn object(obj: &Map<String, Value>, root: &Value, depth: usize, refs: &mut Vec<String>) -> String {
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = obj.get("properties").and_then(Value::as_object);
    let extra = match obj.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(schema @ Value::Object(_)) => Some(ts_type(schema, root, depth + 1, refs)),
        // Absent or `true`: any further key. Said only when no property is declared (a
        // declared shape with an open tail reads better without the index signature).
        _ if properties.is_none_or(Map::is_empty) => Some("unknown".to_owned()),
        _ => None,
    };
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        return match extra {
            Some(t) => format!("{{ [key: string]: {t} }}"),
            None => "{}".to_owned(),
        };
    };
    let pad = indent(depth + 1);
    let mut out = String::from("{\n");
    for (name, schema) in properties {
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            doc(description, depth + 1, &mut out);
        }
        let optional = if required.contains(&name.as_str()) { "" } else { "?" };
        let t = ts_type(schema, root, depth + 1, refs);
        out.push_str(&format!("{pad}{}{optional}: {t};\n", key(name)));
    }
    if let Some(t) = extra {
        out.push_str(&format!("{pad}[key: string]: {t};\n"));
    }
    out.push_str(&indent(depth));
    out.push('}');
    out
}
