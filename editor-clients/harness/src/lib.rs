//! Headless client of `toolhost`: the conformance scenario format shared by every client runner
//! (Rust in-process, this harness over stdio, Neovim, VS Code) and, in wave 1 · 4/7, the stdio LSP
//! client that drives `toolhost serve`.

pub mod scenario;
