//! Cards: the one client-neutral view model of a tool call, and its one plain-text rendering.
//!
//! A tool declares how its calls look before they run — a [`CallPresentation`]: the card kind,
//! the title, the places it points at and, for changes, a preview — and that declaration is
//! recorded in the `tool/call` log event. [`build`] turns (declaration, outcome) into a card,
//! where the outcome is exactly what the `tool/result` event keeps (content, isError, meta). It
//! dispatches on the declared kind, never on a tool's name, so a tool registered at run time (an
//! MCP server's, a plugin's, a test's) gets a proper card, and a replay rebuilds every card from
//! the log alone. Both `build` and [`to_text`] are pure and total: meta that does not fit the
//! declared kind falls back to a generic card, never an error.
//!
//! Kinds with a view here: `diff` (hunks from the meta's unified `patch`, else its `diffs`),
//! `read` (a numbered window) and `search` (paths, matches or locations). Every other kind —
//! `terminal`, `todo`, `question`, `fetch`, `structured`, or any name a tool invents — keeps its
//! kind and carries the meta as `data` for clients that know how to draw it; the rest show the
//! Native text. Logs written before tools declared their cards replay through [`legacy`].

mod group;
pub mod legacy;
mod terminal;
mod text;
mod views;

pub use group::{CardGroup, CardUsage};
pub use terminal::{TerminalCall, TerminalView};
pub use text::to_text;
use views::{fill_result_view, preview_hunk, stats_of};
pub use views::{parse_patch, text_lines};

use crate::content::{ContentBlock, joined_text};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::borrow::Cow;

/// Lifecycle state of the call a card shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CardStatus {
    Pending,
    Completed,
    Failed,
}

impl CardStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CardStatus::Pending => "pending",
            CardStatus::Completed => "completed",
            CardStatus::Failed => "failed",
        }
    }
}

/// Which view a client should draw. Open: a tool may name a kind of its own
/// ([`CardKind::Other`]); clients that do not know it show the generic view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CardKind {
    /// A change to a file: hunks with typed lines and +/- counts.
    Diff,
    /// A window of a file with line numbers.
    Read,
    /// Paths, matches or locations.
    Search,
    /// A command and its output.
    Terminal,
    /// A task list.
    Todo,
    /// A question to the person and their answer.
    Question,
    /// A plan under review (plan mode's `exit_plan_mode`) and the person's decision.
    Plan,
    /// A fetched web page.
    Fetch,
    /// A JSON value.
    Structured,
    /// The Native text only.
    Generic,
    /// A kind this crate does not know.
    Other(String),
}

impl CardKind {
    pub fn as_str(&self) -> &str {
        match self {
            CardKind::Diff => "diff",
            CardKind::Read => "read",
            CardKind::Search => "search",
            CardKind::Terminal => "terminal",
            CardKind::Todo => "todo",
            CardKind::Question => "question",
            CardKind::Plan => "plan",
            CardKind::Fetch => "fetch",
            CardKind::Structured => "structured",
            CardKind::Generic => "generic",
            CardKind::Other(name) => name,
        }
    }

    pub fn parse(name: &str) -> CardKind {
        match name {
            "diff" => CardKind::Diff,
            "read" => CardKind::Read,
            "search" => CardKind::Search,
            "terminal" => CardKind::Terminal,
            "todo" => CardKind::Todo,
            "plan" => CardKind::Plan,
            "question" => CardKind::Question,
            "fetch" => CardKind::Fetch,
            "structured" => CardKind::Structured,
            "generic" | "" => CardKind::Generic,
            other => CardKind::Other(other.to_owned()),
        }
    }
}

impl Serialize for CardKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CardKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(CardKind::parse(&name))
    }
}

impl JsonSchema for CardKind {
    fn schema_name() -> Cow<'static, str> {
        "CardKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "The view a client draws. Known kinds: diff, read, search, terminal, \
                todo, question, plan, fetch, structured, generic; any other name is a tool's own \
                kind (clients that do not know it draw the generic view).",
            "examples": ["diff", "read", "search", "terminal", "todo", "question", "plan", "fetch",
                "structured", "generic"]
        })
    }
}

