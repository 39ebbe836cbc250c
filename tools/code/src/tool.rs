//! The `run_code` tool: its arguments, value, Native text, card and body (a run in the
//! foreground, or a background job whose output is the run's logs so far).

use crate::config::CodeConfig;
use crate::declarations::{catalog_json, catalogue, typescript};
use crate::failure::FailureKind;
use crate::render::render_text;
use crate::runner::{Progress, Run, execute};
use crate::strip::to_function_source;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::sync::Arc;
use toolhost_contract::protocol::card::{CardKind, TerminalCall};
use toolhost_contract::protocol::lsp_ext::ToolAnnotations;
use toolhost_contract::protocol::{CallPresentation, ContentBlock};
use toolhost_contract::tasks::{TaskControl, TaskEnd, TaskWork};
use toolhost_contract::{
    CancellationToken, ExposedTool, NestedCallsHandle, RESERVED_NAME, TasksHandle, Tool,
    ToolContext, ToolError,
};

/// The message of a blank `description`.
pub const INVALID_DESCRIPTION: &str = "invalid description: expected a non-empty string";

/// The job kind of a background run (`code-<n>`).
pub const JOB_KIND: &str = "code";

/// `run_code`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct RunCodeArgs {
    /// The body of an async JavaScript function (erasable TypeScript annotations are
    /// stripped): use `await` and `return` at the top level. Call tools as
    /// `await tools.<name>(args)`.
    pub code: String,
    /// What the program does, in a few words (the title people see).
    pub description: String,
    /// Run as a background job (`job_output` shows its logs so far); the call returns the
    /// job's id at once.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// `run_code`'s value: what the program logged and what it returned (absent for `undefined`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCodeOutput {
    pub logs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "kept")]
    #[schemars(with = "Value")]
    pub result: Option<Value>,
}

/// A present `result` stays present even when it is `null` (`return null` is a result).
fn kept<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(de).map(Some)
}

/// Lists the tools a program may call (the host's current tool set), for the description.
pub type ToolSource = Arc<dyn Fn() -> Vec<ExposedTool> + Send + Sync>;

/// The `run_code` tool.
pub struct RunCodeTool {
    config: CodeConfig,
    tools: Option<ToolSource>,
}

impl RunCodeTool {
    /// The tool with these limits; its description declares the tools `tools` lists each time
    /// it is asked for (none without a source).
    pub fn new(config: CodeConfig, tools: Option<ToolSource>) -> Self {
        RunCodeTool { config, tools }
    }
}

const ABOUT: &str = "Run a program over the tools in one call, instead of one call per step. \
`code` is the body of an async JavaScript function (erasable TypeScript annotations are \
stripped; enums and namespaces are not supported): use top-level `await` and `return`. Call a \
tool as `await tools.<name>(args)` (`tools[\"my-tool\"](args)` for other names): the call runs \
like a direct call of that tool (policies, review, history) and resolves to the tool's value, \
or rejects with a `ToolCallError` (`message`, `code`, `toolName`). Calls started together \
(`Promise.all`) run in parallel when the tools allow it. What the program logs with \
`console.log` and the JSON value it returns are the result. There are no timers, files, \
network or modules besides the tools.";

/// `run_code`'s description for this tool set and these limits: what it does, its limits and
/// the declarations of every tool (or, with more than `declare_max_tools`, a list of names and
/// `tools.$search`).
pub fn description(tools: &[ExposedTool], config: &CodeConfig) -> String {
    let mut text = ABOUT.to_owned();
    text.push_str(&format!(
        "\n\nLimits: {} s of compute, {} s in all, {} MiB of memory, {} nested calls, {} MiB of \
         output (logs, result and the values of nested calls).",
        config.compute.as_secs(),
        config.wall.as_secs(),
        config.memory_bytes / (1024 * 1024),
        config.max_calls,
        config.output_bytes / (1024 * 1024),
    ));
    if tools.len() > config.declare_max_tools {
        text.push_str(
            "\n\nTools (`await tools.$search(\"words\")` returns matching tools with their \
             TypeScript declarations):\n",
        );
        text.push_str(&catalogue(tools));
        text.push_str("\n```ts\n");
        text.push_str(&typescript(&[]));
    } else {
        text.push_str("\n\nThe program's globals:\n```ts\n");
        text.push_str(&typescript(tools));
    }
    text.push_str("```");
    text
}

/// How a call looks: titled with its description, showing the code; a background start is a
/// plain card (its output arrives through `job_output`).
pub fn present(args: &Value) -> CallPresentation {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let title = text("description").filter(|d| !d.trim().is_empty());
    let title = title.unwrap_or_else(|| RESERVED_NAME.to_owned());
    if args.get("run_in_background").and_then(Value::as_bool) == Some(true) {
        return CallPresentation::new(CardKind::Generic, title);
    }
    CallPresentation::new(CardKind::Terminal, title.clone()).with_terminal(TerminalCall {
        command: text("code").unwrap_or_default(),
        description: Some(title),
        cwd: None,
    })
}

