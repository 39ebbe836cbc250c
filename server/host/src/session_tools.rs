//! Tools an agent defines for its session (docs/tools.md "tool_define"): `tool_define` registers a
//! session tool — a name, a description, input and output schemas and a JavaScript (or erasable
//! TypeScript) body — in the host's registry; its calls are calls like any other, with cards;
//! `tool_undefine` removes one. A session tool belongs to the caller that defined it (an MCP
//! client, the own agent): only that caller is offered it ([`Owners`], which the host's model
//! listing consults; `toolhost mcp` tells its clients through `notifications/tools/list_changed`,
//! driven by the registry's changes) and may call or remove it — to any other it is not defined.
//! Callers without a name (the editor's person, the CLI) see and reach every session tool. A
//! definition runs only once the person approved it (`session_tools_run`), and definitions,
//! decisions and removals are in the session log (`session_tools_log`), so a resumed session has
//! the tools again, approved or rejected as they were, each for its definer.

use crate::host::{Host, HostError};
use crate::session_tools_log::{self as log, DefineRecord, Definition, UndefineRecord};
pub use crate::session_tools_owners::Owners;
use crate::session_tools_run::{self as run, Approval, Body, ERROR_NAME};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use toolhost_contract::protocol::ContentBlock;
use toolhost_contract::schemars::JsonSchema;
use toolhost_contract::{Disposer, RawTool, Tool, ToolContext, ToolError};
use toolhost_protocol::card::{CallPresentation, CardKind};
use toolhost_protocol::lsp_ext::ToolAnnotations;
use toolhost_tools_code::CodeConfig;

pub const DEFINE: &str = "tool_define";
pub const UNDEFINE: &str = "tool_undefine";
/// The name is not a tool name, or an existing tool has it.
pub const BAD_NAME: &str = "INVALID_NAME";
/// A schema does not compile, or the code does not parse.
pub const BAD_DEFINITION: &str = "INVALID_DEFINITION";
/// `tool_undefine` of a name no session tool has, or a call or removal of another caller's
/// session tool.
pub const NOT_DEFINED: &str = "NOT_DEFINED";

/// The caller of the running call `call_id` (as cards label it).
fn caller_of(host: &Host, call_id: &str) -> Option<String> {
    host.calls().heritage(call_id).and_then(|h| h.caller)
}

fn not_defined(name: &str) -> ToolError {
    ToolError::typed(ERROR_NAME, NOT_DEFINED, format!("no session tool named {name}"))
}

/// The session tools of one host.
pub struct SessionTools {
    host: Weak<Host>,
    code: CodeConfig,
    defined: Mutex<HashMap<String, Defined>>,
}

struct Defined {
    body: Arc<Body>,
    disposer: Disposer,
}

/// Registers `tool_define` and `tool_undefine` on a shared host, and the session tools its log
/// left standing (with their decisions).
pub fn install(host: &Arc<Host>, code: &CodeConfig) -> Result<(), HostError> {
    let tools = Arc::new(SessionTools {
        host: Arc::downgrade(host),
        code: code.clone(),
        defined: Mutex::new(HashMap::new()),
    });
    let _ = host.registry().register(DefineTool { tools: Arc::clone(&tools) })?;
    let _ = host.registry().register(UndefineTool { tools: Arc::clone(&tools) })?;
    let Some(session) = host.session() else { return Ok(()) };
    match log::standing(session.log_path()) {
        Ok(standing) => {
            for (name, s) in standing {
                let approval = match s.approved {
                    None => Approval::Pending,
                    Some(true) => Approval::Approved,
                    Some(false) => Approval::Rejected,
                };
                if let Err(e) = tools.add(host, s.definition_id, s.definition, s.owner, approval) {
                    tracing::warn!(name, error = %e.message, "a session tool was not restored");
                }
            }
        }
        Err(error) => tracing::warn!(%error, "cannot read the session's tools"),
    }
    Ok(())
}

