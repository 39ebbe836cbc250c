//! The composition of the sources: later sources winning key by key, errors naming the file
//! and the key, the MCP server entries, the trust list and the documented example.

use super::*;

#[test]
fn later_sources_win_key_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let user =
        PartialConfig::from_toml("user", "[limits]\nread_max_bytes = 10\ngrep_max_matches = 5\n")
            .unwrap();
    let ws = PartialConfig::from_toml(
        "toolhost.toml",
        "[limits]\nread_max_bytes = 8\n[spill]\nmax_inline_bytes = 1000\n",
    )
    .unwrap();
    let flags = PartialConfig::from_toml("flags", "[limits]\nread_max_bytes = 20\n").unwrap();
    let sources = Sources { user: Some(user), workspace: Some(ws), ..Default::default() };
    let config = sources.clone().resolve(dir.path());
    assert_eq!(config.limits.read_max_bytes, 8);
    assert_eq!(config.limits.grep_max_matches, 5);
    assert_eq!(config.spill_max_inline_bytes, 1000);
    let config = Sources { flags: Some(flags), ..sources }.resolve(dir.path());
    assert_eq!(config.limits.read_max_bytes, 20);
}

#[test]
fn a_cost_budget_counts_at_the_price_and_is_ignored_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let ws = PartialConfig::from_toml("toolhost.toml", "[agent]\ncost_budget = 2.5\n").unwrap();
    let config = Sources { workspace: Some(ws.clone()), ..Default::default() }.resolve(dir.path());
    assert_eq!(config.agent.cost_budget, Some(2.5));
    assert!(config.agent.options("/w").cost_budget.is_none(), "no price, nothing to count");
    assert!(
        config.warnings.iter().any(|w| w.contains("cost_budget is ignored")),
        "{:?}",
        config.warnings
    );
    let user =
        PartialConfig::from_toml("user", "[agent.price]\ninput = 1.0\noutput = 2.0\n").unwrap();
    let config =
        Sources { user: Some(user), workspace: Some(ws), ..Default::default() }.resolve(dir.path());
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let budget = config.agent.options("/w").cost_budget.unwrap();
    assert_eq!((budget.usd, budget.price.output), (2.5, 2.0));
}

#[test]
fn bad_value_names_file_and_key() {
    let err = PartialConfig::from_toml("/w/toolhost.toml", "[limits]\nread_max_bytes = \"big\"\n")
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("/w/toolhost.toml:"), "{text}");
    assert!(text.contains("read_max_bytes"), "{text}");
    let err =
        PartialConfig::from_toml("/w/toolhost.toml", "[limits]\nread_max_bytez = 1\n").unwrap_err();
    assert!(err.to_string().contains("read_max_bytez"), "{err}");
}

#[test]
fn mcp_server_entries_are_checked_and_merged() {
    let dir = tempfile::tempdir().unwrap();
    let user = PartialConfig::from_toml(
        "user",
        "[mcp.servers.both]\ncommand = \"x\"\nurl = \"http://h/\"\n\
         [mcp.servers.\"bad name\"]\ncommand = \"x\"\n\
         [mcp.servers.ftp]\nurl = \"ftp://h/\"\n\
         [mcp.servers.off]\ncommand = \"x\"\n\
         [mcp.servers.py]\ncommand = \"python3\"\ncwd = \"tools\"\nfail_on_startup_error = true\n\
         [mcp.servers.py.reconnect]\nenabled = false\ninitial_delay_ms = 10\n",
    )
    .unwrap();
    let flags = PartialConfig::from_toml("flags", "[mcp.servers.off]\nenabled = false\n").unwrap();
    let config =
        Sources { user: Some(user), flags: Some(flags), ..Default::default() }.resolve(dir.path());
    assert_eq!(config.mcp_servers.len(), 1, "{:?}", config.mcp_servers);
    let py = &config.mcp_servers[0];
    assert!(py.fail_on_startup_error && !py.lazy);
    assert!(!py.reconnect.enabled);
    assert_eq!(py.reconnect.initial_delay, std::time::Duration::from_millis(10));
    assert_eq!(py.reconnect.max_attempts, 10);
    assert_eq!(py.tool_call_timeout, std::time::Duration::from_millis(60_000));
    let toolhost_tools_mcp::McpTransport::Stdio { cwd, .. } = &py.transport else {
        panic!("stdio")
    };
    assert_eq!(cwd.as_deref(), Some(dir.path().join("tools").as_path()));
    assert_eq!(
        config.warnings,
        [
            "ignored mcp.servers.bad name: a server name is 1 to 32 letters, digits, _ or -",
            "ignored mcp.servers.both: give either command (stdio) or url (streamable HTTP), not both",
            "ignored mcp.servers.ftp: url \"ftp://h/\" is not an http(s) URL",
        ]
    );
    let unknown = PartialConfig::from_toml("t.toml", "[mcp.servers.x]\nstart = \"now\"\n");
    assert!(unknown.unwrap_err().to_string().contains("unknown field `start`"));
}