/// A place a card points at: a path and a 1-based line. In a [`CallPresentation`] the path is
/// as the tool got it (maybe relative); on a [`Card`] it is absolute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CardLocation {
    pub path: String,
    pub line: u64,
}

/// One line of a hunk: `op` is `" "`, `"+"` or `"-"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HunkLine {
    pub op: String,
    pub text: String,
}

/// One diff hunk with typed lines (unified-diff numbering).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub path: String,
    pub old_start: u64,
    pub old_lines: u64,
    pub new_start: u64,
    pub new_lines: u64,
    pub lines: Vec<HunkLine>,
    /// A proposed change whose place in the file is not known yet (a pending call's preview):
    /// the starts are 0 and mean nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
    /// The header line as [`to_text`] writes it (`@@ -a,b +c,d @@`, or `@@ preview -b +d @@`
    /// for a preview), so no client formats it itself.
    #[serde(default)]
    pub header: String,
}

impl Hunk {
    /// A placed hunk (its header filled in).
    pub fn new(
        path: impl Into<String>,
        (old_start, old_lines): (u64, u64),
        (new_start, new_lines): (u64, u64),
        lines: Vec<HunkLine>,
    ) -> Hunk {
        let mut hunk = Hunk {
            path: path.into(),
            old_start,
            old_lines,
            new_start,
            new_lines,
            lines,
            preview: false,
            header: String::new(),
        };
        hunk.header = hunk_header(&hunk);
        hunk
    }
}

/// The header line of a hunk.
pub fn hunk_header(hunk: &Hunk) -> String {
    if hunk.preview {
        format!("@@ preview -{} +{} @@", hunk.old_lines, hunk.new_lines)
    } else {
        format!(
            "@@ -{},{} +{},{} @@",
            hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines
        )
    }
}

/// Added and removed line counts over all hunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stats {
    pub additions: u64,
    pub deletions: u64,
}

/// One numbered line of a read card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NumberedLine {
    pub number: u64,
    pub text: String,
}

/// The window a read call showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadView {
    pub path: String,
    pub offset: u64,
    pub lines: Vec<NumberedLine>,
    pub total_lines: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
}

/// One grep match inside a file group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMatch {
    pub line_number: u64,
    pub line: String,
}

/// One file group of a grep card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchFile {
    pub path: String,
    pub matches: Vec<SearchMatch>,
}

/// One navigation result of an lsp card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchLocation {
    pub path: String,
    pub line: u64,
    pub character: u64,
    #[serde(default)]
    pub snippet: String,
}

/// What a search card lists: paths (glob), matches (grep) or locations (lsp).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchView {
    pub shape: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<SearchFile>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<SearchLocation>>,
    pub truncated: bool,
    pub total: u64,
}

/// The view model every client renders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    pub call_id: String,
    pub tool: String,
    /// Who made the call when it was not the editor itself: an MCP client's name
    /// (`claude-code`, `codex-mcp-client`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The call this one ran under: a program's `run_code` call for its nested calls, a
    /// `subagent` call for its child's calls. Clients draw such a card inside its parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// Where its caller put the call among its parent's children (a workflow child's phase and
    /// label, a ralph round): clients group a parent's children by phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<CardGroup>,
    /// What the call used, when its result's meta says (a child agent's tokens and cost, a
    /// workflow's or ralph's sum over its children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CardUsage>,
    pub status: CardStatus,
    pub kind: CardKind,
    pub title: String,
    /// The Native text: exactly what the model saw (empty while pending).
    pub text: String,
    /// `to_text(card)`, so no client reimplements it.
    pub rendered: String,
    pub locations: Vec<CardLocation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<Vec<Hunk>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchView>,
    /// Terminal cards: the command, where it ran, its output and how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalView>,
    /// For kinds without a view of their own here (todo, question, fetch, structured, a tool's
    /// own kind): the call's presentation meta, for clients that draw that kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A proposed change shown before a call runs (`{path, oldText, newText}`, as `FileDiff` without
/// line numbers): the text it replaces (`None` for new content) and the new text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewDiff {
    pub path: String,
    #[serde(default)]
    pub old_text: Option<String>,
    pub new_text: String,
}