/// Whether `name` matches `^[a-z][a-z0-9_]{0,63}$`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl SessionTools {
    fn host(&self) -> Result<Arc<Host>, ToolError> {
        self.host.upgrade().ok_or_else(|| ToolError::plain("session tools are not available"))
    }

    /// Registers `definition` (checked) as a session tool.
    fn add(
        self: &Arc<Self>,
        host: &Host,
        definition_id: String,
        definition: Definition,
        owner: Option<String>,
        approval: Approval,
    ) -> Result<(), ToolError> {
        let body = Arc::new(Body {
            definition_id,
            name: definition.name.clone(),
            code: definition.code.clone(),
            config: self.code.clone(),
            approval: tokio::sync::Mutex::new(approval),
        });
        let title = definition.name.clone();
        let execute = {
            let tools = Arc::downgrade(self);
            let body = Arc::clone(&body);
            move |input: Value, cx: ToolContext| {
                let tools = tools.clone();
                let body = Arc::clone(&body);
                async move {
                    let host = tools
                        .upgrade()
                        .ok_or_else(|| ToolError::plain("session tools are not available"))?
                        .host()?;
                    // Another caller's session tool is, to this caller, not defined.
                    let caller = caller_of(&host, cx.call_id());
                    if !host.session_tool_owners().visible(&body.name, caller.as_deref()) {
                        return Err(not_defined(&body.name));
                    }
                    run::call(host, body, input, cx).await
                }
            }
        };
        let raw = RawTool::new(definition.name.clone())
            .with_description(definition.description.clone())
            .with_input_schema(definition.input_schema.clone())
            .with_output_schema(definition.output_schema.clone())
            .with_execute(execute)
            .with_render(|_args, value| {
                let text = serde_json::to_string_pretty(value).unwrap_or_default();
                vec![ContentBlock::text(text)]
            })
            .with_present_call(move |_args| CallPresentation::new(CardKind::Generic, &title));
        let disposer = host.registry().register_raw(raw).map_err(|e| {
            ToolError::typed(ERROR_NAME, BAD_DEFINITION, format!("invalid definition: {e}"))
        })?;
        // Like a `run_code` program, the tool asks nothing itself in the agent's permission
        // modes (its definition was approved): each of its nested calls asks in the run's mode.
        host.agent_permissions().add_delegating_tool(&definition.name);
        host.session_tool_owners().set(&definition.name, owner);
        self.defined
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(definition.name, Defined { body, disposer });
        Ok(())
    }
}

/// `tool_define`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields)]
pub struct DefineArgs {
    /// The tool's name: `^[a-z][a-z0-9_]{0,63}$`, not the name of an existing tool.
    pub name: String,
    /// What the tool does, as the model will read it.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    #[schemars(with = "Value")]
    pub input_schema: Value,
    /// The JSON Schema its body's return value must match.
    #[schemars(with = "Value")]
    pub output_schema: Value,
    /// The body of an async function (JavaScript, or TypeScript whose types erase): `input` (also
    /// `args`) holds the arguments, `await tools.<name>({...})` calls another tool, `return`
    /// gives the value.
    pub code: String,
}

/// What `tool_define` and `tool_undefine` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
pub struct SessionToolOutput {
    pub name: String,
    /// `defined` or `undefined`.
    pub status: String,
}

struct DefineTool {
    tools: Arc<SessionTools>,
}

const DEFINE_ABOUT: &str = "Defines a tool for this session: `name` (^[a-z][a-z0-9_]{0,63}$, not \
an existing tool's), `description`, `input_schema` and `output_schema` (JSON Schemas), and `code`, \
the body of an async JavaScript function (TypeScript whose types erase is accepted): `input` holds \
the call's arguments (also as `args`), `await tools.<name>({...})` calls any other tool (each a \
real call, checked and shown as usual), `console.log` writes a log line, and it must `return` a \
value matching `output_schema`. The person approves the definition before its first call; a \
rejected definition never runs. The tool stays for the session (a resumed session has it again) \
until `tool_undefine`.";

impl Tool for DefineTool {
    type Args = DefineArgs;
    type Output = SessionToolOutput;

    fn name(&self) -> &str {
        DEFINE
    }

    fn description(&self) -> String {
        DEFINE_ABOUT.to_owned()
    }

