//! Headless client of `toolhost`: the conformance scenario format shared by every client runner
//! (Rust in-process, this harness over stdio, Neovim, VS Code), a synchronous stdio LSP client of
//! `toolhost serve`, and the scenario runner over the wire.

pub mod client;
pub mod runner;
pub mod scenario;
