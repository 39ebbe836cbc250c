//! `skill`: loads a skill's instructions — a folder with a `SKILL.md` whose front matter names
//! and describes it — into the conversation, wrapped in a `<skill_content>` envelope that says
//! where its resources are. Also the pure part of discovery the host shares: reading a
//! `SKILL.md`'s front matter and the name rule.

use crate::SESSION_ONLY;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{ResourceBase, SkillsHandle, Tool, ToolContext, ToolError};

/// Whether `name` is a skill name: lowercase letters and digits in dash-separated words.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|word| {
            !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// A `SKILL.md` split into its front matter fields and its instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillFile {
    pub name: Option<String>,
    pub description: Option<String>,
    /// `disable-model-invocation: true` in the front matter.
    pub disable_model_invocation: bool,
    /// The text after the front matter.
    pub body: String,
}

/// Reads the YAML front matter between the leading `---` lines: `key: value` pairs (quoted or
/// not), and `>`/`|` blocks of indented lines. Anything else in it is ignored; a file without
/// front matter is all body.
pub fn parse_skill_file(text: &str) -> SkillFile {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return SkillFile { body: text.to_owned(), ..SkillFile::default() };
    }
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut consumed = first.len();
    let mut closed = false;
    let mut block: Option<(String, bool, Vec<String>)> = None;
    for line in lines.by_ref() {
        consumed += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            closed = true;
            break;
        }
        if let Some((_, _, parts)) = block.as_mut()
            && (line.starts_with([' ', '\t']) || trimmed.is_empty())
        {
            parts.push(trimmed.trim().to_owned());
            continue;
        }
        if let Some((key, folded, parts)) = block.take() {
            fields.push((key, join_block(&parts, folded)));
        }
        let Some((key, value)) = trimmed.split_once(':') else { continue };
        if key.starts_with([' ', '\t', '#']) {
            continue;
        }
        let value = value.trim();
        match value {
            ">" | ">-" | "|" | "|-" => {
                block = Some((key.trim().to_owned(), value.starts_with('>'), Vec::new()));
            }
            _ => fields.push((key.trim().to_owned(), unquote(value))),
        }
    }
    if let Some((key, folded, parts)) = block.take() {
        fields.push((key, join_block(&parts, folded)));
    }
    if !closed {
        return SkillFile { body: text.to_owned(), ..SkillFile::default() };
    }
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    SkillFile {
        name: field("name").filter(|n| !n.is_empty()),
        description: field("description").filter(|d| !d.is_empty()),
        disable_model_invocation: field("disable-model-invocation").as_deref() == Some("true"),
        body: text[consumed..].trim_start_matches(['\n', '\r']).to_owned(),
    }
}

fn join_block(parts: &[String], folded: bool) -> String {
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let joined = if folded { parts.join(" ") } else { parts.join("\n") };
    joined.trim().to_owned()
}

fn unquote(value: &str) -> String {
    let value = value.trim();
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            let inner = &value[1..value.len() - 1];
            return if quote == '"' {
                inner.replace("\\\"", "\"")
            } else {
                inner.replace("''", "'")
            };
        }
    }
    value.to_owned()
}

fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

fn escape_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// What the envelope says about the skill's resources.
fn resource_hints(base: Option<&ResourceBase>) -> Vec<String> {
    match base {
        Some(ResourceBase::Directory { path }) => vec![
            format!("Base directory: {path}"),
            "Files the instructions mention (scripts, references, assets) are relative to the base \
             directory; read or run them from there when the instructions say so."
                .to_owned(),
        ],
        Some(ResourceBase::Url { url }) => vec![
            format!("Base URL: {url}"),
            "Resources the instructions mention are relative to the base URL.".to_owned(),
        ],
        Some(ResourceBase::Opaque { description }) => vec![description.clone()],
        None => vec!["This skill has no resources besides these instructions.".to_owned()],
    }
}

