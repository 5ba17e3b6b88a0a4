//! The suites, in the order `compare` runs them when none is named.

use crate::harness::Ctx;

mod copy;
mod write;

/// Every suite: its name on the command line and its entry point.
pub const SUITES: &[(&str, fn(&Ctx))] = &[
    ("copy", copy::run),
    ("write", write::run),
];
