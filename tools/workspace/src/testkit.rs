//! An adversarial confinement corpus for tests, shaped after the kernel's openat2 self-test:
//! absolute and relative escapes, `..` chains, symlinks to `/`, to `..`, to `/proc/self/root`,
//! chains, loops, dangling links pointing outside, symlinked parent directories, NUL bytes,
//! over-long paths, and protected or read-only targets. Hard links are out of scope.
//!
//! Other crates' tests (glob, grep) reuse it with the `testkit` feature:
//!
//! ```ignore
//! let corpus = EscapeCorpus::build(tempdir.path())?;
//! let before = corpus.snapshot()?;
//! for case in &corpus.cases { /* run the tool on case.path, check case.accepts(...) */ }
//! assert_eq!(corpus.snapshot()?, before);
//! ```
//!
//! Every file outside the roots contains [`SECRET`], so a search result that contains it has
//! escaped.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::workspace::WorkspaceConfig;

/// Marker in every file outside the workspace roots.
pub const SECRET: &str = "TOOLHOST-OUTSIDE-SECRET";

/// Content of files inside the roots.
pub const INSIDE: &str = "inside\n";

/// What an operation on a case may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    /// Names something outside every root: every operation must fail with
    /// `FS_SANDBOX_DENIED` (or find nothing inside: `FS_NOT_FOUND`).
    Escape,
    /// A symlink loop: may also fail with `FS_IO_ERROR` ("too many levels of symbolic links").
    Loop,
    /// Inside, but protected or in a read-only root: reads may succeed, writes and edits must
    /// fail with `FS_SANDBOX_DENIED`.
    WriteDenied,
}

#[derive(Debug, Clone)]
pub struct EscapeCase {
    pub name: String,
    /// The path exactly as a tool argument would carry it.
    pub path: String,
    pub kind: CaseKind,
}

impl EscapeCase {
    /// Whether a failure with `code` is acceptable for a mutating operation (write or edit).
    pub fn accepts_write_failure(&self, code: &str) -> bool {
        match self.kind {
            CaseKind::Escape => matches!(code, "FS_SANDBOX_DENIED" | "FS_NOT_FOUND"),
            CaseKind::Loop => matches!(code, "FS_SANDBOX_DENIED" | "FS_NOT_FOUND" | "FS_IO_ERROR"),
            CaseKind::WriteDenied => code == "FS_SANDBOX_DENIED",
        }
    }

    /// Whether a read may succeed at all.
    pub fn read_may_succeed(&self) -> bool {
        self.kind == CaseKind::WriteDenied
    }

    /// Whether a failure with `code` is acceptable for a read.
    pub fn accepts_read_failure(&self, code: &str) -> bool {
        self.kind == CaseKind::WriteDenied || self.accepts_write_failure(code)
    }
}

/// The tree and its cases. Layout under `base`:
/// `root/` (writable root), `blobs/` (read-only root), `outside/` (must never be touched).
#[derive(Debug, Clone)]
pub struct EscapeCorpus {
    pub base: PathBuf,
    pub root: PathBuf,
    pub read_only_root: PathBuf,
    pub outside: PathBuf,
    pub cases: Vec<EscapeCase>,
}

/// One entry of a [`EscapeCorpus::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File(Vec<u8>),
    Symlink(PathBuf),
    Other,
}

