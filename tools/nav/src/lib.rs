//! The `lsp` navigation tool (definitions, references, implementations, hover) over the
//! contract's `LspProvider` capability. Filled by wave 1 · 5/7.