    async fn call(
        &self,
        args: DefineArgs,
        cx: ToolContext,
    ) -> Result<SessionToolOutput, ToolError> {
        let host = self.tools.host()?;
        if !valid_name(&args.name) {
            return Err(ToolError::typed(
                ERROR_NAME,
                BAD_NAME,
                format!("invalid name {:?}: expected ^[a-z][a-z0-9_]{{0,63}}$", args.name),
            ));
        }
        if host.registry().contains(&args.name) {
            return Err(ToolError::typed(
                ERROR_NAME,
                BAD_NAME,
                format!("a tool named {} exists: a session tool cannot replace it", args.name),
            ));
        }
        if !args.input_schema.is_object() {
            return Err(ToolError::typed(
                ERROR_NAME,
                BAD_DEFINITION,
                "invalid definition: input_schema must be a JSON Schema object",
            ));
        }
        run::check(&args.code, &self.tools.code).await.map_err(|why| {
            ToolError::typed(
                ERROR_NAME,
                BAD_DEFINITION,
                format!("invalid definition: the code does not parse: {why}"),
            )
        })?;
        let definition = Definition {
            name: args.name.clone(),
            description: args.description,
            input_schema: args.input_schema,
            output_schema: args.output_schema,
            code: args.code,
        };
        let definition_id = cx.call_id().to_owned();
        let owner = caller_of(&host, cx.call_id());
        self.tools.add(
            &host,
            definition_id.clone(),
            definition.clone(),
            owner.clone(),
            Approval::Pending,
        )?;
        log::record(&host, log::DEFINE, DefineRecord { definition_id, definition, owner }).await;
        Ok(SessionToolOutput { name: args.name, status: "defined".to_owned() })
    }

    fn render(&self, _args: &DefineArgs, output: &SessionToolOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(format!(
            "defined session tool {} (the person approves it before its first call)",
            output.name
        ))]
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("?");
        CallPresentation::new(CardKind::Generic, format!("Define tool: {name}"))
    }

    fn annotations(&self) -> ToolAnnotations {
        // Defining runs nothing: the definition's first call asks the person.
        ToolAnnotations { read_only: true, open_world: false, ..ToolAnnotations::default() }
    }
}

/// `tool_undefine`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields)]
pub struct UndefineArgs {
    /// The session tool to remove.
    pub name: String,
}

struct UndefineTool {
    tools: Arc<SessionTools>,
}

impl Tool for UndefineTool {
    type Args = UndefineArgs;
    type Output = SessionToolOutput;

    fn name(&self) -> &str {
        UNDEFINE
    }

    fn description(&self) -> String {
        "Removes a tool defined with tool_define from this session.".to_owned()
    }

    async fn call(
        &self,
        args: UndefineArgs,
        cx: ToolContext,
    ) -> Result<SessionToolOutput, ToolError> {
        let host = self.tools.host()?;
        let caller = caller_of(&host, cx.call_id());
        if !host.session_tool_owners().visible(&args.name, caller.as_deref()) {
            return Err(not_defined(&args.name));
        }
        let removed =
            self.tools.defined.lock().unwrap_or_else(PoisonError::into_inner).remove(&args.name);
        let Some(defined) = removed else { return Err(not_defined(&args.name)) };
        defined.disposer.dispose();
        host.session_tool_owners().set(&args.name, None);
        let record = UndefineRecord {
            definition_id: defined.body.definition_id.clone(),
            name: args.name.clone(),
            call_id: cx.call_id().to_owned(),
        };
        log::record(&host, log::UNDEFINE, record).await;
        Ok(SessionToolOutput { name: args.name, status: "undefined".to_owned() })
    }

    fn render(&self, _args: &UndefineArgs, output: &SessionToolOutput) -> Vec<ContentBlock> {
        vec![ContentBlock::text(format!("removed session tool {}", output.name))]
    }

    fn present_call(&self, args: &Value) -> CallPresentation {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("?");
        CallPresentation::new(CardKind::Generic, format!("Remove tool: {name}"))
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { read_only: true, open_world: false, ..ToolAnnotations::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_tool_name_grammar() {
        for good in ["a", "count_lines", "x9", &format!("a{}", "b".repeat(63))] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "9a", "A", "a-b", "_a", "a.b", &format!("a{}", "b".repeat(64))] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
