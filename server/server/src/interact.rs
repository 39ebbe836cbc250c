//! The interaction tools' side of a session (docs/tools.md, "Interaction"): plan mode, the
//! structured output of a run and the todo list ([`SessionInteraction`], logged as `plan/mode`,
//! `structured/run`, `structured/output` and `todo/write` and restored when the session is
//! resumed), the guards that keep plan mode and a completed run honest, and the question channel
//! ([`SessionQuestions`]): a call's questions go to the MCP client that made it when that client
//! can elicit, else to the editor (`toolhost/askUser`, docs/protocol.md), else nowhere
//! (`NO_PROVIDER`). Questions share review's timeout and withdrawal rules.

use crate::editor::EditorBridge;
use crate::events::CallWatchers;
use crate::review::SessionReviewHandle;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::{
    BoxFuture, CancellationToken, Execution, Guard, InteractionState, QuestionError,
    QuestionRequest, QuestionsHandle, ToolError, UserQuestions,
};
use toolhost_protocol::lsp_ext::{
    Answer, AskUserParams, AskUserResult, PlanModeState, StructuredOutputParams,
    StructuredOutputState, methods,
};
use toolhost_session::SessionLog;

/// Log event types.
pub const PLAN_MODE: &str = "plan/mode";
pub const TODO_WRITE: &str = "todo/write";
pub const STRUCTURED_RUN: &str = "structured/run";
pub const STRUCTURED_OUTPUT: &str = "structured/output";

#[derive(Clone, Debug, Default)]
struct Run {
    schema: Option<Value>,
    recorded: Option<Value>,
}

#[derive(Debug, Default)]
struct Staged {
    plan_approved: bool,
    structured: Option<Value>,
}

/// Plan mode, the structured-output run and the todo list of one session.
pub struct SessionInteraction {
    log: Option<Arc<SessionLog>>,
    plan: Mutex<bool>,
    run: Mutex<Run>,
    staged: Mutex<HashMap<String, Staged>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Plain data: a panic elsewhere while holding the lock leaves it consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SessionInteraction {
    pub fn new(log: Option<Arc<SessionLog>>, plan_active: bool) -> Self {
        SessionInteraction {
            log,
            plan: Mutex::new(plan_active),
            run: Mutex::new(Run::default()),
            staged: Mutex::new(HashMap::new()),
        }
    }

    /// Restores plan mode and the run from a resumed session's state events (log order).
    pub fn restore(&self, events: &[(u64, String, Value)]) {
        for (_, kind, data) in events {
            match kind.as_str() {
                PLAN_MODE => {
                    if let Some(active) = data.get("active").and_then(Value::as_bool) {
                        *lock(&self.plan) = active;
                    }
                }
                STRUCTURED_RUN => {
                    let schema = data.get("schema").cloned().filter(|s| !s.is_null());
                    *lock(&self.run) = Run { schema, recorded: None };
                }
                STRUCTURED_OUTPUT => {
                    lock(&self.run).recorded =
                        Some(data.get("value").cloned().unwrap_or(Value::Null));
                }
                _ => {}
            }
        }
    }

    async fn append(&self, kind: &str, data: Value) {
        if let Some(log) = &self.log
            && let Err(err) = log.append(kind, data, true).await
        {
            tracing::warn!(kind, %err, "cannot log a session event");
        }
    }

    /// Whether the session is in plan mode now.
    pub fn plan_active(&self) -> bool {
        *lock(&self.plan)
    }

    /// `toolhost/setPlanMode`: switches plan mode (logged) and returns the state.
    pub async fn set_plan_mode(&self, active: Option<bool>) -> PlanModeState {
        if let Some(active) = active {
            *lock(&self.plan) = active;
            self.append(PLAN_MODE, json!({ "active": active })).await;
        }
        PlanModeState { active: *lock(&self.plan) }
    }

    /// `toolhost/structuredOutput`: the run's state; a schema or `reset` starts a new run. A
    /// schema that is not a usable JSON Schema object is refused (nothing changes).
    pub async fn structured(
        &self,
        params: StructuredOutputParams,
    ) -> Result<StructuredOutputState, String> {
        if params.schema.is_some() || params.reset {
            let schema = params.schema.filter(|s| !s.is_null());
            if let Some(schema) = &schema {
                check_schema(schema)?;
            }
            *lock(&self.run) = Run { schema: schema.clone(), recorded: None };
            self.append(STRUCTURED_RUN, json!({ "schema": schema })).await;
        }
        Ok(self.structured_state())
    }

    pub fn structured_state(&self) -> StructuredOutputState {
        let run = lock(&self.run);
        StructuredOutputState {
            schema: run.schema.clone(),
            recorded: run.recorded.is_some(),
            value: run.recorded.clone(),
        }
    }

    /// Starts a new run with `schema` unless the current run already has exactly that schema
    /// (the CLI's `--structured-schema` on every call of one session).
    pub async fn ensure_run(&self, schema: Value) -> Result<(), String> {
        let schema = Some(schema).filter(|s| !s.is_null());
        if lock(&self.run).schema == schema {
            return Ok(());
        }
        let params =
            StructuredOutputParams { schema: Some(schema.unwrap_or(Value::Null)), reset: true };
        self.structured(params).await.map(drop)
    }

    /// Applies what call `call_id` staged, now that its result is final: only a success ends
    /// plan mode or records the run's value.
    pub async fn settle(&self, call_id: &str, success: bool) {
        let staged = lock(&self.staged).remove(call_id);
        let Some(staged) = staged.filter(|_| success) else { return };
        if staged.plan_approved {
            *lock(&self.plan) = false;
            self.append(PLAN_MODE, json!({ "active": false, "callId": call_id })).await;
        }
        if let Some(value) = staged.structured {
            lock(&self.run).recorded = Some(value.clone());
            self.append(STRUCTURED_OUTPUT, json!({ "callId": call_id, "value": value })).await;
        }
    }

    fn recorded(&self) -> bool {
        lock(&self.run).recorded.is_some()
    }
}

/// A structured-output schema must be a JSON Schema object that compiles.
fn check_schema(schema: &Value) -> Result<(), String> {
    if !schema.is_object() {
        return Err("the structured output schema must be a JSON Schema object".to_owned());
    }
    toolhost_contract::CompiledSchema::compile("structured_output", "schema", schema.clone())
        .map(drop)
        .map_err(|e| e.to_string())
}

impl InteractionState for SessionInteraction {
    fn todos_written(&self, call_id: &str, todos: Value) -> BoxFuture<'_, ()> {
        let data = json!({ "todos": todos, "callId": call_id });
        Box::pin(async move { self.append(TODO_WRITE, data).await })
    }

