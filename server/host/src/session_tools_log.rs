//! Session tools in the session log, so replay shows them and a resumed session has them again:
//! `agent/tool-define` when `tool_define` registers one (the whole definition and who defined it),
//! `agent/tool-approval` when the person (or the permission mode) decides about a definition,
//! `agent/tool-undefine` when `tool_undefine` removes it. They sit among the agent's
//! conversation records, which every reader of the log keeps (and older readers skip).

use crate::host::Host;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub const DEFINE: &str = "agent/tool-define";
pub const APPROVAL: &str = "agent/tool-approval";
pub const UNDEFINE: &str = "agent/tool-undefine";

/// A session tool as the agent defined it (`tool_define`'s arguments).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Definition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
    pub code: String,
}

/// `agent/tool-define`: definition `definition_id` (the `tool_define` call's id).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefineRecord {
    pub definition_id: String,
    pub definition: Definition,
    /// The caller that defined it (an MCP client's name, the own agent): the only one it is
    /// listed to and may call it. `None`: defined by the editor or the CLI, for everyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// `agent/tool-approval`: the decision about definition `definition_id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRecord {
    pub definition_id: String,
    pub name: String,
    pub approved: bool,
    /// `person` (asked) or `mode` (the agent's permission mode allowed it).
    pub by: String,
    /// The call that asked.
    pub call_id: String,
}

/// `agent/tool-undefine`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndefineRecord {
    pub definition_id: String,
    pub name: String,
    pub call_id: String,
}

/// A definition still in force at the end of a log, with its decision (`None`: not decided).
#[derive(Clone, Debug)]
pub struct Standing {
    pub definition_id: String,
    pub definition: Definition,
    pub owner: Option<String>,
    pub approved: Option<bool>,
}

/// Queues a record and waits until it is synced (a host without a log records nothing).
pub async fn record(host: &Host, kind: &str, data: impl Serialize) {
    let Some(log) = host.session() else { return };
    let data = match serde_json::to_value(data) {
        Ok(data) => data,
        Err(err) => {
            tracing::warn!(kind, %err, "cannot record a session tool");
            return;
        }
    };
    if let Err(err) = log.enqueue(kind, data, true) {
        tracing::warn!(kind, %err, "cannot record a session tool");
        return;
    }
    if let Err(err) = log.flush().await {
        tracing::warn!(kind, %err, "cannot sync a session tool record");
    }
}

/// The definitions in force at the end of the log at `path`, by name.
pub fn standing(path: &Path) -> Result<BTreeMap<String, Standing>, String> {
    let view = toolhost_session::read_session(path).map_err(|e| e.to_string())?;
    let records = view.conversation.iter().map(|(_, kind, data)| (kind.as_str(), data));
    Ok(fold(records))
}

/// Applies define, approval and undefine records in log order.
fn fold<'a>(records: impl Iterator<Item = (&'a str, &'a Value)>) -> BTreeMap<String, Standing> {
    let mut out: BTreeMap<String, Standing> = BTreeMap::new();
    for (kind, data) in records {
        match kind {
            DEFINE => {
                if let Ok(r) = serde_json::from_value::<DefineRecord>(data.clone()) {
                    let name = r.definition.name.clone();
                    out.insert(
                        name,
                        Standing {
                            definition_id: r.definition_id,
                            definition: r.definition,
                            owner: r.owner,
                            approved: None,
                        },
                    );
                }
            }
            APPROVAL => {
                if let Ok(r) = serde_json::from_value::<ApprovalRecord>(data.clone())
                    && let Some(s) = out.get_mut(&r.name)
                    && s.definition_id == r.definition_id
                {
                    s.approved = Some(r.approved);
                }
            }
            UNDEFINE => {
                if let Ok(r) = serde_json::from_value::<UndefineRecord>(data.clone())
                    && out.get(&r.name).is_some_and(|s| s.definition_id == r.definition_id)
                {
                    out.remove(&r.name);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn define(id: &str, name: &str) -> Value {
        json!({"definitionId": id, "definition": {"name": name, "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {}, "code": "return 1"}})
    }

    #[test]
    fn the_last_definition_of_a_name_stands_with_its_own_decision() {
        let mut owned = define("c3", "b");
        owned["owner"] = json!("codex");
        let records = [
            (DEFINE, define("c1", "a")),
            (
                APPROVAL,
                json!({"definitionId": "c1", "name": "a", "approved": true, "by": "person", "callId": "x"}),
            ),
            (UNDEFINE, json!({"definitionId": "c1", "name": "a", "callId": "y"})),
            (DEFINE, define("c2", "a")),
            (DEFINE, owned),
            (
                APPROVAL,
                json!({"definitionId": "c3", "name": "b", "approved": false, "by": "person", "callId": "z"}),
            ),
        ];
        let out = fold(records.iter().map(|(k, v)| (*k, v)));
        assert_eq!(out.len(), 2);
        assert_eq!(out["a"].definition_id, "c2");
        assert_eq!(out["a"].approved, None, "a decision about an undefined definition is not kept");
        assert_eq!(out["b"].approved, Some(false));
        assert_eq!(out["a"].owner, None);
        assert_eq!(out["b"].owner.as_deref(), Some("codex"), "the definer is kept");
    }
}
