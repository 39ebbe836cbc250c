//! The interaction tools' side of a session (docs/tools.md, "Interaction"): plan mode, the
//! structured output of a run and the todo list ([`SessionInteraction`], logged as `plan/mode`,
//! `structured/run`, `structured/output` and `todo/write` and restored when the session is
//! resumed), and the guards that keep plan mode and a completed run honest.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use toolhost_contract::{BoxFuture, InteractionState, ToolError};
use toolhost_protocol::lsp_ext::{PlanModeState, StructuredOutputParams, StructuredOutputState};
use toolhost_registry::{Execution, Guard};
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

/// In plan mode only tools that change nothing run (reads, searches, questions, the plan).
pub struct PlanModeGuard(pub Arc<SessionInteraction>);

impl Guard for PlanModeGuard {
    fn check(&self, exec: &Execution) -> Result<Option<String>, ToolError> {
        let read_only = exec.tool().is_some_and(|tool| tool.annotations().read_only);
        if !self.0.plan_mode() || read_only {
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

/// `[plan]` as one source gives it: `active` starts sessions in plan mode.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanSection {
    active: Option<bool>,
}

impl toolhost_contract::config::Section for PlanSection {
    type Settings = bool;

    fn apply(self, active: &mut bool, _layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(on) = self.active {
            *active = on;
        }
    }

    /// Plan mode only narrows (read-only tools until the person approves a plan): a workspace
    /// may turn it on, never off over the user's `active = true`.
    fn restrict_untrusted(&mut self, applied: &bool) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        dropped.only_on("plan.active", &mut self.active, *applied);
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::config::Section;

    #[test]
    fn an_untrusted_source_may_turn_plan_mode_on_but_not_off() {
        let mut on = PlanSection { active: Some(true) };
        assert!(on.restrict_untrusted(&false).is_empty());
        assert_eq!(on.active, Some(true));
        let mut off = PlanSection { active: Some(false) };
        assert_eq!(off.restrict_untrusted(&true), ["plan.active"]);
        assert_eq!(off.active, None);
        let mut still_off = PlanSection { active: Some(false) };
        assert!(still_off.restrict_untrusted(&false).is_empty());
    }
}
