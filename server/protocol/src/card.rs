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

pub mod legacy;

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
}

/// What a terminal card knows before the command runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCall {
    pub command: String,
    /// The caller's label for the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The working directory as the call gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// A terminal card's view: parsed back from the Native text (which is all the log keeps), so a
/// replay shows the same exit pill, markers and spill links as the live card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalView {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The output without the final exit marker (empty while the command runs; clients append
    /// the `toolhost/callOutput` notifications they receive meanwhile).
    pub output: String,
    /// The exit pill: the exit code (0 when the text names none) …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// … or the signal that killed the command (`SIGTERM`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Files holding a stream's full output, when the text kept only its tail.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spill_paths: Vec<String>,
}

impl TerminalView {
    /// The view of a finished command from its Native text: a final `[killed by signal: X]` or
    /// `[exit code: N]` line becomes the pill and leaves the body (no marker ⇒ exit code 0).
    pub fn from_text(call: &TerminalCall, text: &str) -> TerminalView {
        let mut output = text;
        let (mut exit_code, mut signal) = (Some(0), None);
        if let Some((body, last)) = split_last_line(text) {
            if let Some(sig) =
                last.strip_prefix("[killed by signal: ").and_then(|r| r.strip_suffix(']'))
            {
                signal = Some(sig.to_owned());
                exit_code = None;
                output = body;
            } else if let Some(code) = last
                .strip_prefix("[exit code: ")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|c| c.parse::<i64>().ok())
            {
                exit_code = Some(code);
                output = body;
            }
        }
        let timed_out = output
            .lines()
            .any(|l| l.strip_prefix("[timed out after ").is_some_and(|r| r.ends_with("ms]")));
        let spill_paths = text
            .lines()
            .filter_map(|l| l.strip_prefix("[output truncated; full output: ")?.strip_suffix(']'))
            .filter(|p| p.starts_with('/'))
            .map(str::to_owned)
            .collect();
        TerminalView {
            command: call.command.clone(),
            description: call.description.clone(),
            cwd: call.cwd.clone(),
            output: output.to_owned(),
            exit_code,
            signal,
            timed_out,
            spill_paths,
        }
    }

    /// The view of a command that has not finished.
    pub fn running(call: &TerminalCall) -> TerminalView {
        TerminalView {
            command: call.command.clone(),
            description: call.description.clone(),
            cwd: call.cwd.clone(),
            output: String::new(),
            exit_code: None,
            signal: None,
            timed_out: false,
            spill_paths: Vec::new(),
        }
    }
}

/// `(everything before the last line, the last line)` when the text has more than one line.
fn split_last_line(text: &str) -> Option<(&str, &str)> {
    let at = text.rfind('\n')?;
    Some((&text[..at], &text[at + 1..]))
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
}

impl<'a> CallOrigin<'a> {
    pub fn new(call_id: &'a str, tool: &'a str) -> Self {
        CallOrigin { call_id, tool, caller: None }
    }