#[test]
fn trusted_workspace_keeps_its_servers() {
    let dir = tempfile::tempdir().unwrap();
    let user_file = dir.path().join("user.toml");
    assert!(trust_workspace(&user_file, dir.path()).unwrap());
    assert!(!trust_workspace(&user_file, dir.path()).unwrap());
    let user =
        PartialConfig::from_toml("user", &std::fs::read_to_string(&user_file).unwrap()).unwrap();
    let ws = PartialConfig::from_toml(
        "toolhost.toml",
        "[lsp.servers.c]\ncommand = \"clangd\"\n[lsp.servers.c.settings]\nclangd = { fallbackFlags = [\"-std=c11\"] }\n",
    )
    .unwrap();
    let config =
        Sources { user: Some(user), workspace: Some(ws), ..Default::default() }.resolve(dir.path());
    assert!(config.workspace_trusted);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.lsp_servers["c"].command.as_deref(), Some("clangd"));
    assert_eq!(
        config.lsp_servers["c"].settings,
        Some(serde_json::json!({"clangd": {"fallbackFlags": ["-std=c11"]}}))
    );
}

#[test]
fn init_options_use_the_toml_keys() {
    let value = serde_json::json!({"session_id": "abc", "limits": {"glob_max_results": 3}});
    let init = PartialConfig::from_json("initializationOptions", &value).unwrap();
    assert_eq!(init.session_id(), Some("abc"));
    let dir = tempfile::tempdir().unwrap();
    let config = Sources { init_options: Some(init), ..Default::default() }.resolve(dir.path());
    assert_eq!(config.limits.glob_max_results, 3);
}

#[test]
fn the_documented_example_parses_and_sets_the_mcp_keys() {
    let doc = include_str!("../../../../docs/configuration.md");
    let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let layer = PartialConfig::from_toml("docs/configuration.md", &doc[start..end]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // From the user config (an untrusted workspace's servers would be dropped).
    let config = Sources { user: Some(layer), ..Default::default() }.resolve(dir.path());
    assert_eq!(config.mcp.results, toolhost_mcp::ResultsMode::Auto);
    assert_eq!(config.mcp.max_line_bytes, 64 * 1024 * 1024);
    assert_eq!(config.mcp.tool_meta["*"]["anthropic/alwaysLoad"], serde_json::json!(true));
    assert_eq!(config.mcp.tool_meta["read"]["example/hint"], serde_json::json!("fast"));
    let names: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["docs", "fs"]);
    assert_eq!(config.mcp_servers[0].transport.kind(), "streamable-http");
    assert_eq!(config.mcp_servers[1].reconnect, toolhost_tools_mcp::ReconnectPolicy::default());
}

#[test]
fn mcp_settings_merge_per_tool_over_the_defaults() {
    let user = PartialConfig::from_toml(
        "user",
        "[mcp]\nresults = \"text\"\n[mcp.meta.edit]\n\"x/y\" = 1\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Sources { user: Some(user), ..Default::default() }.resolve(dir.path());
    assert_eq!(config.mcp.results, toolhost_mcp::ResultsMode::Text);
    assert_eq!(config.mcp.tool_meta["edit"]["x/y"], serde_json::json!(1));
    assert_eq!(config.mcp.tool_meta["*"]["anthropic/alwaysLoad"], serde_json::json!(true));
    let bad = PartialConfig::from_toml("toolhost.toml", "[mcp]\nresults = \"json\"\n");
    assert!(bad.unwrap_err().to_string().contains("results"));
}

#[test]
fn a_fifo_named_toolhost_toml_is_refused_instead_of_hanging_startup() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("toolhost.toml");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    let err = Sources::load(dir.path(), None).unwrap_err().to_string();
    assert!(err.contains("toolhost.toml") && err.contains("a FIFO is not a regular file"), "{err}");
}
