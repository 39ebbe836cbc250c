//! The crate graph of docs/design.md ("Crates and boundaries"), enforced: any first-party
//! dependency edge the table does not allow fails this test. Change the table here and in
//! docs/design.md together, on purpose.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn allowed() -> BTreeMap<&'static str, Vec<&'static str>> {
    let tools =
        vec!["toolhost-protocol", "toolhost-contract", "toolhost-workspace", "toolhost-process"];
    BTreeMap::from([
        ("toolhost-protocol", vec![]),
        ("toolhost-jsonrpc", vec![]),
        ("toolhost-process", vec![]),
        ("toolhost-contract", vec!["toolhost-protocol"]),
        ("toolhost-workspace", vec!["toolhost-protocol", "toolhost-contract"]),
        ("toolhost-tools-fs", tools.clone()),
        ("toolhost-tools-nav", tools.clone()),
        ("toolhost-tools-shell", tools.clone()),
        ("toolhost-tools-interact", tools.clone()),
        ("toolhost-tools-web", tools.clone()),
        ("toolhost-tools-code", tools.clone()),
        ("toolhost-tools-mcp", tools),
        ("toolhost-session", vec!["toolhost-protocol", "toolhost-contract"]),
        ("toolhost-registry", vec!["toolhost-protocol", "toolhost-contract"]),
        (
            "toolhost-lsp-host",
            vec!["toolhost-protocol", "toolhost-contract", "toolhost-jsonrpc", "toolhost-process"],
        ),
        ("toolhost-mcp", vec!["toolhost-protocol", "toolhost-contract", "toolhost-jsonrpc"]),
        ("toolhost-agent", vec!["toolhost-protocol", "toolhost-contract", "toolhost-jsonrpc"]),
        (
            "toolhost-host",
            vec![
                "toolhost-protocol",
                "toolhost-contract",
                "toolhost-registry",
                "toolhost-workspace",
                "toolhost-session",
                "toolhost-lsp-host",
                "toolhost-mcp",
                "toolhost-agent",
                "toolhost-process",
                "toolhost-tools-fs",
                "toolhost-tools-nav",
                "toolhost-tools-shell",
                "toolhost-tools-interact",
                "toolhost-tools-web",
                "toolhost-tools-mcp",
                "toolhost-tools-code",
                // `[world]`: the execution world the tools use.
                "toolhost-world",
            ],
        ),
        (
            "toolhost-attach",
            vec![
                "toolhost-protocol",
                "toolhost-contract",
                "toolhost-jsonrpc",
                "toolhost-session",
                "toolhost-host",
            ],
        ),
        (
            "toolhost-acp",
            vec![
                "toolhost-protocol",
                "toolhost-contract",
                "toolhost-workspace",
                "toolhost-host",
                // The own agent's permission modes and stop reasons, as ACP says them.
                "toolhost-agent",
                "toolhost-mcp",
                // MCP server entries a client hands over with a session.
                "toolhost-tools-mcp",
                // Agents hosted over ACP are child processes.
                "toolhost-process",
            ],
        ),
        (
            "toolhost-server",
            vec![
                "toolhost-attach",
                "toolhost-acp",
                "toolhost-protocol",
                "toolhost-contract",
                "toolhost-registry",
                "toolhost-host",
                "toolhost-workspace",
                "toolhost-session",
                "toolhost-lsp-host",
                "toolhost-jsonrpc",
                "toolhost-mcp",
                "toolhost-agent",
                "toolhost-process",
                // `toolhost exec-server` serves a world.
                "toolhost-world",
                // Front-end types of two tools: the shell's sandbox launcher (`toolhost
                // sandbox-exec` is this binary) and MCP server entries an ACP client hands over.
                "toolhost-tools-shell",
                "toolhost-tools-mcp",
            ],
        ),
        ("toolhost-harness", vec!["toolhost-protocol", "toolhost-jsonrpc"]),
        (
            "toolhost-world",
            vec![
                "toolhost-protocol",
                "toolhost-contract",
                "toolhost-jsonrpc",
                "toolhost-workspace",
                "toolhost-process",
            ],
        ),
    ])
}

#[test]
fn first_party_edges_follow_the_design_table() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let first_party: BTreeSet<String> =
        packages.iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect();
    let table = allowed();
    let mut violations = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap();
        if name == "toolhost-tests" || name == "xtask" {
            continue;
        }
        let Some(allowed) = table.get(name) else {
            violations.push(format!("{name} is not in the design table"));
            continue;
        };
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            if !first_party.contains(dep_name) {
                continue;
            }
            let dev = dep["kind"].as_str() == Some("dev");
            // Dev-dependencies may use other layers (or the crate itself, for test features) for
            // fixtures, but never the server.
            let ok = allowed.contains(&dep_name) || (dev && dep_name != "toolhost-server");
            if !ok {
                violations.push(format!("{name} -> {dep_name}{}", if dev { " (dev)" } else { "" }));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "dependency edges not allowed by docs/design.md: {violations:#?}"
    );
}
