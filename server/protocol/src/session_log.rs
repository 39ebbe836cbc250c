//! Records of the append-only session log (one JSON object per line).

use crate::card::CallPresentation;
use crate::content::ContentBlock;
use crate::result::ErrorInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The log format version written in the header.
pub const LOG_VERSION: u32 = 1;

/// First line of every log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u32,
    pub id: String,
    pub cwd: String,
    pub created_at: u64,
}

/// Every line after the header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Envelope {
    #[serde(rename = "type")]
    pub kind: String,
    pub seq: u64,
    pub time: u64,
    pub data: Value,
    /// Strings of `data` the writer kept in the session's blob store instead of inline (only on
    /// `tool/call`, only strings over the session crate's threshold): each reads `""` in `data`
    /// and is restored by readers. Absent on other lines and in older logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub externalized: Vec<ExternalizedString>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignorable: bool,
}

/// One string of an envelope's `data` kept as a blob. Listed beside `data` rather than marked
/// inside it, so no argument a caller sends can be mistaken for a reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalizedString {
    /// Where the string is in `data` (a JSON pointer, RFC 6901), e.g. `/arguments/content`.
    pub pointer: String,
    /// The blob (sha256 hex) holding the string's UTF-8 bytes.
    pub blob: String,
    /// The string's length in bytes.
    pub bytes: u64,
}

/// `tool/call`: a call started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    /// How the tool presents the call (card kind, title, locations, preview). Absent in logs
    /// written before tools declared their cards: replay derives it with `card::legacy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CallPresentation>,
    /// Who made the call when it was not the editor or the CLI: an MCP client's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The call this one ran under (a subagent's call, a program's nested call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
}

impl ToolCallEvent {
    /// The call's presentation: the recorded one, or the one derived for an older log.
    pub fn presentation(&self) -> CallPresentation {
        match &self.card {
            Some(card) => card.clone(),
            None => crate::card::legacy::presentation(&self.name, &self.arguments),
        }
    }
}

/// `tool/result`: a call ended. Never carries the canonical value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent {
    pub call_id: String,
    pub name: String,
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    pub renderer_version: u32,
}

/// A [`ToolResultEvent`] borrowed from the call's result: what the host logs when a call ends,
/// written without first copying the call's content and presentation (a read's page is tens of
/// kilobytes of text, and its presentation as much again). Serializes exactly as the event does.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultRecord<'a> {
    pub call_id: &'a str,
    pub name: &'a str,
    pub content: &'a [ContentBlock],
    pub is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a ErrorInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<&'a Value>,
    pub renderer_version: u32,
}

impl ToolResultRecord<'_> {
    /// Whether any content block is an image (the log keeps those in its blob store).
    pub fn has_images(&self) -> bool {
        self.content.iter().any(|block| matches!(block, ContentBlock::Image { .. }))
    }
}

impl<'a> From<&'a ToolResultEvent> for ToolResultRecord<'a> {
    fn from(event: &'a ToolResultEvent) -> Self {
        ToolResultRecord {
            call_id: &event.call_id,
            name: &event.name,
            content: &event.content,
            is_error: event.is_error,
            error: event.error.as_ref(),
            meta: event.meta.as_ref(),
            renderer_version: event.renderer_version,
        }
    }
}

/// `tool/code-dispatch-start` (ignorable): a program's nested call started. The nested call has
/// its own `tool/call` and `tool/result` records (id `subCallId`, parent `parentCallId`); these two
/// events keep the program's view of it: what it asked, in submission order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeDispatchStartEvent {
    pub root_call_id: String,
    pub parent_call_id: String,
    /// `<parentCallId>:code:<n>`, n counting the program's calls from 1.
    pub sub_call_id: String,
    pub name: String,
    pub arguments: Value,
}

