//! Confinement: the testkit corpus × read, write and edit must never touch anything outside the
//! roots or inside protected paths; symlinks that stay inside keep working.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on purpose

use std::os::unix::fs::symlink;

use toolhost_workspace::testkit::{EscapeCorpus, INSIDE, SECRET};
use toolhost_workspace::{FsError, Workspace, WorkspaceConfig};

fn code(result: &Result<impl Sized, FsError>) -> Option<&'static str> {
    result.as_ref().err().map(FsError::code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_never_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = EscapeCorpus::build(tmp.path()).unwrap();
    assert!(corpus.cases.len() >= 100, "only {} cases", corpus.cases.len());
    let before = corpus.snapshot().unwrap();
    let ws = Workspace::new(corpus.config()).unwrap();

    let mut denied = 0;
    for case in &corpus.cases {
        let ctx = format!("case {} ({:?})", case.name, case.path);

        // Unobserved write and edit first, then again after a read (observed paths).
        for round in 0..2 {
            let read = ws.read_file(&case.path).await;
            match &read {
                Ok(file) => {
                    assert!(case.read_may_succeed(), "{ctx}: read succeeded");
                    assert!(!file.text.contains(SECRET), "{ctx}: read leaked outside content");
                }
                Err(err) => assert!(case.accepts_read_failure(err.code()), "{ctx}: read {err:?}"),
            }
            let write = ws.write_file(&case.path, b"PWNED\n").await;
            match write {
                Ok(outcome) => panic!("{ctx} round {round}: write succeeded: {outcome:?}"),
                Err(err) => {
                    assert!(case.accepts_write_failure(err.code()), "{ctx}: write {err:?}");
                    denied += usize::from(err.code() == "FS_SANDBOX_DENIED");
                }
            }
            let edit = ws.begin_edit(&case.path).await;
            match edit {
                Ok(txn) => {
                    let result = txn.commit(b"PWNED\n".to_vec()).await;
                    panic!("{ctx} round {round}: begin_edit succeeded; commit: {result:?}");
                }
                Err(err) => assert!(case.accepts_write_failure(err.code()), "{ctx}: edit {err:?}"),
            }
        }
    }
    assert_eq!(corpus.snapshot().unwrap(), before, "something outside or protected changed");
    // Nearly every refusal should be a sandbox denial, not an accident of the tree.
    assert!(denied >= corpus.cases.len() * 2 - 20, "only {denied} sandbox denials");
}

#[tokio::test]
async fn escapes_are_reported_as_sandbox_denials() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = EscapeCorpus::build(tmp.path()).unwrap();
    let ws = Workspace::new(corpus.config()).unwrap();
    let outside = corpus.outside.join("secret.txt");
    let outside = outside.to_str().unwrap();

    let err = ws.read_file(outside).await.unwrap_err();
    assert_eq!(err.code(), "FS_SANDBOX_DENIED");
    assert_eq!(err.to_string(), format!("path \"{outside}\" is outside the workspace"));

    let err = ws.read_file("to_outside_rel/secret.txt").await.unwrap_err();
    assert_eq!(err.code(), "FS_SANDBOX_DENIED");
    let display = format!("{}/to_outside_rel/secret.txt", corpus.root.display());
    assert_eq!(err.path(), display, "the display path is lexical, not the link target");
    assert!(err.to_string().contains("symbolic link"), "{err}");

    let err = ws.write_file(".git/config", b"x").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "path \"{}/.git/config\" is protected: writes matching \".git/\" are not allowed",
            corpus.root.display()
        )
    );
    let err = ws.read_file("a\0b").await.unwrap_err();
    assert_eq!(err.to_string(), "path \"a\\0b\" is invalid: the path contains a NUL byte");
}

