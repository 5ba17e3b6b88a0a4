//! `compare`: runs the workspace crates side by side with the crates people use today.
//!
//! ```text
//! cargo run --release -p benches -- [SUITE...] [--quick]
//! ```
//!
//! With no suite named, every suite runs in quick mode. Stdout carries one row
//! per line, `<suite> <name> <value> <unit>`; stderr carries progress and a
//! readable table.

#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "a std-only benchmark binary"
)]

mod harness;
mod suites;

use harness::Ctx;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Started again by the `ipc` suite as its server process.
    if let Some(code) = suites::ipc::peer_main() {
        return code;
    }
    let mut quick = false;
    let mut names = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            "-h" | "--help" => {
                eprintln!("usage: compare [SUITE...] [--quick]");
                eprintln!(
                    "suites: {}",
                    suites::SUITES
                        .iter()
                        .map(|s| s.0)
                        .collect::<Vec<_>>()
                        .join(" ")
                );
                return ExitCode::SUCCESS;
            }
            other => names.push(other.to_owned()),
        }
    }
    if names.is_empty() {
        quick = true;
    }
    for name in &names {
        if !suites::SUITES.iter().any(|(n, _)| n == name) {
            eprintln!("unknown suite `{name}`; try --help");
            return ExitCode::FAILURE;
        }
    }
    let ctx = Ctx { quick };
    for (name, run) in suites::SUITES {
        if names.is_empty() || names.iter().any(|n| n == name) {
            eprintln!("== suite {name}{} ==", if quick { " (quick)" } else { "" });
            run(&ctx);
        }
    }
    ExitCode::SUCCESS
}
