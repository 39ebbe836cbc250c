//! Whose each session tool is (docs/tools.md "Whose tool"): the caller whose `tool_define` call
//! defined it is the only one offered it and allowed to call or remove it. Kept apart from
//! `session_tools` so the host's model listing can consult it without depending on the tools.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Who defined each session tool: the caller it is listed to and may be called by.
#[derive(Default)]
pub struct Owners {
    by_tool: Mutex<HashMap<String, String>>,
}

impl Owners {
    /// Whether `caller` may see and call tool `name`: any tool that is not another caller's
    /// session tool. A caller without a name (the editor's person, the CLI) reaches every one.
    pub fn visible(&self, name: &str, caller: Option<&str>) -> bool {
        let Some(caller) = caller else { return true };
        let by_tool = self.by_tool.lock().unwrap_or_else(PoisonError::into_inner);
        by_tool.get(name).is_none_or(|owner| owner == caller)
    }

    pub(crate) fn set(&self, name: &str, owner: Option<String>) {
        let mut by_tool = self.by_tool.lock().unwrap_or_else(PoisonError::into_inner);
        match owner {
            Some(owner) => by_tool.insert(name.to_owned(), owner),
            None => by_tool.remove(name),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_tool_is_visible_to_its_definer_only() {
        let owners = Owners::default();
        owners.set("mine", Some("claude-code".to_owned()));
        assert!(owners.visible("mine", Some("claude-code")));
        assert!(!owners.visible("mine", Some("codex")));
        assert!(owners.visible("mine", None), "the editor's person reaches every tool");
        assert!(owners.visible("read", Some("codex")), "other tools are everyone's");
        owners.set("mine", None);
        assert!(owners.visible("mine", Some("codex")));
    }
}
