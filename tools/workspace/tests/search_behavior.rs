//! Behaviour of the in-process glob/grep that has no ripgrep oracle: cancellation, the output
//! byte cap, root errors, deterministic ordering, symlinks and error wording.

#![allow(clippy::unwrap_used, reason = "test helpers: a panic is the failure report")]

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use toolhost_workspace::search::{
    GlobOptions, GrepOptions, RAW_OUTPUT_MAX_BYTES, SearchError, SearchTool, glob, grep,
};

const NEVER: &(dyn Fn() -> bool + Sync) = &|| false;
const ALWAYS: &(dyn Fn() -> bool + Sync) = &|| true;

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn set_mtime(path: &Path, secs: u64) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

/// 40 directories × 25 files, each with three matching lines.
fn wide_tree(root: &Path) {
    for d in 0..40 {
        for f in 0..25 {
            write(root, &format!("d{d:02}/f{f:02}.txt"), b"alpha\nneedle 1\nbeta needle\nneedle\n");
        }
    }
}

#[test]
fn pre_cancelled_searches_abort() {
    let tmp = tempfile::tempdir().unwrap();
    wide_tree(tmp.path());
    let err = glob(&GlobOptions::new(tmp.path(), tmp.path(), "*", ALWAYS)).unwrap_err();
    assert_eq!(err, SearchError::Aborted(SearchTool::Glob));
    assert_eq!(err.code(), "SEARCH_ABORTED");
    assert_eq!(
        err.to_string(),
        "glob was aborted before completion (tool timeout or caller cancellation)"
    );
    let err = grep(&GrepOptions::new(tmp.path(), tmp.path(), "needle", None, ALWAYS)).unwrap_err();
    assert_eq!(err, SearchError::Aborted(SearchTool::Grep));
    // Cancellation is checked before the pattern, as an `rg`-based implementation checks it before
    // spawning rg.
    let err = grep(&GrepOptions::new(tmp.path(), tmp.path(), "(", None, ALWAYS)).unwrap_err();
    assert_eq!(err.code(), "SEARCH_ABORTED");
}

#[test]
fn cancellation_during_the_walk_aborts() {
    let tmp = tempfile::tempdir().unwrap();
    wide_tree(tmp.path());
    let polls = AtomicUsize::new(0);
    let after_100 = |polls: &AtomicUsize| polls.fetch_add(1, Ordering::Relaxed) >= 100;
    let cancel = || after_100(&polls);
    let err = glob(&GlobOptions::new(tmp.path(), tmp.path(), "*", &cancel)).unwrap_err();
    assert_eq!(err, SearchError::Aborted(SearchTool::Glob));
    polls.store(0, Ordering::Relaxed);
    let err = grep(&GrepOptions::new(tmp.path(), tmp.path(), "needle", None, &cancel)).unwrap_err();
    assert_eq!(err, SearchError::Aborted(SearchTool::Grep));
}

#[test]
fn cancellation_is_polled_inside_one_large_file() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "huge.txt", "needle\n".repeat(100_000).as_bytes());
    let file = tmp.path().join("huge.txt");
    let polls = AtomicUsize::new(0);
    let count = || {
        polls.fetch_add(1, Ordering::Relaxed);
        false
    };
    let matches = grep(&GrepOptions::new(tmp.path(), &file, "needle", None, &count)).unwrap();
    assert_eq!(matches.len(), 100_000);
    // Per-entry polling alone would poll three times for a one-file search.
    assert!(polls.load(Ordering::Relaxed) > 300, "{polls:?}");

    polls.store(0, Ordering::Relaxed);
    let cancel_on_third = || polls.fetch_add(1, Ordering::Relaxed) >= 2;
    let err = grep(&GrepOptions::new(tmp.path(), &file, "needle", None, &cancel_on_third));
    assert_eq!(err.unwrap_err().code(), "SEARCH_ABORTED");
    // Cancellation is sticky: the caller's predicate is not consulted again.
    assert_eq!(polls.load(Ordering::Relaxed), 3);
}

