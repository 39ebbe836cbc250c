//! toolhost's own agent on a host (docs/agent.md): a run over the host's registry that records
//! its conversation in the session log (`run`), the conversation rebuilt from a log
//! (`conversation`) and how a run is reported (`report`). The loop and the model client are
//! `toolhost-agent`'s; the permission modes are `crate::permissions`, the `subagent` tool
//! `crate::subagent`.

mod conversation;
mod report;
mod run;

pub use conversation::{conversation_from_log, conversation_in, records_from_log};
pub use report::{end_json, event_json, record_text, update_json, usage_line};
pub use run::{RunReport, RunRequest, RunUpdate, SharedMode, new_chat_id, new_run_id, run};
