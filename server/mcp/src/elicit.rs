//! Questions asked through the MCP client (docs/mcp.md, "Questions"): a call's
//! `ask_user_question` or plan review becomes one form elicitation — a property per question (a
//! titled single- or multi-select enum, or free text) plus an optional "other" text per question
//! with options — and the form's content becomes the answers. Clients on 2025-06-18/2025-11-25
//! get `elicitation/create` while the call waits; on 2026-07-28, where servers may not send
//! requests, `tools/call` returns an input-required result and the call waits, suspended, for the
//! client to retry with the answer ([`Suspended`]). `toolhost acp` asks an ACP client's forms
//! with the same schema and reads their content the same way ([`form_schema`], [`answers_from`]).

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolhost_contract::protocol::lsp_ext::{Answer, Question, QuestionIntent};
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions,
};

/// The key of a question's free-text field.
fn other_key(id: &str) -> String {
    format!("{id}__other")
}

fn option_title(label: &str, description: Option<&str>) -> String {
    match description {
        Some(d) if !d.is_empty() => format!("{label} — {d}"),
        _ => label.to_owned(),
    }
}

fn property(question: &Question) -> Value {
    let title = question.header.clone().unwrap_or_else(|| question.question.clone());
    if question.options.is_empty() {
        return json!({"type": "string", "title": title, "description": question.question});
    }
    let choices: Vec<Value> = question
        .options
        .iter()
        .map(|o| json!({"const": o.label, "title": option_title(&o.label, o.description.as_deref())}))
        .collect();
    if question.multi_select {
        json!({"type": "array", "title": title, "description": question.question,
               "items": {"anyOf": choices}})
    } else {
        json!({"type": "string", "title": title, "description": question.question, "oneOf": choices})
    }
}

/// The form schema asking `questions` (JSON, as MCP's `requestedSchema`; ACP's form
/// elicitations take the same shape): a property per question, and beside each question with
/// options an optional free-text one — the "other" answer, or for a plan review the feedback.
pub fn form_schema(intent: QuestionIntent, questions: &[Question]) -> Value {
    let mut properties = Map::new();
    for question in questions {
        properties.insert(question.id.clone(), property(question));
        if !question.options.is_empty() {
            let label = question.header.as_deref().unwrap_or("Answer");
            let prompt = if intent == QuestionIntent::PlanReview {
                "Feedback (keeps planning)".to_owned()
            } else {
                format!("{label}: other answer (optional)")
            };
            properties.insert(other_key(&question.id), json!({"type": "string", "title": prompt}));
        }
    }
    json!({"type": "object", "properties": properties})
}

/// The message a form shows above its fields.
pub fn form_message(intent: QuestionIntent, plan: Option<&str>, questions: &[Question]) -> String {
    match (intent, plan, questions) {
        (QuestionIntent::PlanReview, Some(plan), _) => {
            format!("The agent asks you to approve its plan:\n\n{plan}")
        }
        (_, _, [only]) => only.question.clone(),
        (_, _, questions) => format!("The agent asks {} questions.", questions.len()),
    }
}

/// The form asking `request`'s questions.
pub fn form_for(request: &QuestionRequest) -> Result<ElicitRequestParams, String> {
    let schema: ElicitationSchema =
        serde_json::from_value(form_schema(request.intent, &request.questions))
            .map_err(|e| format!("cannot express the questions as a form: {e}"))?;
    let message = form_message(request.intent, request.plan.as_deref(), &request.questions);
    let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
    serde_json::from_value(params).map_err(|e| format!("cannot build the form: {e}"))
}

/// The answers in a form's content (labels of each question's options, free text as `custom`).
pub fn answers_from(questions: &[Question], content: Option<&Value>) -> Vec<Answer> {
    let content = content.and_then(Value::as_object);
    questions
        .iter()
        .map(|q| {
            let field = content.and_then(|c| c.get(&q.id));
            let mut selected = Vec::new();
            let mut custom = None;
            match field {
                Some(Value::String(text)) if q.options.is_empty() => custom = Some(text.clone()),
                Some(Value::String(label)) => selected.push(label.clone()),
                Some(Value::Array(labels)) => {
                    selected.extend(labels.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                _ => {}
            }
            let other = content.and_then(|c| c.get(&other_key(&q.id))).and_then(Value::as_str);
            if let Some(other) = other.map(str::trim).filter(|o| !o.is_empty()) {
                custom = Some(other.to_owned());
            }
            Answer { id: q.id.clone(), selected, custom }
        })
        .collect()
}

/// What the person did with the form.
pub fn answers_of(
    questions: &[Question],
    result: &ElicitResult,
) -> Result<Vec<Answer>, QuestionError> {
    match result.action {
        ElicitationAction::Accept => Ok(answers_from(questions, result.content.as_ref())),
        ElicitationAction::Decline => {
            Err(QuestionError::Cancelled("the user declined to answer".to_owned()))
        }
        // Cancel, and whatever a later revision adds: no answer.
        _ => Err(QuestionError::Cancelled("the user dismissed the question".to_owned())),
    }
}

/// A question a suspended call waits on (2026-07-28): the form, and where its answer goes.
pub struct PendingQuestion {
    pub form: ElicitRequestParams,
    pub answer: tokio::sync::oneshot::Sender<Result<ElicitResult, QuestionError>>,
}

/// How the MCP client is asked.
pub enum McpAsker {
    /// `elicitation/create` while the call waits (protocols before 2026-07-28).
    Request(Peer<RoleServer>),
    /// The form goes back to the request handler, which returns it to the client as an
    /// input-required result and delivers the answer of the retried request (2026-07-28).
    InputRequired(tokio::sync::mpsc::UnboundedSender<PendingQuestion>),
}

impl McpAsker {
    async fn elicit(&self, form: ElicitRequestParams) -> Result<ElicitResult, QuestionError> {
        match self {
            McpAsker::Request(peer) => peer.create_elicitation(form).await.map_err(|e| {
                QuestionError::Cancelled(format!("the MCP client could not ask: {e}"))
            }),
            McpAsker::InputRequired(suspend) => {
                let (answer, reply) = tokio::sync::oneshot::channel();
                if suspend.send(PendingQuestion { form, answer }).is_err() {
                    return Err(QuestionError::NoProvider("the MCP request went away".to_owned()));
                }
                reply.await.unwrap_or_else(|_| {
                    Err(QuestionError::Cancelled("the question was abandoned".to_owned()))
                })
            }
        }
    }
}

impl UserQuestions for McpAsker {
    fn ask(
        &self,
        request: QuestionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            let form = form_for(&request).map_err(QuestionError::NoProvider)?;
            let result = tokio::select! {
                result = self.elicit(form) => result?,
                () = cancel.cancelled() => return Err(QuestionError::Aborted),
            };
            answers_of(&request.questions, &result)
        })
    }
}

