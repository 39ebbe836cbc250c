//! Conformance scenarios (docs/design.md §9): `editor-clients/conformance/<NNN-name>/` with
//! `steps.json`, `before/` (the workspace), `after/` (the workspace afterwards; absent =
//! unchanged), optional `mtimes.json` (`{path: seconds}`) and `requires.json` (`["clangd"]`).
//!
//! A step is `{tool, args, expect: {isError?, value?, content?, meta?, card?}, review?}` or an
//! external change `{"external": {"write": path, "content": text}}` / `{"external": {"touch": path}}`
//! or `{"setReview": {mode, timeoutMs?, fallback?}}` (review mode, docs/protocol.md). A tool step's
//! `review` scripts the answer to its `toolhost/review` question: `{accepted, comment?}`,
//! `{ignore: true}` (never answer), optionally with an `external` change made before answering;
//! runners advertise that they review and fail a step whose scripted question never came. A tool
//! step's `askUser` is the `toolhost/askUser` result its call's question is answered with
//! (`{answers: [...]}` or `{dismissed: true}`; `{ignore: true}` never answers), with the same
//! rules. `{"setPlanMode": {active}}` and `{"structuredOutput": {schema?, reset?}}` send those
//! requests (docs/protocol.md).
//! Expected strings may use `${WORKSPACE}` (the workspace root) and `${SPILL}` (the locator of that
//! step's spill file); step arguments may use `${WORKSPACE}` too. `error` compares the failure's
//! `message`/`info` keys it lists. `value`, `content` and `meta` compare exactly; `card` compares
//! each key it lists (a card's `callId` is never compared).
//!
//! Bless mode (`UPDATE_EXPECT=1`, like rust-analyzer's `UPDATE_EXPECT`): the runners rewrite each
//! expectation a step lists with what the step produced (paths turned back into `${WORKSPACE}` and
//! `${SPILL}`), and `after/` with the workspace afterwards — for changes made on purpose; review
//! the diff before committing it.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Every file of a prepared workspace gets this mtime first, so glob order is deterministic.
pub const BASE_MTIME: u64 = 1_700_000_000;

/// What a step expects.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(rename = "isError")]
    pub is_error: Option<bool>,
    pub value: Option<Value>,
    pub content: Option<Value>,
    pub meta: Option<Value>,
    pub card: Option<Value>,
    /// `{message?, info?}` of a failure, compared key by key.
    pub error: Option<Value>,
}

/// A change made outside toolhost between calls.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct External {
    pub write: Option<String>,
    pub content: Option<String>,
    pub touch: Option<String>,
}

/// The scripted answer to the `toolhost/review` question a tool step's call asks (review mode).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewScript {
    /// Indexes of the hunks to accept (the rest are rejected).
    #[serde(default)]
    pub accepted: Vec<usize>,
    pub comment: Option<String>,
    /// Never answer (the server's timeout and fallback apply).
    #[serde(default)]
    pub ignore: bool,
    /// A change the person makes while the question is open, before answering.
    pub external: Option<External>,
}

impl ReviewScript {
    /// The `toolhost/review` result this script answers with.
    pub fn answer(&self) -> Value {
        let mut answer = serde_json::json!({"accepted": self.accepted});
        if let Some(comment) = &self.comment {
            answer["comment"] = Value::String(comment.clone());
        }
        answer
    }
}

/// One step of a scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Step {
    External {
        external: External,
    },
    /// Sends `toolhost/setReview` with these params (`{mode, timeoutMs?, fallback?}`).
    SetReview {
        #[serde(rename = "setReview")]
        set_review: Value,
    },
    /// Sends `toolhost/setPlanMode` with these params (`{active}`).
    SetPlanMode {
        #[serde(rename = "setPlanMode")]
        set_plan_mode: Value,
    },
    /// Sends `toolhost/structuredOutput` with these params (`{schema?, reset?}`).
    StructuredOutput {
        #[serde(rename = "structuredOutput")]
        structured_output: Value,
    },
    Tool {
        tool: String,
        args: Value,
        expect: Box<Expect>,
        #[serde(default)]
        review: Option<Box<ReviewScript>>,
        /// The answer to the call's `toolhost/askUser` question.
        #[serde(default, rename = "askUser")]
        ask_user: Option<Value>,
    },
}

/// One scenario folder.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub dir: PathBuf,
    pub steps: Vec<Step>,
    pub requires: Vec<String>,
    pub mtimes: BTreeMap<String, u64>,
}

