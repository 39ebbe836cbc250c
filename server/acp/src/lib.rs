//! The Agent Client Protocol in toolhost's terms, for the ACP front end (`toolhost acp`, the own
//! agent as an ACP agent): cards and logged records as `session/update`s ([`updates`], pure), what
//! is asked of the client — permission, plan reviews, questions, its files as the workspace's text
//! backend ([`client`]) —, a running command's output as it comes ([`live`]), and what a client
//! hands over with a session ([`session_inputs`]).

pub mod client;
pub mod live;
pub mod session_inputs;
pub mod updates;
