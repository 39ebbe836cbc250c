//! Differential tests: the in-process glob/grep against Debian's `rg` (ripgrep 13) run with the
//! exact argv a `rg`-based implementation would use, on generated trees covering hidden and ignored
//! files, git and non-git roots, binary, CRLF, BOM and non-UTF-8 content, anchored and basename
//! globs, include filters and single-file roots.
//!
//! `rg` is a required test program (`apt-get install -y ripgrep`); its absence fails the tests.

#![allow(clippy::unwrap_used, reason = "test helpers: a panic is the failure report")]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use toolhost_workspace::search::{
    GlobOptions, GrepMatch, GrepOptions, NOT_UTF8_LINE, SearchError, VCS_DIRS, glob, grep,
};

const NEVER: &(dyn Fn() -> bool + Sync) = &|| false;

fn rg() -> Command {
    let probe = Command::new("rg").arg("--version").output();
    assert!(
        probe.as_ref().is_ok_and(|out| out.status.success()),
        "ripgrep (`rg`) is required by the differential search tests but is not runnable \
         ({probe:?}); install it with `apt-get install -y ripgrep`"
    );
    let mut cmd = Command::new("rg");
    cmd.arg("--no-config");
    cmd
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn set_mtime(path: &Path, secs: u64) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

/// A tree exercising every filter the two tools treat differently.
fn build_tree(root: &Path, git: bool) {
    if git {
        write(root, ".git/HEAD", b"ref: refs/heads/main\n");
        write(root, ".git/config", b"needle in git config\n");
    }
    write(root, ".gitignore", b"ignored.txt\nbuild/\n*.log\n/rooted.rs\n");
    write(root, ".ignore", b"dotignored.rs\n");
    write(root, ".rgignore", b"rgignored.rs\n");
    write(root, ".env", b"needle=hidden file\n");
    write(root, ".hidden/secret.rs", b"needle in hidden dir\n");
    write(root, "a.rs", b"fn main() {}\nlet needle = 1;\n// needle again\n");
    write(root, "b.rs", b"no match here\n");
    write(root, "ignored.txt", b"needle ignored by gitignore\n");
    write(root, "build/out.rs", b"needle in build\n");
    write(root, "x.log", b"needle log\n");
    write(root, "rooted.rs", b"needle rooted\n");
    write(root, "src/rooted.rs", b"needle not rooted\n");
    write(root, "dotignored.rs", b"needle dotignored\n");
    write(root, "rgignored.rs", b"needle rgignored\n");
    write(root, "src/lib.rs", b"pub fn needle() {}\n");
    write(root, "src/main.rs", b"fn main() { needle(); }\n");
    write(root, "src/nested/deep/mod.rs", b"mod deep; // needle deep\n");
    write(root, "src/nested/deep/notes.md", b"needle notes\n");
    write(root, "src/.gitignore", b"local_ignored.rs\n");
    write(root, "src/local_ignored.rs", b"needle local\n");
    write(root, "crlf.txt", b"needle one\r\nneedle two\r\nplain\r\n");
    write(root, "latin1.txt", b"needle caf\xe9\nneedle ok\n");
    write(root, "bom.txt", b"\xef\xbb\xbfneedle bom\n");
    write(root, "utf16.txt", b"\xff\xfen\x00e\x00e\x00d\x00l\x00e\x00\n\x00");
    write(root, "noeol.txt", b"first\nneedle at end");
    write(root, "bin.dat", b"needle before\0binary\nneedle after\n");
    let mut big = Vec::new();
    for i in 0..20_000 {
        big.extend_from_slice(format!("needle line {i}\n").as_bytes());
    }
    big.extend_from_slice(b"x\0y\nneedle tail\n");
    write(root, "big.dat", &big);
    write(root, "vendor/.svn/entries", b"needle svn\n");
    write(root, "sub/.hg/store", b"needle hg\n");
    write(root, "sub/.jj/repo", b"needle jj\n");
    write(root, "sub/file.rs", b"needle sub\n");
    write(root, "sub/src/inner.rs", b"needle inner\n");
    write(root, "space name.rs", b"needle space\n");
    write(root, "\u{fc}n\u{ef}/\u{e7}.rs", b"needle unicode \xc3\xa9\n");
    write(root, "docs/readme.md", b"# needle docs\n");
    write(root, "node_modules/pkg/index.js", b"needle js\n");
    std::os::unix::fs::symlink("a.rs", root.join("link.rs")).unwrap();
    std::os::unix::fs::symlink("src", root.join("linkdir")).unwrap();
    // Distinct times keep ripgrep 13's per-directory order consistent with the global order
    // where the tests compare order; elsewhere only sets are compared.
    let mut secs = 1_000_000_000;
    let mut files = Vec::new();
    collect_files(root, &mut files);
    files.sort();
    for file in files {
        secs += 1000;
        set_mtime(&file, secs);
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let file_type = entry.file_type().unwrap();
        if file_type.is_dir() {
            collect_files(&entry.path(), out);
        } else if file_type.is_file() {
            out.push(entry.path());
        }
    }
}

fn rg_glob(cwd: &Path, pattern: &str, path: Option<&str>) -> Vec<String> {
    let mut cmd = rg();
    cmd.current_dir(cwd).args([
        "--files",
        &format!("--glob={pattern}"),
        "--sort=modified",
        "--no-ignore",
        "--hidden",
    ]);
    for dir in VCS_DIRS {
        cmd.arg(format!("--glob=!**/{dir}")).arg(format!("--glob=!**/{dir}/**"));
    }
    if let Some(path) = path {
        cmd.args(["--", path]);
    }
    let out = cmd.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "rg --files failed for {pattern:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

fn ours_glob(workdir: &Path, pattern: &str, path: Option<&str>) -> Vec<String> {
    let root = path.map_or_else(|| workdir.to_path_buf(), |p| workdir.join(p));
    glob(&GlobOptions::new(workdir, &root, pattern, NEVER))
        .unwrap_or_else(|err| panic!("glob {pattern:?} in {path:?}: {err}"))
}

fn rg_grep(cwd: &Path, pattern: &str, include: Option<&str>, path: Option<&str>) -> Vec<GrepMatch> {
    let mut cmd = rg();
    cmd.current_dir(cwd).args(["--json", &format!("--regexp={pattern}")]);
    if let Some(include) = include {
        cmd.arg(format!("--glob={include}"));
    }
    if let Some(path) = path {
        cmd.args(["--", path]);
    }
    let out = cmd.output().unwrap();
    // Without a path, rg exits 2 when its filters left no file to search; we (deliberately)
    // report that as an empty result.
    let nothing_searched = path.is_none()
        && String::from_utf8_lossy(&out.stderr).starts_with("No files were searched");
    assert!(
        matches!(out.status.code(), Some(0 | 1)) || nothing_searched,
        "rg --json failed for {pattern:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut matches = Vec::new();
    for record in String::from_utf8(out.stdout).unwrap().lines() {
        let value = json::parse(record);
        if value.get("type").and_then(json::Value::as_str) != Some("match") {
            continue;
        }
        let data = value.get("data").unwrap();
        let path = data.get("path").and_then(|p| p.get("text")).and_then(json::Value::as_str);
        let lines = data.get("lines").unwrap();
        let line = match lines.get("text").and_then(json::Value::as_str) {
            Some(text) => {
                let text =
                    text.strip_suffix('\n').map_or(text, |t| t.strip_suffix('\r').unwrap_or(t));
                text.to_owned()
            }
            None => NOT_UTF8_LINE.to_owned(),
        };
        matches.push(GrepMatch {
            path: path.unwrap().to_owned(),
            line_number: data.get("line_number").and_then(json::Value::as_u64).unwrap(),
            line,
        });
    }
    // rg's cross-file order is its parallel walk's; within a file it is ascending already.
    matches.sort_by(|a, b| (&a.path, a.line_number).cmp(&(&b.path, b.line_number)));
    matches
}

fn ours_grep(
    workdir: &Path,
    pattern: &str,
    include: Option<&str>,
    path: Option<&str>,
) -> Vec<GrepMatch> {
    let root = path.map_or_else(|| workdir.to_path_buf(), |p| workdir.join(p));
    grep(&GrepOptions::new(workdir, &root, pattern, include, NEVER))
        .unwrap_or_else(|err| panic!("grep {pattern:?} ({include:?}) in {path:?}: {err}"))
}

fn assert_glob_same(workdir: &Path, pattern: &str, path: Option<&str>) -> usize {
    let ours = ours_glob(workdir, pattern, path);
    let theirs = rg_glob(workdir, pattern, path);
    let ours_set: BTreeSet<_> = ours.iter().cloned().collect();
    let theirs_set: BTreeSet<_> = theirs.iter().cloned().collect();
    assert_eq!(ours.len(), ours_set.len(), "duplicate paths for {pattern:?}: {ours:?}");
    assert_eq!(ours_set, theirs_set, "glob {pattern:?} in {path:?}");
    ours.len()
}

fn assert_grep_same(
    workdir: &Path,
    pattern: &str,
    include: Option<&str>,
    path: Option<&str>,
) -> usize {
    let ours = ours_grep(workdir, pattern, include, path);
    let theirs = rg_grep(workdir, pattern, include, path);
    if ours != theirs {
        let only_ours: Vec<_> = ours.iter().filter(|m| !theirs.contains(m)).collect();
        let only_theirs: Vec<_> = theirs.iter().filter(|m| !ours.contains(m)).collect();
        panic!(
            "grep {pattern:?} include {include:?} path {path:?} differs\n only ours: {only_ours:#?}\n \
             only rg: {only_theirs:#?}\n (ours {} vs rg {} matches)",
            ours.len(),
            theirs.len()
        );
    }
    ours.len()
}

#[test]
fn glob_matches_rg_on_git_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root, true);
    let cases: &[(&str, Option<&str>)] = &[
        ("*.rs", None),
        ("**/*.rs", None),
        ("src/**/*.rs", None),
        ("src/*.rs", None),
        ("*.{rs,md}", None),
        ("**/deep/*", None),
        (".env", None),
        ("*", None),
        ("sub/**", None),
        ("[ab].rs", None),
        ("ignored.txt", None),
        ("*.log", None),
        ("**/.git/*", None),
        ("HEAD", None),
        ("entries", None),
        ("!*.rs", None),
        ("src", None),
        ("src/", None),
        ("*.RS", None),
        ("\u{fc}n\u{ef}/*", None),
        ("space name.rs", None),
        ("*.rs", Some("src")),
        ("src/**", Some("src")),
        ("**/deep/**", Some("src")),
        ("sub/src/*.rs", Some("sub")),
        ("src/*.rs", Some("sub")),
        ("*", Some("sub")),
        ("*", Some(".hidden")),
        ("*", Some("vendor")),
    ];
    for (pattern, path) in cases {
        assert_glob_same(root, pattern, *path);
    }
    // Guard against a vacuous pass: these must be non-empty.
    assert!(assert_glob_same(root, "**/*.rs", None) > 10);
    assert_eq!(ours_glob(root, "entries", None), Vec::<String>::new());
}

#[test]
fn glob_root_outside_workdir_shows_absolute_paths_like_rg() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let other = tmp.path().join("other");
    build_tree(&work, false);
    build_tree(&other, false);
    let other_str = other.to_str().unwrap();
    for pattern in ["*.rs", "**/deep/*", "src/*.rs", "*"] {
        let ours = glob(&GlobOptions::new(&work, &other, pattern, NEVER)).unwrap();
        let theirs = rg_glob(&work, pattern, Some(other_str));
        assert_eq!(
            ours.iter().collect::<BTreeSet<_>>(),
            theirs.iter().collect::<BTreeSet<_>>(),
            "{pattern}"
        );
        assert!(ours.iter().all(|p| p.starts_with(other_str)), "{ours:?}");
    }
}

