//! `toolhost mcp` against the reference filesystem server (`@modelcontextprotocol/server-filesystem`,
//! the npm package `cargo xtask test` installs under `.client-tools/npm`), a plain `main` run with
//! `cargo bench -p toolhost-tests --bench mcp_vs_reference`.
//!
//! Builds `toolhost` with the bench's profile, then hands both servers to
//! `tests/mcp-clients/bench_mcp.mjs`, which drives them with the TypeScript SDK client over stdio
//! on one generated workspace (about 5,000 files, a 200-line file, a 2 MB file), interleaved, and
//! prints the table: cold start to tools/list, small read p50/p99, glob, grep (against
//! `search_files`, the nearest reference tool), edit p50, eight reads in flight, the 2 MB file read
//! whole (toolhost paging it as a model does), peak RSS — and what `[session] durability =
//! "every-call"` costs against the default. Then the floor of the 2 MB row: the same client
//! reading toolhost's recorded pages from `replay_server.mjs`, a server that does no work, against
//! the reference once more (what 41 answers cost the client alone). Installs nothing: a missing Node, SDK or reference
//! server is an error naming the command that installs it.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/server.rs"]
mod server;

use std::path::PathBuf;
use std::process::Command;

/// What the driver needs under `.client-tools/npm`, and where.
fn required() -> Vec<(&'static str, PathBuf)> {
    let npm = server::workspace_root().join(".client-tools/npm/node_modules/@modelcontextprotocol");
    vec![
        ("the reference server", npm.join("server-filesystem/dist/index.js")),
        ("the TypeScript SDK", npm.join("sdk/package.json")),
    ]
}

fn main() {
    // `cargo bench` runs this optimized; `cargo test --benches` in debug, as a quick smoke run.
    let release = !cfg!(debug_assertions);
    let node_ok = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(node_ok, "node is not on PATH: install Node.js 20 or later");
    for (what, path) in required() {
        assert!(
            path.is_file(),
            "{what} is missing ({}): run `cargo xtask test` once, which installs it",
            path.display()
        );
    }
    let bin = server::binary_for(release);
    let scratch = tempfile::tempdir().unwrap();
    let script = server::workspace_root().join("tests/mcp-clients/bench_mcp.mjs");
    let reference = &required()[0].1;
    println!(
        "toolhost mcp ({} build) against @modelcontextprotocol/server-filesystem, same SDK client",
        if release { "release" } else { "debug" }
    );
    let status = Command::new("node")
        .arg(&script)
        .arg(&bin)
        .arg(reference)
        .arg(scratch.path())
        .args(if release { None } else { Some("quick") })
        .status()
        .unwrap();
    assert!(status.success(), "bench_mcp.mjs failed ({status})");
}
