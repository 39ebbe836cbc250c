//! The interaction tools (docs/tools.md, "Interaction"): `todo_write` (the session's task list),
//! `ask_user_question` (questions the person answers where they work), `exit_plan_mode` (the
//! plan review that ends plan mode), `skill` (instructions loaded from a skill file) and
//! `structured_output` (the run's typed result). They reach the person and the session only
//! through the contract's `UserQuestions`, `InteractionState` and `SkillCatalog` capabilities.

mod front_matter;
mod plan;
mod question;
pub mod skill;
mod structured;
mod todo;

pub use plan::{ExitPlanModeArgs, ExitPlanModeOutput, ExitPlanModeTool, PLAN_APPROVED_TEXT};
pub use question::{AskUserQuestionArgs, AskUserQuestionOutput, AskUserQuestionTool, QuestionArg};
pub use skill::{SkillArgs, SkillOutput, SkillTool};
pub use structured::{
    STRUCTURED_OUTPUT, StructuredOutput, already_recorded, structured_output_tool,
};
pub use todo::{TodoCounts, TodoItem, TodoStatus, TodoWriteArgs, TodoWriteOutput, TodoWriteTool};

use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::{Disposer, Registrar, RegistrationError};

/// Settings of the interaction tools (`[interact]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InteractConfig {
    /// `todo_write` accepts several `in_progress` items (the default: an agent often works on
    /// more than one step at a time, and refusing the list costs it a turn).
    pub allow_parallel_in_progress: bool,
}

impl Default for InteractConfig {
    fn default() -> Self {
        InteractConfig { allow_parallel_in_progress: true }
    }
}

/// `[interact]` as one source gives it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InteractSection {
    allow_parallel_in_progress: Option<bool>,
}

impl toolhost_contract::config::Section for InteractSection {
    type Settings = InteractConfig;

    fn apply(self, config: &mut InteractConfig, _layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(parallel) = self.allow_parallel_in_progress {
            config.allow_parallel_in_progress = parallel;
        }
    }

    /// `allow_parallel_in_progress` only changes how the session's own todo list counts; it
    /// reaches nothing outside the session, so an untrusted source may set it.
    fn restrict_untrusted(&mut self, _applied: &InteractConfig) -> Vec<String> {
        Vec::new()
    }
}

/// What these tools do to the world: nothing outside the session (they may run in plan mode).
pub(crate) const SESSION_ONLY: ToolAnnotations =
    ToolAnnotations { read_only: true, destructive: false, idempotent: false, open_world: false };

/// Registers the five tools.
pub fn register(
    registry: &dyn Registrar,
    config: InteractConfig,
) -> Result<Vec<Disposer>, RegistrationError> {
    Ok(vec![
        registry.register(TodoWriteTool::new(config))?,
        registry.register(AskUserQuestionTool)?,
        registry.register(ExitPlanModeTool)?,
        registry.register(SkillTool)?,
        registry.register_raw(structured_output_tool())?,
    ])
}

/// Whether `c` is white space as JavaScript's `trim` and `\s` see it (Unicode White_Space
/// without U+0085, plus U+FEFF): the reference's texts are checked and trimmed that way.
pub(crate) fn js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// `text` trimmed as JavaScript's `trim` trims it.
pub(crate) fn js_trim(text: &str) -> &str {
    text.trim_matches(js_whitespace)
}

/// A call-time title cut to a card's width.
pub(crate) fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::config::Section;

    #[test]
    fn an_untrusted_source_may_choose_how_the_todo_list_counts() {
        let mut section = InteractSection { allow_parallel_in_progress: Some(false) };
        assert!(section.restrict_untrusted(&InteractConfig::default()).is_empty());
        assert_eq!(section.allow_parallel_in_progress, Some(false));
    }

    #[test]
    fn several_tasks_may_be_in_progress_by_default() {
        assert!(InteractConfig::default().allow_parallel_in_progress);
    }
}