/// An input request of an input-required result.
pub fn input_request(form: ElicitRequestParams) -> rmcp::model::InputRequest {
    rmcp::model::InputRequest::Elicitation(ElicitRequest::new(form))
}

/// A call waiting, between two requests, for the answer to its question.
pub struct SuspendedCall<T> {
    pub task: tokio::task::JoinHandle<T>,
    pub questions: tokio::sync::mpsc::UnboundedReceiver<PendingQuestion>,
    pub answer: tokio::sync::oneshot::Sender<Result<ElicitResult, QuestionError>>,
    pub cancel: CancellationToken,
    since: Instant,
}

/// How long a suspended call waits for the client to retry before it is cancelled.
pub const SUSPENDED_FOR: Duration = Duration::from_secs(3600);

/// Calls suspended for input, by the opaque `requestState` handed to the client.
pub struct Suspended<T> {
    calls: Mutex<HashMap<String, SuspendedCall<T>>>,
}

impl<T> Default for Suspended<T> {
    fn default() -> Self {
        Suspended { calls: Mutex::new(HashMap::new()) }
    }
}

impl<T> Suspended<T> {
    /// Parks a call; returns its handle.
    pub fn park(
        &self,
        task: tokio::task::JoinHandle<T>,
        questions: tokio::sync::mpsc::UnboundedReceiver<PendingQuestion>,
        answer: tokio::sync::oneshot::Sender<Result<ElicitResult, QuestionError>>,
        cancel: CancellationToken,
    ) -> String {
        let handle = format!("toolhost-{:032x}", rand::random::<u128>());
        let call = SuspendedCall { task, questions, answer, cancel, since: Instant::now() };
        if let Ok(mut calls) = self.calls.lock() {
            // Calls whose client never came back are cancelled (their bodies end and are logged).
            calls.retain(|_, c| {
                let stale = c.since.elapsed() > SUSPENDED_FOR || c.task.is_finished();
                if stale {
                    c.cancel.cancel();
                }
                !stale
            });
            calls.insert(handle.clone(), call);
        }
        handle
    }

    pub fn take(&self, handle: &str) -> Option<SuspendedCall<T>> {
        self.calls.lock().ok()?.remove(handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::protocol::lsp_ext::QuestionOption;

    fn q(id: &str, options: &[&str], multi: bool) -> Question {
        Question {
            id: id.to_owned(),
            question: format!("{id}?"),
            header: Some(id.to_uppercase()),
            options: options
                .iter()
                .map(|l| QuestionOption { label: (*l).to_owned(), description: Some("d".into()) })
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn every_kind_of_question_becomes_a_valid_form() {
        let request = QuestionRequest::new(
            "c",
            "ask_user_question",
            QuestionIntent::Question,
            vec![
                q("db", &["Postgres", "SQLite"], false),
                q("os", &["a", "b"], true),
                q("name", &[], false),
            ],
        );
        let form = form_for(&request).expect("form");
        let wire = serde_json::to_value(&form).expect("json");
        let props = &wire["requestedSchema"]["properties"];
        assert_eq!(props["db"]["oneOf"][1]["const"], "SQLite");
        assert_eq!(props["os"]["type"], "array");
        assert_eq!(props["name"]["type"], "string");
        assert!(props.get("db__other").is_some());
        assert!(props.get("name__other").is_none());
    }

    #[test]
    fn content_becomes_answers() {
        let questions = [
            q("db", &["Postgres", "SQLite"], false),
            q("os", &["a", "b"], true),
            q("name", &[], false),
        ];
        let content = json!({"db": "SQLite", "os": ["a", "b"], "name": "Ann", "db__other": " "});
        let answers = answers_from(&questions, Some(&content));
        assert_eq!(answers[0].selected, vec!["SQLite".to_owned()]);
        assert_eq!(answers[0].custom, None);
        assert_eq!(answers[1].selected.len(), 2);
        assert_eq!(answers[2].custom.as_deref(), Some("Ann"));
    }
}