#[test]
fn glob_order_matches_rg_modified_sort_in_flat_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Times deliberately disagree with name order.
    let times = [("c.ts", 50), ("a.ts", 300), ("e.ts", 10), ("b.ts", 200), ("d.ts", 100)];
    for (name, secs) in times {
        write(root, name, b"x\n");
        set_mtime(&root.join(name), 1_600_000_000 + secs);
    }
    let ours = ours_glob(root, "*.ts", None);
    assert_eq!(ours, ["e.ts", "c.ts", "d.ts", "b.ts", "a.ts"]);
    assert_eq!(ours, rg_glob(root, "*.ts", None));
}

#[test]
fn glob_order_is_global_mtime_then_path() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let files =
        [("z/old.rs", 1), ("a/new.rs", 9), ("mid.rs", 5), ("a/tie2.rs", 5), ("a/tie1.rs", 5)];
    for (name, secs) in files {
        write(root, name, b"x\n");
        set_mtime(&root.join(name), 1_600_000_000 + secs);
    }
    let ours = ours_glob(root, "*.rs", None);
    assert_eq!(ours, ["z/old.rs", "a/tie1.rs", "a/tie2.rs", "mid.rs", "a/new.rs"]);
    let theirs: BTreeSet<_> = rg_glob(root, "*.rs", None).into_iter().collect();
    assert_eq!(ours.into_iter().collect::<BTreeSet<_>>(), theirs);
}

