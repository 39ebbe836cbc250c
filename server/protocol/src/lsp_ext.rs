//! Shapes of toolhost's custom LSP methods (`toolhost/…`), camelCase on the wire.

use crate::card::Card;
use crate::result::ToolExecutionResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool says about its effects (MCP's tool annotations, declared by the tool itself):
/// clients run read-only tools in parallel and allow them in plan mode, and ask before
/// destructive ones. The defaults are MCP's: a tool that says nothing may do anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool changes nothing.
    pub read_only: bool,
    /// When it changes something, it may destroy what was there (meaningless when read-only).
    pub destructive: bool,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent: bool,
    /// It reaches beyond the workspace (the web, other services).
    pub open_world: bool,
}

impl Default for ToolAnnotations {
    fn default() -> Self {
        ToolAnnotations { read_only: false, destructive: true, idempotent: false, open_world: true }
    }
}

impl ToolAnnotations {
    /// A tool that only reads the workspace.
    pub const READ_ONLY: ToolAnnotations = ToolAnnotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// One tool as listed by `toolhost/listTools` and `toolhost tools --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
    #[serde(default)]
    pub annotations: ToolAnnotations,
}

/// Result of `toolhost/listTools`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListToolsResult {
    pub tools: Vec<ToolDescriptor>,
}

/// Params of `toolhost/callTool`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Attach socket only: the caller answers this call's questions itself (its MCP client can
    /// elicit), so `toolhost/askUser` for it goes back over the socket before the editor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub can_ask: bool,
    /// Attach socket only: a model makes the call (an MCP agent's), so a tool the host's
    /// `[code] mode` does not offer models is unknown to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_facing: bool,
}

/// Result of `toolhost/callTool` (and of `toolhost call --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub session_id: Option<String>,
    pub call_id: String,
    pub result: ToolExecutionResult,
    pub card: Card,
}

/// Params of `toolhost/listSessions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListSessionsParams {
    /// Every workspace's sessions instead of this workspace's.
    #[serde(default)]
    pub all: bool,
}

/// One session in a listing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub cwd: String,
    /// Epoch milliseconds.
    pub created_at: u64,
    pub calls: u64,
}

/// Result of `toolhost/listSessions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListSessionsResult {
    pub sessions: Vec<SessionInfo>,
    /// This workspace's worktree sessions, newest first (absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worktrees: Vec<WorktreeInfo>,
}

/// One worktree session: a session working in a checkout of its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeInfo {
    pub name: String,
    pub session_id: String,
    /// The folder its session works in.
    pub root: String,
    /// Its branch (`toolhost/<name>`); absent for a copy of a folder outside git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// `inUse` while a toolhost process works in it, else `idle`.
    pub state: WorktreeState,
    /// Files changed since it started, uncommitted work included (absent when git failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<u64>,
    /// Who made its latest call (an agent's name, `toolhost agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Epoch milliseconds.
    pub created_at: u64,
}

/// Whether a toolhost process works in a worktree session now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WorktreeState {
    InUse,
    Idle,
}

/// Params of `toolhost/worktreeNew`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeNewParams {
    /// Its name (letters, digits, `-`, `_`, `.`); a fresh one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Params of `toolhost/worktreeApply`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeApplyParams {
    /// The worktree session's name or session id.
    pub name: String,
    /// Take every hunk that merges cleanly without asking (default: the editor reviews them).
    #[serde(default)]
    pub all: bool,
}

/// Result of `toolhost/worktreeApply`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeApplyResult {
    /// The `apply_changes` call (absent when the worktree session changed nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallToolResult>,
}

/// Params of `toolhost/worktreeDiscard`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeDiscardParams {
    /// The worktree session's name or session id.
    pub name: String,
}

/// Params of `toolhost/watchSession`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatchSessionParams {
    /// The session the editor shows besides its own (a worktree session's); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Params of `toolhost/sessionChanged`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionChangedParams {
    pub session_id: String,
}

/// Params of `toolhost/replaySession`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySessionParams {
    pub session_id: String,
}

/// Result of `toolhost/replaySession`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplaySessionResult {
    pub cards: Vec<Card>,
    /// The own agent's conversation (`agent/*` records), in log order; absent when the session
    /// had no agent run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversation: Vec<ConversationRecord>,
    /// Present when the log is damaged: the cards are what could be read, and this says what
    /// was skipped and how to repair the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<LogDamage>,
}

/// What a replay of a damaged log stepped over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogDamage {
    /// One sentence to show: what was skipped, and the command that repairs the log
    /// (`toolhost sessions repair <id>`).
    pub notice: String,
    /// The unreadable stretches of the log, in order.
    pub skipped: Vec<SkippedRecords>,
}

