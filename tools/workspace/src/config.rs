//! `[fs]`: where the confined filesystem reaches beyond the workspace folders (`extra_roots`) and
//! which paths tools never write (`protected`).

use crate::workspace::DEFAULT_PROTECTED;
use serde::Deserialize;
use std::path::PathBuf;
use toolhost_contract::config::{Layer, Section};

/// The `[fs]` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsSettings {
    /// More writable roots beside the workspace folders.
    pub extra_roots: Vec<PathBuf>,
    /// Root-relative paths tools read but never write (`.git/`, `toolhost.toml`, …).
    pub protected: Vec<String>,
}

impl Default for FsSettings {
    fn default() -> Self {
        FsSettings {
            extra_roots: Vec::new(),
            protected: DEFAULT_PROTECTED.iter().map(|p| (*p).to_owned()).collect(),
        }
    }
}

/// `[fs]` as one source gives it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FsSection {
    extra_roots: Option<Vec<PathBuf>>,
    protected: Option<Vec<String>>,
}

impl Section for FsSection {
    type Settings = FsSettings;

    fn apply(self, fs: &mut FsSettings, layer: &mut Layer<'_>) {
        if let Some(roots) = self.extra_roots {
            fs.extra_roots = roots.into_iter().map(|r| layer.resolve(r)).collect();
        }
        if let Some(protected) = self.protected {
            fs.protected = protected;
        }
    }
}