    pub fn with_caller(mut self, caller: Option<&'a str>) -> Self {
        self.caller = caller;
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

/// The one plain-text rendering of a card: a title line `<tool> <title> · <status>` (then
/// ` · <caller>` for a call another program made), then hunks (diff cards), `path:line` lines
/// (search cards) or the Native text (everything else).
pub fn to_text(card: &Card) -> String {
    let mut out = format!("{} {} · {}", card.tool, card.title, card.status.as_str());
    if let Some(caller) = &card.caller {
        out.push_str(" · ");
        out.push_str(caller);
    }
    let mut body: Vec<String> = Vec::new();
    match (&card.kind, &card.hunks, &card.search) {
        (CardKind::Diff, Some(hunks), _) => {
            // A change of several files names each before its hunks (one file: the title does).
            let several = hunks.iter().any(|h| h.path != hunks[0].path);
            let mut last_path: Option<&str> = None;
            for hunk in hunks {
                if several && last_path != Some(hunk.path.as_str()) {
                    body.push(hunk.path.clone());
                    last_path = Some(&hunk.path);
                }
                body.push(hunk_header(hunk));
                for line in &hunk.lines {
                    body.push(format!("{}{}", line.op, line.text));
                }
            }
        }
        (CardKind::Search, _, Some(search)) if card.status != CardStatus::Pending => {
            search_lines(search, &mut body);
        }
        _ => {
            let drawn = card.data.as_ref().is_some_and(|data| data_lines(card, data, &mut body));
            // A failure says why under what was asked; other kinds show their Native text.
            if (!drawn || card.status == CardStatus::Failed) && !card.text.is_empty() {
                body.push(card.text.clone());
            }
        }
    }
    for line in body {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

/// How many lines of a fetched page a fetch card shows.
const FETCH_PREVIEW_LINES: usize = 12;

/// The body of a todo, question, plan or structured card, from its data; `false` when the
/// kind has no such view or the data is not its shape (the Native text is shown instead).
fn data_lines(card: &Card, data: &Value, body: &mut Vec<String>) -> bool {
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match card.kind {
        CardKind::Todo => {
            let Some(todos) = data.get("todos").and_then(Value::as_array) else { return false };
            for todo in todos {
                let mark = match todo.get("status").and_then(Value::as_str) {
                    Some("completed") => "[x]",
                    Some("in_progress") => "[>]",
                    _ => "[ ]",
                };
                body.push(format!("{mark} {}", str_of(todo, "content").unwrap_or_default()));
            }
            true
        }
        CardKind::Question => {
            let Some(questions) = data.get("questions").and_then(Value::as_array) else {
                return false;
            };
            let answers = data.get("answers").and_then(Value::as_array);
            for question in questions {
                body.push(format!("? {}", str_of(question, "question").unwrap_or_default()));
                let id = question.get("id");
                let answer = answers.and_then(|a| a.iter().find(|a| a.get("id") == id));
                if let Some(answer) = answer {
                    let mut chosen: Vec<String> = answer
                        .get("selected")
                        .and_then(Value::as_array)
                        .map(|s| s.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                        .unwrap_or_default();
                    if let Some(custom) = str_of(answer, "custom") {
                        chosen.push(format!("\"{custom}\""));
                    }
                    body.push(format!("→ {}", chosen.join(", ")));
                }
            }
            true
        }
        CardKind::Plan => {
            let Some(plan) = str_of(data, "plan") else { return false };
            body.extend(plan.trim_end().lines().map(str::to_owned));
            if data.get("approved").and_then(Value::as_bool) == Some(true) {
                body.push("→ Approved".to_owned());
            }
            true
        }
        CardKind::Fetch if data.get("sources").is_some() => {
            let Some(sources) = data.get("sources").and_then(Value::as_array) else {
                return false;
            };
            if sources.is_empty() {
                body.push("No results found.".to_owned());
            }
            for source in sources {
                let url = str_of(source, "url").unwrap_or_default();
                let title = str_of(source, "title").filter(|t| !t.is_empty());
                body.push(format!("- {} <{url}>", title.as_deref().unwrap_or(&url)));
            }
            if data.get("truncated").and_then(Value::as_bool) == Some(true) {
                body.push("(more sources were left out)".to_owned());
            }
            true
        }
        CardKind::Fetch if card.status == CardStatus::Completed => {
            let Some(url) = str_of(data, "url") else { return false };
            let mut head = vec![url];
            if let Some(status) = data.get("statusCode").and_then(Value::as_u64) {
                head.push(format!("HTTP {status}"));
            }
            if let Some(title) = str_of(data, "title").filter(|t| !t.is_empty()) {
                head.push(format!("\"{title}\""));
            }
            if let Some(size) = data.get("size").and_then(Value::as_u64) {
                head.push(format!("{size} bytes"));
            }
            for flag in ["truncated", "cached"] {
                if data.get(flag).and_then(Value::as_bool) == Some(true) {
                    head.push(flag.to_owned());
                }
            }
            body.push(head.join(" · "));
            // A preview: the page itself is in the Native text, too long for a card.
            let text: Vec<&str> = card.text.lines().skip(1).skip_while(|l| l.is_empty()).collect();
            body.extend(text.iter().take(FETCH_PREVIEW_LINES).map(|l| (*l).to_owned()));
            if text.len() > FETCH_PREVIEW_LINES {
                body.push("…".to_owned());
            }
            true
        }
        CardKind::Structured => {
            let Some(value) = data.get("value") else { return false };
            let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
            body.extend(pretty.lines().map(str::to_owned));
            true
        }
        _ => false,
    }
}

fn search_lines(search: &SearchView, body: &mut Vec<String>) {
    let mut shown = 0u64;
    if let Some(paths) = &search.paths {
        for path in paths {
            body.push(path.clone());
            shown += 1;
        }
    }
    if let Some(files) = &search.files {
        for file in files {
            for m in &file.matches {
                body.push(format!("{}:{}: {}", file.path, m.line_number, m.line));
                shown += 1;
            }
        }
    }
    if let Some(locations) = &search.locations {
        for loc in locations {
            if loc.snippet.is_empty() {
                body.push(format!("{}:{}:{}", loc.path, loc.line, loc.character));
            } else {
                body.push(format!("{}:{}:{}: {}", loc.path, loc.line, loc.character, loc.snippet));
            }
            shown += 1;
        }
    }
    if shown == 0 {
        body.push("(no results)".to_owned());
    } else if search.truncated || shown < search.total {
        body.push(format!("(showing {shown} of {})", search.total));
    }
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

/// The lines of a text as a hunk side shows them: split at `\n`, a final newline ends the last
/// line rather than starting an empty one, and a `\r` before a newline is not shown.
pub fn text_lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned()).collect()
}

fn typed_lines(diff: &PreviewDiff) -> (Vec<HunkLine>, u64, u64) {
    let old = diff.old_text.as_deref().map(text_lines).unwrap_or_default();
    let new = text_lines(&diff.new_text);
    let (old_len, new_len) = (old.len() as u64, new.len() as u64);
    let mut lines: Vec<HunkLine> =
        old.into_iter().map(|text| HunkLine { op: "-".into(), text }).collect();
    lines.extend(new.into_iter().map(|text| HunkLine { op: "+".into(), text }));
    (lines, old_len, new_len)
}

/// A pending call's preview: not placed in the file yet.
fn preview_hunk(diff: &PreviewDiff) -> Hunk {
    let (lines, old_lines, new_lines) = typed_lines(diff);
    let mut hunk = Hunk {
        path: diff.path.clone(),
        old_start: 0,
        old_lines,
        new_start: 0,
        new_lines,
        lines,
        preview: true,
        header: String::new(),
    };
    hunk.header = hunk_header(&hunk);
    hunk
}

/// A preview shown as the result: the new text from line 1 (the old text, if any, before it).
fn placed_preview_hunk(diff: &PreviewDiff) -> Hunk {
    let (lines, old_lines, new_lines) = typed_lines(diff);
    let start = |n: u64| u64::from(n > 0);
    Hunk::new(
        diff.path.clone(),
        (start(old_lines), old_lines),
        (start(new_lines), new_lines),
        lines,
    )
}

fn stats_of(hunks: &[Hunk]) -> Stats {
    let mut stats = Stats { additions: 0, deletions: 0 };
    for line in hunks.iter().flat_map(|h| &h.lines) {
        match line.op.as_str() {
            "+" => stats.additions += 1,
            "-" => stats.deletions += 1,
            _ => {}
        }
    }
    stats
}

fn fill_result_view(
    card: &mut Card,
    presentation: &CallPresentation,
    root: &str,
    content: &[ContentBlock],
    meta: Option<&Value>,
) {
    match &presentation.kind {
        CardKind::Read => {
            if let Some(view) = meta.and_then(|m| read_view(m, content, root)) {
                card.kind = CardKind::Read;
                card.read = Some(view);
            }
        }
        CardKind::Diff => {
            let path = presentation
                .locations
                .first()
                .map(|l| l.path.as_str())
                .or_else(|| presentation.preview.first().map(|p| p.path.as_str()))
                .unwrap_or("");
            let hunks = meta.and_then(|m| diff_hunks(path, m)).or_else(|| {
                (presentation.preview_is_result && !presentation.preview.is_empty())
                    .then(|| presentation.preview.iter().map(placed_preview_hunk).collect())
            });
            if let Some(hunks) = hunks {
                card.kind = CardKind::Diff;
                if let (Some(first), Some(loc)) = (hunks.first(), card.locations.first_mut()) {
                    loc.line = first.new_start.max(1);
                }
                // A change whose files are known only from its result (a revert): point at each.
                if card.locations.is_empty() {
                    for hunk in &hunks {
                        let path = absolute_path(root, &hunk.path);
                        if !hunk.path.is_empty() && !card.locations.iter().any(|l| l.path == path) {
                            card.locations.push(CardLocation { path, line: hunk.new_start.max(1) });
                        }
                    }
                }
                card.stats = Some(stats_of(&hunks));
                card.hunks = Some(hunks);
            }
        }
        CardKind::Search => {
            if let Some((view, locations)) = meta.and_then(|m| search_view(m, root)) {
                card.kind = CardKind::Search;
                card.search = Some(view);
                if !locations.is_empty() {
                    card.locations = locations;
                }
            }
        }
        CardKind::Generic => {}
        CardKind::Terminal => {
            card.kind = CardKind::Terminal;
            if let Some(call) = &presentation.terminal {
                card.terminal = Some(TerminalView::from_text(call, &joined_text(content)));
            }
            card.data = meta.cloned();
        }
        other => {
            card.kind = other.clone();
            card.data = meta.cloned().or_else(|| presentation.data.clone());
        }
    }
}

/// The hunks of diff meta: its unified `patch` when present (malformed ⇒ none), else its
/// non-empty, well-formed `diffs` (`{path, oldText, newText}`, placed when they
/// carry line numbers).
fn diff_hunks(path: &str, meta: &Value) -> Option<Vec<Hunk>> {
    if let Some(patch) = meta.get("patch") {
        return patch.as_str().and_then(|p| parse_patch(path, p)).filter(|h| !h.is_empty());
    }
    let diffs = meta.get("diffs")?.as_array()?;
    if diffs.is_empty() {
        return None;
    }
    let mut hunks = Vec::new();
    for diff in diffs {
        let preview: PreviewDiff = serde_json::from_value(diff.clone()).ok()?;
        let number = |key: &str| diff.get(key).and_then(Value::as_u64);
        let (lines, old_lines, new_lines) = typed_lines(&preview);
        match (number("oldStart"), number("newStart")) {
            (Some(old_start), Some(new_start)) => hunks.push(Hunk::new(
                preview.path.clone(),
                (old_start, old_lines),
                (new_start, new_lines),
                lines,
            )),
            _ => hunks.push(preview_hunk(&preview)),
        }
    }
    Some(hunks)
}

fn read_view(meta: &Value, content: &[ContentBlock], root: &str) -> Option<ReadView> {
    let view: ReadView = serde_json::from_value(meta.clone()).ok()?;
    if view.offset < 1 {
        return None;
    }
    let mut prev = 0;
    for line in &view.lines {
        if line.number <= prev || line.number < view.offset || line.number > view.total_lines {
            return None;
        }
        prev = line.number;
    }
    // A read window is shown only over the read envelope it came from: a policy that replaced
    // the text keeps the meta, and the card must not show a window the model never saw.
    let [ContentBlock::Text { text }] = content else { return None };
    if !text.starts_with("<path>") || !text.ends_with("</content>") {
        return None;
    }
    Some(ReadView { path: absolute_path(root, &view.path), ..view })
}

fn search_view(meta: &Value, root: &str) -> Option<(SearchView, Vec<CardLocation>)> {
    let shape = meta
        .get("shape")
        .and_then(Value::as_str)
        .unwrap_or(if meta.get("locations").is_some() { "locations" } else { "" });
    let truncated = meta.get("truncated").and_then(Value::as_bool).unwrap_or(false);
    let mut locations = Vec::new();
    let view = match shape {
        "paths" => {
            let paths: Vec<String> = serde_json::from_value(meta.get("paths")?.clone()).ok()?;
            let total = meta.get("total").and_then(Value::as_u64).unwrap_or(paths.len() as u64);
            locations = paths
                .iter()
                .map(|p| CardLocation { path: absolute_path(root, p), line: 1 })
                .collect();
            SearchView {
                shape: shape.into(),
                paths: Some(paths),
                files: None,
                locations: None,
                truncated,
                total,
            }
        }
        "matches" => {
            let files: Vec<SearchFile> = serde_json::from_value(meta.get("files")?.clone()).ok()?;
            let counted: u64 = files.iter().map(|f| f.matches.len() as u64).sum();
            let total = meta.get("total").and_then(Value::as_u64).unwrap_or(counted);
            for file in &files {
                for m in &file.matches {
                    locations.push(CardLocation {
                        path: absolute_path(root, &file.path),
                        line: m.line_number,
                    });
                }
            }
            SearchView {
                shape: shape.into(),
                paths: None,
                files: Some(files),
                locations: None,
                truncated,
                total,
            }
        }
        "locations" => {
            let locs: Vec<SearchLocation> =
                serde_json::from_value(meta.get("locations")?.clone()).ok()?;
            let total = meta.get("total").and_then(Value::as_u64).unwrap_or(locs.len() as u64);
            locations = locs
                .iter()
                .map(|l| CardLocation { path: absolute_path(root, &l.path), line: l.line })
                .collect();
            SearchView {
                shape: shape.into(),
                paths: None,
                files: None,
                locations: Some(locs),
                truncated,
                total,
            }
        }
        _ => return None,
    };
    Some((view, locations))
}

/// Parses a unified diff into typed hunks; `None` when it is malformed (counts that do not add up,
/// unknown line prefixes), so a hand-edited patch degrades to a generic card.
pub fn parse_patch(path: &str, patch: &str) -> Option<Vec<Hunk>> {
    let mut hunks = Vec::new();
    let mut lines = patch.split('\n').peekable();
    // A patch over several files (a revert's) names each one: its hunks carry that path.
    let (mut minus, mut current): (Option<&str>, Option<String>) = (None, None);
    while let Some(line) = lines.next() {
        if let Some(old) = line.strip_prefix("--- ") {
            minus = Some(old.strip_prefix("a/").unwrap_or(old));
            continue;
        }
        if let Some(new) = line.strip_prefix("+++ ") {
            let new = new.strip_prefix("b/").unwrap_or(new);
            current = Some(if new == "/dev/null" { minus.unwrap_or(new) } else { new }.to_owned());
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let header = line.strip_prefix("@@ -")?;
        let (ranges, _) = header.split_once(" @@")?;
        let (old, new) = ranges.split_once(" +")?;
        let (old_start, old_lines) = parse_range(old)?;
        let (new_start, new_lines) = parse_range(new)?;
        let mut typed = Vec::new();
        let (mut seen_old, mut seen_new) = (0, 0);
        while seen_old < old_lines || seen_new < new_lines {
            let body = lines.next()?;
            let (op, text) =
                body.split_at(body.char_indices().nth(1).map_or(body.len(), |(i, _)| i));
            match op {
                " " => {
                    seen_old += 1;
                    seen_new += 1;
                }
                "-" => seen_old += 1,
                "+" => seen_new += 1,
                "\\" => continue,
                _ => return None,
            }
            typed.push(HunkLine { op: op.to_owned(), text: text.to_owned() });
        }
        if seen_old != old_lines || seen_new != new_lines {
            return None;
        }
        while lines.peek().is_some_and(|l| l.starts_with('\\')) {
            lines.next();
        }
        let file = current.as_deref().unwrap_or(path);
        hunks.push(Hunk::new(file, (old_start, old_lines), (new_start, new_lines), typed));
    }
    Some(hunks)
}

fn parse_range(range: &str) -> Option<(u64, u64)> {
    match range.split_once(',') {
        Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
        None => Some((range.parse().ok()?, 1)),
    }
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
}