/// A stretch of consecutive log lines that could not be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedRecords {
    /// 1-based number of its first line (the header is line 1).
    pub line: u64,
    /// How many lines it spans.
    pub lines: u64,
    /// Byte offset of its first line in `session.jsonl`.
    pub offset: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Why its first line could not be read.
    pub reason: String,
}

/// One `agent/*` record of a replayed session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationRecord {
    pub seq: u64,
    /// `agent/run`, `agent/message`, `agent/usage`, `agent/compaction` or `agent/end`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The record's data as logged (docs/protocol.md, "The agent's conversation").
    pub data: Value,
    /// The call whose card comes right before this record (none: before every card).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_call: Option<String>,
}

/// Params of the server→client `toolhost/lspQuery` (0-based UTF-16 position). On the wire they
/// also carry `requestId` (the request's JSON-RPC id), as every server→client request does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LspQueryParams {
    pub operation: String,
    pub uri: String,
    pub position: LspPosition,
}

/// A 0-based position in UTF-16 code units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LspPosition {
    pub line: u32,
    pub character: u32,
}

/// The experimental capability block toolhost reports in its initialize result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolhostServerCapability {
    pub version: String,
    pub session_id: String,
}

/// Who makes calls over an attach connection: an MCP client's `clientInfo`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallerInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Params of `toolhost/attach`, the first request on the attach socket (`toolhost mcp` joining
/// the editor's `toolhost serve`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachParams {
    /// The agent the calls come from; its name labels their cards.
    pub caller: CallerInfo,
    /// The MCP protocol revision the client negotiated, for the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The result shape chosen for the client (`structured` or `text`), for the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<String>,
}

/// Result of `toolhost/attach`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachResult {
    /// The editor's session, where the calls are logged.
    pub session_id: Option<String>,
    /// The workspace's primary root.
    pub workspace: String,
    /// The serving toolhost's version.
    pub version: String,
}

/// The custom method names.
pub mod methods {
    pub const LIST_TOOLS: &str = "toolhost/listTools";
    pub const CALL_TOOL: &str = "toolhost/callTool";
    pub const LIST_SESSIONS: &str = "toolhost/listSessions";
    pub const REPLAY_SESSION: &str = "toolhost/replaySession";
    /// Client→server request: make a worktree session (`WorktreeInfo`).
    pub const WORKTREE_NEW: &str = "toolhost/worktreeNew";
    /// Client→server request: bring a worktree session's changes into the workspace, hunk by
    /// hunk through the editor's review (`WorktreeApplyResult`).
    pub const WORKTREE_APPLY: &str = "toolhost/worktreeApply";
    /// Client→server request: remove a worktree session (worktree, branch, log).
    pub const WORKTREE_DISCARD: &str = "toolhost/worktreeDiscard";
    /// Client→server request: which other session the editor shows; the server then sends
    /// `toolhost/sessionChanged` whenever its log grows.
    pub const WATCH_SESSION: &str = "toolhost/watchSession";
    /// Server→client notification: the watched session's log grew (replay it again).
    pub const SESSION_CHANGED: &str = "toolhost/sessionChanged";
    pub const CARD: &str = "toolhost/card";
    pub const LSP_QUERY: &str = "toolhost/lspQuery";
    pub const CALL_TOOL_COMMAND: &str = "toolhost.callTool";
    /// Attach socket: the first request of a `toolhost mcp` connection.
    pub const ATTACH: &str = "toolhost/attach";
    /// Attach socket (server→client notification): the set of tools changed.
    pub const TOOLS_CHANGED: &str = "toolhost/toolsChanged";
    /// Client→server request: cancel a running call by its call id, whoever started it.
    pub const CANCEL_CALL: &str = "toolhost/cancelCall";
    /// Server→client notification: output a running call appended (terminal cards).
    pub const CALL_OUTPUT: &str = "toolhost/callOutput";
    /// Server→client notification: a notice for the session (a background job finished).
    pub const NOTICE: &str = "toolhost/notice";
    /// Server→client request: review a write/edit hunk by hunk before it is written.
    pub const REVIEW: &str = "toolhost/review";
    /// Client→server request (also on the attach socket): read or change the session's review
    /// settings.
    pub const SET_REVIEW: &str = "toolhost/setReview";
    /// Server→client request: questions for the person (`ask_user_question`, the plan review of
    /// `exit_plan_mode`); also sent over the attach socket to a `toolhost mcp` whose client can
    /// answer them (elicitation).
    pub const ASK_USER: &str = "toolhost/askUser";
    /// Client→server request (also on the attach socket): read or switch the session's plan mode.
    pub const SET_PLAN_MODE: &str = "toolhost/setPlanMode";
    /// Client→server request (also on the attach socket): read the session's structured output,
    /// or start a new run with the schema `structured_output` validates against.
    pub const STRUCTURED_OUTPUT: &str = "toolhost/structuredOutput";
    /// Client→server request: the state of every configured MCP server (`McpServersResult`).
    pub const MCP_SERVERS: &str = "toolhost/mcpServers";
    /// Server→client notification (`McpServersResult`): an MCP server's state or tools changed.
    pub const MCP_SERVERS_CHANGED: &str = "toolhost/mcpServersChanged";
    /// Client→server request: run toolhost's own agent on a prompt (a new chat, or the next
    /// prompt of one); answered when the run ends, cancelled with `$/cancelRequest`.
    pub const AGENT_PROMPT: &str = "toolhost/agentPrompt";
    pub const LIST_AGENTS: &str = "toolhost/listAgents";
    /// Client→server request: start a hosted agent's chat (without a prompt) and read the
    /// settings its agent offers — modes, models, thought levels (`AgentOptionsResult`).
    pub const AGENT_OPTIONS: &str = "toolhost/agentOptions";
    /// Client→server request: change one setting of a hosted agent's chat (`AgentOptionsResult`).
    pub const AGENT_SET_OPTION: &str = "toolhost/agentSetOption";
    /// Server→client notification: what a running agent prompt streams (text, reasoning, calls,
    /// usage, compaction, retries).
    pub const AGENT_UPDATE: &str = "toolhost/agentUpdate";
}

