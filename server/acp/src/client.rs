//! What toolhost asks of the ACP client while a prompt runs (docs/acp.md): permission for a call
//! (`session/request_permission`, with the call's proposed diff), the plan review, the agent's
//! questions (one form, `elicitation/create`, when the client offers forms; else each question's
//! options as the choices of a permission request), and the client's files — its unsaved buffers
//! — as the workspace's text backend (`fs/read_text_file`, `fs/write_text_file`).
//!
//! Every request here is sent from a prompt's own task, never from the connection's dispatch
//! loop (which would wait on itself), and is withdrawn when the call it serves is cancelled.

use crate::updates;
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationFormMode, ElicitationSchema,
    ElicitationSessionScope, PermissionOption, PermissionOptionKind, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification,
    SessionUpdate, ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, WriteTextFileRequest,
};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions, answers_of,
};
use toolhost_host::permissions as permission;
use toolhost_mcp::elicit;
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::{Answer, AskUserParams, AskUserResult, QuestionIntent};
use toolhost_workspace::{BackendFuture, TextBackend};

/// Option ids of a permission request.
pub const ALLOW: &str = "allow";
pub const ALLOW_ALWAYS: &str = "allow-always";
pub const DENY: &str = "deny";
const APPROVE: &str = "approve";
const KEEP_PLANNING: &str = "keep-planning";

/// One ACP session's line to its client, shared by the prompt's updates and the asker.
pub struct ClientLine {
    pub cx: ConnectionTo<Client>,
    pub session_id: SessionId,
    /// The workspace root as cards show it (diff paths are made absolute against it).
    pub root: String,
    /// The pending card of each running call of the session's runs (the calls it follows).
    pub pending: Mutex<HashMap<String, Card>>,
    /// The pending card of every running call of the host, as its listener heard it — before
    /// the call's body runs, so a permission request always finds its call's proposed diff even
    /// when the run has not yet told the session the call started.
    pub announced: Mutex<HashMap<String, Card>>,
    /// Tools the person allowed for the rest of the session ("Always allow").
    pub always: Mutex<HashSet<String>>,
    /// The client answers form elicitations (`elicitation.form` in its capabilities).
    pub forms: bool,
}

impl ClientLine {
    /// Sends a session update; a closed connection only loses the update.
    pub fn send(&self, update: SessionUpdate) {
        let note = SessionNotification::new(self.session_id.clone(), update);
        if let Err(err) = self.cx.send_notification(note) {
            tracing::debug!(%err, "an ACP update was not sent");
        }
    }

    fn pending_content(&self, call_id: &str) -> Vec<ToolCallContent> {
        let content = |cards: &Mutex<HashMap<String, Card>>| {
            let cards = cards.lock().unwrap_or_else(PoisonError::into_inner);
            cards.get(call_id).map(|card| updates::content(&self.root, card))
        };
        content(&self.pending).or_else(|| content(&self.announced)).unwrap_or_default()
    }

