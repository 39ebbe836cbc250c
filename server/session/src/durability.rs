//! What a read-only call's records promise (`[session] durability`, docs/configuration.md).
//!
//! A mutation's records are always synced before its answer: revert and replay stand on them,
//! and the bytes they name are in the blob store before the file is replaced. A read-only call
//! changes nothing a later call depends on, so its `tool/result` may be answered before it is on
//! the disk — written at once (a crashed process loses nothing the kernel already has) and
//! synced with other lines within [`SYNC_WINDOW`]. That is the default: an `fdatasync` per read
//! is most of a small read's latency and halves what eight reads in flight get through, and what
//! a power loss can cost is the cards of the reads of the last few milliseconds, never a change.
//! `every-call` keeps the strict rule (each result synced before it is answered) for those who
//! want the transcript itself to survive a power cut to the last read.

use serde::Deserialize;
use std::time::Duration;

/// The longest a written line of a read-only call waits for its sync in [`Durability::Batched`].
pub const SYNC_WINDOW: Duration = Duration::from_millis(10);

/// When a read-only call's `tool/result` is synced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Written at once, synced within [`SYNC_WINDOW`] together with whatever else is pending (or
    /// sooner, by the next line someone waits for).
    #[default]
    Batched,
    /// Synced before the call is answered, like a mutation's.
    EveryCall,
}

impl Durability {
    /// Whether this mode is at least as strict as `other` (an untrusted source may only pick
    /// a mode that is).
    pub fn at_least_as_strict_as(self, other: Durability) -> bool {
        self == Durability::EveryCall || other == Durability::Batched
    }

    /// The mode as configured (`"batched"`, `"every-call"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Batched => "batched",
            Durability::EveryCall => "every-call",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_every_call_is_stricter() {
        use Durability::{Batched, EveryCall};
        assert!(EveryCall.at_least_as_strict_as(Batched));
        assert!(EveryCall.at_least_as_strict_as(EveryCall));
        assert!(Batched.at_least_as_strict_as(Batched));
        assert!(!Batched.at_least_as_strict_as(EveryCall));
    }

    #[test]
    fn parses_the_documented_names() {
        #[derive(Deserialize)]
        struct Section {
            durability: Durability,
        }
        for mode in [Durability::Batched, Durability::EveryCall] {
            let text = format!("{{\"durability\": \"{}\"}}", mode.as_str());
            let parsed: Section = serde_json::from_str(&text).expect("a documented name");
            assert_eq!(parsed.durability, mode);
        }
        assert!(serde_json::from_str::<Section>("{\"durability\": \"never\"}").is_err());
    }
}
