//! File watching on behalf of language servers: the file watchers a server registers
//! (`client/registerCapability` for `workspace/didChangeWatchedFiles`) and which changes they
//! want. toolhost keeps language servers running between queries, so without this a server keeps
//! answering from the text it read before an agent (or the user) changed a file.
//!
//! Glob patterns follow LSP: `*` within one path segment, `**` across segments, `{a,b}`, `[…]`.
//! A plain pattern is matched against the absolute path; a relative pattern
//! (`{baseUri, pattern}`) against the path relative to its base.
//!
//! Registrations and watchers are `gen-lsp-types` shapes, read one by one: a malformed one is
//! skipped and the others still count.

use crate::shapes::each;
use gen_lsp_types::{BaseUri, FileSystemWatcher, GlobPattern, Registration, Unregistration};
use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;
use std::path::PathBuf;
use toolhost_contract::lsp::file_uri_path;

/// What happened to a file (LSP `FileChangeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileChangeKind {
    Created,
    Changed,
    Deleted,
}

impl FileChangeKind {
    /// The `FileChangeType` number on the wire.
    pub fn wire(self) -> u8 {
        match self {
            FileChangeKind::Created => 1,
            FileChangeKind::Changed => 2,
            FileChangeKind::Deleted => 3,
        }
    }

    /// The `WatchKind` bit a watcher must include to be told.
    fn watch_bit(self) -> u32 {
        match self {
            FileChangeKind::Created => 1,
            FileChangeKind::Changed => 2,
            FileChangeKind::Deleted => 4,
        }
    }
}

/// One changed file (absolute, symlink-free path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    pub kind: FileChangeKind,
}

/// One registered watcher.
#[derive(Clone, Debug)]
struct Watcher {
    registration: String,
    glob: GlobMatcher,
    base: Option<PathBuf>,
    kinds: u32,
}

/// The watchers a server registered.
#[derive(Clone, Debug, Default)]
pub struct Watchers {
    watchers: Vec<Watcher>,
}

fn compile(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// A list member of the params, as a slice (absent or not an array ⇒ empty).
fn list<'a>(params: Option<&'a Value>, key: &str) -> &'a [Value] {
    params.and_then(|p| p.get(key)).and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
}

impl Watchers {
    /// Applies `client/registerCapability` params; returns whether anything was registered.
    pub fn register(&mut self, params: Option<&Value>) -> bool {
        let before = self.watchers.len();
        for registration in each::<Registration>(list(params, "registrations")) {
            if registration.method != "workspace/didChangeWatchedFiles" {
                continue;
            }
            let watchers = list(registration.register_options.as_ref(), "watchers");
            for watcher in each::<FileSystemWatcher>(watchers) {
                // No kind means all three.
                let kinds = watcher.kind.map_or(7, u32::from);
                let (pattern, base) = match watcher.glob_pattern {
                    GlobPattern::Pattern(pattern) => (pattern, None),
                    GlobPattern::RelativePattern(relative) => {
                        let base = match relative.base_uri {
                            BaseUri::Uri(uri) => uri,
                            BaseUri::WorkspaceFolder(folder) => folder.uri,
                        };
                        let Some(base) = file_uri_path(base.as_str()) else { continue };
                        (relative.pattern, Some(base))
                    }
                };
                if let Some(glob) = compile(&pattern) {
                    let registration = registration.id.clone();
                    self.watchers.push(Watcher { registration, glob, base, kinds });
                }
            }
        }
        self.watchers.len() > before
    }

    /// Applies `client/unregisterCapability` params (the spec's field is `unregisterations`).
    /// Some servers spell it `unregistrations`, as it should have been; both are read.
    pub fn unregister(&mut self, params: Option<&Value>) {
        let mut items = list(params, "unregisterations");
        if items.is_empty() {
            items = list(params, "unregistrations");
        }
        let gone: Vec<String> = each::<Unregistration>(items).map(|u| u.id).collect();
        self.watchers.retain(|w| !gone.contains(&w.registration));
    }

    /// Whether some watcher wants to hear about `change`.
    pub fn wants(&self, change: &FileChange) -> bool {
        self.watchers.iter().any(|w| {
            if w.kinds & change.kind.watch_bit() == 0 {
                return false;
            }
            match &w.base {
                None => w.glob.is_match(&change.path),
                Some(base) => change.path.strip_prefix(base).is_ok_and(|rel| w.glob.is_match(rel)),
            }
        })
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.watchers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn change(path: &str, kind: FileChangeKind) -> FileChange {
        FileChange { path: PathBuf::from(path), kind }
    }

    #[test]
    fn plain_and_relative_patterns_with_kinds() {
        let mut w = Watchers::default();
        assert!(w.register(Some(&json!({"registrations": [
            {"id": "py", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": [
                {"globPattern": "**/*.{py,pyi}"},
                {"globPattern": {"baseUri": "file:///w", "pattern": "conf/*.toml"}, "kind": 2},
                {"globPattern": {"baseUri": {"uri": "file:///w", "name": "w"}, "pattern": "*.cfg"}},
            ]}},
            {"id": "other", "method": "textDocument/formatting", "registerOptions": {}},
        ]}))));
        use FileChangeKind::*;
        assert!(w.wants(&change("/w/src/a.py", Changed)));
        assert!(w.wants(&change("/w/a.pyi", Created)));
        assert!(!w.wants(&change("/w/a.c", Changed)));
        assert!(w.wants(&change("/w/conf/x.toml", Changed)));
        assert!(!w.wants(&change("/w/conf/x.toml", Deleted)), "kind 2 is Change only");
        assert!(!w.wants(&change("/w/conf/deep/x.toml", Changed)), "* stays in one segment");
        assert!(!w.wants(&change("/elsewhere/conf/x.toml", Changed)));
        assert!(w.wants(&change("/w/setup.cfg", Deleted)));
        w.unregister(Some(&json!({"unregisterations": [{"id": "py", "method": "workspace/didChangeWatchedFiles"}]})));
        assert!(w.is_empty());
        assert!(!w.wants(&change("/w/src/a.py", Changed)));
    }

    #[test]
    fn other_registrations_and_garbage_register_nothing() {
        let mut w = Watchers::default();
        assert!(!w.register(None));
        assert!(!w.register(Some(&json!({"registrations": [
            {"id": "f", "method": "textDocument/formatting"},
            {"id": "x", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": [
                {"globPattern": 3}, {"globPattern": {"pattern": "*.c"}}, {"nope": true}
            ]}},
        ]}))));
        assert!(w.is_empty());
    }
}
