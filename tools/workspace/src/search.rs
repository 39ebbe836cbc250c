//! In-process glob and grep (ripgrep crates).
