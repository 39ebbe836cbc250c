//! The `toolhost` binary.
fn main() {}
