//! `exit_plan_mode`: in plan mode the agent researches and writes a plan; this tool puts the plan
//! before the person (a `plan-review` question: Approve / Keep planning) and, once approved,
//! plan mode ends and the agent carries the plan out.

use crate::question::{NO_PROVIDER, ask};
use crate::{SESSION_ONLY, js_trim, js_whitespace, short};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_contract::protocol::lsp_ext::{
    Answer, Question, QuestionIntent, QuestionOption, ToolAnnotations,
};
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{
    InteractionHandle, QuestionError, QuestionRequest, QuestionsHandle, Tool, ToolContext,
    ToolError,
};

/// The Native text of an approved plan.
pub const PLAN_APPROVED_TEXT: &str =
    "Plan approved — plan mode exited; carry out the plan starting with your next step.";

const APPROVE: &str = "Approve";
const KEEP_PLANNING: &str = "Keep planning";
/// The review question's id, which its answer echoes.
const REVIEW_ID: &str = "plan";

const NO_SESSION: &str = "exit_plan_mode requires a calling agent (no session to switch)";
const NO_CHANNEL: &str = "no user-questions channel is available to review the plan; ask the \
                          user to switch the session mode instead";
const DISMISSED: &str = "The user dismissed the plan review to speak instead; stay in plan mode, \
                         stop here, and wait for their message.";
const KEEP_PLANNING_TEXT: &str =
    "The user chose to keep planning; revise the plan and present it again.";
const ABORTED: &str = "ask_user_question was aborted before the user answered";