/// How a tool presents a call before it has a result. Tools compute it from their (possibly
/// invalid) arguments; it is recorded in the `tool/call` log event, so every card of the call —
/// live or replayed — is built from it and the outcome alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallPresentation {
    pub kind: CardKind,
    pub title: String,
    /// Where the call points (paths as given; made absolute on the card).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<CardLocation>,
    /// The change the call proposes (diff cards), shown while it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<PreviewDiff>,
    /// The completed card shows the preview (placed from line 1) when the result's meta holds
    /// no usable diff — a write of a new file, whose whole content is the change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview_is_result: bool,
    /// A command's call (terminal cards): what runs, why, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalCall>,
    /// What a card of a kind without a view here (todo, question, plan, structured) shows before
    /// the result, and still shows when the call fails: the questions asked, the plan under
    /// review. A completed card's `data` is the result's meta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The group the call's caller put it in (see [`Card::group`]): stamped by the host from
    /// the call's request, not declared by the tool, and recorded with the rest so replay
    /// groups cards as the live session did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<CardGroup>,
}

impl CallPresentation {
    /// A presentation of `kind` titled `title`.
    pub fn new(kind: CardKind, title: impl Into<String>) -> Self {
        CallPresentation {
            kind,
            title: title.into(),
            locations: Vec::new(),
            preview: Vec::new(),
            preview_is_result: false,
            terminal: None,
            data: None,
            group: None,
        }
    }

    /// Call-time data for the card (see [`CallPresentation::data`]).
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// What a tool without a declaration gets: a generic card titled with the tool's name.
    pub fn generic(tool: &str) -> Self {
        CallPresentation::new(CardKind::Generic, tool)
    }

    pub fn with_location(mut self, path: impl Into<String>, line: u64) -> Self {
        self.locations.push(CardLocation { path: path.into(), line });
        self
    }

    pub fn with_preview(
        mut self,
        path: impl Into<String>,
        old_text: Option<String>,
        new_text: impl Into<String>,
    ) -> Self {
        self.preview.push(PreviewDiff { path: path.into(), old_text, new_text: new_text.into() });
        self
    }

    pub fn preview_is_result(mut self) -> Self {
        self.preview_is_result = true;
        self
    }

    /// Declares the command a terminal card shows.
    pub fn with_terminal(mut self, call: TerminalCall) -> Self {
        self.terminal = Some(call);
        self
    }
}

/// What is known about the call when the card is built.
#[derive(Clone, Copy, Debug)]
pub enum CardOutcome<'a> {
    /// The call has started and not ended.
    Pending,
    /// The call ended with this content, error flag and meta (as persisted).
    Done { content: &'a [ContentBlock], is_error: bool, meta: Option<&'a Value> },
}

/// Who made a call and what it was: the call id, the tool, and the caller when it was not the
/// editor itself (an MCP client's name).
#[derive(Clone, Copy, Debug)]
pub struct CallOrigin<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub caller: Option<&'a str>,
    pub parent: Option<&'a str>,
}

impl<'a> CallOrigin<'a> {
    pub fn new(call_id: &'a str, tool: &'a str) -> Self {
        CallOrigin { call_id, tool, caller: None, parent: None }
    }

    pub fn with_caller(mut self, caller: Option<&'a str>) -> Self {
        self.caller = caller;
        self
    }

    pub fn with_parent(mut self, parent: Option<&'a str>) -> Self {
        self.parent = parent;
        self
    }
}

