//! The own agent's permission modes (docs/agent.md): a pre-execute policy of the registry that
//! looks only at calls the agent made (the host lists them for the call's duration with the run's
//! mode and depth): `ask` asks before every call that changes something — file edits through the
//! per-hunk review when an editor reviews, everything else (and edits without a reviewing editor)
//! through the question channel as Allow / Deny —; `accept-edits` asks only for calls that reach
//! beyond the workspace's files (`bash`, terminals, MCP tools that are not read-only); `plan` puts
//! the session in plan mode, so only read-only tools run until `exit_plan_mode` is approved, then
//! continues as `accept-edits`; `auto` never asks.

use crate::questions::SessionQuestions;
use crate::review::SessionReviewHandle;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_agent::PermissionMode;
use toolhost_contract::{BoxFuture, QuestionError, QuestionRequest, ToolError, UserQuestions};
use toolhost_protocol::lsp_ext::{Question, QuestionIntent, QuestionOption, ToolAnnotations};
use toolhost_registry::{
    ApprovalChannel, ApprovalOutcome, Execution, PreDecision, PreExecute, PreNext,
};

/// What a call asks before it runs, by mode and the tool's annotations.
fn needs_permission(mode: PermissionMode, annotations: ToolAnnotations) -> bool {
    if annotations.read_only {
        return false;
    }
    match mode {
        PermissionMode::Auto | PermissionMode::Plan => false,
        PermissionMode::AcceptEdits => !is_workspace_edit(annotations),
        PermissionMode::Ask => true,
    }
}

/// A change to the workspace's files (write, edit, revert): destructive, not open-world.
fn is_workspace_edit(annotations: ToolAnnotations) -> bool {
    annotations.destructive && !annotations.open_world
}

/// What is known of one running call of the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentCall {
    /// Its run's mode.
    pub mode: PermissionMode,
    /// Its run's depth: 1 for a top-level run, one more for each subagent level.
    pub depth: u32,
}

/// The permission modes of the agent's running calls; a pre-execute policy of the registry.
pub struct AgentPermissions {
    /// Each running call of the agent.
    calls: Mutex<HashMap<String, AgentCall>>,
    /// Tools whose calls start runs of the agent (`subagent`): starting one asks nothing, each
    /// of the run's own calls asks in its mode.
    delegating: Mutex<HashSet<String>>,
    review: SessionReviewHandle,
}

impl AgentPermissions {
    pub fn new(review: SessionReviewHandle) -> Self {
        AgentPermissions {
            calls: Mutex::new(HashMap::new()),
            delegating: Mutex::new(HashSet::new()),
            review,
        }
    }

    /// Calls of tool `name` start runs of the agent whose calls are checked one by one.
    pub fn add_delegating_tool(&self, name: &str) {
        self.delegating.lock().unwrap_or_else(PoisonError::into_inner).insert(name.to_owned());
    }

    /// Call `call_id` is the agent's until [`AgentPermissions::end`].
    pub fn begin(&self, call_id: &str, call: AgentCall) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).insert(call_id.to_owned(), call);
    }

    pub fn end(&self, call_id: &str) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(call_id);
    }

    /// The mode of the run that made call `call_id`; `None` when the agent did not make it.
    pub fn mode(&self, call_id: &str) -> Option<PermissionMode> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).get(call_id).map(|c| c.mode)
    }

    /// What is known of call `call_id`; `None` when the agent did not make it.
    pub fn call(&self, call_id: &str) -> Option<AgentCall> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).get(call_id).copied()
    }
}

impl PreExecute for AgentPermissions {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        next: PreNext<'a>,
    ) -> BoxFuture<'a, Result<PreDecision, ToolError>> {
        Box::pin(async move {
            let decision = next.run().await?;
            let Some(mode) = self.mode(&exec.call_id) else { return Ok(decision) };
            if decision != PreDecision::Allow {
                return Ok(decision);
            }
            // A subagent's own calls ask in its run's mode; starting one asks nothing.
            if self.delegating.lock().unwrap_or_else(PoisonError::into_inner).contains(&exec.name) {
                return Ok(decision);
            }
            let annotations = exec.tool().map(|tool| tool.annotations()).unwrap_or_default();
            if !needs_permission(mode, annotations) {
                return Ok(decision);
            }
            // An edit shown hunk by hunk in the editor is the better question.
            if is_workspace_edit(annotations) && self.review.has_reviewer() {
                self.review.force_review(&exec.call_id);
                return Ok(decision);
            }
            Ok(PreDecision::Ask { reason: None })
        })
    }
}

/// The answer that lets a call run.
pub const ALLOW: &str = "Allow";
pub const DENY: &str = "Deny";

/// `ask` decisions answered on the session's question channel (the editor's `toolhost/askUser`
/// with intent `permission`, the terminal, an MCP client that elicits).
pub struct QuestionApproval {
    pub questions: Arc<SessionQuestions>,
    pub review: SessionReviewHandle,
}

impl ApprovalChannel for QuestionApproval {
    fn request<'a>(
        &'a self,
        exec: &'a Execution,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ApprovalOutcome, ToolError>> {
        Box::pin(async move {
            let title = self
                .review
                .call_label(&exec.call_id)
                .map_or_else(|| exec.name.clone(), |(title, _)| title);
            let mut question = format!("Allow the agent to run {title}?");
            if let Some(reason) = reason {
                question.push_str(&format!(" ({reason})"));
            }
            let request = QuestionRequest::new(
                exec.call_id.clone(),
                exec.name.clone(),
                QuestionIntent::Permission,
                vec![Question {
                    id: "permission".to_owned(),
                    question,
                    header: Some("Permission".to_owned()),
                    options: vec![
                        QuestionOption {
                            label: ALLOW.to_owned(),
                            description: Some("run this call".to_owned()),
                        },
                        QuestionOption {
                            label: DENY.to_owned(),
                            description: Some("the agent is told you refused".to_owned()),
                        },
                    ],
                    multi_select: false,
                }],
            );
            let answers = self.questions.ask(request, exec.caller_signal().clone()).await;
            Ok(match answers {
                Ok(answers) => {
                    let allowed = answers
                        .iter()
                        .any(|a| a.custom.is_none() && a.selected.iter().any(|s| s == ALLOW));
                    if allowed { ApprovalOutcome::AllowedOnce } else { ApprovalOutcome::Rejected }
                }
                Err(QuestionError::NoProvider(_)) => ApprovalOutcome::Unavailable,
                Err(_) => ApprovalOutcome::Cancelled,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_ask_for_what_they_promise() {
        let read = ToolAnnotations { read_only: true, ..ToolAnnotations::default() };
        let edit =
            ToolAnnotations { destructive: true, open_world: false, ..ToolAnnotations::default() };
        let bash = ToolAnnotations { destructive: true, open_world: true, ..Default::default() };
        let other = ToolAnnotations::default();
        for (mode, expect) in [
            (PermissionMode::Ask, [false, true, true, true]),
            (PermissionMode::AcceptEdits, [false, false, true, true]),
            (PermissionMode::Plan, [false, false, false, false]),
            (PermissionMode::Auto, [false, false, false, false]),
        ] {
            let got = [read, edit, bash, other].map(|a| needs_permission(mode, a));
            assert_eq!(got, expect, "{mode:?}");
        }
    }
}
