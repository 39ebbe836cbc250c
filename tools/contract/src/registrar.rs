//! Where tool crates put their tools: a [`Registrar`] (the host's registry implements it) takes
//! a [`ToolDef`] — a typed or raw tool whose declarations were checked — and returns a
//! [`Disposer`] that removes it again. Tool crates see only this, never the registry itself.

use crate::error::RegistrationError;
use crate::future::BoxFuture;
use crate::tool::{ErasedTool, RawTool, Tool, TypedTool};
use std::sync::Arc;

/// A tool ready to register: its schemas compiled and its name checked.
pub struct ToolDef {
    tool: Arc<dyn ErasedTool>,
}

/// The name the registry keeps for the code-mode tool: nobody registers it by accident.
pub const RESERVED_NAME: &str = "run_code";

fn check_name(name: &str) -> Result<(), RegistrationError> {
    if name.is_empty() {
        return Err(RegistrationError::EmptyName);
    }
    if name == RESERVED_NAME {
        return Err(RegistrationError::Reserved);
    }
    Ok(())
}

impl ToolDef {
    /// A typed tool: its argument and output schemas derived and compiled.
    pub fn typed<T: Tool>(tool: T) -> Result<Self, RegistrationError> {
        check_name(tool.name())?;
        Ok(ToolDef { tool: Arc::new(TypedTool::new(tool)?) })
    }

    /// The code-mode tool (`run_code`, the host registers it): the one tool whose name is
    /// [`RESERVED_NAME`]; any other name is checked as usual.
    pub fn reserved<T: Tool>(tool: T) -> Result<Self, RegistrationError> {
        if tool.name() != RESERVED_NAME {
            check_name(tool.name())?;
        }
        Ok(ToolDef { tool: Arc::new(TypedTool::new(tool)?) })
    }

    /// A raw tool: its output declaration required, its schemas compiled.
    pub fn raw(tool: RawTool) -> Result<Self, RegistrationError> {
        check_name(&tool.name)?;
        Ok(ToolDef { tool: Arc::new(crate::tool::ErasedRaw::new(tool)?) })
    }

    pub fn name(&self) -> &str {
        self.tool.name()
    }

    /// The erased tool, for the registry.
    pub fn into_erased(self) -> Arc<dyn ErasedTool> {
        self.tool
    }
}

/// Unregisters the tool it was returned for (a no-op if it was already replaced or removed).
#[must_use = "dropping a Disposer keeps the tool registered; call dispose() to unregister"]
pub struct Disposer {
    dispose: Box<dyn FnOnce() + Send + Sync>,
}

impl Disposer {
    /// A disposer that runs `dispose` once.
    pub fn new(dispose: impl FnOnce() + Send + Sync + 'static) -> Self {
        Disposer { dispose: Box::new(dispose) }
    }

    pub fn dispose(self) {
        (self.dispose)();
    }
}

impl std::fmt::Debug for Disposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Disposer")
    }
}

/// What tools are registered into.
pub trait Registrar: Send + Sync {
    /// Adds a tool; a name already registered is refused (`RegistrationError::Duplicate`).
    fn add(&self, tool: ToolDef) -> Result<Disposer, RegistrationError>;
}

impl dyn Registrar + '_ {
    /// Registers a typed tool.
    pub fn register<T: Tool>(&self, tool: T) -> Result<Disposer, RegistrationError> {
        self.add(ToolDef::typed(tool)?)
    }

    /// Registers a raw (dynamic) tool.
    pub fn register_raw(&self, tool: RawTool) -> Result<Disposer, RegistrationError> {
        self.add(ToolDef::raw(tool)?)
    }
}

/// Provides tools on demand: asked about a name no tool has yet, it may make one available (an
/// MCP server configured to start on first use) and says whether it did.
pub trait UnknownToolResolver: Send + Sync {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, bool>;
}
