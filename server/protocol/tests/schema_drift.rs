//! Keeps `docs/protocol.md` and the checked-in JSON schemas of the wire types in sync with the
//! Rust protocol types. Regenerate with `UPDATE_SCHEMAS=1 cargo test -p toolhost-protocol`.
#![allow(clippy::unwrap_used)]

use schemars::JsonSchema;
use std::path::{Path, PathBuf};
use toolhost_protocol::card::{CallPresentation, Card};
use toolhost_protocol::lsp_ext::{
    AgentOptionsParams, AgentOptionsResult, AgentPromptParams, AgentPromptResult,
    AgentSetOptionParams, AgentUpdateParams, AskUserParams, AskUserResult, McpServersResult,
    PlanModeState, SetPlanModeParams, StructuredOutputParams, StructuredOutputState,
};
use toolhost_protocol::lsp_ext::{
    AttachParams, AttachResult, CallOutputParams, CallToolParams, CallToolResult, CancelCallParams,
    CancelCallResult, ListSessionsParams, ListSessionsResult, ListToolsResult, LspQueryParams,
    NoticeParams, ReplaySessionParams, ReplaySessionResult, ReviewParams, ReviewResult,
    ReviewSettings, SessionChangedParams, SetReviewParams, ToolhostServerCapability,
    WatchSessionParams, WorktreeApplyParams, WorktreeApplyResult, WorktreeDiscardParams,
    WorktreeInfo, WorktreeNewParams, methods,
};
use toolhost_protocol::session_log::{
    AgentCompactionEvent, AgentEndEvent, AgentMessageEvent, AgentRunEvent, AgentUsageEvent,
    CodeDispatchEvent, CodeDispatchStartEvent, Envelope, FsChangeEvent, FsObservedEvent,
    RevertJournal, SessionHeader, ToolCallEvent, ToolResultEvent,
};
use toolhost_protocol::{DiffMeta, ToolExecutionResult};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn schema_of<T: JsonSchema>() -> String {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_string_pretty(&schema).unwrap() + "\n"
}