/// Whether the answers approve the plan: exactly one answer to the review, choosing only
/// `Approve` and saying nothing else. Anything else keeps planning, with the person's free
/// text (verbatim) as feedback when they wrote some.
fn decision(answers: &[Answer]) -> Result<(), String> {
    let mut review = answers.iter().filter(|a| a.id == REVIEW_ID);
    let answer = match (review.next(), review.next()) {
        (Some(answer), None) => Some(answer),
        _ => None,
    };
    let approved = answer
        .is_some_and(|a| a.selected.len() == 1 && a.selected[0] == APPROVE && a.custom.is_none());
    if approved {
        return Ok(());
    }
    match answer.and_then(|a| a.custom.as_deref()).filter(|c| !c.is_empty()) {
        Some(feedback) => {
            Err(format!("The user chose to keep planning; their feedback: {feedback}"))
        }
        None => Err(KEEP_PLANNING_TEXT.to_owned()),
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitPlanModeArgs {
    /// The plan in markdown, starting with a `# ` heading.
    pub plan: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitPlanModeOutput {
    /// Always `true`: a plan that is not approved fails the call.
    pub approved: bool,
}

pub struct ExitPlanModeTool;

/// Whether the trimmed plan starts with exactly one `#`, white space (a line break too), then
/// text: the reference's test, character for character.
fn starts_with_heading(plan: &str) -> bool {
    let Some(rest) = js_trim(plan).strip_prefix('#') else { return false };
    let text = rest.trim_start_matches(js_whitespace);
    text.len() < rest.len() && !text.is_empty()
}

/// The plan's title: the text of its level-1 heading, when the (trimmed) plan starts with
/// exactly one `#`, whitespace, then text.
fn heading(plan: &str) -> Option<&str> {
    let rest = plan.trim().strip_prefix('#')?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.lines().next()?.trim();
    (!title.is_empty()).then_some(title)
}

fn review_question() -> Question {
    let option = |label: &str, description: &str| QuestionOption {
        label: label.to_owned(),
        description: Some(description.to_owned()),
    };
    Question {
        id: "plan".to_owned(),
        question: "Approve this plan?".to_owned(),
        header: Some("Plan".to_owned()),
        options: vec![
            option(APPROVE, "Leave plan mode; the agent carries out the plan."),
            option(KEEP_PLANNING, "Stay in plan mode; say what to change."),
        ],
        multi_select: false,
    }
}

impl Tool for ExitPlanModeTool {
    type Args = ExitPlanModeArgs;
    type Output = ExitPlanModeOutput;

    fn name(&self) -> &str {
        "exit_plan_mode"
    }

    fn description(&self) -> String {
        "In plan mode, present your plan (markdown starting with a `# ` heading) to the user for \
         approval. Approved: plan mode ends and you carry out the plan. Otherwise keep planning \
         with their feedback."
            .to_owned()
    }

    fn annotations(&self) -> ToolAnnotations {
        SESSION_ONLY
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let plan = args.get("plan").and_then(Value::as_str);
        let title = plan
            .and_then(heading)
            .map_or_else(|| "Plan".to_owned(), |h| format!("Plan: {}", short(h, 60)));
        let presentation = CallPresentation::new(CardKind::Plan, title);
        match plan {
            Some(plan) => presentation.with_data(json!({ "plan": plan })),
            None => presentation,
        }
    }

    async fn call(
        &self,
        args: ExitPlanModeArgs,
        cx: ToolContext,
    ) -> Result<ExitPlanModeOutput, ToolError> {
        let Some(state) = cx.capability::<InteractionHandle>() else {
            return Err(ToolError::plain(NO_SESSION));
        };
        if !state.plan_mode() {
            return Err(ToolError::plain("exit_plan_mode is only available in plan mode"));
        }
        if !starts_with_heading(&args.plan) {
            return Err(ToolError::plain(
                "exit_plan_mode requires a non-empty markdown plan starting with a # heading",
            ));
        }
        if cx.capability::<QuestionsHandle>().is_none() {
            return Err(ToolError::plain(NO_CHANNEL));
        }
        let request = QuestionRequest::new(
            cx.call_id(),
            self.name(),
            QuestionIntent::PlanReview,
            vec![review_question()],
        )
        .with_plan(args.plan.trim());
        let answers = match ask(&cx, request).await {
            Ok(answers) => answers,
            // A dismissal is the person taking the turn back to say something the two options
            // do not cover: not a failed review.
            Err(QuestionError::Cancelled(_)) => return Err(ToolError::plain(DISMISSED)),
            Err(QuestionError::NoProvider(_)) => {
                return Err(ToolError::typed("UserQuestionError", "NO_PROVIDER", NO_PROVIDER));
            }
            Err(QuestionError::Aborted) => {
                return Err(ToolError::typed("UserQuestionError", "ASK_ABORTED", ABORTED));
            }
            Err(other) => return Err(other.to_tool_error()),
        };
        if let Err(message) = decision(&answers) {
            return Err(ToolError::plain(message));
        }
        state.stage_plan_approved(cx.call_id());
        Ok(ExitPlanModeOutput { approved: true })
    }

    fn render(&self, _args: &ExitPlanModeArgs, _output: &ExitPlanModeOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(PLAN_APPROVED_TEXT)]
    }

    fn presentation_meta(
        &self,
        args: &ExitPlanModeArgs,
        output: &ExitPlanModeOutput,
    ) -> Option<Value> {
        Some(json!({ "plan": args.plan, "approved": output.approved }))
    }
}

#[cfg(test)]
mod tests {
    use super::{Answer, decision, heading, starts_with_heading};

    #[test]
    fn the_heading_test_is_the_reference_s() {
        for good in ["# Plan", "  #\tPlan\n", "#\nPlan", "# \n x", "\u{feff}# Plan"] {
            assert!(starts_with_heading(good), "{good:?}");
        }
        for bad in ["## Plan", "#Plan", "# ", "#", "", "Intro\n# Plan", "\u{85}# Plan"] {
            assert!(!starts_with_heading(bad), "{bad:?}");
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
    fn only_a_plain_approve_approves() {
        assert_eq!(decision(&[answer("plan", &["Approve"], None)]), Ok(()));
        let keep = Err(
            "The user chose to keep planning; revise the plan and present it again.".to_owned()
        );
        for answers in [
            vec![answer("plan", &["Keep planning"], None)],
            vec![answer("plan", &[], None)],
            vec![answer("plan", &["Approve", "Keep planning"], None)],
            vec![answer("plan", &["Approve"], Some(""))],
            vec![answer("plan", &["Approve"], None), answer("plan", &["Approve"], None)],
            vec![answer("other", &["Approve"], None)],
            vec![],
        ] {
            assert_eq!(decision(&answers), keep, "{answers:?}");
        }
        assert_eq!(
            decision(&[answer("plan", &["Approve"], Some(" split the migration"))]),
            Err("The user chose to keep planning; their feedback:  split the migration".to_owned())
        );
    }

    #[test]
    fn a_plan_starts_with_exactly_one_hash_then_whitespace_then_text() {
        assert_eq!(heading("  # Ship it\n\n- a"), Some("Ship it"));
        assert_eq!(heading("#\tTabbed"), Some("Tabbed"));
        assert_eq!(heading("## Title"), None);
        assert_eq!(heading("#Title"), None);
        assert_eq!(heading("# "), None);
        assert_eq!(heading("Intro\n# Title"), None);
    }
}
