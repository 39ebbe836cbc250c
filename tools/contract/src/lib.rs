//! Tool contract: the Tool trait, the registry and its dispatch pipeline.
