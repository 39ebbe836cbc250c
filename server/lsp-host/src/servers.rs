//! Which language server handles a file: configured servers (`[lsp.servers.*]`, commands only
//! from trusted sources — the server crate applies that rule before it builds [`ServerSpec`]s)
//! and the well-known servers looked up on `PATH` (clangd / clangd-NN, pyright-langserver,
//! typescript-language-server, rust-analyzer, gopls, pylsp).

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// One language server: how to start it and which files it handles.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    /// Pool key part and message name (`clangd`, the `[lsp.servers.<id>]` key, …).
    pub id: String,
    /// A program name looked up on `PATH`, or a path.
    pub command: String,
    pub args: Vec<String>,
    /// Merged over the credential-scrubbed environment.
    pub env: BTreeMap<String, String>,
    /// Lowercase `.ext` → language id.
    pub extensions: BTreeMap<String, String>,
    pub initialization_options: Option<Value>,
    /// The server's settings (`[lsp.servers.<id>.settings]`): `workspace/configuration` items are
    /// answered from it by section, and it is pushed once with `workspace/didChangeConfiguration`
    /// after `initialized`.
    pub settings: Option<Value>,
    /// A `window/logMessage` substring the server prints once its workspace is loaded; the
    /// first query waits for it (at most 10 s).
    pub ready_message: Option<String>,
}

impl ServerSpec {
    /// A spec without arguments, environment or options.
    pub fn new(id: impl Into<String>, command: impl Into<String>) -> Self {
        ServerSpec {
            id: id.into(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            extensions: BTreeMap::new(),
            initialization_options: None,
            settings: None,
            ready_message: None,
        }
    }

    pub fn with_args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Adds an extension (normalized; an invalid one is ignored) and its language id.
    pub fn with_extension(mut self, ext: &str, language: &str) -> Self {
        if let Some(ext) = normalize_extension(ext) {
            self.extensions.insert(ext, language.to_owned());
        }
        self
    }

    /// The language id for a normalized extension.
    pub fn language_for(&self, ext: &str) -> Option<&str> {
        self.extensions.get(ext).map(String::as_str)
    }
}

/// `C`, `.C` ⇒ `.c`; `None` unless it matches `^\.[^./\\]+$` after normalization.
pub fn normalize_extension(ext: &str) -> Option<String> {
    let ext = ext.trim().to_lowercase();
    let ext = if ext.starts_with('.') { ext } else { format!(".{ext}") };
    let body = &ext[1..];
    (!body.is_empty() && !body.contains(['.', '/', '\\'])).then_some(ext)
}

/// The final extension of a path, lowercased with its dot; dotfiles (`.bashrc`) have none.
pub fn file_extension(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || ext.is_empty() {
        return None;
    }
    Some(format!(".{}", ext.to_lowercase()))
}

const C_FAMILY: &[(&str, &str)] = &[
    (".c", "c"),
    (".h", "c"),
    (".cc", "cpp"),
    (".cpp", "cpp"),
    (".cxx", "cpp"),
    (".c++", "cpp"),
    (".hh", "cpp"),
    (".hpp", "cpp"),
    (".hxx", "cpp"),
    (".h++", "cpp"),
    (".ipp", "cpp"),
    (".inl", "cpp"),
    (".m", "objective-c"),
    (".mm", "objective-cpp"),
];
const PYTHON: &[(&str, &str)] = &[(".py", "python"), (".pyi", "python")];
const TYPESCRIPT: &[(&str, &str)] = &[
    (".ts", "typescript"),
    (".mts", "typescript"),
    (".cts", "typescript"),
    (".tsx", "typescriptreact"),
    (".js", "javascript"),
    (".mjs", "javascript"),
    (".cjs", "javascript"),
    (".jsx", "javascriptreact"),
];

/// The well-known servers, in preference order (pyright before pylsp for `.py`).
pub fn well_known() -> Vec<(ServerSpec, &'static [&'static str])> {
    fn spec(id: &str, args: &[&str], exts: &[(&str, &str)]) -> ServerSpec {
        exts.iter().fold(ServerSpec::new(id, id).with_args(args.iter().copied()), |s, (e, l)| {
            s.with_extension(e, l)
        })
    }
    vec![
        (spec("clangd", &[], C_FAMILY), &["clangd", "clangd-*"]),
        (
            // "Found N source files" / "No source files found."
            ServerSpec {
                ready_message: Some("source file".into()),
                ..spec("pyright", &["--stdio"], PYTHON)
            },
            &["pyright-langserver"],
        ),
        (
            spec("typescript-language-server", &["--stdio"], TYPESCRIPT),
            &["typescript-language-server"],
        ),
        (spec("rust-analyzer", &[], &[(".rs", "rust")]), &["rust-analyzer"]),
        (spec("gopls", &[], &[(".go", "go")]), &["gopls"]),
        (spec("pylsp", &[], PYTHON), &["pylsp"]),
    ]
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Finds `program` on `path_var` (a path with a `/` is taken as is).
pub fn find_program(program: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    std::env::split_paths(path_var?).map(|dir| dir.join(program)).find(|p| is_executable(p))
}

/// Finds `name` or, for a `name-*` pattern, the highest-numbered `name-NN` on `path_var`.
pub fn find_candidate(pattern: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
    let Some(prefix) = pattern.strip_suffix('*') else {
        return find_program(pattern, path_var);
    };
    let mut best: Option<(u32, PathBuf)> = None;
    for dir in std::env::split_paths(path_var?) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(version) = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|v| v.parse::<u32>().ok())
            else {
                continue;
            };
            let path = entry.path();
            if is_executable(&path) && best.as_ref().is_none_or(|(v, _)| version > *v) {
                best = Some((version, path));
            }
        }
    }
    best.map(|(_, path)| path)
}

/// Whether an environment variable looks like a credential (never passed to a language server).
pub fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION_KEY",
    ]
    .iter()
    .any(|needle| upper.contains(needle))
}

/// The environment a server starts with: ours minus credentials, plus the spec's.
pub fn server_env(spec: &ServerSpec) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> =
        std::env::vars_os().filter(|(k, _)| !k.to_str().is_some_and(is_credential)).collect();
    for (k, v) in &spec.env {
        env.insert(k.into(), v.into());
    }
    env.into_iter().collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn extensions() {
        assert_eq!(normalize_extension("C").as_deref(), Some(".c"));
        assert_eq!(normalize_extension(".Py").as_deref(), Some(".py"));
        assert_eq!(normalize_extension(".tar.gz"), None);
        assert_eq!(normalize_extension("."), None);
        assert_eq!(file_extension(Path::new("/a/b.C")).as_deref(), Some(".c"));
        assert_eq!(file_extension(Path::new("/a/.bashrc")), None);
        assert_eq!(file_extension(Path::new("/a/Makefile")), None);
        assert_eq!(file_extension(Path::new("/a/x.tar.gz")).as_deref(), Some(".gz"));
    }

    #[test]
    fn versioned_programs_prefer_the_highest() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for name in ["clangd-9", "clangd-19", "clangd-16", "clangd-x"] {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::join_paths([dir.path()]).unwrap();
        let found = find_candidate("clangd-*", Some(&path)).unwrap();
        assert_eq!(found.file_name().unwrap(), "clangd-19");
        assert_eq!(find_candidate("clangd", Some(&path)), None);
    }

    #[test]
    fn credentials_are_scrubbed() {
        assert!(is_credential("GITHUB_TOKEN"));
        assert!(is_credential("aws_secret_access_key"));
        assert!(!is_credential("PATH"));
        assert!(!is_credential("HOME"));
    }
}