/// Errors loading scenarios.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: {detail}")]
    Invalid { path: String, detail: String },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ScenarioError + '_ {
    move |source| ScenarioError::Io { path: path.display().to_string(), source }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, ScenarioError> {
    match fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| ScenarioError::Invalid {
            path: path.display().to_string(),
            detail: e.to_string(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ScenarioError::Io { path: path.display().to_string(), source: e }),
    }
}

impl Scenario {
    pub fn load(dir: &Path) -> Result<Self, ScenarioError> {
        let steps_path = dir.join("steps.json");
        let steps = read_json::<Vec<Step>>(&steps_path)?.ok_or_else(|| ScenarioError::Invalid {
            path: steps_path.display().to_string(),
            detail: "missing steps.json".to_owned(),
        })?;
        Ok(Scenario {
            name: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            dir: dir.to_path_buf(),
            steps,
            requires: read_json(&dir.join("requires.json"))?.unwrap_or_default(),
            mtimes: read_json(&dir.join("mtimes.json"))?.unwrap_or_default(),
        })
    }

    /// Every scenario folder under `root`, sorted by name.
    pub fn load_all(root: &Path) -> Result<Vec<Self>, ScenarioError> {
        let mut dirs: Vec<PathBuf> = fs::read_dir(root)
            .map_err(io_err(root))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("steps.json").is_file())
            .collect();
        dirs.sort();
        dirs.iter().map(|d| Scenario::load(d)).collect()
    }

    /// Copies `before/` into `dest` (which must exist and be empty) and applies the mtimes.
    pub fn prepare(&self, dest: &Path) -> Result<(), ScenarioError> {
        let before = self.dir.join("before");
        if before.is_dir() {
            copy_tree(&before, dest)?;
        }
        for file in list_files(dest)? {
            set_mtime(&dest.join(&file), BASE_MTIME)?;
        }
        for (path, secs) in &self.mtimes {
            set_mtime(&dest.join(path), *secs)?;
        }
        Ok(())
    }

    /// Compares the workspace with `after/` (or `before/` when there is no `after/`).
    pub fn check_after(&self, root: &Path) -> Result<Vec<String>, ScenarioError> {
        let after = self.dir.join("after");
        let expected_dir = if after.is_dir() { after } else { self.dir.join("before") };
        let expected =
            if expected_dir.is_dir() { snapshot(&expected_dir)? } else { BTreeMap::new() };
        let actual = snapshot(root)?;
        let mut problems = Vec::new();
        for (path, bytes) in &expected {
            match actual.get(path) {
                None => problems.push(format!("workspace-after: missing {path}")),
                Some(got) if got != bytes => problems.push(format!(
                    "workspace-after: {path} differs: expected {:?}, got {:?}",
                    String::from_utf8_lossy(bytes),
                    String::from_utf8_lossy(got)
                )),
                Some(_) => {}
            }
        }
        for path in actual.keys() {
            if !expected.contains_key(path) {
                problems.push(format!("workspace-after: unexpected file {path}"));
            }
        }
        Ok(problems)
    }
}

/// Applies an external change to the workspace.
pub fn apply_external(root: &Path, external: &External) -> Result<(), ScenarioError> {
    if let Some(path) = &external.write {
        let target = root.join(path);
        fs::write(&target, external.content.as_deref().unwrap_or("")).map_err(io_err(&target))?;
        // A different mtime too, like a real editor save.
        set_mtime(&target, BASE_MTIME + 1000)?;
    }
    if let Some(path) = &external.touch {
        let target = root.join(path);
        set_mtime(&target, BASE_MTIME + 2000)?;
    }
    Ok(())
}

fn set_mtime(path: &Path, secs: u64) -> Result<(), ScenarioError> {
    let file = fs::OpenOptions::new().write(true).open(path).map_err(io_err(path))?;
    file.set_modified(UNIX_EPOCH + Duration::from_secs(secs)).map_err(io_err(path))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), ScenarioError> {
    for entry in fs::read_dir(from).map_err(io_err(from))? {
        let entry = entry.map_err(io_err(from))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry.file_type().map_err(io_err(&src))?;
        if kind.is_dir() {
            fs::create_dir_all(&dst).map_err(io_err(&dst))?;
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(io_err(&dst))?;
        }
    }
    Ok(())
}

/// Relative paths (with `/`) of every regular file under `root`, sorted.
pub fn list_files(root: &Path) -> Result<Vec<String>, ScenarioError> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        for entry in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let child = rel.join(entry.file_name());
            let kind = entry.file_type().map_err(io_err(&dir))?;
            if kind.is_dir() {
                stack.push(child);
            } else if kind.is_file() {
                out.push(child.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn snapshot(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, ScenarioError> {
    let mut map = BTreeMap::new();
    for rel in list_files(root)? {
        let path = root.join(&rel);
        map.insert(rel, fs::read(&path).map_err(io_err(&path))?);
    }
    Ok(map)
}

/// `value` with `edit` applied to every string in it.
fn map_strings(value: &Value, edit: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(edit(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, edit)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), map_strings(v, edit))).collect())
        }
        other => other.clone(),
    }
}

