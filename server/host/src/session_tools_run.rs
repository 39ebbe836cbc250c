//! One call of a session tool (a tool the agent defined with `tool_define`): the person's
//! approval of its definition before its first use, then its body — a program on `run_code`'s
//! runtime (`toolhost_tools_code::program`) whose `tools.<name>()` calls are real calls under
//! the defined tool's call through the host's nested-call capability (each its own card inside
//! the defined tool's card), and whose value the registry validates against the declared output
//! schema.

use crate::host::Host;
use crate::permissions::{ALLOW, DENY};
use crate::session_tools_log::{self as log, ApprovalRecord};
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost_agent::PermissionMode;
use toolhost_contract::{
    NestedCall, NestedCallsHandle, NestedOutcome, QuestionError, QuestionRequest, QuestionsHandle,
    ToolContext, ToolError,
};
use toolhost_protocol::lsp_ext::{Question, QuestionIntent, QuestionOption};
use toolhost_tools_code::CodeConfig;
use toolhost_tools_code::program::{self, Dispatch, Program, ProgramKind, Request};

/// The error type name of a session tool's own failures.
pub const ERROR_NAME: &str = "SessionToolError";
/// The person (or nobody) did not approve the definition: the body never ran.
pub const REJECTED: &str = "DEFINITION_REJECTED";
/// Nobody could be asked about the definition (no editor answers questions, no elicitation).
pub const NOT_APPROVED: &str = "DEFINITION_NOT_APPROVED";
/// The body threw, or ran out of a limit.
pub const FAILED: &str = "BODY_FAILED";

/// A session tool's body: `input`/`args`, `tools`, `ToolCallError`, `console`.
pub const SESSION_TOOL: ProgramKind = ProgramKind { prelude: include_str!("session_tools.js") };

/// Where a definition stands with the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    Pending,
    Approved,
    Rejected,
}

/// One definition in force: what a call of it needs.
pub struct Body {
    pub definition_id: String,
    pub name: String,
    pub code: String,
    pub config: CodeConfig,
    /// Held across the question, so concurrent first calls ask once.
    pub approval: tokio::sync::Mutex<Approval>,
}

/// Why `code` cannot run (its TypeScript does not strip, or its JavaScript does not compile);
/// the body is compiled, never started.
pub async fn check(code: &str, config: &CodeConfig) -> Result<(), String> {
    let dispatch: Dispatch = Arc::new(|_request: Request| {
        Box::pin(async { Err(("a checked body makes no calls".to_owned(), None)) })
    });
    let ran = program::run(Program {
        kind: SESSION_TOOL,
        code: code.to_owned(),
        data: json!({ "check": true }),
        config: config.clone(),
        signal: tokio_util::sync::CancellationToken::new(),
        dispatch,
        progress: None,
    })
    .await;
    ran.outcome.map(|_| ()).map_err(|failure| failure.message)
}

/// Calls `body` with `input` on `host`: approved first, then run.
pub async fn call(
    host: Arc<Host>,
    body: Arc<Body>,
    input: Value,
    cx: ToolContext,
) -> Result<Value, ToolError> {
    approve(&host, &body, &cx).await?;
    let nested = cx
        .capability::<NestedCallsHandle>()
        .ok_or_else(|| ToolError::plain("session tools cannot call other tools here"))?;
    let parent = cx.call_id().to_owned();
    let dispatch: Dispatch = Arc::new(move |request: Request| {
        let nested = Arc::clone(&nested);
        let parent = parent.clone();
        Box::pin(async move {
            if request.name != "tool" {
                return Err((format!("unknown request {}", request.name), None));
            }
            let name = request.arguments["name"].as_str().unwrap_or_default().to_owned();
            let call = NestedCall {
                root_call_id: parent.clone(),
                call_id: format!("{parent}:code:{}", request.n),
                parent_call_id: parent,
                name,
                arguments: request.arguments.get("arguments").cloned().unwrap_or(json!({})),
                cancel: request.cancel.clone(),
            };
            match nested.call(call).await {
                NestedOutcome::Value(value) => Ok(value),
                NestedOutcome::Failed { message, code } => Err((message, code)),
            }
        })
    });
    let ran = program::run(Program {
        kind: SESSION_TOOL,
        code: body.code.clone(),
        data: json!({ "input": input }),
        config: body.config.clone(),
        signal: cx.signal().clone(),
        dispatch,
        progress: None,
    })
    .await;
    match ran.outcome {
        Ok(value) => Ok(value.unwrap_or(Value::Null)),
        Err(_) if cx.is_cancelled() => Err(ToolError::aborted()),
        Err(failure) => {
            let mut message = format!("session tool {} failed: {}", body.name, failure.message);
            if !ran.logs.is_empty() {
                message.push_str("\nLogs:\n");
                message.push_str(&ran.logs.join("\n"));
            }
            Err(ToolError::typed(ERROR_NAME, FAILED, message))
        }
    }
}

