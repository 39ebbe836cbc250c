//! The `BlobCache` capability: a small keyed byte cache in the session's blob store, for tools
//! that may reuse what they fetched earlier in the session (`web_fetch`'s URL cache). The host
//! decides where the bytes live; the tool decides what a key means and when an entry is stale.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A keyed byte cache. Best effort: a failed `put` is dropped, a missing entry is `None`.
pub trait BlobCache: Send + Sync {
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    fn put(&self, key: &str, bytes: &[u8]);
}

/// Handle type under which a cache is provided as a capability.
pub type BlobCacheHandle = Arc<dyn BlobCache>;

/// An in-memory cache: the store used when no session blob store is mounted (and in tests).
#[derive(Default)]
pub struct MemoryBlobCache {
    entries: Mutex<HashMap<String, Vec<u8>>>,
}

impl MemoryBlobCache {
    pub fn new() -> Self {
        Self::default()
    }
}

impl BlobCache for MemoryBlobCache {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    fn put(&self, key: &str, bytes: &[u8]) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(key.to_owned(), bytes.to_vec());
        }
    }
}
