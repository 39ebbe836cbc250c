//! Append-only session log, crash repair, replay and the content-addressed blob store.