/// Builds the card of one call from its declared presentation. `root` makes relative paths
/// absolute.
pub fn build(
    origin: CallOrigin<'_>,
    presentation: &CallPresentation,
    root: &str,
    outcome: CardOutcome<'_>,
) -> Card {
    let mut card = Card {
        call_id: origin.call_id.to_owned(),
        tool: origin.tool.to_owned(),
        caller: origin.caller.map(str::to_owned),
        parent_call_id: origin.parent.map(str::to_owned),
        group: presentation.group.clone(),
        usage: None,
        status: CardStatus::Pending,
        kind: CardKind::Generic,
        title: presentation.title.clone(),
        text: String::new(),
        rendered: String::new(),
        locations: presentation
            .locations
            .iter()
            .map(|l| CardLocation { path: absolute_path(root, &l.path), line: l.line })
            .collect(),
        hunks: None,
        stats: None,
        read: None,
        search: None,
        terminal: None,
        data: None,
    };
    match outcome {
        CardOutcome::Pending => {
            card.kind = presentation.kind.clone();
            if let (CardKind::Terminal, Some(call)) = (&presentation.kind, &presentation.terminal) {
                card.terminal = Some(TerminalView::running(call));
            }
            if !presentation.preview.is_empty() {
                let hunks: Vec<Hunk> = presentation.preview.iter().map(preview_hunk).collect();
                card.stats = Some(stats_of(&hunks));
                card.hunks = Some(hunks);
            }
            card.data = presentation.data.clone();
        }
        CardOutcome::Done { content, is_error, meta } => {
            card.text = joined_text(content);
            card.usage = group::usage_of(meta);
            if is_error {
                card.status = CardStatus::Failed;
                // A refused plan or a dismissed question still shows what was asked.
                if presentation.data.is_some() {
                    card.kind = presentation.kind.clone();
                    card.data = presentation.data.clone();
                }
            } else {
                card.status = CardStatus::Completed;
                fill_result_view(&mut card, presentation, root, content, meta);
            }
        }
    }
    card.rendered = to_text(&card);
    card
}

/// A number as card titles print it: integral values without a fraction (`3`, `1.5`).
pub fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { format!("{n}") }
}