/// One run of `code`, to its value or its `CODE_RUN_FAILED` error.
pub async fn run_program(
    code: &str,
    nested: Option<NestedCallsHandle>,
    parent_call_id: &str,
    config: &CodeConfig,
    signal: CancellationToken,
    progress: Option<Progress>,
) -> Result<RunCodeOutput, ToolError> {
    let function_source = to_function_source(code).map_err(|message| {
        crate::failure::Failure::new(FailureKind::Exception, message).into_tool_error(&[])
    })?;
    let mut tools = nested.as_ref().map(|n| n.tools()).unwrap_or_default();
    // Programs never call run_code itself (the host leaves it out; this keeps it so).
    tools.retain(|t| t.name != RESERVED_NAME);
    let ran = execute(Run {
        function_source,
        catalog_json: catalog_json(&tools),
        nested,
        parent_call_id: parent_call_id.to_owned(),
        config: config.clone(),
        signal,
        progress,
    })
    .await;
    match ran.outcome {
        Ok(result) => Ok(RunCodeOutput { logs: ran.logs, result }),
        Err(failure) => Err(failure.into_tool_error(&ran.logs)),
    }
}

fn background(
    args: RunCodeArgs,
    cx: &ToolContext,
    config: CodeConfig,
) -> Result<RunCodeOutput, ToolError> {
    let Some(tasks) = cx.capability::<TasksHandle>() else {
        return Err(ToolError::plain("run_code cannot run in the background here"));
    };
    let nested = cx.capability::<NestedCallsHandle>();
    let parent = cx.call_id().to_owned();
    let code = args.code;
    let work: TaskWork = Box::new(move |control: TaskControl| {
        Box::pin(async move {
            let progress = Arc::clone(&control.progress);
            let ran = run_program(&code, nested, &parent, &config, control.stop, Some(progress));
            match ran.await {
                Ok(output) => TaskEnd {
                    failed: false,
                    detail: "completed".to_owned(),
                    output: render_text(&output.logs, output.result.as_ref()),
                },
                Err(err) => TaskEnd {
                    failed: true,
                    detail: FailureKind::of(&err)
                        .map_or_else(|| "failed".to_owned(), |k| format!("failed ({k})")),
                    output: err.message,
                },
            }
        })
    });
    let id = tasks.start(JOB_KIND, &args.description, cx, work)?;
    Ok(RunCodeOutput { logs: Vec::new(), result: Some(serde_json::json!({ "jobId": id })) })
}

impl Tool for RunCodeTool {
    type Args = RunCodeArgs;
    type Output = RunCodeOutput;

    fn name(&self) -> &str {
        RESERVED_NAME
    }

    fn description(&self) -> String {
        let mut tools = self.tools.as_ref().map(|source| source()).unwrap_or_default();
        tools.retain(|t| t.name != RESERVED_NAME);
        description(&tools, &self.config)
    }

    async fn call(&self, args: RunCodeArgs, cx: ToolContext) -> Result<RunCodeOutput, ToolError> {
        if args.description.trim().is_empty() {
            return Err(ToolError::plain(INVALID_DESCRIPTION));
        }
        if args.run_in_background == Some(true) {
            return background(args, &cx, self.config.clone());
        }
        let nested = cx.capability::<NestedCallsHandle>();
        run_program(&args.code, nested, cx.call_id(), &self.config, cx.signal().clone(), None).await
    }

    fn render(&self, _args: &RunCodeArgs, output: &RunCodeOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(render_text(&output.logs, output.result.as_ref()))]
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        present(args)
    }

    fn annotations(&self) -> ToolAnnotations {
        // A program may call any tool, so it may do anything they do.
        ToolAnnotations { destructive: true, open_world: true, ..ToolAnnotations::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_schema_allows_logs_and_an_optional_result_only() {
        let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
        let schema = settings.into_generator().into_root_schema_for::<RunCodeOutput>().to_value();
        assert_eq!(schema["additionalProperties"], false, "{schema}");
        assert_eq!(schema["required"], serde_json::json!(["logs"]), "{schema}");
        assert_eq!(schema["properties"]["logs"]["items"]["type"], "string", "{schema}");
        let null: RunCodeOutput =
            serde_json::from_value(serde_json::json!({"logs": [], "result": null})).unwrap();
        assert_eq!(null.result, Some(Value::Null), "a null result stays a result");
        let none: RunCodeOutput = serde_json::from_value(serde_json::json!({"logs": []})).unwrap();
        assert_eq!(none.result, None);
    }
}