/// Replaces `${WORKSPACE}` and `${SPILL}` in every string of `value`.
pub fn substitute(value: &Value, workspace: &str, spill: Option<&str>) -> Value {
    map_strings(value, &|s| {
        let s = s.replace("${WORKSPACE}", workspace);
        match spill {
            Some(spill) => s.replace("${SPILL}", spill),
            None => s,
        }
    })
}

/// The spill locator a result's text names (`… stored at: <locator>. …`), if any.
pub fn spill_locator(result: &Value) -> Option<String> {
    let content = result.get("content")?.as_array()?;
    for block in content {
        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
        if let Some(idx) = text.find("stored at: ") {
            let rest = &text[idx + "stored at: ".len()..];
            let end = rest.find(". ").unwrap_or(rest.len());
            return Some(rest[..end].to_owned());
        }
    }
    None
}

/// Compares one step's actual `result` (a serialized ToolExecutionResult) and `card` with the
/// expectation; returns human-readable mismatches.
pub fn check_step(expect: &Expect, result: &Value, card: &Value, workspace: &str) -> Vec<String> {
    let spill = spill_locator(result);
    let mut problems = Vec::new();
    if let Some(is_error) = expect.is_error {
        let got = result.get("isError").and_then(Value::as_bool);
        if got != Some(is_error) {
            problems.push(format!(
                "isError: expected {is_error}, got {got:?} (content: {})",
                result["content"]
            ));
        }
    }
    let fields = [("value", &expect.value), ("content", &expect.content), ("meta", &expect.meta)];
    for (key, wanted) in fields {
        if let Some(wanted) = wanted {
            let wanted = substitute(wanted, workspace, spill.as_deref());
            let got = result.get(key).cloned().unwrap_or(Value::Null);
            if got != wanted {
                problems.push(format!("{key}: expected {wanted}, got {got}"));
            }
        }
    }
    if let Some(Value::Object(wanted)) = &expect.error {
        for (key, want) in wanted {
            let want = substitute(want, workspace, spill.as_deref());
            let got = result.get("error").and_then(|e| e.get(key)).cloned().unwrap_or(Value::Null);
            if got != want {
                problems.push(format!("error.{key}: expected {want}, got {got}"));
            }
        }
    }
    if let Some(Value::Object(wanted)) = &expect.card {
        for (key, want) in wanted {
            let want = substitute(want, workspace, spill.as_deref());
            let got = card.get(key).cloned().unwrap_or(Value::Null);
            if got != want {
                problems.push(format!("card.{key}: expected {want}, got {got}"));
            }
        }
    }
    problems
}

/// Whether the runners should rewrite expectations instead of checking them.
pub fn bless_requested() -> bool {
    std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1")
}

/// Turns a produced value back into an expectation: the workspace root and the spill locator
/// become `${WORKSPACE}` and `${SPILL}` again.
pub fn unsubstitute(value: &Value, workspace: &str, spill: Option<&str>) -> Value {
    map_strings(value, &|s| {
        let mut s = s.to_owned();
        if let Some(spill) = spill.filter(|l| !l.is_empty()) {
            s = s.replace(spill, "${SPILL}");
        }
        if !workspace.is_empty() {
            s = s.replace(workspace, "${WORKSPACE}");
        }
        s
    })
}

/// Rewrites the expectations step `raw` (its JSON in steps.json) lists with what the step
/// produced. Returns whether anything changed.
pub fn bless_step(raw: &mut Value, result: &Value, card: &Value, workspace: &str) -> bool {
    let spill = spill_locator(result);
    let Some(expect) = raw.get_mut("expect").and_then(Value::as_object_mut) else { return false };
    let before = Value::Object(expect.clone());
    let produced = |v: &Value| unsubstitute(v, workspace, spill.as_deref());
    if expect.contains_key("isError") {
        expect.insert("isError".into(), result.get("isError").cloned().unwrap_or(Value::Null));
    }
    for key in ["value", "content", "meta"] {
        if expect.contains_key(key) {
            expect.insert(key.into(), produced(result.get(key).unwrap_or(&Value::Null)));
        }
    }
    if let Some(Value::Object(wanted)) = expect.get_mut("error") {
        for (key, want) in wanted.iter_mut() {
            *want = produced(result.get("error").and_then(|e| e.get(key)).unwrap_or(&Value::Null));
        }
    }
    if let Some(Value::Object(wanted)) = expect.get_mut("card") {
        for (key, want) in wanted.iter_mut() {
            *want = produced(card.get(key).unwrap_or(&Value::Null));
        }
    }
    Value::Object(expect.clone()) != before
}

