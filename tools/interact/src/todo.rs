//! `todo_write`: the agent's task list for the session. Every call replaces the whole list
//! (logged as `todo/write`; the last write wins), and its card shows the list the editor keeps
//! up to date in place.

use crate::{InteractConfig, SESSION_ONLY};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, CardKind, ContentBlock};
use toolhost_contract::{InteractionHandle, Tool, ToolContext, ToolError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What to do, in a few words.
    pub content: String,
    pub status: TodoStatus,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteArgs {
    /// The whole list, in order (it replaces the previous one).
    pub todos: Vec<TodoItem>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoCounts {
    pub pending: u64,
    pub in_progress: u64,
    pub completed: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoWriteOutput {
    pub todos: Vec<TodoItem>,
    pub counts: TodoCounts,
}

pub struct TodoWriteTool {
    config: InteractConfig,
}

impl TodoWriteTool {
    pub fn new(config: InteractConfig) -> Self {
        TodoWriteTool { config }
    }
}

fn counts(todos: &[TodoItem]) -> TodoCounts {
    let mut counts = TodoCounts::default();
    for todo in todos {
        match todo.status {
            TodoStatus::Pending => counts.pending += 1,
            TodoStatus::InProgress => counts.in_progress += 1,
            TodoStatus::Completed => counts.completed += 1,
        }
    }
    counts
}

/// The list as written: contents trimmed, each non-empty and unique; at most one in progress
/// only when `allow_parallel_in_progress` is off (by default several may be).
fn checked(args: TodoWriteArgs, config: InteractConfig) -> Result<Vec<TodoItem>, ToolError> {
    let mut todos: Vec<TodoItem> = Vec::with_capacity(args.todos.len());
    for item in args.todos {
        let content = item.content.trim().to_owned();
        if content.is_empty() {
            return Err(ToolError::plain("invalid todo: `content` must be a non-empty string"));
        }
        if todos.iter().any(|t| t.content == content) {
            return Err(ToolError::plain(format!(
                "invalid todos: duplicate content \"{content}\""
            )));
        }
        todos.push(TodoItem { content, status: item.status });
    }
    let active = todos.iter().filter(|t| t.status == TodoStatus::InProgress).count();
    if !config.allow_parallel_in_progress && active > 1 {
        return Err(ToolError::plain(format!(
            "invalid todos: at most one task may be in_progress (got {active})"
        )));
    }
    Ok(todos)
}

impl Tool for TodoWriteTool {
    type Args = TodoWriteArgs;
    type Output = TodoWriteOutput;

    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> String {
        let active = if self.config.allow_parallel_in_progress {
            "Mark every item you are working on now in_progress (several may be in progress at \
             once when the steps run in parallel)"
        } else {
            "Keep at most one item in_progress at a time"
        };
        format!(
            "Write the session's task list: the whole list, each item {{content, status}} with \
             status pending, in_progress or completed; it replaces the previous list. {active}, \
             mark items completed as soon as they are done, and send the full list every time."
        )
    }

    fn annotations(&self) -> ToolAnnotations {
        SESSION_ONLY
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let todos = args.get("todos").and_then(Value::as_array);
        let total = todos.map_or(0, Vec::len);
        let done = todos.map_or(0, |t| {
            t.iter()
                .filter(|t| t.get("status").and_then(Value::as_str) == Some("completed"))
                .count()
        });
        let presentation =
            CallPresentation::new(CardKind::Todo, format!("Todos ({done}/{total} done)"));
        match todos {
            Some(todos) => presentation.with_data(json!({ "todos": todos })),
            None => presentation,
        }
    }

    async fn call(
        &self,
        args: TodoWriteArgs,
        cx: ToolContext,
    ) -> Result<TodoWriteOutput, ToolError> {
        let todos = checked(args, self.config)?;
        if let Some(state) = cx.capability::<InteractionHandle>() {
            let logged = serde_json::to_value(&todos).unwrap_or(Value::Null);
            state.todos_written(cx.call_id(), logged).await;
        }
        let counts = counts(&todos);
        Ok(TodoWriteOutput { todos, counts })
    }

    fn render(&self, _args: &TodoWriteArgs, output: &TodoWriteOutput) -> Vec<ContentBlock> {
        let c = output.counts;
        vec![ContentBlock::text(format!(
            "Updated todo list: {} pending, {} in progress, {} completed.",
            c.pending, c.in_progress, c.completed
        ))]
    }

    fn presentation_meta(&self, _args: &TodoWriteArgs, output: &TodoWriteOutput) -> Option<Value> {
        serde_json::to_value(output).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: TodoStatus) -> TodoItem {
        TodoItem { content: content.to_owned(), status }
    }

    #[test]
    fn contents_are_trimmed_and_must_be_unique_and_non_empty() {
        let config = InteractConfig::default();
        let ok = checked(TodoWriteArgs { todos: vec![item("  a ", TodoStatus::Pending)] }, config);
        assert_eq!(ok.map(|t| t[0].content.clone()), Ok("a".to_owned()));
        let empty = checked(TodoWriteArgs { todos: vec![item("  ", TodoStatus::Pending)] }, config);
        assert_eq!(
            empty.map_err(|e| e.message),
            Err("invalid todo: `content` must be a non-empty string".to_owned())
        );
        let dup = checked(
            TodoWriteArgs {
                todos: vec![item("a", TodoStatus::Pending), item(" a", TodoStatus::Completed)],
            },
            config,
        );
        assert_eq!(
            dup.map_err(|e| e.message),
            Err("invalid todos: duplicate content \"a\"".to_owned())
        );
    }

    #[test]
    fn one_task_in_progress_unless_parallel_is_allowed() {
        let todos = vec![item("a", TodoStatus::InProgress), item("b", TodoStatus::InProgress)];
        let single_mode = InteractConfig { allow_parallel_in_progress: false };
        let single = checked(TodoWriteArgs { todos: todos.clone() }, single_mode);
        assert_eq!(
            single.map_err(|e| e.message),
            Err("invalid todos: at most one task may be in_progress (got 2)".to_owned())
        );
        assert!(checked(TodoWriteArgs { todos }, InteractConfig::default()).is_ok());
    }
}
