//! `compare`: runs the workspace crates side by side with the crates people use today.
//!
//! ```text
//! cargo run --release -p benches -- [SUITE...] [--quick | --full]
//!     [--plot DIR] [--report FILE] [--from ROWS]
//! ```
//!
//! With no suite named, every suite runs in quick mode; named suites run in
//! full unless `--quick` is given. Stdout carries one row per line,
//! `<suite> <name> <value> <unit>`; stderr carries progress and, at the end,
//! one table per suite with each target marked met or missed.

#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "a std-only benchmark binary"
)]

mod harness;
mod plot;
mod report;
mod suites;
mod targets;

use harness::{Ctx, Row};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Every suite the comparison is meant to have, in run order; a build that
/// lacks one says so instead of failing.
const PLANNED: &[&str] = &["copy", "write", "pool", "spsc", "ipc", "batch"];

const USAGE: &str = "\
usage: compare [SUITE...] [--quick | --full] [--plot DIR] [--report FILE] [--from ROWS]

  SUITE          run only these suites (default: all, in quick mode)
  --quick        few rounds, small sizes: a smoke run (the default with no SUITE)
  --full         the longer measurement behind published figures
                 (the default when a SUITE is named)
  --plot DIR     write SVG charts of the rows to DIR
  --report FILE  rewrite the marked results block of FILE (docs/benchmarks.md)
  --from ROWS    read rows saved from an earlier run's stdout instead of
                 measuring, for --plot and --report

Stdout: one row per line, `<suite> <name> <value> <unit>`.
Stderr: progress, then a summary per suite with each target met or missed.";

