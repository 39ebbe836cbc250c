//! Integration tests of toolhost: the dependency-graph check, conformance scenarios through the
//! real pipeline, and tests that spawn the real binary. The tests live in `tests/tests/`.
