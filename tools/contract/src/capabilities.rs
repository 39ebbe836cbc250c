//! A typed map of capabilities (workspace, spill store, LSP provider, …) handed to tools and
//! policies: the only way a tool reaches the world.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;

/// Capabilities keyed by type. Values are cloned out (store `Arc<…>`s).
#[derive(Default)]
pub struct Capabilities {
    entries: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Capabilities {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the capability of type `T`.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) -> &mut Self {
        self.entries.insert(TypeId::of::<T>(), Box::new(value));
        self
    }

    /// Builder form of [`Capabilities::insert`].
    pub fn with<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// The capability of type `T`, if provided.
    pub fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.entries.get(&TypeId::of::<T>()).and_then(|b| b.downcast_ref::<T>()).cloned()
    }
}

impl fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capabilities").field("len", &self.entries.len()).finish()
    }
}
