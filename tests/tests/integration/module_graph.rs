//! The module graph of the crates every front end stands on has no cycles (docs/design.md,
//! "Crates and boundaries"): a module of `toolhost-contract`, `toolhost-registry` or
//! `toolhost-host` that names another of its crate's top-level modules (`crate::x`, or `super::x`
//! from a submodule) depends on it, and following those edges never leads back. A cycle means two
//! modules are one idea split in two, or one idea leaking into another.
//!
//! Also checked here, as reading the source: no file of those crates or of the binary compares a
//! string with the name of a tool another crate registers (a tool's name means something only to
//! its own crate; the host and the front ends use what tools declare).
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The top-level module a source file belongs to (`src/a.rs` and `src/a/b.rs` are `a`).
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// The text of a file without its `#[cfg(test)]` module (tests may use anything).
fn non_test(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The code of `text` without comments (a doc comment naming a module is no dependency).
fn code(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The top-level modules `text` names as `crate::<m>`, and, in a submodule, `super::<m>`.
fn named_modules(text: &str, in_submodule: bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut prefixes = vec!["crate::"];
    if in_submodule {
        prefixes.push("super::");
    }
    for prefix in prefixes {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + prefix.len()..];
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
            // `crate::{a, b::c}`.
            if let Some(list) = rest.strip_prefix('{') {
                let list = &list[..list.find('}').unwrap_or(list.len())];
                for item in list.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        found.insert(name);
                    }
                }
            }
        }
    }
    found
}

fn graph(crate_dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = repo().join(crate_dir).join("src");
    let files = sources(&src);
    let modules: BTreeSet<String> = files.iter().map(|f| top_module(&src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = top_module(&src, file);
        if from == "lib" || from == "main" {
            continue;
        }
        let in_submodule = file.parent() != Some(src.as_path());
        let text = std::fs::read_to_string(file).unwrap();
        for to in named_modules(&code(non_test(&text)), in_submodule) {
            if to != from && modules.contains(&to) && to != "lib" {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

/// A cycle through `start`, if there is one.
fn cycle_from(
    edges: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    for next in edges.get(path.last().unwrap()).into_iter().flatten() {
        if next == start {
            let mut cycle = path.clone();
            cycle.push(start.to_owned());
            return Some(cycle);
        }
        if path.contains(next) {
            continue;
        }
        path.push(next.clone());
        if let Some(cycle) = cycle_from(edges, start, path) {
            return Some(cycle);
        }
        path.pop();
    }
    None
}

#[test]
fn the_contract_registry_and_host_have_no_module_cycles() {
    let mut cycles = Vec::new();
    for krate in ["tools/contract", "server/registry", "server/host"] {
        let edges = graph(krate);
        for start in edges.keys() {
            if let Some(cycle) = cycle_from(&edges, start, &mut vec![start.clone()]) {
                cycles.push(format!("{krate}: {}", cycle.join(" → ")));
                break;
            }
        }
    }
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

/// Names of the tools the first-party tool crates register, as each crate spells them.
fn tool_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for krate in ["fs", "nav", "shell", "interact", "web"] {
        for file in sources(&repo().join("tools").join(krate).join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            // `fn name(&self) -> &str { "read" }` and `NAME: &str = "read"`.
            for (at, _) in text.match_indices("fn name(&self) -> &str {") {
                let rest = &text[at..];
                if let Some(open) = rest.find('"') {
                    let tail = &rest[open + 1..];
                    let name = &tail[..tail.find('"').unwrap()];
                    if rest[..open].lines().count() <= 2 {
                        names.insert(name.to_owned());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn no_front_end_or_host_compares_a_tool_name() {
    let names = tool_names();
    assert!(names.contains("read") && names.contains("bash"), "{names:?}");
    let mut found = Vec::new();
    let krates = [
        "server/host",
        "server/registry",
        "server/server",
        "server/attach",
        "server/acp",
        "server/mcp",
        "server/agent",
        "server/session",
        "tools/contract",
    ];
    for krate in krates {
        let src = repo().join(krate).join("src");
        for file in sources(&src) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in non_test(&text).lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for name in &names {
                    let quoted = format!("\"{name}\"");
                    let compares = [
                        format!("== {quoted}"),
                        format!("!= {quoted}"),
                        format!("{quoted} =>"),
                        format!("{quoted} |"),
                        format!("| {quoted}"),
                        format!("starts_with({quoted}"),
                    ];
                    if compares.iter().any(|c| code.contains(c.as_str())) {
                        let rel = file.strip_prefix(repo()).unwrap().display().to_string();
                        found.push(format!("{rel}:{}: {}", number + 1, line.trim()));
                    }
                }
            }
            if non_test(&text).contains("\"mcp__") {
                found.push(format!("{}: names MCP tools by prefix", file.display()));
            }
        }
    }
    assert!(found.is_empty(), "comparisons with tool names: {found:#?}");
}
