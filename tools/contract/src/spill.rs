//! Spilling oversized results, as tools see it: the `SpillStore` capability (where a complete
//! output goes when the model gets only part of it), and how a tool declares its output spills
//! ([`SpillMode`], [`OwnSpill`]). The policy that applies the declarations lives with the
//! registry; docs/tools.md ("Spill") describes what the model sees.

use crate::future::BoxFuture;
use toolhost_protocol::ContentBlock;

/// The hint appended to every spill notice.
pub const RETRIEVAL_HINT: &str =
    "Use read with offset/limit, or grep this path to search within it.";

/// What to store.
#[derive(Clone, Debug)]
pub struct SpillRequest {
    pub session_id: String,
    pub tool_name: String,
    pub call_id: String,
    /// `result` for model-facing spills.
    pub label: String,
    pub suggested_name: String,
    pub content: String,
}

/// Where it was stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillReceipt {
    /// An absolute path the `read` and `grep` tools accept.
    pub locator: String,
    pub bytes: u64,
    pub retrieval_hint: String,
}

/// Storage failure (spill then keeps the original content).
#[derive(Debug, thiserror::Error)]
#[error("spill store failed: {0}")]
pub struct SpillError(pub String);

/// The spill capability (`Arc<dyn SpillStore>` in the capabilities map).
pub trait SpillStore: Send + Sync {
    fn save_text(&self, request: SpillRequest) -> BoxFuture<'_, Result<SpillReceipt, SpillError>>;

    /// A spill file written while its content is produced (a command's output, which may be far
    /// larger than memory should hold). `request.content` is ignored. Blocking file I/O: call it
    /// from a blocking context or accept short writes to the page cache.
    fn open_stream(&self, request: &SpillRequest) -> Result<Box<dyn SpillStream>, SpillError> {
        let _ = request;
        Err(SpillError("this spill store cannot stream".to_owned()))
    }
}

/// An open streaming spill: bytes go in as they come, [`SpillStream::finish`] makes the file
/// durable and says where it is. Dropping it unfinished removes what was written.
pub trait SpillStream: Send {
    fn write(&mut self, bytes: &[u8]) -> Result<(), SpillError>;
    /// Bytes written so far.
    fn written(&self) -> u64;
    fn finish(self: Box<Self>) -> Result<SpillReceipt, SpillError>;
}

/// Handle type under which a spill store is provided as a capability.
pub type SpillHandle = std::sync::Arc<dyn SpillStore>;

/// How a tool's oversized direct results are kept out of the model's context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpillMode {
    /// The host's generic spill: Native text over the configured cap is stored whole and the
    /// model gets its head, its tail and where the rest is.
    #[default]
    Generic,
    /// Never spilled: the tool bounds its own output (`read` pages a file).
    Never,
    /// The tool decides ([`crate::Tool::spill_over`]): it stores its complete output in its own
    /// format and shows a page of it; the generic spill still bounds that page.
    Own,
}

/// The page a tool's own spill shows once its complete output is stored, given the stored file's
/// locator and retrieval hint.
pub type SpilledPage = Box<dyn FnOnce(&str, &str) -> Vec<ContentBlock> + Send>;

/// A tool's own spill of one result: the complete text to store, and the page the model sees
/// instead once it is stored.
pub struct OwnSpill {
    pub file_name: String,
    pub content: String,
    pub page: SpilledPage,
}

impl std::fmt::Debug for OwnSpill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnSpill")
            .field("file_name", &self.file_name)
            .field("bytes", &self.content.len())
            .finish_non_exhaustive()
    }
}

/// The first at most `budget` bytes of `text`, cut at a char boundary.
pub fn head_bytes(text: &str, budget: usize) -> &str {
    let mut end = budget.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The last at most `budget` bytes of `text`, cut at a char boundary.
pub fn tail_bytes(text: &str, budget: usize) -> &str {
    let mut start = text.len() - budget.min(text.len());
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_safe_cuts() {
        assert_eq!(head_bytes("aéb", 2), "a");
        assert_eq!(tail_bytes("aéb", 2), "b");
        assert_eq!(tail_bytes("aéb", 3), "éb");
    }
}
