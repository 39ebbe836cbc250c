//! A bridged server's form elicitation (`elicitation/create`) as questions on toolhost's one
//! question channel (the editor's form or picker, or the MCP client that made the call), and the
//! answers back as the form's typed content.
//!
//! Each property of the requested schema becomes one question: an `enum` (with `enumNames`), a
//! `oneOf` of `const`s or a boolean becomes options; an array of such becomes a multi-select;
//! strings and numbers are answered with free text. The server's message leads the first
//! question. An optional field left empty is omitted; a default fills an empty answer.

use serde_json::{Map, Value};
use toolhost_protocol::lsp_ext::{Answer, Question, QuestionOption};

/// One form field and how its answer becomes JSON.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    name: String,
    kind: FieldKind,
    required: bool,
    default: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    /// Option labels and the values they stand for.
    Choice(Vec<(String, Value)>),
    Choices(Vec<(String, Value)>),
}

const YES: &str = "Yes";
const NO: &str = "No";

/// The questions for a form, and the fields to read the answers with.
pub(crate) fn questions(message: &str, schema: &Value) -> (Vec<Question>, Vec<Field>) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut questions = Vec::new();
    let mut fields = Vec::new();
    for (name, property) in properties {
        let kind = field_kind(property);
        let label = property.get("title").and_then(Value::as_str).unwrap_or(name).to_owned();
        let mut text = label.clone();
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            text = format!("{text}: {description}");
        }
        let is_required = required.contains(&name.as_str());
        let default = property.get("default").cloned();
        match (&default, is_required) {
            (Some(default), _) => text.push_str(&format!(" (default: {})", plain(default))),
            (None, false) => text.push_str(" (optional)"),
            (None, true) => {}
        }
        if questions.is_empty() && !message.trim().is_empty() {
            text = format!("{}\n\n{text}", message.trim());
        }
        let (options, multi_select) = match &kind {
            FieldKind::Boolean => (vec![option(YES), option(NO)], false),
            FieldKind::Choice(choices) => (choices.iter().map(|(l, _)| option(l)).collect(), false),
            FieldKind::Choices(choices) => (choices.iter().map(|(l, _)| option(l)).collect(), true),
            _ => (Vec::new(), false),
        };
        questions.push(Question {
            id: name.clone(),
            question: text,
            header: Some(label),
            options,
            multi_select,
        });
        fields.push(Field { name: name.clone(), kind, required: is_required, default });
    }
    (questions, fields)
}

fn option(label: &str) -> QuestionOption {
    QuestionOption { label: label.to_owned(), description: None }
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn field_kind(property: &Value) -> FieldKind {
    if let Some(choices) = choices_of(property) {
        return FieldKind::Choice(choices);
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => FieldKind::Boolean,
        Some("number") => FieldKind::Number,
        Some("integer") => FieldKind::Integer,
        Some("array") => match property.get("items").and_then(choices_of) {
            Some(choices) => FieldKind::Choices(choices),
            None => FieldKind::Text,
        },
        _ => FieldKind::Text,
    }
}

/// `enum` (labels from `enumNames` when given) or `oneOf`/`anyOf` of `{const, title}`.
fn choices_of(schema: &Value) -> Option<Vec<(String, Value)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| plain(v), str::to_owned);
                    (label, v.clone())
                })
                .collect(),
        );
    }
    let list = schema.get("oneOf").or_else(|| schema.get("anyOf"))?.as_array()?;
    list.iter()
        .map(|entry| {
            let value = entry.get("const")?.clone();
            let label = entry
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| plain(&value), str::to_owned);
            Some((label, value))
        })
        .collect()
}