const GREP_PATTERNS: &[&str] = &[
    "needle",
    "^needle",
    "needle$",
    "ne+dle\\s+\\w+",
    "fn\\s+main",
    "(?i)NEEDLE",
    "caf.",
    "é",
    "\\bone\\b",
    "^$",
    "x",
    "needle line 1999\\d",
    "nomatchanywhere",
];

#[test]
fn grep_matches_rg_on_git_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root, true);
    for pattern in GREP_PATTERNS {
        assert_grep_same(root, pattern, None, None);
    }
    let found = ours_grep(root, "needle", None, None);
    let paths: BTreeSet<&str> = found.iter().map(|m| m.path.as_str()).collect();
    for skipped in [
        ".env",
        ".hidden/secret.rs",
        "ignored.txt",
        "build/out.rs",
        "x.log",
        "rooted.rs",
        "dotignored.rs",
        "rgignored.rs",
        "src/local_ignored.rs",
        "bin.dat",
        "link.rs",
        ".git/config",
    ] {
        assert!(!paths.contains(skipped), "{skipped} should be skipped: {paths:?}");
    }
    for kept in
        ["a.rs", "src/rooted.rs", "crlf.txt", "latin1.txt", "bom.txt", "utf16.txt", "big.dat"]
    {
        assert!(paths.contains(kept), "{kept} should be searched: {paths:?}");
    }
    assert!(found.iter().any(|m| m.line == NOT_UTF8_LINE));
    assert!(found.iter().any(|m| m.path == "crlf.txt" && m.line == "needle one"));
    assert!(found.iter().any(|m| m.path == "noeol.txt" && m.line == "needle at end"));
    let mut sorted = found.clone();
    sorted.sort_by(|a, b| (&a.path, a.line_number).cmp(&(&b.path, b.line_number)));
    assert_eq!(found, sorted);
}

