//! The Agent Client Protocol in toolhost's terms, for the ACP front end (`toolhost acp`, the own
//! agent as an ACP agent): cards and logged records as `session/update`s ([`updates`], pure), what
//! is asked of the client — permission, plan reviews, questions, its files as the workspace's text
//! backend ([`client`]) —, a running command's output as it comes ([`live`]), and what a client
//! hands over with a session ([`session_inputs`]); a run's calls followed as tool calls
//! ([`follow`]); the `initialize` answer, modes, stop reasons and errors ([`replies`]). And the
//! other direction: agents toolhost hosts as their ACP client ([`hosted`]).

pub mod client;
pub mod follow;
pub mod hosted;
pub mod live;
pub mod replies;
pub mod session_inputs;
pub mod updates;