#[derive(Debug, Default)]
struct Args {
    names: Vec<String>,
    quick: Option<bool>,
    plot: Option<PathBuf>,
    report: Option<PathBuf>,
    from: Option<PathBuf>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args::default();
    let mut it = args;
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--quick" => a.quick = Some(true),
            "--full" => a.quick = Some(false),
            "--plot" => a.plot = Some(value("--plot")?.into()),
            "--report" => a.report = Some(value("--report")?.into()),
            "--from" => a.from = Some(value("--from")?.into()),
            "-h" | "--help" => return Ok(None),
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`; try --help")),
            other => a.names.push(other.to_owned()),
        }
    }
    for name in &a.names {
        if !suites::SUITES.iter().any(|(n, _)| n == name) {
            return Err(if PLANNED.contains(&name.as_str()) {
                format!("suite `{name}` is not in this build; try --help")
            } else {
                format!("unknown suite `{name}`; try --help")
            });
        }
    }
    Ok(Some(a))
}

fn built() -> Vec<&'static str> {
    suites::SUITES.iter().map(|s| s.0).collect()
}

fn missing() -> Vec<String> {
    PLANNED
        .iter()
        .filter(|p| !built().contains(p))
        .map(|p| (*p).to_owned())
        .collect()
}

fn main() -> ExitCode {
    // Started again by the `ipc` suite as its server process.
    if let Some(code) = suites::ipc::peer_main() {
        return code;
    }
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            eprintln!("{USAGE}\n");
            eprintln!("suites in this build: {}", built().join(" "));
            let m = missing();
            if !m.is_empty() {
                eprintln!("not in this build yet: {}", m.join(" "));
            }
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let quick = args.quick.unwrap_or(args.names.is_empty());
    let selected: Vec<&'static str> = built()
        .into_iter()
        .filter(|n| args.names.is_empty() || args.names.iter().any(|a| a == n))
        .collect();

    let mut info = report::RunInfo {
        command: command_line(),
        mode: if quick { "quick" } else { "full" }.to_owned(),
        started: report::now_utc(),
        commit: report::commit(),
        machine: report::machine(),
        load: (report::load(), String::new()),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        suite_secs: Vec::new(),
        missing: if args.names.is_empty() && args.from.is_none() {
            missing()
        } else {
            Vec::new()
        },
        from: None,
    };

    let rows: Vec<Row> = if let Some(path) = &args.from {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                info.from = Some(path.display().to_string());
                text.lines().filter_map(Row::parse).collect()
            }
            Err(e) => {
                eprintln!("cannot read {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    } else {
        let ctx = Ctx { quick };
        for (name, run) in suites::SUITES {
            if !selected.contains(name) {
                continue;
            }
            eprintln!("== suite {name}{} ==", if quick { " (quick)" } else { "" });
            let t0 = Instant::now();
            run(&ctx);
            info.suite_secs
                .push(((*name).to_owned(), t0.elapsed().as_secs_f64()));
        }
        harness::take_rows()
    };
    info.load.1 = report::load();

    // The summary: one table per suite, targets marked.
    let suites_seen: Vec<&str> = PLANNED
        .iter()
        .copied()
        .filter(|s| rows.iter().any(|r| r.suite == *s))
        .collect();
    eprintln!();
    eprintln!(
        "== summary ({} mode{}; ratios are medians of paired per-round ratios; * marks this workspace) ==",
        info.mode,
        if quick {
            ": a few rounds, indicative only; --full for published figures"
        } else {
            ""
        }
    );
    let mut outcomes = Vec::new();
    for s in &suites_seen {
        eprintln!();
        eprint!("{}", report::summary(s, &rows));
        outcomes.extend(targets::check_suite(s, &rows));
    }
    let (met, missed, nm) = report::tally(&outcomes);
    eprintln!();
    eprintln!("targets: {met} met, {missed} missed, {nm} not measured");
    if !info.missing.is_empty() {
        eprintln!("skipped, not in this build: {}", info.missing.join(", "));
    }
    if let Some(busy) = report::busy(&info.load, info.cores).filter(|_| args.from.is_none()) {
        eprintln!("{busy}");
    }
    if !info.suite_secs.is_empty() {
        let per: Vec<String> = info
            .suite_secs
            .iter()
            .map(|(s, t)| format!("{s} {t:.1} s"))
            .collect();
        eprintln!("time: {}", per.join(", "));
    }

    let mut charts = Vec::new();
    if let Some(dir) = &args.plot {
        match plot::write_all(dir, &rows) {
            Ok(c) => {
                for chart in &c {
                    eprintln!("chart: {}", dir.join(&chart.file).display());
                }
                charts = c;
            }
            Err(e) => {
                eprintln!("cannot write charts to {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(file) = &args.report {
        let links: Vec<(String, String)> = match &args.plot {
            Some(dir) => charts
                .iter()
                .map(|c| (plot::link(file, dir, &c.file), c.title.clone()))
                .collect(),
            None => Vec::new(),
        };
        let block = report::markdown(&info, &suites_seen, &rows, &links);
        let result = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|doc| report::splice(&doc, &block))
            .and_then(|doc| std::fs::write(file, doc).map_err(|e| e.to_string()));
        match result {
            Ok(()) => eprintln!("report: rewrote the results block of {}", file.display()),
            Err(e) => {
                eprintln!("cannot update {}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The command as a user types it from the workspace root.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        "cargo run --release -p benches".to_owned()
    } else {
        format!("cargo run --release -p benches -- {}", args.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Option<Args>, String> {
        parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn arguments_parse_and_reject_unknown_names() {
        let a = p(&["pool", "--full", "--plot", "d", "--report", "r.md"])
            .unwrap()
            .unwrap();
        assert_eq!(a.names, ["pool"]);
        assert_eq!(a.quick, Some(false));
        assert_eq!(a.plot, Some(PathBuf::from("d")));
        assert_eq!(a.report, Some(PathBuf::from("r.md")));
        assert!(p(&["--help"]).unwrap().is_none());
        assert!(p(&["--plot"]).is_err());
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["nosuch"]).unwrap_err().contains("unknown suite"));
    }

    #[test]
    fn every_built_suite_is_planned() {
        for s in built() {
            assert!(PLANNED.contains(&s), "{s} missing from PLANNED");
        }
    }
}
