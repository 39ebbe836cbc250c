//! The observation ledger: what one session has seen of each file, for read-before-write.
//!
//! A version is the sha256 of the content, not a timestamp, so a `touch` or a checkout that
//! restores identical bytes never makes an edit stale (the false positives other agents suffer
//! from on Windows and network filesystems).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use sha2::{Digest, Sha256};

/// Called with `(path, version)` whenever the ledger records; `None` means "observed absent".
/// The server appends these as `fs/observed` events so a continued session can [`Ledger::restore`].
pub type ObserveHook = Arc<dyn Fn(&str, Option<&str>) + Send + Sync>;

/// What the session last saw at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// The file existed with this version (sha256 hex of its bytes).
    Present(String),
    /// The file did not exist.
    Absent,
}

impl Observation {
    pub fn version(&self) -> Option<&str> {
        match self {
            Observation::Present(version) => Some(version),
            Observation::Absent => None,
        }
    }
}

/// The per-session ledger. Keys are the canonical absolute paths the workspace hands out (the
/// display path with symlinks resolved), so a file read through a link may be edited by its real
/// name and vice versa.
#[derive(Default)]
pub struct Ledger {
    entries: Mutex<HashMap<String, Observation>>,
    suspect: Mutex<HashSet<String>>,
    hook: Option<ObserveHook>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("entries", &lock(&self.entries).len())
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// The maps hold plain data that stays consistent even if a holder panicked, so poisoning is
/// ignored rather than turned into a panic here.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Ledger {
    pub fn new() -> Self {
        Self::default()
    }

    /// A ledger that reports every record to `hook`.
    pub fn with_observer(hook: ObserveHook) -> Self {
        Ledger { hook: Some(hook), ..Self::default() }
    }

    pub fn get(&self, path: &str) -> Option<Observation> {
        lock(&self.entries).get(path).cloned()
    }

    /// Records an observation and tells the hook. The hook runs after the map is unlocked so it
    /// may call back into the ledger.
    pub fn record(&self, path: &str, observation: Observation) {
        lock(&self.suspect).remove(path);
        let version = observation.version().map(str::to_owned);
        lock(&self.entries).insert(path.to_owned(), observation);
        if let Some(hook) = &self.hook {
            hook(path, version.as_deref());
        }
    }

    /// Rebuilds the ledger from `(path, version)` pairs replayed from the session log, in log
    /// order (later entries win). The hook is not called: these are already in the log.
    pub fn restore<I, P, V>(&self, entries: I)
    where
        I: IntoIterator<Item = (P, Option<V>)>,
        P: Into<String>,
        V: Into<String>,
    {
        let mut map = lock(&self.entries);
        for (path, version) in entries {
            let observation = match version {
                Some(version) => Observation::Present(version.into()),
                None => Observation::Absent,
            };
            map.insert(path.into(), observation);
        }
    }

    /// Flags a path a file watcher saw change outside toolhost. Versions are content hashes and
    /// every write re-hashes the file, so this is advisory: it lets a caller know the
    /// observation is probably out of date before trying. Cleared by the next record.
    pub fn mark_suspect(&self, path: &str) {
        if lock(&self.entries).contains_key(path) {
            lock(&self.suspect).insert(path.to_owned());
        }
    }

    pub fn is_suspect(&self, path: &str) -> bool {
        lock(&self.suspect).contains(path)
    }

    /// Every entry, for tests and diagnostics.
    pub fn snapshot(&self) -> Vec<(String, Observation)> {
        let mut entries: Vec<_> =
            lock(&self.entries).iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }
}

/// The version of a byte string: lowercase sha256 hex.
pub fn content_version(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// [`content_version`] of bytes that arrive in pieces, so a file is versioned without holding
/// it whole in memory.
#[derive(Debug, Clone, Default)]
pub struct VersionHasher(Sha256);

impl VersionHasher {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The version of everything passed to [`VersionHasher::update`], in order.
    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_restores_and_reports() {
        type Events = Vec<(String, Option<String>)>;
        let seen: Arc<Mutex<Events>> = Arc::default();
        let sink = seen.clone();
        let ledger = Ledger::with_observer(Arc::new(move |p: &str, v: Option<&str>| {
            lock(&sink).push((p.to_owned(), v.map(str::to_owned)));
        }));
        ledger.record("/w/a", Observation::Present("v1".into()));
        ledger.record("/w/b", Observation::Absent);
        assert_eq!(
            *lock(&seen),
            vec![("/w/a".to_owned(), Some("v1".to_owned())), ("/w/b".to_owned(), None)]
        );

        let restored = Ledger::new();
        restored.restore(lock(&seen).clone());
        assert_eq!(restored.snapshot(), ledger.snapshot());
        assert_eq!(restored.get("/w/a"), Some(Observation::Present("v1".into())));

        restored.mark_suspect("/w/a");
        restored.mark_suspect("/w/never-seen");
        assert!(restored.is_suspect("/w/a"));
        assert!(!restored.is_suspect("/w/never-seen"));
        restored.record("/w/a", Observation::Present("v2".into()));
        assert!(!restored.is_suspect("/w/a"));
    }

    #[test]
    fn streamed_version_is_the_whole_version() {
        let bytes = b"one\ntwo\nthree\n";
        let mut hasher = VersionHasher::new();
        for piece in bytes.chunks(5) {
            hasher.update(piece);
        }
        assert_eq!(hasher.finish(), content_version(bytes));
    }

    #[test]
    fn version_is_sha256_hex() {
        assert_eq!(
            content_version(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
