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
    /// can only narrow what toolhost does stays. `applied` is the settings as the sources before
    /// this one left them (the user's configuration, an untrusted source already restricted), so
    /// a key can be held to "not looser than that": a cap no higher, a switch turned only one
    /// way, a list only added to.
    fn restrict_untrusted(&mut self, applied: &Self::Settings) -> Vec<String> {
        let _ = applied;
        Vec::new()
    }
}

/// The keys `restrict_untrusted` drops, collected while each key is held to what only narrows.
#[derive(Debug, Default)]
pub struct Dropped {
    keys: Vec<String>,
}

impl Dropped {
    pub fn new() -> Self {
        Dropped::default()
    }

    /// Names `key` as dropped (or changed: a note may say how, `fs.protected (removing ".git/")`).
    pub fn push(&mut self, key: impl Into<String>) {
        self.keys.push(key.into());
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Drops `value` whatever it is: the key starts a program, reaches further or loosens a
    /// check whichever value it has.
    pub fn always<T>(&mut self, key: &str, value: &mut Option<T>) {
        if value.take().is_some() {
            self.push(key);
        }
    }

    /// Keeps `value` only when `narrows` says it does; else drops it.
    pub fn unless<T>(
        &mut self,
        key: &str,
        value: &mut Option<T>,
        narrows: impl FnOnce(&T) -> bool,
    ) {
        if value.as_ref().is_some_and(|v| !narrows(v)) {
            *value = None;
            self.push(key);
        }
    }

    /// A cap: kept when it is at most `applied` (a lower cap narrows, a higher one widens).
    pub fn cap<T: PartialOrd>(&mut self, key: &str, value: &mut Option<T>, applied: T) {
        self.unless(key, value, |v| *v <= applied);
    }

    /// A switch that may turn something off but not on (`true` over an applied `false`).
    pub fn only_off(&mut self, key: &str, value: &mut Option<bool>, applied: bool) {
        self.unless(key, value, |on| !*on || applied);
    }

    /// A switch that may turn a check on but not off (`false` over an applied `true`).
    pub fn only_on(&mut self, key: &str, value: &mut Option<bool>, applied: bool) {
        self.unless(key, value, |on| *on || !applied);
    }

    /// The dropped keys as one group, `shell.sandbox/shell.env` (none when nothing was dropped).
    pub fn group(self) -> Vec<String> {
        if self.keys.is_empty() { Vec::new() } else { vec![self.keys.join("/")] }
    }

    /// The dropped keys as one group under `prefix`, `lsp.servers.c.command/args`.
    pub fn group_under(self, prefix: &str) -> Vec<String> {
        if self.keys.is_empty() {
            Vec::new()
        } else {
            vec![format!("{prefix}.{}", self.keys.join("/"))]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_keeps_only_what_narrows() {
        let mut dropped = Dropped::new();
        let (mut lower, mut higher) = (Some(5_u64), Some(50_u64));
        dropped.cap("a.lower", &mut lower, 10);
        dropped.cap("a.higher", &mut higher, 10);
        assert_eq!((lower, higher), (Some(5), None));
        let (mut off, mut on) = (Some(false), Some(true));
        dropped.only_off("a.off", &mut off, false);
        dropped.only_off("a.on", &mut on, false);
        assert_eq!((off, on), (Some(false), None));
        let (mut check_on, mut check_off) = (Some(true), Some(false));
        dropped.only_on("a.check_on", &mut check_on, true);
        dropped.only_on("a.check_off", &mut check_off, true);
        assert_eq!((check_on, check_off), (Some(true), None));
        let mut program = Some("sh");
        dropped.always("a.program", &mut program);
        assert_eq!(program, None);
        let mut unset: Option<u64> = None;
        dropped.cap("a.unset", &mut unset, 0);
        dropped.always("a.unset", &mut unset);
        assert_eq!(dropped.group(), ["a.higher/a.on/a.check_off/a.program"]);
        assert!(Dropped::new().group_under("x").is_empty());
    }
}