/// Params of `toolhost/agentPrompt`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPromptParams {
    pub prompt: String,
    /// The chat this prompt continues (its conversation so far is sent along); a new chat when
    /// absent or unknown to this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The permission mode for this prompt (`ask`, `accept-edits`, `plan`, `auto`); the
    /// configuration's `[agent] mode` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The model for this prompt; `[agent] model` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// An agent hosted over ACP to run instead of toolhost's own (`claude`, `codex`, `gemini`
    /// or an `[acp.agents.<name>]`; see `toolhost/listAgents`); `toolhost` or absent: the own
    /// agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Result of `toolhost/agentPrompt`: how the run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPromptResult {
    pub chat_id: String,
    pub run_id: String,
    /// `answered`, `structured`, `turn-limit`, `token-budget`, `cost-budget`, `cancelled` or
    /// `failed`.
    pub stop: String,
    pub turns: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub usage: crate::session_log::AgentTokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// A failed run's error: `CODE: message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Params of `toolhost/agentOptions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptionsParams {
    /// The hosted agent (as for `toolhost/agentPrompt`).
    pub agent: String,
    /// The chat to read; a new chat (its agent started, its session opened) when absent or
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
}

/// Params of `toolhost/agentSetOption`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSetOptionParams {
    pub chat_id: String,
    /// The option's `id` (from `toolhost/agentOptions`).
    pub option: String,
    /// One of the option's `values` (a select), or a boolean.
    pub value: Value,
}

/// Result of `toolhost/agentOptions` and `toolhost/agentSetOption`; also the `options` of an
/// `{type: "options"}` agent update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptionsResult {
    pub chat_id: String,
    pub options: Vec<AgentOption>,
}

/// One setting a hosted agent offers for its session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOption {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `mode`, `model`, `thought_level`, or the agent's own word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The value in effect: a value id (a select) or a boolean.
    pub current: Value,
    /// A select's choices (empty for a boolean).
    #[serde(default)]
    pub values: Vec<AgentOptionValue>,
}

/// One choice of a select option.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptionValue {
    pub value: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The group the agent files it under, when it groups its choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// Params of `toolhost/agentUpdate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentUpdateParams {
    pub chat_id: String,
    pub run_id: String,
    /// One of: `{type: "text", text}`, `{type: "reasoning", text}`, `{type: "toolCall", callId,
    /// name, card}`, `{type: "toolResult", callId, name, isError, text, card}`, `{type: "usage",
    /// promptTokens, completionTokens, totalTokens, cachedTokens}`, `{type: "compaction",
    /// tokensBefore, tokensAfter, pruned, summarized}`, `{type: "retry", attempt, delayMs,
    /// reason}` — the same lines `toolhost agent --json` prints.
    pub update: Value,
}

/// One configured MCP server as the bridge sees it (`toolhost/mcpServers`,
/// `toolhost mcp-servers --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    pub name: String,
    /// `stdio` or `streamable-http`.
    pub transport: String,
    /// `idle` (lazy, not started yet), `starting`, `ready`, `reconnecting`, `failed` or
    /// `stopped`.
    pub state: String,
    /// Public names of its registered tools.
    pub tools: Vec<String>,
    /// The MCP revision the server agreed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Why it failed, or what went wrong on the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Reconnect attempts in the current outage.
    #[serde(default)]
    pub attempts: u32,
}