#[test]
fn grep_include_filters_match_rg() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root, true);
    let includes = [
        "*.rs",
        "src/**",
        "**/*.txt",
        "*.{rs,txt}",
        "!*.rs",
        "src/*.rs",
        "*.md",
        "deep",
        "**/deep/**",
    ];
    for include in includes {
        assert_grep_same(root, "needle", Some(include), None);
        assert_grep_same(root, "needle", Some(include), Some("src"));
    }
    assert!(assert_grep_same(root, "needle", Some("*.rs"), None) > 3);
}

#[test]
fn grep_outside_git_repo_ignores_gitignore_like_rg() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root, false);
    for pattern in ["needle", "^needle$"] {
        assert_grep_same(root, pattern, None, None);
    }
    let paths: BTreeSet<String> =
        ours_grep(root, "needle", None, None).into_iter().map(|m| m.path).collect();
    assert!(paths.contains("ignored.txt") && paths.contains("build/out.rs"), "{paths:?}");
    assert!(!paths.contains("dotignored.rs") && !paths.contains("rgignored.rs"), "{paths:?}");
}

#[test]
fn grep_subdirectory_and_single_file_roots_match_rg() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root, true);
    for path in [
        "src",
        "sub",
        "src/nested",
        ".hidden",
        "build",
        "a.rs",
        ".env",
        "ignored.txt",
        "bin.dat",
        "latin1.txt",
        "crlf.txt",
        "src/local_ignored.rs",
    ] {
        for pattern in ["needle", "^needle", "binary", "after"] {
            assert_grep_same(root, pattern, None, Some(path));
            assert_grep_same(root, pattern, Some("*.md"), Some(path));
        }
    }
    // An explicit binary file is searched as text, including the line after the NUL.
    assert_eq!(ours_grep(root, "needle", None, Some("bin.dat")).len(), 2);
}

#[test]
fn grep_root_outside_workdir_matches_rg() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let other = tmp.path().join("other");
    fs::create_dir_all(&work).unwrap();
    build_tree(&other, true);
    let other_str = other.to_str().unwrap();
    for include in [None, Some("*.rs"), Some("src/*.rs")] {
        let ours = grep(&GrepOptions::new(&work, &other, "needle", include, NEVER)).unwrap();
        let theirs = rg_grep(&work, "needle", include, Some(other_str));
        assert_eq!(ours, theirs, "{include:?}");
    }
}

