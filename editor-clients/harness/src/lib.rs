//! Headless stdio client of `toolhost serve`: drives the server over LSP, runs conformance
//! scenario folders and prints cards. Filled by wave 1 · 4/7.
