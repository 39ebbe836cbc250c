//! Lexical path handling: the display path (`resolve(root, file_path)` like Node's
//! `path.resolve`, never realpath'd), matching against roots, and protected patterns.
//!
//! Nothing here touches the filesystem; the kernel re-verifies every component when the path is
//! actually opened beneath a root handle.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Longest path string accepted (Linux `PATH_MAX` without the terminating NUL).
pub(crate) const MAX_PATH_BYTES: usize = 4095;
/// Longest single component accepted (Linux `NAME_MAX`).
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// Normalizes an absolute path: drops `.`, empty components and trailing slashes, applies `..`
/// lexically (`/..` stays `/`). Relative input is taken as relative to `/`.
pub(crate) fn normalize_absolute(path: &Path) -> PathBuf {
    let mut parts: Vec<&OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(name) => parts.push(name),
        }
    }
    let mut out = PathBuf::from("/");
    out.extend(parts);
    out
}

/// `path.resolve(base, input)`: absolute input is normalized as is; relative input is joined to
/// `base` first.
pub(crate) fn resolve_lexical(base: &Path, input: &str) -> PathBuf {
    let input = Path::new(input);
    if input.is_absolute() {
        normalize_absolute(input)
    } else {
        normalize_absolute(&base.join(input))
    }
}

/// A parsed protected pattern: a root-relative path, either exact or a directory prefix.
#[derive(Debug, Clone)]
pub(crate) struct Protected {
    pub(crate) source: String,
    components: Vec<String>,
    dir_prefix: bool,
}

impl Protected {
    pub(crate) fn parse(source: &str) -> Option<Self> {
        let dir_prefix = source.ends_with('/');
        let components: Vec<String> = Path::new(source)
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        if components.is_empty() {
            return None;
        }
        Some(Protected { source: source.to_owned(), components, dir_prefix })
    }

    /// Whether the root-relative `rel` (already normalized) falls under this pattern. A
    /// directory pattern covers the directory itself too, so `.git` cannot be replaced by a file.
    pub(crate) fn matches(&self, rel: &Path) -> bool {
        let rel: Vec<&OsStr> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        if rel.len() < self.components.len()
            || (!self.dir_prefix && rel.len() != self.components.len())
        {
            return false;
        }
        self.components.iter().zip(rel).all(|(want, have)| OsStr::new(want) == have)
    }
}

/// Checks the string form of a user path before anything else looks at it.
pub(crate) fn validate_input(input: &str) -> Result<(), &'static str> {
    if input.is_empty() {
        return Err("the path is empty");
    }
    if input.contains('\0') {
        return Err("the path contains a NUL byte");
    }
    if input.len() > MAX_PATH_BYTES {
        return Err("the path is too long");
    }
    if Path::new(input).components().any(|c| c.as_os_str().len() > MAX_NAME_BYTES) {
        return Err("a path component is too long");
    }
    Ok(())
}

/// A printable form of a refused input: NUL bytes shown as `\0` so messages stay one clean line.
pub(crate) fn printable(input: &str) -> String {
    input.replace('\0', "\\0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_node() {
        let base = Path::new("/w/root");
        assert_eq!(resolve_lexical(base, "a.txt"), PathBuf::from("/w/root/a.txt"));
        assert_eq!(resolve_lexical(base, "./a/../b/"), PathBuf::from("/w/root/b"));
        assert_eq!(resolve_lexical(base, "../x"), PathBuf::from("/w/x"));
        assert_eq!(resolve_lexical(base, "/../../etc//passwd"), PathBuf::from("/etc/passwd"));
        assert_eq!(resolve_lexical(base, "."), PathBuf::from("/w/root"));
        assert_eq!(resolve_lexical(base, "/"), PathBuf::from("/"));
    }

    #[test]
    fn protected_patterns() {
        let git = Protected::parse(".git/").unwrap();
        assert!(git.matches(Path::new(".git")));
        assert!(git.matches(Path::new(".git/config")));
        assert!(!git.matches(Path::new(".gitignore")));
        assert!(!git.matches(Path::new("sub/.git/config")));
        let toml = Protected::parse("toolhost.toml").unwrap();
        assert!(toml.matches(Path::new("toolhost.toml")));
        assert!(!toml.matches(Path::new("toolhost.toml.bak")));
        assert!(!toml.matches(Path::new("sub/toolhost.toml")));
        assert!(Protected::parse("/").is_none());
    }

    #[test]
    fn input_validation() {
        assert!(validate_input("").is_err());
        assert!(validate_input("a\0b").is_err());
        assert!(validate_input(&"a/".repeat(2048)).is_err());
        assert!(validate_input(&"x".repeat(256)).is_err());
        assert!(validate_input("fine/path.txt").is_ok());
    }
}