fn schemas() -> Vec<(&'static str, String)> {
    vec![
        ("ToolExecutionResult", schema_of::<ToolExecutionResult>()),
        ("Card", schema_of::<Card>()),
        ("CallPresentation", schema_of::<CallPresentation>()),
        ("DiffMeta", schema_of::<DiffMeta>()),
        ("ListToolsResult", schema_of::<ListToolsResult>()),
        ("CallToolParams", schema_of::<CallToolParams>()),
        ("CallToolResult", schema_of::<CallToolResult>()),
        ("ListSessionsParams", schema_of::<ListSessionsParams>()),
        ("ListSessionsResult", schema_of::<ListSessionsResult>()),
        ("ReplaySessionParams", schema_of::<ReplaySessionParams>()),
        ("WorktreeInfo", schema_of::<WorktreeInfo>()),
        ("WorktreeNewParams", schema_of::<WorktreeNewParams>()),
        ("WorktreeApplyParams", schema_of::<WorktreeApplyParams>()),
        ("WorktreeApplyResult", schema_of::<WorktreeApplyResult>()),
        ("WorktreeDiscardParams", schema_of::<WorktreeDiscardParams>()),
        ("WatchSessionParams", schema_of::<WatchSessionParams>()),
        ("SessionChangedParams", schema_of::<SessionChangedParams>()),
        ("ReplaySessionResult", schema_of::<ReplaySessionResult>()),
        ("LspQueryParams", schema_of::<LspQueryParams>()),
        ("AttachParams", schema_of::<AttachParams>()),
        ("AttachResult", schema_of::<AttachResult>()),
        ("CallOutputParams", schema_of::<CallOutputParams>()),
        ("CancelCallParams", schema_of::<CancelCallParams>()),
        ("CancelCallResult", schema_of::<CancelCallResult>()),
        ("NoticeParams", schema_of::<NoticeParams>()),
        ("ReviewParams", schema_of::<ReviewParams>()),
        ("ReviewResult", schema_of::<ReviewResult>()),
        ("SetReviewParams", schema_of::<SetReviewParams>()),
        ("ReviewSettings", schema_of::<ReviewSettings>()),
        ("AskUserParams", schema_of::<AskUserParams>()),
        ("AskUserResult", schema_of::<AskUserResult>()),
        ("SetPlanModeParams", schema_of::<SetPlanModeParams>()),
        ("PlanModeState", schema_of::<PlanModeState>()),
        ("StructuredOutputParams", schema_of::<StructuredOutputParams>()),
        ("StructuredOutputState", schema_of::<StructuredOutputState>()),
        ("McpServersResult", schema_of::<McpServersResult>()),
        ("AgentPromptParams", schema_of::<AgentPromptParams>()),
        ("AgentPromptResult", schema_of::<AgentPromptResult>()),
        ("AgentUpdateParams", schema_of::<AgentUpdateParams>()),
        ("AgentOptionsParams", schema_of::<AgentOptionsParams>()),
        ("AgentSetOptionParams", schema_of::<AgentSetOptionParams>()),
        ("AgentOptionsResult", schema_of::<AgentOptionsResult>()),
        ("ToolhostServerCapability", schema_of::<ToolhostServerCapability>()),
        ("SessionHeader", schema_of::<SessionHeader>()),
        ("Envelope", schema_of::<Envelope>()),
        ("ToolCallEvent", schema_of::<ToolCallEvent>()),
        ("ToolResultEvent", schema_of::<ToolResultEvent>()),
        ("CodeDispatchStartEvent", schema_of::<CodeDispatchStartEvent>()),
        ("CodeDispatchEvent", schema_of::<CodeDispatchEvent>()),
        ("FsObservedEvent", schema_of::<FsObservedEvent>()),
        ("FsChangeEvent", schema_of::<FsChangeEvent>()),
        ("RevertJournal", schema_of::<RevertJournal>()),
        ("AgentRunEvent", schema_of::<AgentRunEvent>()),
        ("AgentMessageEvent", schema_of::<AgentMessageEvent>()),
        ("AgentUsageEvent", schema_of::<AgentUsageEvent>()),
        ("AgentCompactionEvent", schema_of::<AgentCompactionEvent>()),
        ("AgentEndEvent", schema_of::<AgentEndEvent>()),
    ]
}

#[test]
fn checked_in_schemas_match_the_protocol_types() {
    let dir = docs().join("schemas");
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for (name, schema) in schemas() {
        let path = dir.join(format!("{name}.json"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &schema).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) if text == schema => {}
            _ => stale.push(name),
        }
    }
    assert!(
        stale.is_empty(),
        "schemas out of date (run UPDATE_SCHEMAS=1 cargo test -p toolhost-protocol): {stale:?}"
    );
}

#[test]
fn protocol_doc_covers_every_method_and_schema() {
    let doc = std::fs::read_to_string(docs().join("protocol.md")).unwrap();
    for method in [
        methods::LIST_TOOLS,
        methods::CALL_TOOL,
        methods::LIST_SESSIONS,
        methods::REPLAY_SESSION,
        methods::CARD,
        methods::LSP_QUERY,
        methods::CALL_TOOL_COMMAND,
        methods::ATTACH,
        methods::TOOLS_CHANGED,
        methods::CALL_OUTPUT,
        methods::CANCEL_CALL,
        methods::NOTICE,
        methods::REVIEW,
        methods::SET_REVIEW,
        methods::ASK_USER,
        methods::SET_PLAN_MODE,
        methods::STRUCTURED_OUTPUT,
        methods::MCP_SERVERS,
        methods::MCP_SERVERS_CHANGED,
    ] {
        assert!(
            doc.contains(&format!("`{method}`")),
            "docs/protocol.md does not document {method}"
        );
    }
    for (name, _) in schemas() {
        assert!(
            doc.contains(&format!("schemas/{name}.json")),
            "docs/protocol.md does not link schemas/{name}.json"
        );
    }
}
