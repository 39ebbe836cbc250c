//! The content-addressed blob store beside a session's log: spill files and image bytes, named by
//! the sha256 of their content (`blobs/<hex>`).
//!
//! A blob is written to a private temp file, synced, then hard-linked to its final name: the link
//! is atomic and never replaces, so a reader never sees a partial blob and an existing blob with
//! the same hash (same content) simply means success. Files are 0600 and the folder 0700.
//!
//! Keyed entries (a tool's cache, e.g. `web_fetch`'s pages): the bytes are an ordinary blob and
//! `blobs/keys/<sha256 of the key>` holds that blob's hash. The pointer is replaced atomically
//! (temp file + rename), so a reader sees the old entry or the new one, and the index survives
//! the process: a resumed session, or the next `toolhost call --session`, finds it.
//!
//! Log convention: an image block's `data` in a `tool/result` line is `blob:sha256:<hex>` (see
//! [`blob_reference`]); the blob holds the decoded image bytes.

use crate::error::SessionError;
use crate::paths::{create_private_dir_all, sync_dir};
use sha2::{Digest, Sha256};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use toolhost_contract::BoxFuture;
use toolhost_contract::spill::{
    RETRIEVAL_HINT, SpillError, SpillReceipt, SpillRequest, SpillStore, SpillStream,
};

/// The folder (inside the blob folder) of keyed entries' pointers.
const KEYS_DIR: &str = "keys";

/// Prefix of a blob reference in the log.
pub const BLOB_REF_PREFIX: &str = "blob:sha256:";

/// `blob:sha256:<hex>`: what the log stores in place of an image's base64 data.
pub fn blob_reference(hash: &str) -> String {
    format!("{BLOB_REF_PREFIX}{hash}")
}

/// The hash inside a well-formed blob reference.
pub fn parse_blob_reference(text: &str) -> Option<&str> {
    text.strip_prefix(BLOB_REF_PREFIX).filter(|h| is_hash(h))
}

fn is_hash(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Lowercase sha256 hex of `bytes`: a blob's name.
pub fn blob_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One session's blob folder. Cheap to clone; the folder is created on the first put.
#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    /// A store in `dir` (made absolute, since spill locators must be absolute paths).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        BlobStore { dir }
    }

    /// The folder that holds the blobs; the server adds it as a read-only root so the spill
    /// notice's "use read …" hint works.
    pub fn blob_dir(&self) -> &Path {
        &self.dir
    }

    /// Where the blob with `hash` lives (whether or not it exists).
    pub fn path_of(&self, hash: &str) -> Result<PathBuf, SessionError> {
        if !is_hash(hash) {
            return Err(SessionError::InvalidBlobHash(hash.to_owned()));
        }
        Ok(self.dir.join(hash))
    }

    /// Stores `bytes` durably and returns their hash. Storing the same content twice is a no-op.
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<String, SessionError> {
        let hash = blob_hash(bytes);
        self.put_hashed(&hash, bytes)?;
        Ok(hash)
    }

    /// Whether the blob of `hash` is stored.
    pub fn has(&self, hash: &str) -> bool {
        self.path_of(hash).is_ok_and(|path| path.exists())
    }

    /// [`put_bytes`](Self::put_bytes) for bytes whose [`blob_hash`] the caller already has.
    pub fn put_hashed(&self, hash: &str, bytes: &[u8]) -> Result<(), SessionError> {
        let target = self.path_of(hash)?;
        if target.exists() {
            return Ok(());
        }
        create_private_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!(".tmp-{}-{:08x}", &hash[..16], rand::random::<u32>()));
        let written = write_new_file(&tmp, bytes)
            .map_err(|e| SessionError::io(format!("cannot write blob {}", tmp.display()), e));
        let linked = written.and_then(|()| match std::fs::hard_link(&tmp, &target) {
            Ok(()) => Ok(()),
            // Same name ⇒ same content: another writer got there first.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(SessionError::io(format!("cannot store blob {}", target.display()), e)),
        });
        let _ = std::fs::remove_file(&tmp);
        linked?;
        sync_dir(&self.dir)
    }

    /// Stores `bytes` under `key` (replacing what the key held); returns the blob's hash.
    pub fn put_keyed(&self, key: &str, bytes: &[u8]) -> Result<String, SessionError> {
        let hash = self.put_bytes(bytes)?;
        let keys = self.dir.join(KEYS_DIR);
        create_private_dir_all(&keys)?;
        let pointer = keys.join(blob_hash(key.as_bytes()));
        let tmp = keys.join(format!(".tmp-{:016x}", rand::random::<u64>()));
        let written = write_new_file(&tmp, hash.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, &pointer))
            .map_err(|e| SessionError::io(format!("cannot write {}", pointer.display()), e));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        sync_dir(&keys)?;
        Ok(hash)
    }

    /// The bytes last stored under `key`, if any.
    pub fn get_keyed(&self, key: &str) -> Result<Option<Vec<u8>>, SessionError> {
        let pointer = self.dir.join(KEYS_DIR).join(blob_hash(key.as_bytes()));
        let hash = match std::fs::read_to_string(&pointer) {
            Ok(hash) => hash,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(SessionError::io(format!("cannot read {}", pointer.display()), e));
            }
        };
        match self.get_bytes(hash.trim()) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(SessionError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The bytes of the blob with `hash`.
    pub fn get_bytes(&self, hash: &str) -> Result<Vec<u8>, SessionError> {
        let path = self.path_of(hash)?;
        std::fs::read(&path).map_err(|e| match e.kind() {
            ErrorKind::NotFound => SessionError::NotFound(path),
            _ => SessionError::io(format!("cannot read blob {}", path.display()), e),
        })
    }
}

