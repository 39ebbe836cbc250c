//! Spilling oversized results: the `SpillStore` capability, a private temp-dir store, and the
//! generic spill policy (docs/tools.md, Spill), a post-execute listener registered outermost that
//! bounds the finally accepted content and leaves a locator the model can `read` or `grep`.

use crate::error::ToolError;
use crate::pipeline::{CanonicalResult, Execution};
use crate::policy::{PostDecision, PostExecute, PostNext};
use crate::tool::BoxFuture;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
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

/// A streaming spill straight into its final file (the temp-dir store: names are random, so
/// nothing can see a half-written file under a name it expects).
struct FileSpillStream {
    file: Option<std::fs::File>,
    path: PathBuf,
    written: u64,
}

impl SpillStream for FileSpillStream {
    fn write(&mut self, bytes: &[u8]) -> Result<(), SpillError> {
        let file = self.file.as_mut().ok_or_else(|| SpillError("stream closed".to_owned()))?;
        file.write_all(bytes).map_err(|e| SpillError(e.to_string()))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn written(&self) -> u64 {
        self.written
    }

    fn finish(mut self: Box<Self>) -> Result<SpillReceipt, SpillError> {
        if let Some(file) = self.file.take() {
            file.sync_data().map_err(|e| SpillError(e.to_string()))?;
        }
        Ok(SpillReceipt {
            locator: self.path.to_string_lossy().into_owned(),
            bytes: self.written,
            retrieval_hint: RETRIEVAL_HINT.to_owned(),
        })
    }
}

impl Drop for FileSpillStream {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Handle type under which a spill store is provided as a capability.
pub type SpillHandle = Arc<dyn SpillStore>;

/// Escapes a file-name segment injectively: `[A-Za-z0-9._-]` stay, everything else (and `~`)
/// becomes `~` + 4 uppercase hex digits per UTF-16 unit; `""`, `.` and `..` are escaped too.
pub fn encode_segment(name: &str) -> String {
    match name {
        "" => return "~".to_owned(),
        "." => return "~002E".to_owned(),
        ".." => return "~002E~002E".to_owned(),
        _ => {}
    }
    let mut out = String::with_capacity(name.len());
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-') {
            out.push(ch);
        } else {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                out.push_str(&format!("~{unit:04X}"));
            }
        }
    }
    out
}

/// A private per-process temp directory (0700; files 0600, exclusive create) — the store used
/// when no durable session blob store is mounted.
#[derive(Default)]
pub struct TempDirSpillStore {
    root: OnceLock<Result<PathBuf, String>>,
}