/// Makes `path` absolute against `root` (pure string work: no filesystem access).
pub fn absolute_path(root: &str, path: &str) -> String {
    if path.starts_with('/') || root.is_empty() {
        return path.to_owned();
    }
    let rel = path.trim_start_matches("./");
    let root = root.trim_end_matches('/');
    if rel.is_empty() || rel == "." { root.to_owned() } else { format!("{root}/{rel}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write_presentation(path: &str, content: &str) -> CallPresentation {
        CallPresentation::new(CardKind::Diff, format!("Write {path}"))
            .with_location(path, 1)
            .with_preview(path, None, content)
            .preview_is_result()
    }

    #[test]
    fn a_pending_preview_claims_no_position() {
        let presentation = write_presentation("a.txt", "one\ntwo\n");
        let card = build(CallOrigin::new("c1", "write"), &presentation, "/w", CardOutcome::Pending);
        assert_eq!(card.kind, CardKind::Diff);
        assert_eq!(card.locations, vec![CardLocation { path: "/w/a.txt".into(), line: 1 }]);
        assert_eq!(card.rendered, "write Write a.txt · pending\n@@ preview -0 +2 @@\n+one\n+two");
        let edit = CallPresentation::new(CardKind::Diff, "Edit a.txt")
            .with_location("a.txt", 1)
            .with_preview("a.txt", Some("x\ny".into()), "z");
        let card = build(CallOrigin::new("c1", "edit"), &edit, "/w", CardOutcome::Pending);
        assert_eq!(card.rendered, "edit Edit a.txt · pending\n@@ preview -2 +1 @@\n-x\n-y\n+z");
        assert!(card.hunks.unwrap()[0].preview);
    }

    #[test]
    fn a_new_file_write_shows_its_preview_placed_from_line_one() {
        let presentation = write_presentation("a.txt", "one\ntwo\n");
        let meta = json!({"diffs": []});
        let content = vec![ContentBlock::text("File created successfully at: /w/a.txt")];
        let card = build(
            CallOrigin::new("c1", "write"),
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(card.rendered, "write Write a.txt · completed\n@@ -0,0 +1,2 @@\n+one\n+two");
    }

    #[test]
    fn diff_cards_read_the_patch() {
        let presentation = CallPresentation::new(CardKind::Diff, "Edit a.txt")
            .with_location("a.txt", 1)
            .with_preview("a.txt", Some("OLD".into()), "NEW");
        let meta = json!({
            "diffs": [],
            "patch": "--- a/a.txt\n+++ b/a.txt\n@@ -2,3 +2,3 @@\n b\n-OLD\n+NEW\n d\n"
        });
        let content = vec![ContentBlock::text("The file /w/a.txt has been updated successfully.")];
        let card = build(
            CallOrigin::new("c2", "edit"),
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(card.kind, CardKind::Diff);
        assert_eq!(card.stats, Some(Stats { additions: 1, deletions: 1 }));
        assert_eq!(card.locations[0].line, 2);
        assert_eq!(card.hunks.as_ref().unwrap()[0].header, "@@ -2,3 +2,3 @@");
        assert_eq!(
            card.rendered,
            "edit Edit a.txt · completed\n@@ -2,3 +2,3 @@\n b\n-OLD\n+NEW\n d"
        );
        // A malformed patch is not a diff card (and the preview is not a result for an edit).
        let meta = json!({"patch": "@@ -1,5 +1,1 @@\n-x\n"});
        let content = vec![ContentBlock::text("done")];
        let card = build(
            CallOrigin::new("c3", "edit"),
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(card.kind, CardKind::Generic);
        assert_eq!(card.rendered, "edit Edit a.txt · completed\ndone");
    }

    #[test]
    fn diffs_without_a_patch_make_a_diff_card_too() {
        let presentation = CallPresentation::new(CardKind::Diff, "Patch b.txt");
        let meta = json!({"diffs": [{"path": "b.txt", "oldText": "a", "newText": "b"}]});
        let content = vec![ContentBlock::text("ok")];
        let card = build(
            CallOrigin::new("c", "patcher"),
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(card.rendered, "patcher Patch b.txt · completed\n@@ preview -1 +1 @@\n-a\n+b");
    }

    #[test]
    fn an_unknown_kind_is_kept_with_its_meta_as_data() {
        let presentation = CallPresentation::new(CardKind::parse("gauge"), "Gauge at 40%");
        let pending =
            build(CallOrigin::new("c", "gauge"), &presentation, "/w", CardOutcome::Pending);
        assert_eq!(pending.kind.as_str(), "gauge");
        let meta = json!({"percent": 40});
        let content = vec![ContentBlock::text("40%")];
        let done = build(
            CallOrigin::new("c", "gauge"),
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(done.kind, CardKind::Other("gauge".into()));
        assert_eq!(done.data.as_ref(), Some(&meta));
        assert_eq!(done.rendered, "gauge Gauge at 40% · completed\n40%");
        let json = serde_json::to_value(&done).unwrap_or_default();
        assert!(json.get("caller").is_none());
        let by_agent = build(
            CallOrigin::new("c", "gauge").with_caller(Some("claude-code")),
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(by_agent.caller.as_deref(), Some("claude-code"));
        assert_eq!(by_agent.rendered, "gauge Gauge at 40% · completed · claude-code\n40%");
        assert_eq!(json["kind"], "gauge");
    }

    #[test]
    fn a_child_card_carries_its_group_and_its_usage() {
        let mut presentation = CallPresentation::new(CardKind::Generic, "Subagent: draft · a");
        presentation.group = CardGroup::of(Some("draft".into()), Some("a".into()));
        let origin = CallOrigin::new("w:agent:1", "subagent").with_parent(Some("w"));
        let pending = build(origin, &presentation, "/w", CardOutcome::Pending);
        assert_eq!(pending.group, presentation.group);
        assert_eq!(pending.usage, None);
        let meta = json!({"runId": "r", "usage": {"promptTokens": 300, "completionTokens": 5,
            "totalTokens": 305}});
        let content = vec![ContentBlock::text("A")];
        let done = build(
            origin,
            &presentation,
            "/w",
            CardOutcome::Done { content: &content, is_error: false, meta: Some(&meta) },
        );
        assert_eq!(done.usage, Some(CardUsage { tokens: 305, cost: None }));
        let json = serde_json::to_value(&done).unwrap_or_default();
        assert_eq!(json["group"], json!({"phase": "draft", "label": "a"}));
        assert_eq!(json["usage"], json!({"tokens": 305}));
        // The plain-text rendering is unchanged: the title already names the phase and label.
        assert_eq!(done.rendered, "subagent Subagent: draft · a · completed\nA");
    }
}