    fn plan_mode(&self) -> bool {
        *lock(&self.plan)
    }

    fn stage_plan_approved(&self, call_id: &str) {
        lock(&self.staged).entry(call_id.to_owned()).or_default().plan_approved = true;
    }

    fn structured_schema(&self) -> Option<Value> {
        lock(&self.run).schema.clone()
    }

    fn stage_structured(&self, call_id: &str, value: Value) {
        lock(&self.staged).entry(call_id.to_owned()).or_default().structured = Some(value);
    }
}

type AnnotationsOf = Box<dyn Fn(&str) -> ToolAnnotations + Send + Sync>;

/// In plan mode only tools that change nothing run (reads, searches, questions, the plan).
pub struct PlanModeGuard {
    pub state: Arc<SessionInteraction>,
    pub annotations: AnnotationsOf,
}

impl Guard for PlanModeGuard {
    fn check(&self, exec: &Execution) -> Result<Option<String>, ToolError> {
        if !self.state.plan_mode() || (self.annotations)(&exec.name).read_only {
            return Ok(None);
        }
        Ok(Some(format!(
            "plan mode is active: `{}` is not available until the plan is approved (exit_plan_mode)",
            exec.name
        )))
    }
}

/// Once the run's structured output is recorded, the run is complete: nothing else runs.
pub struct RunCompleteGuard(pub Arc<SessionInteraction>);

impl Guard for RunCompleteGuard {
    fn check(&self, exec: &Execution) -> Result<Option<String>, ToolError> {
        Ok(self.0.recorded().then(|| toolhost_tools_interact::already_recorded(&exec.name)))
    }
}

