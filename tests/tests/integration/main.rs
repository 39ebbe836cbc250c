//! The workspace's integration suites in one test binary. Each suite is a module named after what
//! it covers (`cargo test -p toolhost-tests --test integration lanes::` runs one). One binary
//! because every suite links the whole workspace: thirty-five links cost minutes and gigabytes
//! per build, and the `toolhost` binary with the test tools is built once per process
//! (support/server.rs). Suites that change process-wide state (the child subreaper of `kill9`
//! and `children_reaped`) or that other tools name (`conformance`, `tools_doc`) stay their own
//! binaries beside this folder.
#![allow(clippy::unwrap_used)]

#[path = "../support/server.rs"]
mod server;

#[path = "../support/mcp.rs"]
mod mcp;

#[path = "../support/model_server.rs"]
mod model_server;

#[path = "../support/programs.rs"]
mod programs;

#[path = "../support/ssh_host.rs"]
mod ssh_host;

#[path = "../../../server/agent/tests/support/sse.rs"]
mod sse;

mod acp;
mod acp_hosted;
mod agent;
mod agent_serve;
mod bounded_calls;
mod checkpoints;
mod code_mode_agent;
mod concurrent_edits;
mod damaged_log;
mod declared_cards;
mod dependency_graph;
mod front_end;
mod interact;
mod lanes;
mod lsp_cancel;
mod lsp_deadlock;
mod lsp_disconnect;
mod lsp_documents;
mod lsp_malformed;
mod lsp_panic;
mod lsp_session;
mod lsp_tool;
mod mcp_agents;
mod mcp_attach;
mod mcp_bounds;
mod mcp_bridge;
mod mcp_conformance;
mod mcp_http;
mod mcp_malformed;
mod mcp_resources;
mod mcp_sdk_clients;
mod mcp_stdio;
mod module_graph;
mod no_space;
mod pattern_bounds;
mod replay_fidelity;
mod revert;
mod review;
mod run_code;
mod sdk_schemas;
mod session_log_size;
mod session_tools;
mod shell;
mod untrusted_workspace;
mod wave2_fixture;
mod web;
mod workflow;
mod workflow_cards;
mod worktrees;
mod world_container;
mod world_processes;
mod world_ssh;
mod world_tools;
mod world_websocket;
