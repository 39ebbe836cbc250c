//! Replay benchmark (placeholder).
fn main() {}
