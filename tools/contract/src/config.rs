//! A configuration section as the crate it configures owns it (docs/configuration.md). The crate
//! owns its settings type and the section's keys; the host reads every source — the user config,
//! the workspace's `toolhost.toml`, the editor's `initializationOptions`, flags — and applies each
//! section of each source in that order, later sources winning key by key.

use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// One source being applied: its name (for messages), the workspace root (relative paths
/// resolve against it) and the warnings the front end shows.
pub struct Layer<'a> {
    pub source: &'a str,
    pub root: &'a Path,
    pub warnings: &'a mut Vec<String>,
}

impl Layer<'_> {
    /// `path` as configured: absolute as is, relative to the workspace root.
    pub fn resolve(&self, path: PathBuf) -> PathBuf {
        if path.is_absolute() { path } else { self.root.join(path) }
    }
}

/// One configuration section as one source gives it: every key optional.
pub trait Section: Default + DeserializeOwned {
    /// What the section configures.
    type Settings;

    /// Applies this source's keys over `settings`.
    fn apply(self, settings: &mut Self::Settings, layer: &mut Layer<'_>);

    /// Before anything of an untrusted source (a cloned repository's `toolhost.toml`, editor
    /// settings that may come from it) is applied: drops what such a source may not set —
    /// whatever starts a program, reaches further, or loosens a check — and names each group of
    /// dropped keys (`shell.env`, `lsp.servers.clangd.command/args`) for the warning. A key that
    /// can only narrow what toolhost does stays.
    fn restrict_untrusted(&mut self) -> Vec<String> {
        Vec::new()
    }
}
