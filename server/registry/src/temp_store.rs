//! A private per-process temp directory as the spill store, used when no session blob store is
//! mounted (a host without a session).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolhost_contract::BoxFuture;
use toolhost_contract::spill::{
    RETRIEVAL_HINT, SpillError, SpillReceipt, SpillRequest, SpillStore, SpillStream,
};

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

/// Escapes a file-name segment injectively: `[A-Za-z0-9._-]` stay, everything else (and `~`)
/// becomes `~` + 4 uppercase hex digits per UTF-16 unit; `""`, `.` and `..` are escaped too.
pub(crate) fn encode_segment(name: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::encode_segment;

    #[test]
    fn encode_segment_is_injective_on_specials() {
        assert_eq!(encode_segment(""), "~");
        assert_eq!(encode_segment("."), "~002E");
        assert_eq!(encode_segment(".."), "~002E~002E");
        assert_eq!(encode_segment("a b~/é"), "a~0020b~007E~002F~00E9");
        assert_eq!(encode_segment("web_fetch.txt"), "web_fetch.txt");
    }
}