#[tokio::test]
async fn protected_and_read_only_paths_stay_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = EscapeCorpus::build(tmp.path()).unwrap();
    let ws = Workspace::new(corpus.config()).unwrap();
    assert_eq!(ws.read_file(".git/config").await.unwrap().text, "[core]\n");
    assert_eq!(ws.read_file("cfg_link").await.unwrap().text, "[core]\n");
    let blob = corpus.read_only_root.join("blob.txt");
    assert_eq!(ws.read_file(blob.to_str().unwrap()).await.unwrap().text, INSIDE);
    let err = ws.write_file(blob.to_str().unwrap(), b"x").await.unwrap_err();
    assert_eq!(err.code(), "FS_SANDBOX_DENIED");
    assert!(err.to_string().contains("read-only root"), "{err}");
}

#[tokio::test]
async fn symlinks_inside_the_root_work() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real/dir")).unwrap();
    std::fs::write(root.join("real/dir/f.txt"), "one\n").unwrap();
    symlink("real/dir", root.join("rel_dir")).unwrap();
    symlink(root.join("real/dir"), root.join("abs_dir")).unwrap();
    symlink("dir/f.txt", root.join("real/file_link")).unwrap();
    symlink("real/dir/new.txt", root.join("dangling_inside")).unwrap();
    let ws = Workspace::new(WorkspaceConfig::new(&root)).unwrap();

    let via_rel = ws.read_file("rel_dir/f.txt").await.unwrap();
    assert_eq!(via_rel.text, "one\n");
    assert_eq!(via_rel.display, format!("{}/rel_dir/f.txt", root.display()));
    assert_eq!(via_rel.real_path, root.join("real/dir/f.txt"));
    assert_eq!(ws.read_file("abs_dir/f.txt").await.unwrap().text, "one\n");

    // Writing through a file link replaces the target and keeps the link.
    let read = ws.read_file("real/file_link").await.unwrap();
    assert_eq!(read.text, "one\n");
    ws.write_file("real/file_link", b"two\n").await.unwrap();
    assert!(std::fs::symlink_metadata(root.join("real/file_link")).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(root.join("real/dir/f.txt")).unwrap(), "two\n");

    // The ledger is keyed by the real path: an edit by another name is observed.
    let txn = ws.begin_edit("abs_dir/f.txt").await.unwrap();
    assert_eq!(txn.text(), "two\n");
    txn.commit(b"three\n".to_vec()).await.unwrap();

    // A dangling link inside the root creates its target.
    ws.write_file("dangling_inside", b"new\n").await.unwrap();
    assert_eq!(std::fs::read_to_string(root.join("real/dir/new.txt")).unwrap(), "new\n");
    assert!(std::fs::symlink_metadata(root.join("dangling_inside")).unwrap().is_symlink());
}

#[tokio::test]
async fn display_paths_are_lexical_and_roots_may_be_symlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    std::fs::create_dir(base.join("real")).unwrap();
    symlink(base.join("real"), base.join("alias")).unwrap();
    let ws = Workspace::new(WorkspaceConfig::new(base.join("alias"))).unwrap();
    let written = ws.write_file("sub/./x/../a.txt", b"a\n").await.unwrap();
    assert_eq!(written.display, format!("{}/alias/sub/a.txt", base.display()));
    assert_eq!(written.real_path, base.join("real/sub/a.txt"));
    // Both spellings of the root are inside.
    let by_real = base.join("real/sub/a.txt");
    assert_eq!(ws.read_file(by_real.to_str().unwrap()).await.unwrap().text, "a\n");
    assert_eq!(
        ws.display_path("../real/sub/a.txt").unwrap(),
        format!("{}/real/sub/a.txt", base.display())
    );
    assert_eq!(code(&ws.display_path("../elsewhere")), Some("FS_SANDBOX_DENIED"));
    assert_eq!(
        ws.resolve_display("sub/a.txt").await.unwrap(),
        format!("{}/alias/sub/a.txt", base.display())
    );
    assert!(ws.contains_real_path(&base.join("real/sub")));
    assert!(!ws.contains_real_path(&base.join("alias2")));
}