#[test]
fn output_cap_overflows_with_a_narrowing_hint() {
    let tmp = tempfile::tempdir().unwrap();
    wide_tree(tmp.path());
    let root = tmp.path();
    let all = glob(&GlobOptions::new(root, root, "*", NEVER)).unwrap();
    assert_eq!(all.len(), 1000);
    let exact: usize = all.iter().map(|p| p.len() + 1).sum();
    let at_cap =
        GlobOptions { max_output_bytes: exact, ..GlobOptions::new(root, root, "*", NEVER) };
    assert_eq!(glob(&at_cap).unwrap().len(), 1000);
    let err = glob(&GlobOptions { max_output_bytes: exact - 1, ..at_cap }).unwrap_err();
    assert_eq!(err, SearchError::RawOutputOverflow(SearchTool::Glob, exact - 1));
    assert_eq!(err.code(), "SEARCH_RAW_OUTPUT_OVERFLOW");
    assert!(err.to_string().contains("narrow pattern or path"), "{err}");

    let matches = grep(&GrepOptions::new(root, root, "needle", None, NEVER)).unwrap();
    assert_eq!(matches.len(), 3000);
    let exact: usize = matches.iter().map(|m| m.path.len() + m.line.len()).sum();
    let at_cap = GrepOptions {
        max_output_bytes: exact,
        ..GrepOptions::new(root, root, "needle", None, NEVER)
    };
    assert_eq!(grep(&at_cap).unwrap().len(), 3000);
    let err = grep(&GrepOptions { max_output_bytes: exact - 1, ..at_cap }).unwrap_err();
    assert_eq!(err.code(), "SEARCH_RAW_OUTPUT_OVERFLOW");
    assert!(err.to_string().contains("narrow pattern, path, or include"), "{err}");
    assert_eq!(GlobOptions::new(root, root, "*", NEVER).max_output_bytes, RAW_OUTPUT_MAX_BYTES);
}

#[test]
fn missing_root_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let err = glob(&GlobOptions::new(tmp.path(), &missing, "*", NEVER)).unwrap_err();
    assert_eq!(err.code(), "SEARCH_FAILED");
    assert!(err.to_string().starts_with("glob search failed: cannot access "), "{err}");
    let err = grep(&GrepOptions::new(tmp.path(), &missing, "x", None, NEVER)).unwrap_err();
    assert_eq!(err.code(), "SEARCH_FAILED");
}

#[test]
fn pattern_errors_name_the_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let err = grep(&GrepOptions::new(root, root, "a\nb", None, NEVER)).unwrap_err();
    assert_eq!(err.code(), "SEARCH_INVALID_PATTERN", "a literal newline can never match a line");
    let err = grep(&GrepOptions::new(root, root, "(", None, NEVER)).unwrap_err();
    assert!(
        err.to_string().starts_with("grep pattern rejected by ripgrep: regex parse error:\n    ("),
        "{err}"
    );
    let err = glob(&GlobOptions::new(root, root, "a[", NEVER)).unwrap_err();
    assert!(
        err.to_string().starts_with("glob pattern rejected by ripgrep: error parsing glob"),
        "{err}"
    );
    let err = grep(&GrepOptions::new(root, root, "x", Some("{a"), NEVER)).unwrap_err();
    assert_eq!(err.tool(), SearchTool::Grep);
}

#[test]
fn glob_ties_break_by_path_and_repeat_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let names = ["m/b.rs", "a.rs", "z/z/a.rs", "c.rs", "m/a.rs", "b.rs"];
    for name in names {
        write(root, name, b"x\n");
        set_mtime(&root.join(name), 1_700_000_000);
    }
    write(root, "first.rs", b"x\n");
    set_mtime(&root.join("first.rs"), 1_600_000_000);
    let expected = ["first.rs", "a.rs", "b.rs", "c.rs", "m/a.rs", "m/b.rs", "z/z/a.rs"];
    for _ in 0..5 {
        assert_eq!(glob(&GlobOptions::new(root, root, "*.rs", NEVER)).unwrap(), expected);
    }
}