/// Exclusive create (a pre-planted file or symlink makes it fail), 0600, synced before linking.
fn write_new_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A blob written as it is produced: a private temp file hashed on the way in, linked to its
/// content name by [`SpillStream::finish`]. Dropped unfinished, the temp file is removed.
struct BlobStream {
    dir: PathBuf,
    tmp: PathBuf,
    file: Option<std::fs::File>,
    hasher: Sha256,
    written: u64,
}

impl SpillStream for BlobStream {
    fn write(&mut self, bytes: &[u8]) -> Result<(), SpillError> {
        let file = self.file.as_mut().ok_or_else(|| SpillError("stream closed".to_owned()))?;
        file.write_all(bytes).map_err(|e| SpillError(e.to_string()))?;
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn written(&self) -> u64 {
        self.written
    }

    fn finish(mut self: Box<Self>) -> Result<SpillReceipt, SpillError> {
        let file = self.file.take().ok_or_else(|| SpillError("stream closed".to_owned()))?;
        let hash = hex::encode(std::mem::take(&mut self.hasher).finalize());
        let target = self.dir.join(&hash);
        let linked = file.sync_all().map_err(|e| SpillError(e.to_string())).and_then(|()| {
            match std::fs::hard_link(&self.tmp, &target) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(SpillError(format!("cannot store blob {}: {e}", target.display()))),
            }
        });
        let _ = std::fs::remove_file(&self.tmp);
        linked?;
        sync_dir(&self.dir).map_err(|e| SpillError(e.to_string()))?;
        Ok(SpillReceipt {
            locator: target.to_string_lossy().into_owned(),
            bytes: self.written,
            retrieval_hint: RETRIEVAL_HINT.to_owned(),
        })
    }
}

impl Drop for BlobStream {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

impl SpillStore for BlobStore {
    /// A blob streamed in (a command's output); its locator is the blob's absolute path.
    fn open_stream(&self, _request: &SpillRequest) -> Result<Box<dyn SpillStream>, SpillError> {
        create_private_dir_all(&self.dir).map_err(|e| SpillError(e.to_string()))?;
        let tmp = self.dir.join(format!(".tmp-stream-{:016x}", rand::random::<u64>()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| SpillError(format!("cannot create {}: {e}", tmp.display())))?;
        Ok(Box::new(BlobStream {
            dir: self.dir.clone(),
            tmp,
            file: Some(file),
            hasher: Sha256::new(),
            written: 0,
        }))
    }

    /// Stores the full text as a blob; the locator is the blob's absolute path.
    fn save_text(&self, request: SpillRequest) -> BoxFuture<'_, Result<SpillReceipt, SpillError>> {
        let store = self.clone();
        Box::pin(async move {
            let bytes = request.content.len() as u64;
            // Spills can be megabytes and are fsync'd: keep that off the async worker threads
            // when there is a tokio runtime to hand it to (inline otherwise).
            let put = move || store.put_bytes(request.content.as_bytes());
            let stored = match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn_blocking(put).await.map_err(|e| SpillError(e.to_string()))?
                }
                Err(_) => put(),
            };
            let hash = stored.map_err(|e| SpillError(e.to_string()))?;
            Ok(SpillReceipt {
                locator: self.dir.join(hash).to_string_lossy().into_owned(),
                bytes,
                retrieval_hint: RETRIEVAL_HINT.to_owned(),
            })
        })
    }
}
