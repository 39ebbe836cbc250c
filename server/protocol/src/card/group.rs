//! What a card of an orchestrated call carries besides its view: the group its caller put it in
//! (a workflow child's phase and label, a ralph round) and what the call used (a child agent's
//! tokens and cost, or a whole run's), so clients group children under their parent card and
//! show each one's usage and the run's sum without knowing any tool.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

/// Where the caller of a call put it among its siblings: set by whoever made the call (a
/// workflow's `agent()` options, a ralph round), never by the model's arguments. Clients group
/// the children of one parent card by `phase` (in order of first appearance) and show `label`
/// on the child's row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CardGroup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl CardGroup {
    /// A group of `phase` and `label`; `None` when both are absent.
    pub fn of(phase: Option<String>, label: Option<String>) -> Option<CardGroup> {
        (phase.is_some() || label.is_some()).then_some(CardGroup { phase, label })
    }
}

/// What a call used, read from its result's meta `usage`: a `subagent` call's
/// `{promptTokens, completionTokens, totalTokens, cost?}` or a `workflow`/`ralph` run's summed
/// `{tokens, cost?}`. `cost` is in dollars and present only when prices are configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CardUsage {
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Number>,
}

/// The usage a result's meta reports (`None` when it reports none in either shape).
pub(super) fn usage_of(meta: Option<&Value>) -> Option<CardUsage> {
    let usage = meta?.get("usage")?;
    let tokens = usage.get("totalTokens").or_else(|| usage.get("tokens"))?.as_u64()?;
    let cost = usage.get("cost").and_then(Value::as_number).cloned();
    Some(CardUsage { tokens, cost })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_is_read_from_a_childs_and_a_runs_meta() {
        let child = json!({"runId": "r", "usage": {"promptTokens": 300, "completionTokens": 5,
            "totalTokens": 305, "cost": 0.00031}});
        let usage = usage_of(Some(&child)).unwrap_or_else(|| panic!("no usage"));
        assert_eq!(usage.tokens, 305);
        assert_eq!(usage.cost.and_then(|c| c.as_f64()), Some(0.00031));
        let run = json!({"runId": "wf", "usage": {"tokens": 915}});
        assert_eq!(usage_of(Some(&run)), Some(CardUsage { tokens: 915, cost: None }));
        assert_eq!(usage_of(Some(&json!({"usage": "many"}))), None);
        assert_eq!(usage_of(None), None);
    }

    #[test]
    fn a_group_needs_a_phase_or_a_label() {
        assert_eq!(CardGroup::of(None, None), None);
        let group = CardGroup::of(Some("draft".into()), None);
        assert_eq!(serde_json::to_value(group).ok(), Some(json!({"phase": "draft"})));
    }
}
