//! `cargo xtask test`: runs every suite of the project (installing what the client suites need).
fn main() {}