/// A skill's `<skill_content>` envelope: the name as an attribute, where its resources are, and
/// its instructions (what the `skill` tool returns, and `toolhost mcp`'s prompt of the skill).
pub fn envelope(name: &str, resource_base: Option<&ResourceBase>, content: &str) -> String {
    let hints: Vec<String> = resource_hints(resource_base).iter().map(|l| escape_text(l)).collect();
    format!(
        "<skill_content name=\"{}\">\n<skill_resources>\n{}\n</skill_resources>\n\n\
         <skill_instructions>\n{}\n</skill_instructions>\n</skill_content>",
        escape_attribute(name),
        hints.join("\n"),
        escape_text(content.trim_end()),
    )
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The skill's name, as the catalog lists it.
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillOutput {
    pub name: String,
    /// Where the skill was found (`workspace`, `user`).
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_base: Option<ResourceBase>,
    /// The instructions.
    pub content: String,
}

pub struct SkillTool;

impl Tool for SkillTool {
    type Args = SkillArgs;
    type Output = SkillOutput;

    fn name(&self) -> &str {
        "skill"
    }

    fn description(&self) -> String {
        "Load a skill: instructions (and bundled resources) for a specific kind of task, by name. \
         Load one when the task matches its description, then follow its instructions."
            .to_owned()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { idempotent: true, ..SESSION_ONLY }
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("");
        CallPresentation::new(CardKind::Generic, format!("Skill {name}"))
    }

    async fn call(&self, args: SkillArgs, cx: ToolContext) -> Result<SkillOutput, ToolError> {
        if !valid_name(&args.name) {
            return Err(ToolError::plain(format!("invalid skill name \"{}\"", args.name)));
        }
        let unknown = || {
            ToolError::plain(format!("skill \"{}\" is unknown or no longer available", args.name))
        };
        let catalog = cx.capability::<SkillsHandle>().ok_or_else(unknown)?;
        let skill = catalog.load(&args.name).map_err(ToolError::plain)?.ok_or_else(unknown)?;
        if !skill.entry.model_invocable {
            return Err(ToolError::plain(format!(
                "skill \"{}\" is not available for model invocation",
                args.name
            )));
        }
        Ok(SkillOutput {
            name: skill.entry.name,
            provider: skill.entry.provider,
            resource_base: skill.resource_base,
            content: skill.content,
        })
    }

    fn render(&self, _args: &SkillArgs, output: &SkillOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(envelope(
            &output.name,
            output.resource_base.as_ref(),
            &output.content,
        ))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dash_separated_lowercase_words() {
        for good in ["pdf", "fix-ci", "a1-b2-c3"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "Pdf", "a_b", "a b", "ä"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn front_matter_fields_and_body() {
        let file = parse_skill_file(
            "---\nname: release-notes\ndescription: \"Write \\\"notes\\\": short\"\n\
             disable-model-invocation: true\nmetadata:\n  owner: me\n---\n\n# Steps\n1. go\n",
        );
        assert_eq!(file.name.as_deref(), Some("release-notes"));
        assert_eq!(file.description.as_deref(), Some("Write \"notes\": short"));
        assert!(file.disable_model_invocation);
        assert_eq!(file.body, "# Steps\n1. go\n");
    }

    #[test]
    fn folded_descriptions_and_missing_front_matter() {
        let file = parse_skill_file("---\nname: a\ndescription: >\n  one\n  two\n---\nbody");
        assert_eq!(file.description.as_deref(), Some("one two"));
        let plain = parse_skill_file("# Just text\n");
        assert_eq!(plain.name, None);
        assert_eq!(plain.body, "# Just text\n");
        let unclosed = parse_skill_file("---\nname: a\n");
        assert_eq!(unclosed.name, None);
    }

    #[test]
    fn the_envelope_escapes_its_parts() {
        let output = SkillOutput {
            name: "a\"<&".to_owned(),
            provider: "workspace".to_owned(),
            resource_base: Some(ResourceBase::Directory { path: "/w/.claude/skills/a".to_owned() }),
            content: "Use <b> & </skill_instructions>\n".to_owned(),
        };
        let args = SkillArgs { name: "a".to_owned() };
        let rendered = SkillTool.render(&args, &output);
        let [ContentBlock::Text { text, .. }] = rendered.as_slice() else {
            panic!("one text block")
        };
        assert_eq!(
            text,
            "<skill_content name=\"a&quot;&lt;&amp;\">\n<skill_resources>\nBase directory: \
             /w/.claude/skills/a\nFiles the instructions mention (scripts, references, assets) \
             are relative to the base directory; read or run them from there when the \
             instructions say so.\n</skill_resources>\n\n<skill_instructions>\nUse &lt;b&gt; \
             &amp; &lt;/skill_instructions&gt;\n</skill_instructions>\n</skill_content>"
        );
    }
}
