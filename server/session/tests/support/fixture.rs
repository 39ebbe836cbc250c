//! The session tests' scratch space: a sessions folder and a canonical workspace root in one
//! temporary folder (included with `#[path = "support/fixture.rs"]`).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub sessions: PathBuf,
    pub root: PathBuf,
}

/// A fixture whose sessions folder is `sessions_rel` below the temporary folder.
pub fn fixture_at(sessions_rel: &str) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join(sessions_rel);
    let root = tmp.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    Fixture { _tmp: tmp, sessions, root }
}

/// A fixture with the sessions in `sessions/`.
pub fn fixture() -> Fixture {
    fixture_at("sessions")
}
