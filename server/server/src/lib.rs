//! toolhost server library.