impl TempDirSpillStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn root(&self) -> Result<&Path, SpillError> {
        let root = self.root.get_or_init(|| {
            let base = std::env::temp_dir();
            for _ in 0..16 {
                let dir = base.join(format!("toolhost-spill-{}", random_hex(6)));
                match create_private_dir(&dir) {
                    Ok(()) => return Ok(dir),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Err("could not create a private spill directory".to_owned())
        });
        root.as_deref().map_err(|e| SpillError(e.clone()))
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(bytes: usize) -> String {
    (0..bytes).map(|_| format!("{:02x}", rand::random::<u8>())).collect()
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

impl TempDirSpillStore {
    /// A new private file for `request` (0600, exclusive create).
    fn create_file(&self, request: &SpillRequest) -> Result<(std::fs::File, PathBuf), SpillError> {
        use std::os::unix::fs::OpenOptionsExt;
        let root = self.root()?;
        let dir =
            root.join(format!("session-{}", &sha256_hex(request.session_id.as_bytes())[..12]));
        match create_private_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(SpillError(e.to_string())),
        }
        let path =
            dir.join(format!("{}-{}", random_hex(6), encode_segment(&request.suggested_name)));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| SpillError(e.to_string()))?;
        Ok((file, path))
    }
}

impl SpillStore for TempDirSpillStore {
    fn open_stream(&self, request: &SpillRequest) -> Result<Box<dyn SpillStream>, SpillError> {
        let (file, path) = self.create_file(request)?;
        Ok(Box::new(FileSpillStream { file: Some(file), path, written: 0 }))
    }

    fn save_text(&self, request: SpillRequest) -> BoxFuture<'_, Result<SpillReceipt, SpillError>> {
        Box::pin(async move {
            let (mut file, path) = self.create_file(&request)?;
            file.write_all(request.content.as_bytes()).map_err(|e| SpillError(e.to_string()))?;
            Ok(SpillReceipt {
                locator: path.to_string_lossy().into_owned(),
                bytes: request.content.len() as u64,
                retrieval_hint: RETRIEVAL_HINT.to_owned(),
            })
        })
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

fn notice(omitted: usize, receipt: &SpillReceipt) -> String {
    format!(
        "(Omitted {omitted} bytes. Full formatted result stored at: {}. {})",
        receipt.locator, receipt.retrieval_hint
    )
}

/// The head…tail replacement of `text` bounded to `cap` bytes, or `None` when even the notice
/// does not fit (then the original is kept).
pub fn bounded_replacement(text: &str, cap: usize, receipt: &SpillReceipt) -> Option<String> {
    let total = text.len();
    // The notice's digits can only shrink once bytes are omitted, so `+ 2` covers the blank line.
    let reserve = notice(total, receipt).len() + 2;
    let budget = cap.saturating_sub(reserve);
    let head = head_bytes(text, budget.div_ceil(2));
    let tail = tail_bytes(text, budget / 2);
    let omitted = total - head.len() - tail.len();
    let note = notice(omitted, receipt);
    let replacement =
        if head.is_empty() && tail.is_empty() { note } else { format!("{head}{tail}\n\n{note}") };
    (replacement.len() <= cap && replacement.len() < total).then_some(replacement)
}

/// The generic spill policy. Register with `prepend = true` so it bounds what every other
/// listener finally accepted.
pub struct GenericSpill {
    max_inline_bytes: usize,
}

impl GenericSpill {
    pub fn new(max_inline_bytes: usize) -> Self {
        GenericSpill { max_inline_bytes }
    }
}

impl PostExecute for GenericSpill {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        result: &'a CanonicalResult,
        next: PostNext<'a>,
    ) -> BoxFuture<'a, Result<PostDecision, ToolError>> {
        Box::pin(async move {
            let decision = next.run().await?;
            let PostDecision::Accept { content, value: None, additional_contexts } = decision
            else {
                return Ok(decision);
            };
            if !exec.is_direct() || exec.name == "read" {
                return Ok(PostDecision::Accept { content, value: None, additional_contexts });
            }
            let blocks = content.as_deref().unwrap_or(result.result().content());
            let Some(text) = blocks.iter().map(ContentBlock::as_text).collect::<Option<String>>()
            else {
                return Ok(PostDecision::Accept { content, value: None, additional_contexts });
            };
            if text.len() <= self.max_inline_bytes {
                return Ok(PostDecision::Accept { content, value: None, additional_contexts });
            }
            let (Some(store), Some(session_id)) =
                (exec.capability::<SpillHandle>(), exec.session_id.clone())
            else {
                tracing::warn!(tool = %exec.name, "oversized result kept inline: no spill store or session");
                return Ok(PostDecision::Accept { content, value: None, additional_contexts });
            };
            let request = SpillRequest {
                session_id,
                tool_name: exec.name.clone(),
                call_id: exec.call_id.clone(),
                label: "result".to_owned(),
                suggested_name: format!("{}.txt", exec.name),
                content: text.clone(),
            };
            let receipt = match store.save_text(request).await {
                Ok(receipt) => receipt,
                Err(err) => {
                    tracing::warn!(tool = %exec.name, %err, "oversized result kept inline");
                    return Ok(PostDecision::Accept { content, value: None, additional_contexts });
                }
            };
            match bounded_replacement(&text, self.max_inline_bytes, &receipt) {
                Some(replacement) => Ok(PostDecision::Accept {
                    content: Some(vec![ContentBlock::text(replacement)]),
                    value: None,
                    additional_contexts,
                }),
                None => Ok(PostDecision::Accept { content, value: None, additional_contexts }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_segment_is_injective_on_specials() {
        assert_eq!(encode_segment(""), "~");
        assert_eq!(encode_segment("."), "~002E");
        assert_eq!(encode_segment(".."), "~002E~002E");
        assert_eq!(encode_segment("a b~/é"), "a~0020b~007E~002F~00E9");
        assert_eq!(encode_segment("web_fetch.txt"), "web_fetch.txt");
    }

    #[test]
    fn utf8_safe_cuts() {
        assert_eq!(head_bytes("aéb", 2), "a");
        assert_eq!(tail_bytes("aéb", 2), "b");
        assert_eq!(tail_bytes("aéb", 3), "éb");
    }

    #[test]
    fn replacement_fits_the_cap() {
        let text = "x".repeat(10_000);
        let receipt = SpillReceipt {
            locator: "/spill/f.txt".into(),
            bytes: 10_000,
            retrieval_hint: RETRIEVAL_HINT.into(),
        };
        let rep = bounded_replacement(&text, 1000, &receipt).unwrap();
        assert!(rep.len() <= 1000, "{}", rep.len());
        assert!(rep.ends_with(&format!(
            "Full formatted result stored at: /spill/f.txt. {RETRIEVAL_HINT})"
        )));
        assert!(bounded_replacement(&text, 20, &receipt).is_none());
    }
}
