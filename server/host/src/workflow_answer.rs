//! A child's answer as a typed value: the prompt of a child given a schema asks for one JSON
//! value matching it, and the answer is read back and checked. (Parallel children each have a
//! schema of their own, so this does not use the session's one structured-output run.)

use serde_json::Value;
use toolhost_contract::CompiledSchema;

/// The schema compiled, or why it cannot be used (fatal to the run).
pub fn compile(schema: &Value) -> Result<CompiledSchema, String> {
    if !schema.is_object() {
        return Err("an agent schema must be a JSON Schema object".to_owned());
    }
    CompiledSchema::compile("workflow", "agent schema", schema.clone())
        .map_err(|e| format!("the agent schema is unusable: {e}"))
}

/// The prompt a child given `schema` sees: the task, then how to answer.
pub fn prompt_with_schema(prompt: &str, schema: &Value) -> String {
    let pretty = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    format!(
        "{prompt}\n\nWhen you are done, answer with one JSON value and nothing else (no prose, \
         no code fence) that matches this JSON Schema:\n{pretty}"
    )
}

/// The JSON value an answer holds: all of it, a fenced block in it, or its outermost braces.
fn json_in(answer: &str) -> Option<Value> {
    let trimmed = answer.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    if let Some(start) = trimmed.find("```") {
        let rest = &trimmed[start + 3..];
        let body = rest.split_once('\n').map_or(rest, |(_, b)| b);
        if let Some(end) = body.find("```")
            && let Ok(value) = serde_json::from_str(body[..end].trim())
        {
            return Some(value);
        }
    }
    let (open, close) = (trimmed.find('{')?, trimmed.rfind('}')?);
    (open < close).then(|| serde_json::from_str(&trimmed[open..=close]).ok()).flatten()
}

/// The answer's value when it matches `schema`, else why not.
pub fn typed(answer: &str, schema: &CompiledSchema) -> Result<Value, String> {
    let value = json_in(answer).ok_or_else(|| "the answer holds no JSON value".to_owned())?;
    let violations = schema.violations(&value, "value");
    if violations.is_empty() { Ok(value) } else { Err(violations.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_fenced_or_bare_answer_is_read_and_checked() {
        let schema = compile(
            &json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}}),
        )
        .unwrap();
        assert_eq!(typed("{\"n\": 1}", &schema).unwrap(), json!({"n": 1}));
        assert_eq!(typed("Here:\n```json\n{\"n\": 2}\n```", &schema).unwrap(), json!({"n": 2}));
        assert_eq!(typed("so {\"n\": 3} it is", &schema).unwrap(), json!({"n": 3}));
        assert!(typed("{\"n\": \"x\"}", &schema).is_err());
        assert!(typed("no json", &schema).is_err());
        assert!(compile(&json!({"type": 5})).is_err());
    }
}
