//! Replay: rebuilds every call's card from the log alone — no tool re-execution, no workspace
//! reads, no registry — through the same `card::build` the live server uses, from the
//! presentation the tool declared at call time (recorded in `tool/call`), so a replayed card
//! equals the card the client saw (given the same renderer versions).

use crate::view::SessionView;
use toolhost_protocol::card::{self, CallOrigin, Card, CardOutcome};
use toolhost_protocol::content::joined_text;

/// One replayed call.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayedCall {
    pub card: Card,
    /// The Native text the model saw (empty for a pending call).
    pub text: String,
    /// `rendererVersion` recorded in the log (0 for pending calls and synthetic results).
    pub renderer_version: u32,
    /// The tool's renderer changed since the call was logged, so today's rendering of the same
    /// value could differ from what was stored (the stored content is still what is shown).
    /// False when the tool is unknown now or the result was not rendered by a tool (version 0).
    pub stale_renderer: bool,
}

/// Cards of every call of `view`, in log order. `root` makes relative paths absolute;
/// `current_renderer_versions(tool)` gives today's renderer version of a tool, if registered.
pub fn replay_cards(
    view: &SessionView,
    root: &str,
    current_renderer_versions: impl Fn(&str) -> Option<u32>,
) -> Vec<ReplayedCall> {
    view.calls
        .iter()
        .map(|call| match &call.result {
            Some(result) => {
                let outcome = CardOutcome::Done {
                    content: &result.content,
                    is_error: result.is_error,
                    meta: result.meta.as_ref(),
                };
                let origin = CallOrigin::new(&call.call_id, &call.name)
                    .with_caller(call.caller.as_deref())
                    .with_parent(call.parent_call_id.as_deref());
                let card = card::build(origin, &call.presentation, root, outcome);
                let version = result.renderer_version;
                let stale = version != 0
                    && current_renderer_versions(&call.name).is_some_and(|now| now != version);
                ReplayedCall {
                    text: joined_text(&result.content),
                    card,
                    renderer_version: version,
                    stale_renderer: stale,
                }
            }
            None => ReplayedCall {
                card: card::build(
                    CallOrigin::new(&call.call_id, &call.name)
                        .with_caller(call.caller.as_deref())
                        .with_parent(call.parent_call_id.as_deref()),
                    &call.presentation,
                    root,
                    CardOutcome::Pending,
                ),
                text: String::new(),
                renderer_version: 0,
                stale_renderer: false,
            },
        })
        .collect()
}