/// The definition's approval: decided once (by the person, or by an agent run whose mode never
/// asks), recorded, and kept for the session.
async fn approve(host: &Host, body: &Body, cx: &ToolContext) -> Result<(), ToolError> {
    let mut approval = body.approval.lock().await;
    match *approval {
        Approval::Approved => return Ok(()),
        Approval::Rejected => return Err(rejected(&body.name)),
        Approval::Pending => {}
    }
    let mode = host.agent_permissions().mode(cx.call_id());
    let (approved, by) = if mode == Some(PermissionMode::Auto) {
        (true, "mode")
    } else {
        (ask(body, cx).await?, "person")
    };
    let record = ApprovalRecord {
        definition_id: body.definition_id.clone(),
        name: body.name.clone(),
        approved,
        by: by.to_owned(),
        call_id: cx.call_id().to_owned(),
    };
    log::record(host, log::APPROVAL, record).await;
    if approved {
        *approval = Approval::Approved;
        Ok(())
    } else {
        *approval = Approval::Rejected;
        Err(rejected(&body.name))
    }
}

fn rejected(name: &str) -> ToolError {
    ToolError::typed(
        ERROR_NAME,
        REJECTED,
        format!("the person rejected the definition of session tool {name}: it never runs"),
    )
}

/// Asks the person on the session's question channel whether the definition may run.
async fn ask(body: &Body, cx: &ToolContext) -> Result<bool, ToolError> {
    let questions = cx.capability::<QuestionsHandle>().ok_or_else(|| {
        ToolError::typed(ERROR_NAME, NOT_APPROVED, "nobody can approve a session tool here")
    })?;
    let question = format!(
        "The agent defined the tool {} for this session. Allow it to run this code (it may call \
         other tools, each checked as usual)?\n\n{}",
        body.name, body.code
    );
    let request = QuestionRequest::new(
        cx.call_id().to_owned(),
        body.name.clone(),
        QuestionIntent::Permission,
        vec![Question {
            id: "permission".to_owned(),
            question,
            header: Some("Session tool".to_owned()),
            options: vec![
                QuestionOption {
                    label: ALLOW.to_owned(),
                    description: Some("approve the definition for this session".to_owned()),
                },
                QuestionOption {
                    label: DENY.to_owned(),
                    description: Some("the definition never runs".to_owned()),
                },
            ],
            multi_select: false,
        }],
    );
    match questions.ask(request, cx.signal().clone()).await {
        Ok(answers) => {
            Ok(answers.iter().any(|a| a.custom.is_none() && a.selected.iter().any(|s| s == ALLOW)))
        }
        Err(QuestionError::NoProvider(why)) => Err(ToolError::typed(
            ERROR_NAME,
            NOT_APPROVED,
            format!("the definition of session tool {} needs approval: {why}", body.name),
        )),
        Err(_) if cx.is_cancelled() => Err(ToolError::aborted()),
        Err(e) => Err(ToolError::typed(
            ERROR_NAME,
            NOT_APPROVED,
            format!("the definition of session tool {} was not approved: {e}", body.name),
        )),
    }
}
