//! Client of real language servers (clangd, pyright, …) for the `lsp` tool: bounded framing,
//! lifecycle, a per-workspace pool, cancellation and restarts. It implements the contract's
//! `LspProvider` capability. Filled by wave 1 · 5/7.
