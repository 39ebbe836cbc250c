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
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignorable: bool,
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
