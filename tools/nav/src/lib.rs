//! The `lsp` navigation tool (definitions, references, implementations, hover) over the
//! contract's `LspProvider` capability (docs/tools.md, lsp): one-based positions in, grouped
//! `path:line:character` text out, an additive source snippet per location, card metadata, and an
//! optional `symbol` argument that fixes a wrong column.

mod display;
mod render;
mod symbol;
mod tool;

pub use display::display_uri;
pub use render::{bound, locations_meta, locations_text};
pub use symbol::{SNIPPET_MAX_CHARS, SYMBOL_LINE_WINDOW, resolve_symbol, snippet};
pub use tool::{HoverOut, LocationOut, LspArgs, LspOutput, LspTool, NavLimits};

use toolhost_contract::{Disposer, Registrar, RegistrationError};

/// Registers the `lsp` tool.
pub fn register(
    registry: &dyn Registrar,
    limits: NavLimits,
) -> Result<Disposer, RegistrationError> {
    registry.register(LspTool::new(limits))
}
