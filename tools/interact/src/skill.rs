//! `skill`: loads a skill's instructions — a folder with a `SKILL.md`, or a flat `<file>.md`,
//! whose front matter names and describes it — into the conversation, wrapped in a
//! `<skill_content>` envelope that says where its resources are. Also the pure part of
//! discovery the host shares: the front matter rules, the name rule and the catalog line.

use crate::{SESSION_ONLY, js_trim};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{ResourceBase, SkillsHandle, Tool, ToolContext, ToolError};

use crate::front_matter::{self, Node};

/// Whether `name` is a skill name: lowercase letters and digits in dash-separated words.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|word| {
            !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// A skill file that discovery keeps: its front matter's name and description, who may invoke
/// it, and its instructions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    pub name: String,
    pub description: String,
    /// `false` when the front matter says `disable-model-invocation: true`.
    pub model_invocable: bool,
    /// `false` when the front matter says `user-invocable: false`.
    pub user_invocable: bool,
    /// The text after the front matter, trimmed.
    pub body: String,
}

/// Invocation fields of an older spelling: a file using one is skipped rather than read
/// with a meaning its author did not intend.
const LEGACY_FIELDS: [&str; 3] = ["disableModelInvocation", "modelInvocable", "userInvocable"];

/// Reads a skill file, or says why discovery skips it: front matter is required (a first line
/// `---`, closed by a later `---` line, holding a YAML mapping) with a non-empty string `name`
/// that is a skill name and a non-empty string `description`; the invocation fields, when
/// present, must be booleans (also `1`/`0`, `"1"`/`"0"`, and `yes`/`no`/`on`/`off`/`true`/
/// `false` in any case).
pub fn parse_skill_file(text: &str) -> Result<SkillFile, String> {
    let (yaml, body) = front_matter::split(text).ok_or("missing YAML front matter")?;
    let fields =
        front_matter::parse_mapping(yaml).map_err(|e| format!("invalid YAML front matter: {e}"))?;
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let string = |key: &str| match field(key) {
        Some(Node::Str(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    let (Some(name), Some(description)) = (string("name"), string("description")) else {
        return Err("front matter requires a name and a description".to_owned());
    };
    if !valid_name(&name) {
        return Err(format!("invalid skill name \"{name}\""));
    }
    if let Some(legacy) = LEGACY_FIELDS.iter().find(|k| field(k).is_some()) {
        return Err(format!(
            "`{legacy}` is no longer read: use `disable-model-invocation` or `user-invocable`"
        ));
    }
    let flag = |key: &str, absent: bool| match field(key) {
        None => Ok(absent),
        Some(node) => flag(node).ok_or_else(|| format!("`{key}` must be a boolean")),
    };
    Ok(SkillFile {
        name,
        description,
        model_invocable: !flag("disable-model-invocation", false)?,
        user_invocable: flag("user-invocable", true)?,
        body: js_trim(body).to_owned(),
    })
}

/// A front matter boolean in any of the accepted spellings.
fn flag(node: &Node) -> Option<bool> {
    match node {
        Node::Bool(b) => Some(*b),
        Node::Number(n) if *n == 1.0 => Some(true),
        Node::Number(n) if *n == 0.0 => Some(false),
        Node::Str(s) => match s.to_ascii_lowercase().as_str() {
            "1" | "yes" | "on" | "true" => Some(true),
            "0" | "no" | "off" | "false" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// The catalog line of a skill the model may load: `` - `<name>`: <description> ``, the
/// description's whitespace collapsed, cut to 500 characters (497 and `...`), text-escaped.
pub fn catalog_line(name: &str, description: &str) -> String {
    let collapsed = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let units: Vec<u16> = collapsed.encode_utf16().collect();
    let shown = if units.len() > 500 {
        format!("{}...", String::from_utf16_lossy(&units[..497]))
    } else {
        collapsed
    };
    format!("- `{name}`: {}", escape_text(&shown))
}

fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

fn escape_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// What the envelope says about the skill's resources, its values text-escaped.
fn resource_hints(provider: &str, base: Option<&ResourceBase>) -> [String; 2] {
    const AS_NEEDED: &str = "Load referenced resources only as needed.";
    match base {
        Some(ResourceBase::Directory { path }) => [
            format!("Base directory for this skill: {}", escape_text(path)),
            format!(
                "Resolve relative paths mentioned by this skill against the base directory \
                 before using them. {AS_NEEDED}"
            ),
        ],
        Some(ResourceBase::Url { url }) => [
            format!("Base URL for this skill: {}", escape_text(url)),
            format!(
                "Resolve relative URLs mentioned by this skill against the base URL before \
                 using them. {AS_NEEDED}"
            ),
        ],
        Some(ResourceBase::Opaque { description }) => {
            [format!("Resources for this skill: {}", escape_text(description)), AS_NEEDED.into()]
        }
        None => [
            format!(
                "Resources for this skill are managed by provider \"{}\".",
                escape_text(provider)
            ),
            AS_NEEDED.to_owned(),
        ],
    }
}

/// A skill's `<skill_content>` envelope: the name as an attribute, where its resources are, and
/// its instructions as written (what the `skill` tool returns, and `toolhost mcp`'s prompt of
/// the skill).
pub fn envelope(
    name: &str,
    provider: &str,
    resource_base: Option<&ResourceBase>,
    content: &str,
) -> String {
    format!(
        "<skill_content name=\"{}\">\n<skill_resources>\n{}\n</skill_resources>\n\n\
         <skill_instructions>\n{content}\n</skill_instructions>\n</skill_content>",
        escape_attribute(name),
        resource_hints(provider, resource_base).join("\n"),
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
            &output.provider,
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

    fn skipped(text: &str) -> String {
        parse_skill_file(text).err().unwrap_or_default()
    }

    #[test]
    fn front_matter_fields_and_body() {
        let file = parse_skill_file(
            "---\nname: release-notes\ndescription: \"Write \\\"notes\\\": short\"\n\
             disable-model-invocation: true\nmetadata:\n  owner: me\n---\n\n# Steps\n1. go\n\n",
        )
        .unwrap();
        assert_eq!(file.name, "release-notes");
        assert_eq!(file.description, "Write \"notes\": short");
        assert!(!file.model_invocable);
        assert!(file.user_invocable);
        assert_eq!(file.body, "# Steps\n1. go");
    }

    #[test]
    fn a_skill_without_a_description_or_front_matter_is_skipped() {
        assert!(skipped("---\nname: a\n---\nbody").contains("description"));
        assert!(skipped("---\nname: a\ndescription: \"\"\n---\nbody").contains("description"));
        assert!(skipped("---\nname: a\ndescription:\n---\nbody").contains("description"));
        assert!(skipped("---\nname: a\ndescription: 12\n---\nbody").contains("description"));
        assert!(skipped("---\ndescription: d\n---\nbody").contains("name"));
        assert!(skipped("# Just text\n").contains("front matter"));
        assert!(skipped("---\nname: a\ndescription: d\n").contains("front matter"));
        assert!(skipped("---\nname: a\ndescription: use it: now\n---\n").contains("YAML"));
        assert!(skipped("---\nname: Pdf\ndescription: d\n---\n").contains("invalid skill name"));
    }

    #[test]
    fn invocation_fields() {
        let with = |field: &str| {
            parse_skill_file(&format!("---\nname: a\ndescription: d\n{field}\n---\n"))
        };
        for on in ["true", "1", "\"1\"", "YES", "On", "'TRUE'"] {
            let file = with(&format!("disable-model-invocation: {on}")).unwrap();
            assert!(!file.model_invocable, "{on}");
        }
        for off in ["false", "0", "'0'", "no", "OFF"] {
            let file = with(&format!("user-invocable: {off}")).unwrap();
            assert!(!file.user_invocable, "{off}");
            assert!(file.model_invocable);
        }
        for bad in ["2", "maybe", "", "[true]"] {
            assert!(with(&format!("user-invocable: {bad}")).is_err(), "{bad}");
        }
        for legacy in ["disableModelInvocation: true", "modelInvocable: false", "userInvocable: 1"]
        {
            assert!(with(legacy).is_err(), "{legacy}");
        }
    }

    #[test]
    fn catalog_lines_collapse_cut_and_escape() {
        assert_eq!(catalog_line("a", "  Use <it>\n  & go  "), "- `a`: Use &lt;it&gt; &amp; go");
        let long = "x".repeat(501);
        assert_eq!(catalog_line("a", &long), format!("- `a`: {}...", "x".repeat(497)));
        assert_eq!(catalog_line("a", &"y".repeat(500)), format!("- `a`: {}", "y".repeat(500)));
    }

    #[test]
    fn resource_hints_for_every_base() {
        let hints =
            |base: Option<ResourceBase>| resource_hints("acme <x>", base.as_ref()).join("\n");
        assert_eq!(
            hints(Some(ResourceBase::Url { url: "https://x.y/s?a&b".into() })),
            "Base URL for this skill: https://x.y/s?a&amp;b\nResolve relative URLs mentioned by \
             this skill against the base URL before using them. Load referenced resources only \
             as needed."
        );
        assert_eq!(
            hints(Some(ResourceBase::Opaque { description: "a <zip>".into() })),
            "Resources for this skill: a &lt;zip&gt;\nLoad referenced resources only as needed."
        );
        assert_eq!(
            hints(None),
            "Resources for this skill are managed by provider \"acme &lt;x&gt;\".\nLoad \
             referenced resources only as needed."
        );
    }

    #[test]
    fn the_envelope_escapes_its_parts() {
        let output = SkillOutput {
            name: "a\"<&>".to_owned(),
            provider: "workspace".to_owned(),
            resource_base: Some(ResourceBase::Directory {
                path: "/w/.claude/skills/a&b".to_owned(),
            }),
            content: "Use <b> & </skill_instructions>\n".to_owned(),
        };
        let args = SkillArgs { name: "a".to_owned() };
        let rendered = SkillTool.render(&args, &output);
        let [ContentBlock::Text { text, .. }] = rendered.as_slice() else {
            panic!("one text block")
        };
        assert_eq!(
            text,
            "<skill_content name=\"a&quot;&lt;&amp;>\">\n<skill_resources>\nBase directory for \
             this skill: /w/.claude/skills/a&amp;b\nResolve relative paths mentioned by this \
             skill against the base directory before using them. Load referenced resources only \
             as needed.\n</skill_resources>\n\n<skill_instructions>\nUse <b> & \
             </skill_instructions>\n\n</skill_instructions>\n</skill_content>"
        );
    }
}
