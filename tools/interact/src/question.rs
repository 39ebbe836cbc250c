//! `ask_user_question`: questions the person answers in their editor (or in the MCP client that
//! made the call). The value is the answers; the Native text is their compact JSON.

use crate::{SESSION_ONLY, short};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_contract::protocol::lsp_ext::{
    Answer, Question, QuestionIntent, QuestionOption, ToolAnnotations,
};
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{
    QuestionError, QuestionRequest, QuestionsHandle, Tool, ToolContext, ToolError,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionArg {
    /// The choice as shown and as answered.
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionArg {
    /// Names the answer.
    pub id: String,
    pub question: String,
    /// A short label for the question (a few words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The choices; without options the person answers in free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<OptionArg>>,
    /// Several options may be chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserQuestionArgs {
    /// The questions, asked together (at least one): each `{id, question, header?, options?,
    /// multi_select?}`.
    pub questions: Vec<QuestionArg>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AnswerOut {
    pub id: String,
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AskUserQuestionOutput {
    pub answers: Vec<AnswerOut>,
}

pub struct AskUserQuestionTool;

/// The wire form of the questions (`multi_select` becomes `multiSelect`).
pub(crate) fn wire_questions(args: &[QuestionArg]) -> Vec<Question> {
    args.iter()
        .map(|q| Question {
            id: q.id.clone(),
            question: q.question.clone(),
            header: q.header.clone(),
            options: q
                .options
                .iter()
                .flatten()
                .map(|o| QuestionOption {
                    label: o.label.clone(),
                    description: o.description.clone(),
                })
                .collect(),
            multi_select: q.multi_select == Some(true),
        })
        .collect()
}

/// One answer per question, in the questions' order, holding only what the question allows:
/// chosen labels that are options (one for a single-select question), free text as `custom`,
/// which replaces a single-select choice.
pub(crate) fn normalize(questions: &[Question], answers: &[Answer]) -> Vec<AnswerOut> {
    questions
        .iter()
        .map(|q| {
            let given = answers.iter().find(|a| a.id == q.id);
            let custom = given
                .and_then(|a| a.custom.as_deref())
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
            let mut selected: Vec<String> = Vec::new();
            for label in given.map(|a| a.selected.as_slice()).unwrap_or_default() {
                let known = q.options.iter().any(|o| &o.label == label);
                if known && !selected.contains(label) {
                    selected.push(label.clone());
                }
            }
            if !q.multi_select {
                if custom.is_some() {
                    selected.clear();
                } else {
                    selected.truncate(1);
                }
            }
            AnswerOut { id: q.id.clone(), selected, custom }
        })
        .collect()
}

/// What a session that cannot ask anybody answers (`NO_PROVIDER`). The model reads the same
/// sentence whichever route was missing (no editor answering questions, an MCP client without
/// elicitation); the person sees which one in their client.
pub(crate) const NO_PROVIDER: &str = "no user-questions provider is registered";

/// Asks through the session's question channel; a session without one cannot ask anybody.
pub(crate) async fn ask(
    cx: &ToolContext,
    request: QuestionRequest,
) -> Result<Vec<Answer>, QuestionError> {
    let Some(channel) = cx.capability::<QuestionsHandle>() else {
        return Err(QuestionError::NoProvider(NO_PROVIDER.to_owned()));
    };
    match channel.ask(request, cx.signal().clone()).await {
        Err(QuestionError::NoProvider(_)) => Err(QuestionError::NoProvider(NO_PROVIDER.to_owned())),
        other => other,
    }
}

/// How the routes report the person dismissing a question (`toolhost/askUser`'s `dismissed`,
/// an MCP form's cancel): the contract's `answers_of` and the MCP elicitation say it so.
const DISMISSED_BY_ROUTE: &str = "the user dismissed the question";

/// The failure the model reads when its questions got no answer: the reference's sentence for
/// each code, the same whichever route was asked. Only a question that ended otherwise than by
/// the person dismissing it keeps its route's reason (`the question was not answered within
/// <s> s`, `the user declined to answer`, `the editor could not ask: …`): the model may act on
/// a timeout differently than on a refusal.
fn question_failure(error: &QuestionError) -> ToolError {
    let message = match error {
        QuestionError::Aborted => "ask_user_question was aborted before the user answered",
        QuestionError::EmptyQuestions => "ask_user_question requires at least one question",
        QuestionError::NoProvider(_) => NO_PROVIDER,
        QuestionError::Cancelled(why) if why != DISMISSED_BY_ROUTE => why.as_str(),
        QuestionError::Cancelled(_) => "the user cancelled ask_user_question",
    };
    ToolError::typed("UserQuestionError", error.code(), message)
}

impl Tool for AskUserQuestionTool {
    type Args = AskUserQuestionArgs;
    type Output = AskUserQuestionOutput;

    fn name(&self) -> &str {
        "ask_user_question"
    }

    fn description(&self) -> String {
        "Ask the user one or more questions and wait for the answers. Each question has an id, \
         the question, an optional short header and options ({label, description?}); set \
         multi_select to allow several choices. The user can always answer in their own words \
         instead (returned as `custom`). Use it when a decision is theirs to make."
            .to_owned()
    }

    fn annotations(&self) -> ToolAnnotations {
        SESSION_ONLY
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let questions = args.get("questions").and_then(Value::as_array);
        let first = questions.and_then(|q| q.first());
        let label = first
            .and_then(|q| q.get("header").and_then(Value::as_str))
            .or_else(|| first.and_then(|q| q.get("question").and_then(Value::as_str)))
            .unwrap_or("question");
        let mut title = format!("Ask: {}", short(label, 60));
        let more = questions.map_or(0, Vec::len).saturating_sub(1);
        if more > 0 {
            title.push_str(&format!(" (+{more})"));
        }
        let presentation = CallPresentation::new(CardKind::Question, title);
        match serde_json::from_value::<Vec<QuestionArg>>(
            questions.map_or(Value::Null, |q| Value::Array(q.clone())),
        ) {
            Ok(parsed) => presentation.with_data(json!({ "questions": wire_questions(&parsed) })),
            Err(_) => presentation,
        }
    }

    async fn call(
        &self,
        args: AskUserQuestionArgs,
        cx: ToolContext,
    ) -> Result<AskUserQuestionOutput, ToolError> {
        // The reference's order: a call already aborted, then no questions, then nobody to ask.
        if cx.signal().is_cancelled() {
            return Err(question_failure(&QuestionError::Aborted));
        }
        if args.questions.is_empty() {
            return Err(question_failure(&QuestionError::EmptyQuestions));
        }
        let questions = wire_questions(&args.questions);
        let request = QuestionRequest::new(
            cx.call_id(),
            self.name(),
            QuestionIntent::Question,
            questions.clone(),
        );
        let answers = ask(&cx, request).await.map_err(|e| question_failure(&e))?;
        Ok(AskUserQuestionOutput { answers: normalize(&questions, &answers) })
    }

    fn render(
        &self,
        _args: &AskUserQuestionArgs,
        output: &AskUserQuestionOutput,
    ) -> Vec<ContentBlock> {
        vec![ContentBlock::text(serde_json::to_string(output).unwrap_or_default())]
    }

    fn presentation_meta(
        &self,
        args: &AskUserQuestionArgs,
        output: &AskUserQuestionOutput,
    ) -> Option<Value> {
        Some(json!({ "questions": wire_questions(&args.questions), "answers": output.answers }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(id: &str, options: &[&str], multi: bool) -> Question {
        Question {
            id: id.to_owned(),
            question: format!("{id}?"),
            header: None,
            options: options
                .iter()
                .map(|l| QuestionOption { label: (*l).to_owned(), description: None })
                .collect(),
            multi_select: multi,
        }
    }

    fn answer(id: &str, selected: &[&str], custom: Option<&str>) -> Answer {
        Answer {
            id: id.to_owned(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            custom: custom.map(str::to_owned),
        }
    }

    #[test]
    fn single_select_custom_replaces_the_choice() {
        let qs = [question("q", &["Yes", "No"], false)];
        let out = normalize(&qs, &[answer("q", &["Yes"], Some("maybe later"))]);
        assert_eq!(out[0].selected, Vec::<String>::new());
        assert_eq!(out[0].custom.as_deref(), Some("maybe later"));
    }

    #[test]
    fn answers_keep_only_known_labels_in_question_order() {
        let qs = [question("a", &["x", "y"], true), question("b", &["p", "q"], false)];
        let out = normalize(
            &qs,
            &[answer("b", &["q", "p"], None), answer("a", &["y", "z", "y", "x"], None)],
        );
        assert_eq!(out[0].id, "a");
        assert_eq!(out[0].selected, vec!["y".to_owned(), "x".to_owned()]);
        assert_eq!(out[1].selected, vec!["q".to_owned()]);
    }

    #[test]
    fn every_route_s_failure_reads_the_same() {
        let failure = |e: QuestionError| {
            let error = question_failure(&e);
            (error.code().map(str::to_owned), error.message)
        };
        assert_eq!(
            failure(QuestionError::NoProvider("no editor answers questions".into())),
            (Some("NO_PROVIDER".into()), "no user-questions provider is registered".into())
        );
        assert_eq!(
            failure(QuestionError::Cancelled("the user dismissed the question".into())),
            (Some("ASK_CANCELLED".into()), "the user cancelled ask_user_question".into())
        );
        assert_eq!(
            failure(QuestionError::Cancelled("the question was not answered within 1 s".into())),
            (Some("ASK_CANCELLED".into()), "the question was not answered within 1 s".into())
        );
        assert_eq!(
            failure(QuestionError::Aborted),
            (
                Some("ASK_ABORTED".into()),
                "ask_user_question was aborted before the user answered".into()
            )
        );
    }

    #[test]
    fn the_native_text_is_compact_json() {
        let output = AskUserQuestionOutput {
            answers: vec![AnswerOut {
                id: "q1".into(),
                selected: vec!["Yes".into()],
                custom: None,
            }],
        };
        let args = AskUserQuestionArgs { questions: vec![] };
        let text = AskUserQuestionTool.render(&args, &output);
        assert_eq!(
            text,
            vec![ContentBlock::text(r#"{"answers":[{"id":"q1","selected":["Yes"]}]}"#)]
        );
    }
}