/// Who answers `toolhost/askUser`: the editor, or a script in tests.
pub trait Asker: Send + Sync {
    /// Asks and waits; stops (withdrawing the question) when `stop` fires. An `Err` means the
    /// asker could not ask.
    fn ask(
        &self,
        params: AskUserParams,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<AskUserResult, String>>;
}

/// The editor as the asker: the server→client request `toolhost/askUser`, withdrawn with
/// `$/cancelRequest` when the wait stops.
pub struct EditorAsker(pub EditorBridge);

impl Asker for EditorAsker {
    fn ask(
        &self,
        params: AskUserParams,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<AskUserResult, String>> {
        Box::pin(async move {
            let answer = self.0.request(methods::ASK_USER, &params, &stop).await;
            let value = answer.map_err(|e| format!("{} ({})", e.message, e.code))?;
            serde_json::from_value(value).map_err(|e| format!("unexpected result: {e}"))
        })
    }
}

/// The `toolhost/askUser` params of `request`, shown with its call's `(title, caller)`.
pub fn ask_params(
    request: QuestionRequest,
    label: Option<(String, Option<String>)>,
) -> AskUserParams {
    AskUserParams {
        call_id: request.call_id,
        title: label.as_ref().map_or_else(|| request.tool.clone(), |(title, _)| title.clone()),
        caller: label.and_then(|(_, caller)| caller),
        tool: request.tool,
        intent: request.intent,
        questions: request.questions,
        plan: request.plan,
    }
}

/// The answers of a `toolhost/askUser` result; a dismissal fails `ASK_CANCELLED`.
pub fn answers_of(result: AskUserResult) -> Result<Vec<Answer>, QuestionError> {
    if result.dismissed {
        return Err(QuestionError::Cancelled("the user dismissed the question".to_owned()));
    }
    Ok(result.answers)
}

/// The question channel of one session.
pub struct SessionQuestions {
    editor: Mutex<Option<Arc<dyn Asker>>>,
    /// Per call: the MCP client that made it, when it can elicit.
    routes: Mutex<HashMap<String, QuestionsHandle>>,
    review: SessionReviewHandle,
    watchers: CallWatchers,
}

fn no_provider() -> QuestionError {
    QuestionError::NoProvider(
        "nobody can answer questions here: no connected editor answers them and the calling MCP \
         client does not support elicitation"
            .to_owned(),
    )
}

impl SessionQuestions {
    pub fn new(review: SessionReviewHandle, watchers: CallWatchers) -> Self {
        SessionQuestions {
            editor: Mutex::new(None),
            routes: Mutex::new(HashMap::new()),
            review,
            watchers,
        }
    }

    /// The editor that advertised `experimental.toolhost.askUser`, or none.
    pub fn set_editor(&self, asker: Option<Arc<dyn Asker>>) {
        *lock(&self.editor) = asker;
    }

    /// Sends call `call_id`'s questions to `asker` first (an MCP client's elicitation).
    pub fn route(&self, call_id: &str, asker: QuestionsHandle) {
        lock(&self.routes).insert(call_id.to_owned(), asker);
    }

    pub fn unroute(&self, call_id: &str) {
        lock(&self.routes).remove(call_id);
    }

    async fn ask_editor(
        &self,
        editor: Arc<dyn Asker>,
        request: QuestionRequest,
        stop: CancellationToken,
    ) -> Result<Vec<Answer>, QuestionError> {
        let label = self.review.call_label(&request.call_id);
        match editor.ask(ask_params(request, label), stop).await {
            Ok(result) => answers_of(result),
            Err(err) => Err(QuestionError::Cancelled(format!("the editor could not ask: {err}"))),
        }
    }
}

impl UserQuestions for SessionQuestions {
    fn ask(
        &self,
        request: QuestionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            if request.questions.is_empty() {
                return Err(QuestionError::EmptyQuestions);
            }
            let timeout_ms = self.review.settings().timeout_ms;
            let stop = cancel.child_token();
            let timer = {
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(timeout_ms)).await;
                    stop.cancel();
                })
            };
            // Agents following the call (over MCP) quote this in their progress messages.
            let what = if request.plan.is_some() { "review of the plan" } else { "answer" };
            self.watchers.forward(&request.call_id, &format!("waiting for the user's {what}\n"));
            let route = lock(&self.routes).get(&request.call_id).cloned();
            let mut answer = Err(no_provider());
            if let Some(route) = route {
                answer = route.ask(request.clone(), stop.clone()).await;
            }
            let editor = lock(&self.editor).clone();
            if matches!(answer, Err(QuestionError::NoProvider(_)))
                && !stop.is_cancelled()
                && let Some(editor) = editor
            {
                answer = self.ask_editor(editor, request, stop.clone()).await;
            }
            timer.abort();
            if cancel.is_cancelled() {
                return Err(QuestionError::Aborted);
            }
            if stop.is_cancelled() {
                return Err(QuestionError::Cancelled(format!(
                    "the question was not answered within {} s",
                    timeout_ms.div_ceil(1000)
                )));
            }
            answer
        })
    }
}
