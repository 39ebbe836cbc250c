//! `[fs]`: where the confined filesystem reaches beyond the workspace folders (`extra_roots`) and
//! which paths tools never write (`protected`).

use crate::workspace::DEFAULT_PROTECTED;
use serde::Deserialize;
use std::path::PathBuf;
use toolhost_contract::config::{Dropped, Layer, Section};

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

    /// `extra_roots` would make tools write (and the `bash` sandbox allow writes) outside the
    /// workspace: dropped, unless it only leaves out some of the roots already configured.
    /// `protected` only narrows when it adds: it is taken as the configured list plus its own
    /// entries, and named when it tried to remove one (`.git/` keeps hooks unwritable).
    fn restrict_untrusted(&mut self, applied: &FsSettings) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.unless("fs.extra_roots", &mut self.extra_roots, |roots| {
            roots.iter().all(|root| root.is_absolute() && applied.extra_roots.contains(root))
        });
        if let Some(asked) = self.protected.take() {
            let removed: Vec<String> = applied
                .protected
                .iter()
                .filter(|p| !asked.contains(p))
                .map(|p| format!("\"{p}\""))
                .collect();
            if !removed.is_empty() {
                dropped.push(format!("fs.protected (removing {})", removed.join(", ")));
            }
            let mut protected = applied.protected.clone();
            protected.extend(asked.into_iter().filter(|p| !applied.protected.contains(p)));
            self.protected = Some(protected);
        }
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_source_cannot_add_extra_roots() {
        let applied = FsSettings {
            extra_roots: vec!["/user/a".into(), "/user/b".into()],
            ..Default::default()
        };
        for roots in [vec!["/somewhere/outside"], vec!["/user/a", "/other"], vec!["sub"]] {
            let mut section = FsSection {
                extra_roots: Some(roots.iter().map(PathBuf::from).collect()),
                ..Default::default()
            };
            assert_eq!(section.restrict_untrusted(&applied), ["fs.extra_roots"], "{roots:?}");
            assert_eq!(section.extra_roots, None);
        }
        // Leaving out a configured root only narrows.
        let mut section =
            FsSection { extra_roots: Some(vec!["/user/b".into()]), ..Default::default() };
        assert!(section.restrict_untrusted(&applied).is_empty());
        assert_eq!(section.extra_roots, Some(vec![PathBuf::from("/user/b")]));
    }

    #[test]
    fn an_untrusted_protected_list_adds_and_never_removes() {
        let applied = FsSettings::default();
        let mut section = FsSection { protected: Some(Vec::new()), ..Default::default() };
        assert_eq!(
            section.restrict_untrusted(&applied),
            [r#"fs.protected (removing ".git/", "toolhost.toml", ".toolhost/")"#]
        );
        assert_eq!(section.protected, Some(applied.protected.clone()));
        let mut section = FsSection {
            protected: Some(vec![
                ".git/".into(),
                "toolhost.toml".into(),
                ".toolhost/".into(),
                "secrets/".into(),
            ]),
            ..Default::default()
        };
        assert!(section.restrict_untrusted(&applied).is_empty());
        let mut expected = applied.protected.clone();
        expected.push("secrets/".into());
        assert_eq!(section.protected, Some(expected));
    }
}
