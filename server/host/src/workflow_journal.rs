//! The journal of `workflow` and `ralph` runs in the session log, so a run survives a crash or
//! a restart: `agent/workflow` when a run starts (its tool and arguments), `agent/workflow-step`
//! as each child's answer is known (before the script sees it), `agent/workflow-end` when it
//! ends. Each record carries the run's id; they sit among the agent's conversation records,
//! which every reader of the log keeps (and older readers skip).
//!
//! A resumed run re-runs its script against the steps recorded: a child asked again with the
//! same prompt and options (the same fingerprint) for the k-th time gets the k-th recorded
//! answer instead of a new run. Matching by fingerprint and occurrence, not by position alone,
//! keeps a `pipeline`'s children apart, whose order of asking depends on which finished first.

use crate::host::Host;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};

pub const RUN: &str = "agent/workflow";
pub const STEP: &str = "agent/workflow-step";
pub const END: &str = "agent/workflow-end";

/// `agent/workflow`: a run started (or was resumed, `resumed: true`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub run_id: String,
    /// `workflow` or `ralph`.
    pub tool: String,
    pub call_id: String,
    /// The run's arguments (without `resume` and `run_in_background`).
    pub arguments: Value,
    #[serde(default)]
    pub resumed: bool,
}

/// What a child used, as recorded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepUsage {
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// `agent/workflow-step`: one child's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    pub run_id: String,
    /// The child's number in the run that recorded it (from 1).
    pub step: u64,
    pub fingerprint: String,
    /// How many children with this fingerprint were asked before (from 0).
    pub occurrence: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Whether the child answered (with a valid value when a schema was given).
    pub ok: bool,
    /// What the script got: the answer, the validated value, or null.
    pub value: Value,
    pub usage: StepUsage,
    /// The child's `subagent` call.
    pub call_id: String,
}

/// `agent/workflow-end`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndRecord {
    pub run_id: String,
    pub status: String,
    pub agents_started: u64,
}

/// A run found in the log: how it started and its recorded steps by (fingerprint, occurrence).
#[derive(Debug, Default)]
pub struct Recorded {
    pub start: Option<RunRecord>,
    steps: HashMap<String, VecDeque<(u64, StepRecord)>>,
}

impl Recorded {
    /// The recorded answer of the `occurrence`-th child with `fingerprint`.
    pub fn take(&mut self, fingerprint: &str, occurrence: u64) -> Option<StepRecord> {
        let list = self.steps.get_mut(fingerprint)?;
        let at = list.iter().position(|(k, _)| *k == occurrence)?;
        list.remove(at).map(|(_, step)| step)
    }
}

/// Queues a journal record and waits until it is synced (a crash after this loses nothing).
pub async fn record(host: &Host, kind: &str, data: impl Serialize) {
    let Some(log) = host.session() else { return };
    let data = match serde_json::to_value(data) {
        Ok(data) => data,
        Err(err) => {
            tracing::warn!(kind, %err, "cannot record a workflow step");
            return;
        }
    };
    if let Err(err) = log.enqueue(kind, data, true) {
        tracing::warn!(kind, %err, "cannot record a workflow step");
        return;
    }
    if let Err(err) = log.flush().await {
        tracing::warn!(kind, %err, "cannot sync a workflow step");
    }
}

/// The run `run_id` as this host's session log holds it (`None` when it holds no such run).
pub async fn load(host: &Host, run_id: &str) -> Result<Option<Recorded>, String> {
    let Some(log) = host.session() else {
        return Err("resuming a run needs a session log".to_owned());
    };
    log.flush().await.map_err(|e| e.to_string())?;
    let view = toolhost_session::read_session(log.log_path()).map_err(|e| e.to_string())?;
    let mut found = Recorded::default();
    let mut seen: HashMap<(String, u64), ()> = HashMap::new();
    for (_, kind, data) in &view.conversation {
        if data.get("runId").and_then(Value::as_str) != Some(run_id) {
            continue;
        }
        match kind.as_str() {
            RUN => {
                if let Ok(start) = serde_json::from_value::<RunRecord>(data.clone())
                    && found.start.is_none()
                {
                    found.start = Some(start);
                }
            }
            STEP => {
                let Ok(step) = serde_json::from_value::<StepRecord>(data.clone()) else {
                    continue;
                };
                // A step recorded again by a resumed run is the same step.
                if seen.insert((step.fingerprint.clone(), step.occurrence), ()).is_none() {
                    found
                        .steps
                        .entry(step.fingerprint.clone())
                        .or_default()
                        .push_back((step.occurrence, step));
                }
            }
            _ => {}
        }
    }
    Ok(found.start.is_some().then_some(found))
}

/// A stable fingerprint of a child's prompt and options (FNV-1a over their JSON, with the
/// keys in one order).
pub fn fingerprint(ask: &Value) -> String {
    let text = canonical(ask).to_string();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}:{}", text.len())
}

/// `value` with every object's keys sorted.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fingerprint_depends_on_prompt_and_options_only() {
        let a = fingerprint(&json!({"prompt": "x", "label": "l"}));
        assert_eq!(a, fingerprint(&json!({"label": "l", "prompt": "x"})));
        assert_ne!(a, fingerprint(&json!({"prompt": "x", "label": "m"})));
    }
}