#[test]
fn grep_order_is_deterministic_by_path_then_line() {
    let tmp = tempfile::tempdir().unwrap();
    wide_tree(tmp.path());
    let root = tmp.path();
    let first = grep(&GrepOptions::new(root, root, "needle", None, NEVER)).unwrap();
    for _ in 0..5 {
        assert_eq!(grep(&GrepOptions::new(root, root, "needle", None, NEVER)).unwrap(), first);
    }
    assert_eq!(first[0].path, "d00/f00.txt");
    assert_eq!(
        first.iter().take(3).map(|m| (m.line_number, m.line.as_str())).collect::<Vec<_>>(),
        [(2, "needle 1"), (3, "beta needle"), (4, "needle")]
    );
    assert!(
        first.windows(2).all(|w| (&w[0].path, w[0].line_number) < (&w[1].path, w[1].line_number))
    );
}

#[test]
fn symlinks_are_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, "real/a.rs", b"needle\n");
    std::os::unix::fs::symlink("real/a.rs", root.join("link.rs")).unwrap();
    std::os::unix::fs::symlink("real", root.join("linkdir")).unwrap();
    std::os::unix::fs::symlink("/", root.join("escape")).unwrap();
    assert_eq!(glob(&GlobOptions::new(root, root, "*", NEVER)).unwrap(), ["real/a.rs"]);
    let matches = grep(&GrepOptions::new(root, root, "needle", None, NEVER)).unwrap();
    assert_eq!(matches.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(), ["real/a.rs"]);
}

#[test]
fn explicit_file_root_ignores_every_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, ".git/HEAD", b"ref\n");
    write(root, ".gitignore", b"*.secret\n");
    write(root, ".hidden.secret", b"needle\0binary\nneedle\n");
    let file = root.join(".hidden.secret");
    let matches = grep(&GrepOptions::new(root, &file, "needle", Some("*.md"), NEVER)).unwrap();
    assert_eq!(matches.len(), 2);
    assert_eq!(matches[0].path, ".hidden.secret");
    assert_eq!(matches[0].line, "needle\0binary");
    assert_eq!(glob(&GlobOptions::new(root, &file, "*.md", NEVER)).unwrap(), [".hidden.secret"]);
    let walked = grep(&GrepOptions::new(root, root, "needle", None, NEVER)).unwrap();
    assert!(walked.is_empty(), "{walked:?}");
}

#[test]
fn non_utf8_file_names_are_shown_lossily() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(root.join(name), b"needle\n").unwrap();
    assert_eq!(glob(&GlobOptions::new(root, root, "*.txt", NEVER)).unwrap(), ["caf\u{fffd}.txt"]);
    let matches = grep(&GrepOptions::new(root, root, "needle", None, NEVER)).unwrap();
    assert_eq!(matches[0].path, "caf\u{fffd}.txt");
}

#[test]
fn vcs_metadata_is_never_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for dir in [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"] {
        write(root, &format!("{dir}/config"), b"x\n");
        write(root, &format!("deep/er/{dir}/config"), b"x\n");
    }
    write(root, "pkg/.git", b"gitdir: ../.git/modules/pkg\n");
    write(root, "pkg/config", b"x\n");
    assert_eq!(glob(&GlobOptions::new(root, root, "config", NEVER)).unwrap(), ["pkg/config"]);
    assert_eq!(
        glob(&GlobOptions::new(root, root, "**/.git/**", NEVER)).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn glob_never_lists_write_temp_files() {
    // What broke: a crashed write's hidden temp file showed up in glob (hidden files are listed).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, "a.txt", b"a\n");
    write(root, ".hidden.txt", b"h\n");
    write(root, &format!("{}4242-0-00000000", toolhost_workspace::TEMP_PREFIX), b"half");
    write(root, &format!("sub/{}4242-1-0badf00d", toolhost_workspace::TEMP_PREFIX), b"half");
    let mut all = glob(&GlobOptions::new(root, root, "**", NEVER)).unwrap();
    all.sort();
    assert_eq!(all, [".hidden.txt", "a.txt"]);
    let explicit = glob(&GlobOptions::new(root, root, ".toolhost-tmp-*", NEVER)).unwrap();
    assert!(explicit.is_empty(), "{explicit:?}");
}
