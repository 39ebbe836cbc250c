//! The seams of the interaction tools (docs/tools.md, "Interaction"): asking the person
//! questions ([`UserQuestions`]), the session state those tools change — the todo list, plan
//! mode, the structured output of a run ([`InteractionState`]) — and the skills a session can
//! load ([`SkillCatalog`]). The host implements them (the editor's `toolhost/askUser`, an MCP
//! client's elicitation, the session log); tools only see these traits.

use crate::error::ToolError;
use crate::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_protocol::lsp_ext::{Answer, AskUserParams, AskUserResult, Question, QuestionIntent};

/// Questions one call asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuestionRequest {
    pub call_id: String,
    pub tool: String,
    pub intent: QuestionIntent,
    pub questions: Vec<Question>,
    /// The markdown plan under review (`plan-review`).
    pub plan: Option<String>,
    /// How the asking call is shown (its card's title; the tool's name until the host fills it).
    pub title: Option<String>,
    /// Who made the asking call, when it was another program (an MCP client's name).
    pub caller: Option<String>,
}

impl QuestionRequest {
    /// Questions of call `call_id` of `tool`.
    pub fn new(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        intent: QuestionIntent,
        questions: Vec<Question>,
    ) -> Self {
        QuestionRequest {
            call_id: call_id.into(),
            tool: tool.into(),
            intent,
            questions,
            plan: None,
            title: None,
            caller: None,
        }
    }

    /// The plan under review.
    pub fn with_plan(mut self, plan: impl Into<String>) -> Self {
        self.plan = Some(plan.into());
        self
    }

    /// The request as `toolhost/askUser` sends it.
    pub fn to_params(&self) -> AskUserParams {
        AskUserParams {
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            title: self.title.clone().unwrap_or_else(|| self.tool.clone()),
            caller: self.caller.clone(),
            intent: self.intent,
            questions: self.questions.clone(),
            plan: self.plan.clone(),
        }
    }
}

impl From<AskUserParams> for QuestionRequest {
    fn from(params: AskUserParams) -> Self {
        QuestionRequest {
            call_id: params.call_id,
            tool: params.tool,
            intent: params.intent,
            questions: params.questions,
            plan: params.plan,
            title: Some(params.title),
            caller: params.caller,
        }
    }
}

/// The answers of a `toolhost/askUser` result; a dismissal fails `ASK_CANCELLED`.
pub fn answers_of(result: AskUserResult) -> Result<Vec<Answer>, QuestionError> {
    if result.dismissed {
        return Err(QuestionError::Cancelled("the user dismissed the question".to_owned()));
    }
    Ok(result.answers)
}

/// Why questions got no answer. Codes are stable (`UserQuestionError`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    /// Nobody can be asked here (no editor that answers questions, no MCP client with
    /// elicitation).
    #[error("{0}")]
    NoProvider(String),
    /// The call was cancelled while it waited; the question was withdrawn.
    #[error("the question was withdrawn because the call was cancelled")]
    Aborted,
    /// The person dismissed the question, or it could not be answered (timeout, an error reply).
    #[error("{0}")]
    Cancelled(String),
    /// The call asked no questions.
    #[error("ask_user_question requires at least one question")]
    EmptyQuestions,
}

impl QuestionError {
    pub fn code(&self) -> &'static str {
        match self {
            QuestionError::NoProvider(_) => "NO_PROVIDER",
            QuestionError::Aborted => "ASK_ABORTED",
            QuestionError::Cancelled(_) => "ASK_CANCELLED",
            QuestionError::EmptyQuestions => "EMPTY_QUESTIONS",
        }
    }

    /// The typed tool failure (`UserQuestionError` with this code).
    pub fn to_tool_error(&self) -> ToolError {
        ToolError::typed("UserQuestionError", self.code(), self.to_string())
    }
}

/// Who answers questions — the one seam every route implements: the editor (`toolhost/askUser`),
/// an MCP client's elicitation, an ACP client, a terminal, an attached agent's own client; and
/// the host's router in front of them (each call's questions go to the MCP client that made it
/// when that client can elicit, else the session's editor, else fail `NO_PROVIDER`).
pub trait UserQuestions: Send + Sync {
    /// Asks and waits for the answers (one per question, in any order), the person's dismissal,
    /// or `cancel` (then the question is withdrawn and the result is `Aborted`).
    fn ask(
        &self,
        request: QuestionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>>;
}

/// The capability as tools get it.
pub type QuestionsHandle = Arc<dyn UserQuestions>;

/// Session state the interaction tools read and change. Changes that must wait for the call's
/// final result (the plan's approval, a structured value) are staged by the body and take
/// effect only when the call succeeds.
pub trait InteractionState: Send + Sync {
    /// The call wrote the todo list (the whole list; logged as `todo/write`).
    fn todos_written(&self, call_id: &str, todos: Value) -> BoxFuture<'_, ()>;
    /// Whether the session is in plan mode.
    fn plan_mode(&self) -> bool;
    /// The call's plan was approved: plan mode ends once the call succeeded.
    fn stage_plan_approved(&self, call_id: &str);
    /// The schema `structured_output` validates its arguments against in the current run
    /// (`None`: any JSON object).
    fn structured_schema(&self) -> Option<Value>;
    /// The call's structured value: recorded once the call succeeded, which ends the run.
    fn stage_structured(&self, call_id: &str, value: Value);
}

/// The capability as tools get it.
pub type InteractionHandle = Arc<dyn InteractionState>;

/// Where a skill's resources live (its value's `resourceBase`).
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ResourceBase {
    Directory { path: String },
    Url { url: String },
    Opaque { description: String },
}

/// One skill as a catalog lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    /// Where it was found (`workspace`, `user`).
    pub provider: String,
    /// Its `SKILL.md`.
    pub path: String,
    /// `false` when its front matter says `disable-model-invocation: true` (the person may still
    /// use it; the `skill` tool refuses it).
    pub model_invocable: bool,
}

/// A skill's instructions, read for a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedSkill {
    pub entry: SkillEntry,
    /// The instructions: `SKILL.md` after its front matter.
    pub content: String,
    pub resource_base: Option<ResourceBase>,
}

/// The skills of a session: discovered in the workspace and the user's config folder.
pub trait SkillCatalog: Send + Sync {
    /// Every skill, by name (the first found wins when two places define one name).
    fn skills(&self) -> Vec<SkillEntry>;
    /// The skill `name`, read now (`Ok(None)`: no such skill any more).
    fn load(&self, name: &str) -> Result<Option<LoadedSkill>, String>;
}

/// The capability as tools get it.
pub type SkillsHandle = Arc<dyn SkillCatalog>;
