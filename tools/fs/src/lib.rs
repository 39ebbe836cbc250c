//! File tools: read, write, edit, glob and grep, with replayable diff metadata.

pub mod diff;