    /// Asks the client to pick one of `options` for call `call_id`; `None` when it cancelled the
    /// request (or the call was cancelled first).
    async fn pick(
        &self,
        call_id: &str,
        fields: ToolCallUpdateFields,
        options: Vec<PermissionOption>,
        stop: &CancellationToken,
    ) -> Result<Option<String>, String> {
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            ToolCallUpdate::new(ToolCallId::new(call_id), fields),
            options,
        );
        // Dropping the request's future (the call was cancelled) withdraws it from the client.
        let answer = tokio::select! {
            answer = self.cx.send_request(request).block_task() => answer,
            () = stop.cancelled() => return Ok(None),
        };
        match answer.map_err(|e| format!("the client did not answer: {e}"))?.outcome {
            RequestPermissionOutcome::Selected(selected) => {
                Ok(Some(selected.option_id.0.to_string()))
            }
            _ => Ok(None),
        }
    }

    async fn permission(
        &self,
        params: &AskUserParams,
        stop: &CancellationToken,
    ) -> Result<AskUserResult, String> {
        let allowed = |label: &str| AskUserResult {
            answers: vec![Answer {
                id: "permission".to_owned(),
                selected: vec![label.to_owned()],
                custom: None,
            }],
            dismissed: false,
        };
        let always =
            self.always.lock().unwrap_or_else(PoisonError::into_inner).contains(&params.tool);
        if always {
            return Ok(allowed(permission::ALLOW));
        }
        let fields = ToolCallUpdateFields::new()
            .title(params.title.clone())
            .status(ToolCallStatus::Pending)
            .content(self.pending_content(&params.call_id));
        let options = vec![
            PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Always allow {} in this session", params.tool),
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(DENY, "Deny", PermissionOptionKind::RejectOnce),
        ];
        let picked = self.pick(&params.call_id, fields, options, stop).await?;
        Ok(match picked.as_deref() {
            Some(ALLOW_ALWAYS) => {
                self.always
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(params.tool.clone());
                self.running(&params.call_id);
                allowed(permission::ALLOW)
            }
            Some(ALLOW) => {
                self.running(&params.call_id);
                allowed(permission::ALLOW)
            }
            Some(_) => allowed(permission::DENY),
            None => AskUserResult::dismissed(),
        })
    }

    /// The call was allowed: it runs now.
    fn running(&self, call_id: &str) {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            ToolCallId::new(call_id),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        )));
    }

    async fn plan_review(
        &self,
        params: &AskUserParams,
        stop: &CancellationToken,
    ) -> Result<AskUserResult, String> {
        let mut fields = ToolCallUpdateFields::new().title(params.title.clone());
        if let Some(plan) = &params.plan {
            fields = fields.content(vec![updates::text(plan)]);
        }
        let options = vec![
            PermissionOption::new(APPROVE, "Approve", PermissionOptionKind::AllowOnce),
            PermissionOption::new(KEEP_PLANNING, "Keep planning", PermissionOptionKind::RejectOnce),
        ];
        let id = params.questions.first().map_or_else(|| "plan".to_owned(), |q| q.id.clone());
        let picked = self.pick(&params.call_id, fields, options, stop).await?;
        let label = match picked.as_deref() {
            Some(APPROVE) => "Approve",
            Some(_) => "Keep planning",
            None => return Ok(AskUserResult::dismissed()),
        };
        Ok(AskUserResult {
            answers: vec![Answer { id, selected: vec![label.to_owned()], custom: None }],
            dismissed: false,
        })
    }

    /// The agent's questions: in one form when the client offers forms, else one permission
    /// request each, their options as the choices.
    async fn questions(
        &self,
        params: &AskUserParams,
        stop: &CancellationToken,
    ) -> Result<AskUserResult, String> {
        if self.forms { self.form(params, stop).await } else { self.choices(params, stop).await }
    }

    /// All the questions in one form (`elicitation/create`, tied to the asking call): a choice
    /// per question, several for a multi-select one, free text where there are no options, and
    /// an optional "other" answer beside each question with options.
    async fn form(
        &self,
        params: &AskUserParams,
        stop: &CancellationToken,
    ) -> Result<AskUserResult, String> {
        let schema: ElicitationSchema =
            serde_json::from_value(elicit::form_schema(params.intent, &params.questions))
                .map_err(|e| format!("cannot express the questions as a form: {e}"))?;
        let scope = ElicitationSessionScope::new(self.session_id.clone())
            .tool_call_id(ToolCallId::new(params.call_id.as_str()));
        let message =
            elicit::form_message(params.intent, params.plan.as_deref(), &params.questions);
        let request =
            CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), message);
        // Dropping the request's future (the call was cancelled) withdraws it from the client.
        let answer = tokio::select! {
            answer = self.cx.send_request(request).block_task() => answer,
            () = stop.cancelled() => return Ok(AskUserResult::dismissed()),
        };
        match answer.map_err(|e| format!("the client did not answer: {e}"))?.action {
            ElicitationAction::Accept(accepted) => {
                let content = serde_json::to_value(&accepted.content)
                    .map_err(|e| format!("the form's answer is not JSON: {e}"))?;
                Ok(AskUserResult {
                    answers: elicit::answers_from(&params.questions, Some(&content)),
                    dismissed: false,
                })
            }
            // Declined, cancelled, or an action a later revision adds: no answer.
            _ => Ok(AskUserResult::dismissed()),
        }
    }

    /// Each question as a permission request whose options are the question's. A question
    /// without options (free text) or with several answers cannot be asked this way.
    async fn choices(
        &self,
        params: &AskUserParams,
        stop: &CancellationToken,
    ) -> Result<AskUserResult, String> {
        if let Some(q) = params.questions.iter().find(|q| q.options.is_empty() || q.multi_select) {
            return Err(format!(
                "the ACP client offers no forms, so it can only pick one of a question's options; {:?} needs {}",
                q.question,
                if q.multi_select { "several answers" } else { "a typed answer" }
            ));
        }
        let mut answers = Vec::new();
        for question in &params.questions {
            let fields =
                ToolCallUpdateFields::new().content(vec![updates::text(&question.question)]);
            let options = question
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    PermissionOption::new(
                        i.to_string(),
                        o.label.clone(),
                        PermissionOptionKind::AllowOnce,
                    )
                })
                .collect();
            let Some(picked) = self.pick(&params.call_id, fields, options, stop).await? else {
                return Ok(AskUserResult::dismissed());
            };
            let label = picked
                .parse::<usize>()
                .ok()
                .and_then(|i| question.options.get(i))
                .map(|o| o.label.clone())
                .ok_or_else(|| {
                    format!("the client picked an option it was not offered: {picked}")
                })?;
            answers.push(Answer { id: question.id.clone(), selected: vec![label], custom: None });
        }
        Ok(AskUserResult { answers, dismissed: false })
    }
}