#[test]
fn invalid_patterns_are_rejected_by_both() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    build_tree(root, false);
    for bad in ["[", "(", "a{2,1}", "\\p{Nope}"] {
        let err = grep(&GrepOptions::new(root, root, bad, None, NEVER)).unwrap_err();
        assert!(matches!(err, SearchError::InvalidPattern(..)), "{bad}: {err:?}");
        assert_eq!(err.code(), "SEARCH_INVALID_PATTERN");
        assert!(err.to_string().starts_with("grep pattern rejected by ripgrep: "), "{err}");
        let out =
            rg().current_dir(root).args(["--json", &format!("--regexp={bad}")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "rg accepted {bad}");
    }
    for bad in ["[", "{a,b", "a[", "**/{x"] {
        let err = glob(&GlobOptions::new(root, root, bad, NEVER)).unwrap_err();
        assert!(matches!(err, SearchError::InvalidPattern(..)), "{bad}: {err:?}");
        assert!(err.to_string().starts_with("glob pattern rejected by ripgrep: "), "{err}");
        let err = grep(&GrepOptions::new(root, root, "x", Some(bad), NEVER)).unwrap_err();
        assert_eq!(err.code(), "SEARCH_INVALID_PATTERN", "{bad}");
        let out =
            rg().current_dir(root).args(["--files", &format!("--glob={bad}")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "rg accepted glob {bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("error parsing glob"));
    }
}

/// Just enough JSON to read ripgrep's `--json` records (which are valid UTF-8 with escapes).
mod json {
    /// Scalars and arrays are parsed (to skip them correctly) but never inspected.
    #[derive(Debug)]
    pub enum Value {
        Null,
        Bool,
        Num(f64),
        Str(String),
        Arr,
        Obj(Vec<(String, Value)>),
    }

    impl Value {
        pub fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Obj(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                _ => None,
            }
        }

        pub fn as_str(&self) -> Option<&str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }

        pub fn as_u64(&self) -> Option<u64> {
            match self {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Value::Num(n) if *n >= 0.0 => Some(*n as u64),
                _ => None,
            }
        }
    }

    pub fn parse(text: &str) -> Value {
        let mut parser = Parser { s: text.as_bytes(), i: 0 };
        let value = parser.value();
        parser.ws();
        assert_eq!(parser.i, parser.s.len(), "trailing data in {text}");
        value
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
                self.i += 1;
            }
        }

        fn eat(&mut self, byte: u8) {
            self.ws();
            assert_eq!(self.s[self.i], byte, "at {}", self.i);
            self.i += 1;
        }

        fn value(&mut self) -> Value {
            self.ws();
            match self.s[self.i] {
                b'{' => {
                    self.i += 1;
                    let mut fields = Vec::new();
                    self.ws();
                    if self.s[self.i] == b'}' {
                        self.i += 1;
                        return Value::Obj(fields);
                    }
                    loop {
                        self.ws();
                        let key = self.string();
                        self.eat(b':');
                        fields.push((key, self.value()));
                        self.ws();
                        self.i += 1;
                        if self.s[self.i - 1] == b'}' {
                            return Value::Obj(fields);
                        }
                    }
                }
                b'[' => {
                    self.i += 1;
                    self.ws();
                    if self.s[self.i] == b']' {
                        self.i += 1;
                        return Value::Arr;
                    }
                    loop {
                        self.value();
                        self.ws();
                        self.i += 1;
                        if self.s[self.i - 1] == b']' {
                            return Value::Arr;
                        }
                    }
                }
                b'"' => Value::Str(self.string()),
                b't' => {
                    self.i += 4;
                    Value::Bool
                }
                b'f' => {
                    self.i += 5;
                    Value::Bool
                }
                b'n' => {
                    self.i += 4;
                    Value::Null
                }
                _ => {
                    let start = self.i;
                    while self.s.get(self.i).is_some_and(|b| b"+-.eE0123456789".contains(b)) {
                        self.i += 1;
                    }
                    let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                    Value::Num(digits.parse().unwrap())
                }
            }
        }

        fn hex4(&mut self) -> u32 {
            let digits = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
            self.i += 4;
            u32::from_str_radix(digits, 16).unwrap()
        }

        fn string(&mut self) -> String {
            self.eat(b'"');
            let mut out = Vec::new();
            loop {
                let byte = self.s[self.i];
                self.i += 1;
                match byte {
                    b'"' => return String::from_utf8(out).unwrap(),
                    b'\\' => {
                        let esc = self.s[self.i];
                        self.i += 1;
                        let ch = match esc {
                            b'n' => '\n',
                            b't' => '\t',
                            b'r' => '\r',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'u' => {
                                let mut code = self.hex4();
                                if (0xd800..0xdc00).contains(&code) {
                                    self.i += 2; // the `\u` of the low surrogate
                                    let low = self.hex4();
                                    code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                                }
                                char::from_u32(code).unwrap()
                            }
                            other => char::from(other),
                        };
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    other => out.push(other),
                }
            }
        }
    }

    #[test]
    fn parses_rg_records() {
        let v = parse(r#"{"a":{"text":"x\u0000\"\\\ud83d\ude00é\n"},"n":12,"l":[1,true,null]}"#);
        assert_eq!(v.get("a").unwrap().get("text").unwrap().as_str(), Some("x\0\"\\😀é\n"));
        assert_eq!(v.get("n").unwrap().as_u64(), Some(12));
    }
}
