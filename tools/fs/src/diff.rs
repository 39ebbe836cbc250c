//! Line diffs for write/edit metadata.