/// Result of `toolhost/mcpServers`; params of `toolhost/mcpServersChanged`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServersResult {
    pub servers: Vec<McpServerStatus>,
}

/// One choice of a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One question for the person. Without options it is answered with free text (`custom`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// Names the answer.
    pub id: String,
    pub question: String,
    /// A short label (a chip or a picker's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    /// Several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

/// Why the questions are asked: clients draw a plan review differently.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum QuestionIntent {
    /// `ask_user_question`: the agent asks.
    #[default]
    Question,
    /// `exit_plan_mode`: approve the plan (`Approve`) or keep planning (`Keep planning`, or
    /// free-text feedback).
    PlanReview,
    /// toolhost's own agent asks whether a call may run (its permission mode): `Allow` or
    /// `Deny`.
    Permission,
}

/// Params of the server→client `toolhost/askUser` (on the wire also `requestId`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserParams {
    pub call_id: String,
    pub tool: String,
    /// The call's card title.
    pub title: String,
    /// The agent that asks, when it came through `toolhost mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    #[serde(default)]
    pub intent: QuestionIntent,
    pub questions: Vec<Question>,
    /// The plan to review (markdown), for `plan-review`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

/// The person's answer to one question: the labels chosen and free text ("Other").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Answer {
    pub id: String,
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

/// Result of `toolhost/askUser`: the answers, or `dismissed` when the person closed the question
/// without answering.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AskUserResult {
    #[serde(default)]
    pub answers: Vec<Answer>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dismissed: bool,
}

impl AskUserResult {
    /// The person closed the question without answering.
    pub fn dismissed() -> Self {
        AskUserResult { answers: Vec::new(), dismissed: true }
    }
}

/// Params of `toolhost/setPlanMode`: switch plan mode on or off (absent: just read it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetPlanModeParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
}

/// Result of `toolhost/setPlanMode`: whether the session is in plan mode now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanModeState {
    pub active: bool,
}

/// Params of `toolhost/structuredOutput`: `{}` reads the run's state; `schema` (a JSON Schema
/// object, or `null` for "any object") or `reset: true` starts a new run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StructuredOutputParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
}

/// Result of `toolhost/structuredOutput`: the run's schema and, once recorded, its value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StructuredOutputState {
    /// The schema `structured_output` validates against (`null`: any JSON object).
    pub schema: Option<Value>,
    pub recorded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// Params of the server→client `toolhost/review` (on the wire also `requestId`): a change about to
/// be written, for the person to accept or reject hunk by hunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewParams {
    pub call_id: String,
    pub tool: String,
    /// The call's card title (`Edit src/a.ts`).
    pub title: String,
    /// The agent that made the call, when it came through `toolhost mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The file's absolute path.
    pub path: String,
    /// The whole text before, LF-normalized (`""` for a new file).
    pub before: String,
    /// The whole text if every hunk is accepted, LF-normalized.
    pub after: String,
    /// The change in file order; decisions refer to these indexes.
    pub hunks: Vec<crate::card::Hunk>,
}

/// Result of `toolhost/review`: which hunks to write.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewResult {
    /// Indexes into the request's `hunks` to write; every other hunk is rejected.
    pub accepted: Vec<usize>,
    /// Free text for the model (why a hunk was rejected, what to do instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Whether a session's writes and edits wait for the person's review.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewMode {
    #[default]
    Off,
    Ask,
}

/// What happens when nobody can answer a review, or nobody does in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewFallback {
    /// The call fails and nothing is written.
    #[default]
    Deny,
    /// The whole change is written, and the Native text says it was not reviewed.
    Accept,
}

/// Params of `toolhost/setReview`: the settings to change (none: just read them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetReviewParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ReviewMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<ReviewFallback>,
}

/// Result of `toolhost/setReview`: the session's review settings now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewSettings {
    pub mode: ReviewMode,
    pub timeout_ms: u64,
    pub fallback: ReviewFallback,
}

/// `toolhost/cancelCall` params: the call to cancel (a card's `callId`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelCallParams {
    pub call_id: String,
}

/// `toolhost/cancelCall` result: whether a running call had that id (a finished call's id is not
/// an error: the Stop button may race the end).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CancelCallResult {
    pub cancelled: bool,
}

/// `toolhost/callOutput`: text appended to the output of the running call `callId`, at most ten
/// times a second per call. Clients append it to the pending card; the final `toolhost/card`
/// replaces it with the result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallOutputParams {
    pub call_id: String,
    pub text: String,
}

/// `toolhost/notice`: something the session should know that is not a call's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoticeParams {
    /// What sent it (`job`).
    pub source: String,
    /// The sentence to show.
    pub text: String,
    /// Structured detail (for `job`: the job's snapshot).
    #[serde(default)]
    pub data: serde_json::Value,
}
