//! Project tasks: `cargo xtask test` installs what the test suites need (idempotently) and runs
//! every suite; `cargo xtask demo` runs the main job on the embedded sample workspace.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("demo") => demo(),
        Some("install-deps") => install_deps(),
        _ => {
            eprintln!("usage: cargo xtask <test|demo|install-deps>");
            return ExitCode::from(2);
        }
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.current_dir(project_root());
    cmd
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// Where the language servers for the `lsp` tests live (git-ignored): `bin/` (a `clangd` link
/// when only `clangd-NN` exists) and the npm prefix (pyright).
fn client_tools() -> PathBuf {
    project_root().join(".client-tools")
}

/// `PATH` for the test runs: the client-tools bin folders first.
fn test_path() -> std::ffi::OsString {
    let tools = client_tools();
    let mut dirs = vec![tools.join("bin"), tools.join("npm/node_modules/.bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// Whether `program` is on the test `PATH`.
fn have_for_tests(program: &str) -> bool {
    std::env::split_paths(&test_path()).any(|dir| dir.join(program).is_file())
}

/// The highest `clangd-NN` on `PATH`, if any.
fn versioned_clangd() -> Option<PathBuf> {
    let mut best: Option<(u32, PathBuf)> = None;
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(version) = name.strip_prefix("clangd-").and_then(|v| v.parse::<u32>().ok())
                && best.as_ref().is_none_or(|(v, _)| version > *v)
            {
                best = Some((version, entry.path()));
            }
        }
    }
    best.map(|(_, path)| path)
}

/// Installs the external programs the tests use, when missing (every step is idempotent).
fn install_deps() -> Result<()> {
    let mut apt: Vec<&str> = Vec::new();
    if !have("rg") {
        apt.push("ripgrep");
    }
    if !have("clangd") && versioned_clangd().is_none() && !have_for_tests("clangd") {
        apt.push("clangd-19");
    }
    if !have("npm") {
        apt.extend(["nodejs", "npm"]);
    }
    if !apt.is_empty() {
        let sudo = if have("sudo") && !is_root() { "sudo " } else { "" };
        run(Command::new("sh").args([
            "-c",
            &format!(
                "{sudo}apt-get update -qq && DEBIAN_FRONTEND=noninteractive {sudo}apt-get install -y -qq --no-install-recommends {}",
                apt.join(" ")
            ),
        ]))?;
    }
    // The scenarios and tests name `clangd`; Debian ships `clangd-19`.
    if !have("clangd")
        && !have_for_tests("clangd")
        && let Some(versioned) = versioned_clangd()
    {
        let bin = client_tools().join("bin");
        std::fs::create_dir_all(&bin)
            .with_context(|| format!("cannot create {}", bin.display()))?;
        std::os::unix::fs::symlink(&versioned, bin.join("clangd"))
            .with_context(|| format!("cannot link {} as clangd", versioned.display()))?;
    }
    if !have_for_tests("pyright-langserver") {
        run(Command::new("npm")
            .args(["install", "--prefix"])
            .arg(client_tools().join("npm"))
            .args(["--no-audit", "--no-fund", "pyright@1.1.414"]))?;
    }
    for program in ["rg", "clangd", "pyright-langserver"] {
        if !have(program) && !have_for_tests(program) {
            bail!("required test program `{program}` is missing after installation");
        }
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0"))
}

/// Every suite: formatting, lints, the Rust tests (unit, integration, conformance in-process),
/// the conformance scenarios over stdio, the Neovim suites and the VS Code suites.
fn test(extra: &[String]) -> Result<()> {
    install_deps()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    run(cargo().args(["test", "--workspace"]).args(extra).env("PATH", test_path()))?;
    // The conformance scenarios again, over stdio against the real binary.
    run(cargo().args(["build", "-p", "toolhost-server", "-p", "toolhost-harness"]))?;
    let root = project_root();
    run(Command::new(root.join("target/debug/toolhost-harness"))
        .current_dir(&root)
        .args(["run", "editor-clients/conformance", "--bin"])
        .arg(root.join("target/debug/toolhost"))
        .env("PATH", test_path()))?;
    // The Neovim client: real headless Neovim 0.11 (installed by the script) and the real binary.
    run(Command::new("bash")
        .current_dir(&root)
        .arg("editor-clients/neovim/tests/run.sh")
        .arg(root.join("target/debug/toolhost"))
        .env("PATH", test_path()))?;
    // The VS Code extension: unit tests, then real VS Code (code-server + headless Chromium).
    run(Command::new("bash")
        .current_dir(&root)
        .arg("vscode-extension/scripts/test.sh")
        .arg(root.join("target/debug/toolhost"))
        .env("PATH", test_path()))?;
    Ok(())
}

/// The main job on the embedded default: the harness copies the sample workspace into a temp
/// folder, starts the real server and runs a short session, printing each call's card.
fn demo() -> Result<()> {
    run(cargo().args(["build", "--quiet", "-p", "toolhost-server", "-p", "toolhost-harness"]))?;
    let root = project_root();
    run(Command::new(root.join("target/debug/toolhost-harness"))
        .args(["demo", "--bin"])
        .arg(root.join("target/debug/toolhost")))
}