/// The client as the session's asker.
pub struct AcpAsker(pub Arc<ClientLine>);

impl UserQuestions for AcpAsker {
    fn ask(
        &self,
        request: QuestionRequest,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            let params = request.to_params();
            let result = match params.intent {
                QuestionIntent::Permission => self.0.permission(&params, &stop).await,
                QuestionIntent::PlanReview => self.0.plan_review(&params, &stop).await,
                _ => self.0.questions(&params, &stop).await,
            };
            let result = result
                .map_err(|e| QuestionError::Cancelled(format!("the editor could not ask: {e}")))?;
            answers_of(result)
        })
    }
}

/// The client's files: its open buffers, unsaved changes included.
#[derive(Clone)]
pub struct AcpFiles(pub Arc<ClientLine>);

impl std::fmt::Debug for AcpFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AcpFiles").field(&self.0.session_id).finish()
    }
}

fn client_error(err: agent_client_protocol::Error) -> std::io::Error {
    std::io::Error::other(format!("the editor refused: {err}"))
}

impl TextBackend for AcpFiles {
    fn read<'a>(&'a self, real_path: &'a Path) -> BackendFuture<'a, String> {
        Box::pin(async move {
            let request = ReadTextFileRequest::new(self.0.session_id.clone(), real_path);
            let answer =
                self.0.cx.send_request(request).block_task().await.map_err(client_error)?;
            Ok(answer.content)
        })
    }

    fn write<'a>(&'a self, real_path: &'a Path, text: &'a str) -> BackendFuture<'a, ()> {
        Box::pin(async move {
            let request =
                WriteTextFileRequest::new(self.0.session_id.clone(), real_path, text.to_owned());
            self.0.cx.send_request(request).block_task().await.map_err(client_error)?;
            Ok(())
        })
    }
}
