//! `compare`: runs the workspace crates side by side with the crates people use today.
//!
//! ```text
//! cargo run --release -p benches -- [SUITE...] [--quick | --full]
//!     [--plot DIR] [--report FILE] [--from ROWS] [--rows FILE]
//! ```
//!
//! With no suite named, every suite runs in quick mode; named suites run in
//! full unless `--quick` is given. The rows, one per line,
//! `<suite> <name> <value> <unit>`, go to stdout when it is not a terminal,
//! or to the `--rows` file; stderr carries progress and, at the end, one
//! table per suite with each target marked met or missed.

#![allow(
    clippy::std_instead_of_core,
    clippy::std_instead_of_alloc,
    reason = "a std-only benchmark binary"
)]

mod harness;
mod plot;
mod report;
mod stamp;
mod suites;
mod targets;

use harness::{Ctx, Row};
use stamp::Stamp;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Every suite the comparison is meant to have, in run order; a build that
/// lacks one says so instead of failing.
const PLANNED: &[&str] = &["copy", "write", "pool", "spsc", "ipc", "service", "batch"];

const USAGE: &str = "\
usage: compare [SUITE...] [--quick | --full] [--plot DIR] [--report FILE] [--from ROWS]
               [--rows FILE]

  SUITE          run only these suites (default: all, in quick mode)
  --quick        few rounds, small sizes: a smoke run (the default with no SUITE)
  --full         the longer measurement behind published figures
                 (the default when a SUITE is named)
  --plot DIR     write SVG charts of the rows to DIR
  --report FILE  rewrite the marked results block of FILE (docs/benchmarks.md)
  --from ROWS    read rows saved from an earlier run instead of measuring,
                 for --plot and --report
  --rows FILE    write the rows to FILE instead of stdout

Rows: one per line, `<suite> <name> <value> <unit>`, on stdout unless it is
a terminal (then only with --rows FILE).
Stderr: progress, then a summary per suite with each target met or missed.";

#[derive(Debug, Default)]
struct Args {
    names: Vec<String>,
    quick: Option<bool>,
    plot: Option<PathBuf>,
    report: Option<PathBuf>,
    from: Option<PathBuf>,
    rows: Option<PathBuf>,
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
            "--rows" => a.rows = Some(value("--rows")?.into()),
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
    // Started again by the `ipc` or `service` suite as one of its processes.
    if let Some(code) = suites::peer_main() {
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
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let quick = args.quick.unwrap_or(args.names.is_empty());
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
        stamp: None,
    };
    let rows = match &args.from {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            info.from = Some(path.display().to_string());
            let rows: Vec<Row> = text.lines().filter_map(Row::parse).collect();
            info.stamp = Stamp::from_rows(&rows);
            // The mode of the run that measured the rows, where they say.
            if let Some(full) = info.stamp.as_ref().and_then(|s| s.full) {
                info.mode = if full { "full" } else { "quick" }.to_owned();
            }
            rows
        }
        None => {
            let stamp = Stamp::now(!quick);
            harness::set_rows_out(rows_out(args.rows.as_deref())?);
            stamp.emit();
            info.stamp = Some(stamp);
            measure(args, quick, &mut info);
            harness::finish_rows()
                .map_err(|e| format!("cannot write the rows to their file: {e}"))?;
            harness::take_rows()
        }
    };
    info.load.1 = report::load();
    let suites_seen = summary(&info, &rows, args);
    write_outputs(args, &info, &suites_seen, &rows)
}

/// Where the rows go: the `--rows` file, else stdout unless it is a
/// terminal (there the summary shows them, and 400 rows would bury it).
fn rows_out(file: Option<&Path>) -> Result<harness::RowsOut, String> {
    Ok(match file {
        Some(path) => harness::RowsOut::File(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| format!("cannot create {}: {e}", path.display()))?,
        )),
        None if std::io::stdout().is_terminal() => harness::RowsOut::Nowhere,
        None => harness::RowsOut::Stdout,
    })
}

/// Runs the selected suites, timing each.
fn measure(args: &Args, quick: bool, info: &mut report::RunInfo) {
    let ctx = Ctx { quick };
    for (name, run) in suites::SUITES {
        if !(args.names.is_empty() || args.names.iter().any(|a| a == name)) {
            continue;
        }
        eprintln!("== suite {name}{} ==", if quick { " (quick)" } else { "" });
        let t0 = Instant::now();
        run(&ctx);
        info.suite_secs
            .push(((*name).to_owned(), t0.elapsed().as_secs_f64()));
    }
}

/// The summary on stderr: one table per suite, targets marked, the tally,
/// and what the run was. Returns the suites that have rows.
fn summary(info: &report::RunInfo, rows: &[Row], args: &Args) -> Vec<&'static str> {
    let quick = info.mode == "quick";
    let suites_seen: Vec<&'static str> = PLANNED
        .iter()
        .copied()
        .filter(|s| rows.iter().any(|r| r.suite == *s))
        .collect();
    eprintln!();
    eprintln!(
        "== summary ({} mode{}; ratios are medians of paired per-round ratios, medians of time or rate are for scale; * marks this workspace) ==",
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
        eprint!("{}", report::summary(s, rows));
        outcomes.extend(targets::check_suite(s, rows));
    }
    let (met, _, nm) = report::tally(&outcomes);
    let missed = report::missed_text(&outcomes);
    eprintln!();
    eprintln!(
        "targets: {met} met, {missed}, {nm} not measured{}",
        if quick {
            " (quick mode: indicative verdicts; run with --full before quoting one)"
        } else {
            ""
        }
    );
    if let Some(stamp) = &info.stamp {
        eprintln!("run: {}", stamp.line());
    }
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
    if args.from.is_none() && args.rows.is_none() && std::io::stdout().is_terminal() {
        eprintln!(
            "rows: not printed on a terminal; --rows FILE or a redirect of stdout keeps them"
        );
    }
    suites_seen
}

/// The charts (`--plot`) and the results block (`--report`).
fn write_outputs(
    args: &Args,
    info: &report::RunInfo,
    suites_seen: &[&str],
    rows: &[Row],
) -> Result<(), String> {
    let mut charts = Vec::new();
    if let Some(dir) = &args.plot {
        let stamp = info.stamp.as_ref().map_or_else(
            || "run: machine and date not recorded in the rows".to_owned(),
            |s| format!("run: {}", s.line()),
        );
        charts = plot::write_all(dir, rows, &stamp)
            .map_err(|e| format!("cannot write charts to {}: {e}", dir.display()))?;
        for chart in &charts {
            eprintln!("chart: {}", dir.join(&chart.file).display());
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
        let block = report::markdown(info, suites_seen, rows, &links);
        std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|doc| report::splice(&doc, &block))
            .and_then(|doc| std::fs::write(file, doc).map_err(|e| e.to_string()))
            .map_err(|e| format!("cannot update {}: {e}", file.display()))?;
        eprintln!("report: rewrote the results block of {}", file.display());
    }
    Ok(())
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
        assert_eq!(
            p(&["--rows", "r.txt"]).unwrap().unwrap().rows,
            Some(PathBuf::from("r.txt"))
        );
        assert!(p(&["--rows"]).is_err());
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
