//! One `workflow` or `ralph` run on a host: its children, each a `subagent` call under the run's
//! call (so its card, its calls' cards and its `agent/run` nest under the run's card, and it is
//! made by the run's caller in the run's agent mode), the journal of their answers (resumable,
//! see `workflow_journal`), the budget and the progress a background run shows.
//!
//! The budget (tokens, cost, agents) is checked before each new child starts; usage is known
//! when a child ends. Once the budget is reached no child starts: a child asked for then waits
//! until the children running have ended (their answers are recorded), and the run stops
//! there, cleanly, with what it has. A run that asks for no more children still completes.

use crate::call::CallRequest;
use crate::calls::Lane;
use crate::host::Host;
use crate::subagent::{self, SubagentOutput};
use crate::workflow_answer;
use crate::workflow_journal::{self as journal, Recorded, StepRecord, StepUsage};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use toolhost_contract::CancellationToken;
use toolhost_contract::schemars::JsonSchema;
use toolhost_protocol::card::CardGroup;

/// A run's budget: it stops cleanly once any of these is reached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Total tokens (prompt and completion) of every child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Dollars spent by every child (needs `[agent.price]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Children started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<u64>,
}

/// What a run used in all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(rename_all = "camelCase")]
pub struct RunUsage {
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// One child of a run, as the run's value lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_contract::schemars")]
#[serde(rename_all = "camelCase")]
pub struct AgentEntry {
    pub step: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// It answered (with a valid value when it was given a schema).
    pub ok: bool,
    /// Its answer came from the journal (a resumed run), not from a new child.
    pub replayed: bool,
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// What the script got (listed when the run stopped at its budget: the partial result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value")]
    pub result: Option<Value>,
}

/// A child asked for: its prompt and options.
#[derive(Clone, Debug, Default)]
pub struct Ask {
    pub prompt: String,
    pub label: Option<String>,
    pub phase: Option<String>,
    pub schema: Option<Value>,
}

impl Ask {
    /// The prompt and options of a script's `agent()` request (checked by the prelude).
    pub fn from_request(arguments: &Value) -> Ask {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::to_owned);
        Ask {
            prompt: text("prompt").unwrap_or_default(),
            label: text("label"),
            phase: text("phase"),
            schema: arguments.get("schema").cloned(),
        }
    }

    fn identity(&self) -> Value {
        json!({"prompt": self.prompt, "label": self.label, "phase": self.phase, "schema": self.schema})
    }
}

/// How an ask ended.
pub enum Asked {
    /// The answer (`null` when the child failed).
    Value(Value),
    /// The run must fail (a bad schema, the agent cap).
    Fatal(String),
    /// The budget is reached (or the run is ending): no child was started.
    Stopped,
}

/// A background run's progress, published as its `job_output`.
pub type Progress = Arc<dyn Fn(String) + Send + Sync>;

#[derive(Default)]
struct State {
    started: u64,
    finished: u64,
    active: u64,
    /// Asks refused at the budget, waiting for the run to stop.
    waiting: u64,
    tokens: u64,
    cost: Option<f64>,
    phase: Option<String>,
    occurrences: HashMap<String, u64>,
    agents: Vec<AgentEntry>,
    /// Why the budget stopped the run.
    limit: Option<String>,
    logs: String,
}

/// The most children one run starts.
pub const MAX_AGENTS: u64 = 1000;