impl Scenario {
    /// steps.json as plain JSON, for bless mode.
    pub fn raw_steps(&self) -> Result<Value, ScenarioError> {
        let path = self.dir.join("steps.json");
        read_json(&path)?.ok_or_else(|| ScenarioError::Invalid {
            path: path.display().to_string(),
            detail: "missing steps.json".to_owned(),
        })
    }

    /// Writes steps.json in the folders' style: one line per step key and expectation, values
    /// compact.
    pub fn write_raw_steps(&self, steps: &Value) -> Result<(), ScenarioError> {
        let path = self.dir.join("steps.json");
        fs::write(&path, format_steps(steps)).map_err(io_err(&path))
    }

    /// Replaces `after/` with the workspace at `root` (or removes it when the workspace equals
    /// `before/`).
    pub fn bless_after(&self, root: &Path) -> Result<(), ScenarioError> {
        let before = self.dir.join("before");
        let after = self.dir.join("after");
        let actual = snapshot(root)?;
        let original = if before.is_dir() { snapshot(&before)? } else { BTreeMap::new() };
        if after.is_dir() {
            fs::remove_dir_all(&after).map_err(io_err(&after))?;
        }
        if actual == original {
            return Ok(());
        }
        for (rel, bytes) in actual {
            let target = after.join(&rel);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            fs::write(&target, bytes).map_err(io_err(&target))?;
        }
        Ok(())
    }
}

/// `[` + one object per step, each key on its own line (expectations one level deeper), every
/// value compact with `": "` and `", "` separators.
fn format_steps(steps: &Value) -> String {
    let Some(items) = steps.as_array() else { return format!("{}\n", compact(steps)) };
    let mut out = String::from("[\n");
    for (i, step) in items.iter().enumerate() {
        out.push_str("  {\n");
        if let Some(map) = step.as_object() {
            let last = map.len().saturating_sub(1);
            for (j, (key, value)) in map.iter().enumerate() {
                let comma = if j < last { "," } else { "" };
                match (key.as_str(), value.as_object()) {
                    ("expect", Some(expect)) => {
                        out.push_str("    \"expect\": {\n");
                        let inner_last = expect.len().saturating_sub(1);
                        for (k, (ek, ev)) in expect.iter().enumerate() {
                            let c = if k < inner_last { "," } else { "" };
                            out.push_str(&format!(
                                "      {}: {}{c}\n",
                                compact(&Value::from(ek.as_str())),
                                compact(ev)
                            ));
                        }
                        out.push_str(&format!("    }}{comma}\n"));
                    }
                    _ => out.push_str(&format!(
                        "    {}: {}{comma}\n",
                        compact(&Value::from(key.as_str())),
                        compact(value)
                    )),
                }
            }
        }
        out.push_str(if i + 1 < items.len() { "  },\n" } else { "  }\n" });
    }
    out.push_str("]\n");
    out
}

/// Compact JSON with a space after `:` and `,` (the scenario files' style).
fn compact(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            format!("[{}]", items.iter().map(compact).collect::<Vec<_>>().join(", "))
        }
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), compact(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn bless_rewrites_only_the_listed_expectations_with_placeholders() {
        let mut raw = json!({"tool": "read", "args": {}, "expect": {
            "isError": true,
            "content": [{"type": "text", "text": "old"}],
            "card": {"title": "old", "rendered": "old"}
        }});
        let result = json!({"isError": false, "value": {"path": "/tmp/w/a.txt"},
            "content": [{"type": "text", "text": "<path>/tmp/w/a.txt</path>"}]});
        let card = json!({"title": "Read a.txt", "rendered": "read Read a.txt · completed", "kind": "read"});
        assert!(bless_step(&mut raw, &result, &card, "/tmp/w"));
        assert_eq!(
            raw["expect"],
            json!({"isError": false,
                "content": [{"type": "text", "text": "<path>${WORKSPACE}/a.txt</path>"}],
                "card": {"title": "Read a.txt", "rendered": "read Read a.txt · completed"}})
        );
        assert!(!bless_step(&mut raw, &result, &card, "/tmp/w"), "blessing twice changes nothing");
        let text = format_steps(&json!([raw]));
        assert!(text.starts_with(
            "[\n  {\n    \"tool\": \"read\",\n    \"args\": {},\n    \"expect\": {\n"
        ));
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), json!([raw]));
    }
}
