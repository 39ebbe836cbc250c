//! `exit_plan_mode`: in plan mode the agent researches and writes a plan; this tool puts the plan
//! before the person (a `plan-review` question: Approve / Keep planning) and, once approved,
//! plan mode ends and the agent carries the plan out.

use crate::question::ask;
use crate::{SESSION_ONLY, short};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_contract::protocol::lsp_ext::{
    Question, QuestionIntent, QuestionOption, ToolAnnotations,
};
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{
    InteractionHandle, QuestionError, QuestionRequest, Tool, ToolContext, ToolError,
};

/// The Native text of an approved plan.
pub const PLAN_APPROVED_TEXT: &str =
    "Plan approved — plan mode exited; carry out the plan starting with your next step.";

const APPROVE: &str = "Approve";
const KEEP_PLANNING: &str = "Keep planning";

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
        let state = cx.capability::<InteractionHandle>();
        if !state.as_ref().is_some_and(|s| s.plan_mode()) {
            return Err(ToolError::plain("exit_plan_mode is only available in plan mode"));
        }
        if heading(&args.plan).is_none() {
            return Err(ToolError::plain(
                "exit_plan_mode requires a non-empty markdown plan starting with a # heading",
            ));
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
            Err(QuestionError::Cancelled(_)) => {
                return Err(ToolError::typed(
                    "UserQuestionError",
                    "ASK_CANCELLED",
                    "The user dismissed the plan review without deciding; stop here and wait for \
                     their instructions.",
                ));
            }
            Err(other) => return Err(other.to_tool_error()),
        };
        let answer = answers.into_iter().find(|a| a.id == "plan");
        let feedback = answer
            .as_ref()
            .and_then(|a| a.custom.as_deref())
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        let approved = feedback.is_none()
            && answer.as_ref().is_some_and(|a| a.selected.iter().any(|s| s == APPROVE));
        if !approved {
            let mut message =
                "The user chose to keep planning; stay in plan mode, revise the plan \
                               and call exit_plan_mode again when it is ready."
                    .to_owned();
            if let Some(feedback) = feedback {
                message.push_str(&format!(" Their feedback: {feedback}"));
            }
            return Err(ToolError::plain(message));
        }
        if let Some(state) = state {
            state.stage_plan_approved(cx.call_id());
        }
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
    use super::heading;

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