/// The form's content from the answers, or why an answer does not fit its field.
pub(crate) fn content(fields: &[Field], answers: &[Answer]) -> Result<Map<String, Value>, String> {
    let mut content = Map::new();
    for field in fields {
        let answer = answers.iter().find(|a| a.id == field.name);
        let selected: Vec<&str> =
            answer.map(|a| a.selected.iter().map(String::as_str).collect()).unwrap_or_default();
        let custom =
            answer.and_then(|a| a.custom.as_deref()).map(str::trim).filter(|c| !c.is_empty());
        let value = match &field.kind {
            FieldKind::Text => custom.map(|c| Value::String(c.to_owned())),
            FieldKind::Number => custom
                .map(|c| {
                    c.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                        .ok_or_else(|| format!("{}: \"{c}\" is not a number", field.name))
                })
                .transpose()?,
            FieldKind::Integer => custom
                .map(|c| {
                    c.parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| format!("{}: \"{c}\" is not an integer", field.name))
                })
                .transpose()?,
            FieldKind::Boolean => match (selected.first(), custom) {
                (Some(&YES), _) => Some(Value::Bool(true)),
                (Some(&NO), _) => Some(Value::Bool(false)),
                (_, Some(c)) => Some(Value::Bool(matches!(
                    c.to_ascii_lowercase().as_str(),
                    "y" | "yes" | "true" | "1"
                ))),
                _ => None,
            },
            FieldKind::Choice(choices) => match selected.first() {
                Some(label) => Some(pick(&field.name, choices, label)?),
                None => custom.map(|c| pick(&field.name, choices, c)).transpose()?,
            },
            FieldKind::Choices(choices) => {
                if selected.is_empty() && custom.is_none() {
                    None
                } else {
                    let picked: Result<Vec<Value>, String> =
                        selected.iter().map(|label| pick(&field.name, choices, label)).collect();
                    Some(Value::Array(picked?))
                }
            }
        };
        match value.or_else(|| field.default.clone()) {
            Some(value) => {
                content.insert(field.name.clone(), value);
            }
            None if field.required => return Err(format!("{} needs an answer", field.name)),
            None => {}
        }
    }
    Ok(content)
}

fn pick(field: &str, choices: &[(String, Value)], label: &str) -> Result<Value, String> {
    choices
        .iter()
        .find(|(l, v)| l == label || plain(v) == label)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| format!("{field}: \"{label}\" is not one of the choices"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(id: &str, selected: &[&str], custom: Option<&str>) -> Answer {
        Answer {
            id: id.to_owned(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            custom: custom.map(str::to_owned),
        }
    }

    #[test]
    fn a_form_becomes_questions_and_the_answers_its_typed_content() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "description": "Who you are"},
                "age": {"type": "integer"},
                "ok": {"type": "boolean", "default": true},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
                "ratio": {"type": "number"}
            },
            "required": ["name", "age", "color"]
        });
        let (questions, fields) = questions("Tell me about you", &schema);
        let by_id = |id: &str| questions.iter().find(|q| q.id == id).unwrap();
        assert!(questions[0].question.starts_with("Tell me about you\n\n"), "{questions:?}");
        assert_eq!(questions.iter().filter(|q| q.question.contains("Tell me")).count(), 1);
        assert_eq!(by_id("name").header.as_deref(), Some("Name"));
        assert!(by_id("name").question.ends_with("Name: Who you are"));
        assert!(by_id("ok").question.ends_with("ok (default: true)"));
        assert!(by_id("ratio").question.ends_with("ratio (optional)"));
        let labels =
            |id: &str| by_id(id).options.iter().map(|o| o.label.clone()).collect::<Vec<_>>();
        assert_eq!(labels("color"), ["Red", "Green"]);
        assert_eq!(labels("size"), ["Small", "Large"]);
        assert_eq!(labels("ok"), ["Yes", "No"]);
        assert!(by_id("tags").multi_select && !by_id("color").multi_select);
        assert!(by_id("name").options.is_empty());

        let answers = [
            answer("name", &[], Some(" Ada ")),
            answer("age", &[], Some("36")),
            answer("color", &["Green"], None),
            answer("size", &["Large"], None),
            answer("tags", &["a", "c"], None),
            answer("ratio", &[], Some("")),
        ];
        let content = content(&fields, &answers).unwrap();
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "age": 36, "ok": true, "color": "g", "size": "l", "tags": ["a", "c"]})
        );
    }

    #[test]
    fn answers_that_do_not_fit_are_refused_with_the_field() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "c": {"enum": ["x"]}}, "required": ["n"]});
        let (_, fields) = questions("", &schema);
        assert_eq!(
            content(&fields, &[answer("n", &[], Some("many"))]),
            Err("n: \"many\" is not an integer".to_owned())
        );
        assert_eq!(content(&fields, &[]), Err("n needs an answer".to_owned()));
        assert_eq!(
            content(&fields, &[answer("n", &[], Some("2")), answer("c", &[], Some("y"))]),
            Err("c: \"y\" is not one of the choices".to_owned())
        );
    }
}
