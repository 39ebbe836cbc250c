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

/// Installs the external programs the tests use, when missing (every step is idempotent).
fn install_deps() -> Result<()> {
    let mut apt: Vec<&str> = Vec::new();
    if !have("rg") {
        apt.push("ripgrep");
    }
    if !apt.is_empty() {
        let sudo = if have("sudo") && !is_root() { "sudo " } else { "" };
        run(Command::new("sh").args([
            "-c",
            &format!(
                "{sudo}apt-get update -qq && DEBIAN_FRONTEND=noninteractive {sudo}apt-get install -y -qq {}",
                apt.join(" ")
            ),
        ]))?;
    }
    for program in ["rg"] {
        if !have(program) {
            bail!("required test program `{program}` is missing after installation");
        }
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0"))
}

/// Every suite: formatting, lints, the Rust tests (unit, integration, conformance).
fn test(extra: &[String]) -> Result<()> {
    install_deps()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    run(cargo().args(["test", "--workspace"]).args(extra))?;
    // The conformance scenarios again, over stdio against the real binary.
    run(cargo().args(["build", "-p", "toolhost-server", "-p", "toolhost-harness"]))?;
    let root = project_root();
    run(Command::new(root.join("target/debug/toolhost-harness"))
        .current_dir(&root)
        .args(["run", "editor-clients/conformance", "--bin"])
        .arg(root.join("target/debug/toolhost")))?;
    // The Neovim client: real headless Neovim 0.11 (installed by the script) and the real binary.
    run(Command::new("bash")
        .current_dir(&root)
        .arg("editor-clients/neovim/tests/run.sh")
        .arg(root.join("target/debug/toolhost")))?;
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