fn write(path: &Path, content: &str) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, content)
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl EscapeCorpus {
    /// Builds the tree under `base` (an empty directory, typically a temp dir).
    pub fn build(base: &Path) -> io::Result<Self> {
        let base = fs::canonicalize(base)?;
        let root = base.join("root");
        let blobs = base.join("blobs");
        let outside = base.join("outside");
        let secret = format!("{SECRET}\n");

        write(&outside.join("secret.txt"), &secret)?;
        write(&outside.join("sub/secret.txt"), &secret)?;
        write(&blobs.join("blob.txt"), INSIDE)?;
        write(&root.join("a/file.txt"), INSIDE)?;
        fs::create_dir_all(root.join("a/b"))?;
        write(&root.join(".git/config"), "[core]\n")?;
        write(&root.join(".git/HEAD"), "ref: refs/heads/main\n")?;
        fs::create_dir_all(root.join(".git/hooks"))?;
        write(&root.join("toolhost.toml"), "[limits]\n")?;
        write(&root.join(".toolhost/state.json"), "{}\n")?;

        let o = text(&outside);
        let r = text(&root);
        let links: Vec<(&str, String)> = vec![
            ("to_slash", "/".into()),
            ("to_dotdot", "..".into()),
            ("to_outside_abs", o.clone()),
            ("to_outside_rel", "../outside".into()),
            ("a/up2", "../..".into()),
            ("chain1", "chain2".into()),
            ("chain2", "chain3".into()),
            ("chain3", "../outside".into()),
            ("to_proc_root", "/proc/self/root".into()),
            ("a/b/to_outside_deep", "../../../outside".into()),
            ("inside_then_out", "a/b/escape_from_b".into()),
            ("a/b/escape_from_b", "../../../outside".into()),
            ("file_abs_secret", format!("{o}/secret.txt")),
            ("file_rel_secret", "../outside/secret.txt".into()),
            ("a/file_rel_secret_deep", "../../outside/secret.txt".into()),
            ("dangling_abs", format!("{o}/new.txt")),
            ("dangling_rel", "../outside/new.txt".into()),
            ("dangling_chain", "dangling_rel".into()),
            ("a/dangling_dir_out", "../../outside/newdir/new.txt".into()),
            ("to_sub_dir", format!("{o}/sub")),
            ("rel_chain_out", "a/../../outside/secret.txt".into()),
            ("abs_roundtrip", format!("{r}/../outside/secret.txt")),
            ("abs_roundtrip_in", format!("{r}/../root/a/file.txt")),
            ("to_base", "..".into()),
            ("to_blobs", text(&blobs)),
            ("loop_self", "loop_self".into()),
            ("loop_a", "loop_b".into()),
            ("loop_b", "loop_a".into()),
            ("git_link", ".git".into()),
            ("git_link_abs", format!("{r}/.git")),
            ("cfg_link", ".git/config".into()),
            ("toml_link", "toolhost.toml".into()),
            ("a/git_up", "../.git".into()),
            ("dangling_git", ".git/new-file".into()),
        ];
        for (link, target) in &links {
            symlink(target, root.join(link))?;
        }

        let base_name =
            base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let o_noslash = o.trim_start_matches('/').to_owned();
        let mut cases = Vec::new();
        let mut add = |name: &str, path: String, kind: CaseKind| {
            cases.push(EscapeCase { name: name.to_owned(), path, kind });
        };
        use CaseKind::{Escape, Loop, WriteDenied};

        for t in ["secret.txt", "sub/secret.txt", "new.txt"] {
            let forms = [
                ("absolute", format!("{o}/{t}")),
                ("dotdot", format!("../outside/{t}")),
                ("dotdot-twice", format!("../../{base_name}/outside/{t}")),
                ("existing-then-dotdot", format!("a/../../outside/{t}")),
                ("missing-then-dotdot", format!("missing/../../outside/{t}")),
                ("dot-dotdot", format!("./../outside/{t}")),
                ("deep-dotdot", format!("a/b/../../../outside/{t}")),
                ("absolute-root-dotdot", format!("{r}/../outside/{t}")),
                ("absolute-deep-dotdot", format!("{r}/a/../../outside/{t}")),
                ("link-to-slash", format!("to_slash/{o_noslash}/{t}")),
                ("link-to-dotdot", format!("to_dotdot/outside/{t}")),
                ("link-abs-outside", format!("to_outside_abs/{t}")),
                ("link-rel-outside", format!("to_outside_rel/{t}")),
                ("nested-link-up2", format!("a/up2/{base_name}/outside/{t}")),
                ("chain", format!("chain1/{t}")),
                ("magic-proc-root", format!("to_proc_root/{o_noslash}/{t}")),
                ("deep-link", format!("a/b/to_outside_deep/{t}")),
                ("absolute-through-link", format!("{r}/to_outside_abs/{t}")),
                ("dotdot-to-link", format!("a/../to_outside_rel/{t}")),
                ("inside-then-out", format!("inside_then_out/{t}")),
                ("link-to-base", format!("to_base/outside/{t}")),
            ];
            for (name, path) in forms {
                add(&format!("{name}:{t}"), path, Escape);
            }
        }
        let finals = [
            ("final-abs-link", "file_abs_secret".to_owned()),
            ("final-rel-link", "file_rel_secret".to_owned()),
            ("final-deep-rel-link", "a/file_rel_secret_deep".to_owned()),
            ("dangling-abs", "dangling_abs".to_owned()),
            ("dangling-rel", "dangling_rel".to_owned()),
            ("dangling-chain", "dangling_chain".to_owned()),
            ("dangling-missing-dir", "a/dangling_dir_out".to_owned()),
            ("dir-link-existing", "to_sub_dir/secret.txt".to_owned()),
            ("dir-link-new", "to_sub_dir/new.txt".to_owned()),
            ("dir-link-new-subdir", "to_sub_dir/x/y/new.txt".to_owned()),
            ("link-target-with-dotdot", "rel_chain_out".to_owned()),
            ("abs-link-dotdot-out", "abs_roundtrip".to_owned()),
            ("abs-link-dotdot-back-in", "abs_roundtrip_in".to_owned()),
            ("abs-through-dir-link", format!("{r}/to_sub_dir/secret.txt")),
            ("root-parent", "..".to_owned()),
            ("root-grandparent", "../..".to_owned()),
            ("slash", "/".to_owned()),
            ("slash-dotdot", "/..".to_owned()),
            ("double-slash", "//".to_owned()),
            ("outside-dir", o.clone()),
            ("outside-dir-slash", format!("{o}/")),
            ("base-dir", text(&base)),
            ("root-prefix-sibling", format!("{r}2/x.txt")),
            ("root-prefix-sibling-dotdot", "../root2/x.txt".to_owned()),
            ("nul-middle", "secret\0.txt".to_owned()),
            ("nul-escape", "a\0/../../outside/secret.txt".to_owned()),
            ("nul-absolute", format!("{o}/secret.txt\0")),
            ("nul-only", "\0".to_owned()),
            ("nul-in-dotdot", "../outside/\0secret.txt".to_owned()),
            ("empty", String::new()),
            ("long-dotdot", format!("{}outside/secret.txt", "../".repeat(1400))),
            ("long-components", format!("{}x", "a/".repeat(2100))),
            ("long-name", "x".repeat(5000)),
            ("name-over-255", "y".repeat(256)),
            ("long-absolute", format!("{o}/{}", "z".repeat(300))),
        ];
        for (name, path) in finals {
            add(name, path, Escape);
        }
        for (name, path) in [
            ("loop-self", "loop_self"),
            ("loop-self-child", "loop_self/new.txt"),
            ("loop-pair", "loop_a"),
            ("loop-pair-child", "loop_a/new.txt"),
            ("loop-pair-other", "loop_b/x/y"),
        ] {
            add(name, path.to_owned(), Loop);
        }
        let b = text(&blobs);
        for (name, path) in [
            ("git-config", ".git/config".to_owned()),
            ("git-head", ".git/HEAD".to_owned()),
            ("git-new-hook", ".git/hooks/new-hook".to_owned()),
            ("git-dir", ".git".to_owned()),
            ("git-new-deep", ".git/objects/aa/new".to_owned()),
            ("dot-git-config", "./.git/config".to_owned()),
            ("dotdot-git-config", "a/../.git/config".to_owned()),
            ("git-dotdot-git", ".git/../.git/config".to_owned()),
            ("absolute-git-config", format!("{r}/.git/config")),
            ("toolhost-toml", "toolhost.toml".to_owned()),
            ("toolhost-dir-file", ".toolhost/state.json".to_owned()),
            ("toolhost-dir-new", ".toolhost/new.json".to_owned()),
            ("toolhost-dir", ".toolhost".to_owned()),
            ("git-link-config", "git_link/config".to_owned()),
            ("git-link-new", "git_link/new-file".to_owned()),
            ("git-link-abs-config", "git_link_abs/config".to_owned()),
            ("cfg-link", "cfg_link".to_owned()),
            ("toml-link", "toml_link".to_owned()),
            ("nested-git-up", "a/git_up/config".to_owned()),
            ("dangling-into-git", "dangling_git".to_owned()),
            ("read-only-root-file", format!("{b}/blob.txt")),
            ("read-only-root-new", format!("{b}/new.txt")),
            ("read-only-root-new-dir", format!("{b}/d/new.txt")),
            ("link-to-read-only-root", "to_blobs/blob.txt".to_owned()),
        ] {
            add(name, path, WriteDenied);
        }

        Ok(EscapeCorpus { base, root, read_only_root: blobs, outside, cases })
    }

    /// The workspace configuration the corpus is meant for: `root` writable, `blobs`
    /// read-only, default protected patterns.
    pub fn config(&self) -> WorkspaceConfig {
        WorkspaceConfig {
            read_only_roots: vec![self.read_only_root.clone()],
            ..WorkspaceConfig::new(&self.root)
        }
    }

    /// Everything that must never change: the whole base except the writable root, plus the
    /// root's protected entries. Symlinks are recorded, never followed.
    pub fn snapshot(&self) -> io::Result<BTreeMap<PathBuf, Entry>> {
        let mut out = BTreeMap::new();
        for entry in fs::read_dir(&self.base)? {
            let path = entry?.path();
            if path != self.root {
                record(&path, &mut out)?;
            }
        }
        for protected in [".git", ".toolhost", "toolhost.toml"] {
            record(&self.root.join(protected), &mut out)?;
        }
        Ok(out)
    }
}

fn record(path: &Path, out: &mut BTreeMap<PathBuf, Entry>) -> io::Result<()> {
    let metadata = fs::symlink_metadata(path)?;
    let file_type = metadata.file_type();
    let entry = if file_type.is_symlink() {
        Entry::Symlink(fs::read_link(path)?)
    } else if file_type.is_file() {
        Entry::File(fs::read(path)?)
    } else if file_type.is_dir() {
        for child in fs::read_dir(path)? {
            record(&child?.path(), out)?;
        }
        Entry::Dir
    } else {
        Entry::Other
    };
    out.insert(path.to_path_buf(), entry);
    Ok(())
}