/// One run's children, journal, budget and progress.
pub struct Orchestra {
    host: Arc<Host>,
    pub run_id: String,
    /// The run's call: every child's parent.
    parent: String,
    /// What the progress text's first line names (`workflow "x"`, `ralph`).
    title: String,
    recorded: Mutex<Recorded>,
    budget: Budget,
    state: Mutex<State>,
    /// Cancelled with the run's call, or when the budget stops the run.
    pub stop: CancellationToken,
    progress: Option<Progress>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new run id.
pub fn new_run_id() -> String {
    format!("wf_{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

impl Orchestra {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        host: Arc<Host>,
        run_id: String,
        parent: String,
        title: String,
        recorded: Recorded,
        budget: Budget,
        signal: &CancellationToken,
        progress: Option<Progress>,
    ) -> Arc<Orchestra> {
        Arc::new(Orchestra {
            host,
            run_id,
            parent,
            title,
            recorded: Mutex::new(recorded),
            budget,
            state: Mutex::new(State::default()),
            stop: signal.child_token(),
            progress,
        })
    }

    /// Children started so far (answers replayed from the journal included).
    pub fn agents_started(&self) -> u64 {
        lock(&self.state).started
    }

    /// Why the budget stopped the run, if it did.
    pub fn limit(&self) -> Option<String> {
        lock(&self.state).limit.clone()
    }

    pub fn usage(&self) -> RunUsage {
        let state = lock(&self.state);
        RunUsage { tokens: state.tokens, cost: state.cost }
    }

    /// The children so far; with `results`, what each answered.
    pub fn agents(&self, results: bool) -> Vec<AgentEntry> {
        let mut agents = lock(&self.state).agents.clone();
        if !results {
            for agent in &mut agents {
                agent.result = None;
            }
        }
        agents
    }

    pub fn set_phase(&self, title: &str) {
        lock(&self.state).phase = Some(title.to_owned());
        self.publish();
    }

    /// The script's logs so far (shown under the progress lines).
    pub fn set_logs(&self, logs: String) {
        lock(&self.state).logs = logs;
        self.publish();
    }

    /// Publishes the progress lines: phase, children started and finished, tokens.
    fn publish(&self) {
        let Some(progress) = &self.progress else { return };
        let text = {
            let s = lock(&self.state);
            let mut text = format!("{} · run {}\n", self.title, self.run_id);
            if let Some(phase) = &s.phase {
                text.push_str(&format!("phase: {phase}\n"));
            }
            text.push_str(&format!(
                "agents: {} started, {} finished, {} running\ntokens: {}",
                s.started, s.finished, s.active, s.tokens
            ));
            if let Some(cost) = s.cost {
                text.push_str(&format!(" · ${cost:.4}"));
            }
            if let Some(limit) = &s.limit {
                text.push_str(&format!("\nbudget reached: {limit}"));
            }
            if !s.logs.is_empty() {
                text.push('\n');
                text.push_str(&s.logs);
            }
            text
        };
        progress(text);
    }

    /// Why the budget allows no new child (`None`: it does).
    fn over_budget(&self, s: &State) -> Option<String> {
        if let Some(max) = self.budget.agents
            && s.started >= max
        {
            return Some(format!("{max} agents started"));
        }
        Orchestra::spent(&self.budget, s)
    }

    /// Asks a child: the recorded answer when the journal has it, else a new `subagent` call.
    pub async fn ask(&self, ask: Ask, cancel: &CancellationToken) -> Asked {
        let schema = match ask.schema.as_ref().map(workflow_answer::compile).transpose() {
            Ok(schema) => schema,
            Err(message) => return Asked::Fatal(message),
        };
        let fingerprint = journal::fingerprint(&ask.identity());
        let (occurrence, replay) = {
            let mut s = lock(&self.state);
            let counter = s.occurrences.entry(fingerprint.clone()).or_insert(0);
            let occurrence = *counter;
            *counter += 1;
            (occurrence, lock(&self.recorded).take(&fingerprint, occurrence))
        };
        if let Some(step) = replay {
            let mut s = lock(&self.state);
            s.started += 1;
            s.finished += 1;
            let entry = self.entry(&mut s, &ask, step.ok, true, &step.usage, &step.value);
            s.agents.push(entry);
            drop(s);
            self.publish();
            return Asked::Value(step.value);
        }
        let step = {
            let mut s = lock(&self.state);
            if s.started >= MAX_AGENTS {
                return Asked::Fatal(format!("a run starts at most {MAX_AGENTS} agents"));
            }
            if let Some(why) = s.limit.clone().or_else(|| self.over_budget(&s)) {
                s.limit = Some(why);
                s.waiting += 1;
                if s.active == 0 {
                    self.stop.cancel();
                }
                return Asked::Stopped;
            }
            s.started += 1;
            s.active += 1;
            s.started
        };
        self.publish();
        let (call_id, ok, value, usage) = self.child(&ask, step, schema.as_ref(), cancel).await;
        if cancel.is_cancelled() {
            lock(&self.state).active -= 1;
            return Asked::Stopped;
        }
        let record = StepRecord {
            run_id: self.run_id.clone(),
            step,
            fingerprint,
            occurrence,
            label: ask.label.clone(),
            phase: ask.phase.clone(),
            ok,
            value: value.clone(),
            usage: usage.clone(),
            call_id,
        };
        journal::record(&self.host, journal::STEP, &record).await;
        {
            let mut s = lock(&self.state);
            s.active -= 1;
            s.finished += 1;
            let entry = self.entry(&mut s, &ask, ok, false, &usage, &value);
            s.agents.push(entry);
            if s.limit.is_none() {
                s.limit = Orchestra::spent(&self.budget, &s);
            }
            if s.waiting > 0 && s.active == 0 {
                self.stop.cancel();
            }
        }
        self.publish();
        Asked::Value(value)
    }

    /// Tokens or cost reached (the agent count stops only new starts).
    fn spent(budget: &Budget, s: &State) -> Option<String> {
        if let Some(max) = budget.tokens
            && s.tokens >= max
        {
            return Some(format!("{} tokens used of {max}", s.tokens));
        }
        if let (Some(max), Some(cost)) = (budget.cost, s.cost)
            && cost >= max
        {
            return Some(format!("${cost:.4} spent of ${max:.4}"));
        }
        None
    }

    /// Adds a child's usage to the run's and lists it.
    fn entry(
        &self,
        s: &mut State,
        ask: &Ask,
        ok: bool,
        replayed: bool,
        usage: &StepUsage,
        value: &Value,
    ) -> AgentEntry {
        s.tokens += usage.tokens;
        if let Some(cost) = usage.cost {
            s.cost = Some(s.cost.unwrap_or(0.0) + cost);
        }
        AgentEntry {
            step: u64::try_from(s.agents.len()).unwrap_or(u64::MAX) + 1,
            label: ask.label.clone(),
            phase: ask.phase.clone(),
            ok,
            replayed,
            tokens: usage.tokens,
            cost: usage.cost,
            result: Some(value.clone()),
        }
    }

    /// Runs one child as a `subagent` call under the run's call: (its call id, whether it
    /// answered, the value, its usage).
    async fn child(
        &self,
        ask: &Ask,
        step: u64,
        schema: Option<&toolhost_contract::CompiledSchema>,
        cancel: &CancellationToken,
    ) -> (String, bool, Value, StepUsage) {
        let call_id = format!("{}:agent:{step}", self.parent);
        // The card's title groups children by phase and label.
        let description = match (&ask.phase, &ask.label) {
            (Some(phase), Some(label)) => format!("{phase} · {label}"),
            (Some(phase), None) => format!("{phase} · agent {step}"),
            (None, Some(label)) => label.clone(),
            (None, None) => format!("agent {step}"),
        };
        let prompt = match &ask.schema {
            Some(schema) => workflow_answer::prompt_with_schema(&ask.prompt, schema),
            None => ask.prompt.clone(),
        };
        // Editors group the run's children by phase and show each one's label (a ralph round's
        // label is `round <n>`, its check's `check <n>`).
        let label = ask.label.clone().unwrap_or_else(|| format!("agent {step}"));
        let group = CardGroup::of(ask.phase.clone(), Some(label));
        let request =
            CallRequest::new(subagent::NAME, json!({"description": description, "prompt": prompt}))
                .id(call_id.clone())
                .child_of(Some(self.parent.clone()))
                .grouped(group)
                .cancelled_by(cancel.clone())
                .in_lane(Lane::new());
        let outcome = self.host.run(request).await;
        let answered = outcome.ok().and_then(|done| {
            let result = &done.finalized.result;
            if result.is_error() {
                return None;
            }
            serde_json::from_value::<SubagentOutput>(result.value()?.clone()).ok()
        });
        let Some(SubagentOutput::Foreground { output, usage, .. }) = answered else {
            return (call_id, false, Value::Null, StepUsage::default());
        };
        let usage =
            usage.map(|u| StepUsage { tokens: u.total_tokens, cost: u.cost }).unwrap_or_default();
        let text: String = output
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        match schema {
            None => (call_id, true, Value::String(text), usage),
            Some(schema) => match workflow_answer::typed(&text, schema) {
                Ok(value) => (call_id, true, value, usage),
                Err(why) => {
                    tracing::info!(run = %self.run_id, step, %why, "a child's answer does not match its schema");
                    (call_id, false, Value::Null, usage)
                }
            },
        }
    }
}