/// `tool/code-dispatch` (ignorable): a program's nested call settled, with the content it
/// rendered (the program itself received the call's canonical value, which is never logged).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeDispatchEvent {
    pub root_call_id: String,
    pub parent_call_id: String,
    pub sub_call_id: String,
    pub name: String,
    pub arguments: Value,
    pub is_error: bool,
    pub content: Vec<ContentBlock>,
}

/// `fs/observed` (ignorable): the observation ledger recorded a file version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FsObservedEvent {
    pub path: String,
    pub version: Option<String>,
}

/// `fs/change` (ignorable): a call changed a file. Both sides are kept as blobs of the session's
/// content-addressed store, so a revert can restore the exact bytes from the log alone (a unified
/// patch of LF-normalized text could not: it drops CRLF endings, a BOM and whole-file context).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsChangeEvent {
    pub call_id: String,
    /// The file's real absolute path.
    pub path: String,
    /// The blob (sha256 hex) of the bytes the call found; `null` when the file did not exist.
    pub before: Option<String>,
    /// The blob of the bytes the call left; `null` when it removed the file.
    pub after: Option<String>,
    /// The bytes the call found were too large to keep (`before` is then their version only),
    /// so this change cannot be reverted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before_not_kept: bool,
}

/// The journal of a multi-file revert in progress (`revert-journal.json` in the session folder):
/// written durably before the first file changes and removed after the last, so a crash in between
/// is rolled back on the next open — every file gets its `original` bytes back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevertJournal {
    /// The revert call that wrote it.
    pub call_id: String,
    pub files: Vec<RevertJournalFile>,
}

/// One file of a [`RevertJournal`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevertJournalFile {
    /// The real absolute path.
    pub path: String,
    /// The blob of the bytes before the revert; `null` when the file did not exist.
    pub original: Option<String>,
    /// The blob of the bytes the revert writes; `null` when it removes the file.
    pub target: Option<String>,
}

/// `agent/run` (ignorable): a run of toolhost's own agent started in this session. Later
/// `agent/*` records of the run carry its `runId`; a chat continues a run's conversation by
/// naming it as `continues`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunEvent {
    pub run_id: String,
    /// The model's name as configured.
    pub model: String,
    /// The permission mode (`ask`, `accept-edits`, `plan`, `auto`).
    pub mode: String,
    /// The run whose conversation this one continues (a later prompt of the same chat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    /// The `subagent` call that started this run, for a child run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// The chat of an agent hosted over ACP this turn belongs to (`model` is `acp:<agent>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// That agent's ACP session id, which a later server loads to continue the chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<String>,
}

/// One tool call an assistant message made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentToolCall {
    /// The model's id of the call.
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (text that may not be JSON).
    pub arguments: String,
}

/// `agent/message` (ignorable): one message of a run's conversation, in order — the system
/// prompt, a user prompt, an assistant turn (text, reasoning, tool calls) or a tool's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageEvent {
    pub run_id: String,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The model's reasoning (sent back to providers that require it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<AgentToolCall>,
    /// For a tool's answer: the model's id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool's answer: the call id of its card (`tool/call`, `tool/result`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// Token counts of one model request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentTokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
}

/// `agent/usage` (ignorable): what one model request cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentUsageEvent {
    pub run_id: String,
    #[serde(flatten)]
    pub tokens: AgentTokens,
    /// In the currency of `[agent.price]`, when prices are configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// `agent/compaction` (ignorable): the conversation was shortened before a request. With a
/// summary, every message after the run's first user message was replaced by it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCompactionEvent {
    pub run_id: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Tool outputs replaced by a short notice.
    pub pruned: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// `agent/end` (ignorable): a run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentEndEvent {
    pub run_id: String,
    /// `answered`, `structured`, `turn-limit`, `token-budget`, `cost-budget`, `cancelled` or
    /// `failed`.
    pub stop: String,
    pub turns: u32,
    pub usage: AgentTokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The value `structured_output` recorded, for a structured run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Why a failed run failed (a model error's code and message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
