//! Confined workspace filesystem: resolve-beneath path confinement, atomic durable writes,
//! per-path locks, the observation ledger (read-before-write by content hash) and the in-process
//! glob/grep engine built on ripgrep's crates.

pub mod search;
