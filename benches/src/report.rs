//! The readable side of a run: the summary on stderr and the generated
//! results block of docs/benchmarks.md.
//!
//! Both are built from the rows alone. A row name is
//! `<test>.<variant>.<metric>`; a test's anchor is the variant with a row
//! `<test>.<anchor>.t_vs_<anchor>` (or `rate_vs_`), and each variant's ratio
//! to it is its `t_vs_<anchor>` / `rate_vs_<anchor>` row.

use crate::harness::{Row, num};
use crate::stamp::Stamp;
use crate::targets::{self, Outcome, Status};
use std::fmt::Write as _;

/// One variant's figures in one test.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Variant name.
    pub variant: String,
    /// Its `median` row: value and unit.
    pub median: Option<(f64, String)>,
    /// Its ratio to the test's anchor.
    pub vs_anchor: Option<f64>,
    /// Its `spread` row: the largest per-round ratio over the smallest.
    pub spread: Option<f64>,
    /// Every other row of the variant: metric, value, unit.
    pub others: Vec<(String, f64, String)>,
}

/// One test of a suite: its variants beside the anchor.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Test name.
    pub test: String,
    /// `t_vs_<anchor>` or `rate_vs_<anchor>`, if the test has an anchor.
    pub ratio: Option<String>,
    /// Variants, in the order their rows came.
    pub lines: Vec<Line>,
}

/// The tests of `suite` in `rows`, in first-seen order.
pub fn tables(suite: &str, rows: &[Row]) -> Vec<Table> {
    let mut out: Vec<Table> = Vec::new();
    for r in rows.iter().filter(|r| r.suite == suite) {
        let (test, variant, metric) = r.parts().unwrap_or((r.name.as_str(), "", "value"));
        let t = match out.iter().position(|t| t.test == test) {
            Some(i) => &mut out[i],
            None => {
                out.push(Table {
                    test: test.to_owned(),
                    ratio: None,
                    lines: Vec::new(),
                });
                out.last_mut().expect("just pushed")
            }
        };
        if t.ratio.is_none() && !variant.is_empty() {
            for kind in ["t_vs_", "rate_vs_"] {
                if metric.strip_prefix(kind) == Some(variant) {
                    t.ratio = Some(metric.to_owned());
                }
            }
        }
        let line = match t.lines.iter().position(|l| l.variant == variant) {
            Some(i) => &mut t.lines[i],
            None => {
                t.lines.push(Line {
                    variant: variant.to_owned(),
                    median: None,
                    vs_anchor: None,
                    spread: None,
                    others: Vec::new(),
                });
                t.lines.last_mut().expect("just pushed")
            }
        };
        if metric == "median" {
            line.median = Some((r.value, r.unit.clone()));
        } else if metric == "spread" {
            line.spread = Some(r.value);
        } else {
            line.others
                .push((metric.to_owned(), r.value, r.unit.clone()));
        }
    }
    // The anchor is known only once its own row is seen, so move the ratio
    // rows out of `others` at the end.
    for t in &mut out {
        if let Some(ratio) = &t.ratio {
            for l in &mut t.lines {
                if let Some(i) = l.others.iter().position(|o| &o.0 == ratio) {
                    l.vs_anchor = Some(l.others.remove(i).1);
                }
            }
        }
    }
    out
}

/// How a value that is not a number reads: a suite writes `NaN` in the
/// place of a figure it could not measure, with the reason on stderr.
const NOT_MEASURED: &str = "not measured";

/// A median with its unit, or [`NOT_MEASURED`].
fn figure(v: f64, unit: &str) -> String {
    if v.is_finite() {
        format!("{} {unit}", num(v))
    } else {
        NOT_MEASURED.to_owned()
    }
}

/// The ratio column's header. It says the figure is a median of per-round
/// ratios, since it need not equal the quotient of the median column's
/// figures (when rounds fall in two regimes, the two medians can come from
/// different rounds).
fn ratio_header(ratio: &Option<String>) -> String {
    match ratio {
        Some(r) if r.starts_with("t_vs_") => format!("time / {}, median of rounds", &r[5..]),
        Some(r) if r.starts_with("rate_vs_") => {
            format!("rate / {}, median of rounds", &r[8..])
        }
        _ => "ratio".to_owned(),
    }
}

/// The median column's header: a median time or rate over rounds, by
/// which way the test's ratio points.
fn median_header(ratio: &Option<String>) -> &'static str {
    match ratio {
        Some(r) if r.starts_with("rate_vs_") => "median rate",
        Some(r) if r.starts_with("t_vs_") => "median time",
        _ => "median",
    }
}

fn others_text(l: &Line) -> String {
    l.others
        .iter()
        .map(|(m, v, u)| {
            if !v.is_finite() {
                format!("{m} {NOT_MEASURED}")
            } else if u == "x" {
                format!("{m} {}x", num(*v))
            } else if u == "fraction" {
                format!("{m} {}", num(*v))
            } else {
                format!("{m} {} {u}", num(*v))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A variant's ratio to the anchor; the anchor's own reads "anchor".
fn vs_text(t: &Table, l: &Line) -> String {
    let is_anchor = t.ratio.as_deref().is_some_and(|r| {
        r.strip_prefix("t_vs_")
            .or_else(|| r.strip_prefix("rate_vs_"))
            .is_some_and(|a| a == l.variant)
    });
    let wide = l
        .spread
        .filter(|s| crate::harness::is_wide(*s))
        .map(|s| format!(" (rounds spread widely: {}x max/min)", num(s)))
        .unwrap_or_default();
    match l.vs_anchor {
        Some(_) if is_anchor => "anchor".to_owned(),
        Some(v) if !v.is_finite() => NOT_MEASURED.to_owned(),
        Some(v) => format!("{}x{wide}", num(v)),
        None => String::new(),
    }
}

/// The verdict as the summary prints it: a miss says whether it is known.
fn status_word(o: &Outcome) -> String {
    match (&o.status, o.miss()) {
        (Status::Met, _) => "met".to_owned(),
        (Status::Missed, Some(m)) => format!("MISSED, {m}"),
        (Status::Missed, None) => "MISSED".to_owned(),
        (Status::NotMeasured, _) => "not measured".to_owned(),
    }
}

/// Pads columns of `cells` to a common width, two spaces apart.
fn columns(cells: &[Vec<String>], indent: &str) -> String {
    let n = cells.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0; n];
    for r in cells {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in cells {
        let mut line = indent.to_owned();
        for (i, c) in r.iter().enumerate() {
            let pad = w[i] - c.chars().count();
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The summary of one suite for stderr: a table per test (this workspace's
/// variants marked `*`), then its targets.
pub fn summary(suite: &str, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{suite}");
    for t in tables(suite, rows) {
        let mut cells = vec![vec![
            t.test.clone(),
            median_header(&t.ratio).to_owned(),
            ratio_header(&t.ratio),
            String::new(),
        ]];
        for l in &t.lines {
            let mark = if targets::is_ours(suite, &l.variant) {
                "* "
            } else {
                "  "
            };
            cells.push(vec![
                format!("{mark}{}", l.variant),
                l.median
                    .as_ref()
                    .map(|(v, u)| figure(*v, u))
                    .unwrap_or_default(),
                vs_text(&t, l),
                others_text(l),
            ]);
        }
        out.push_str(&columns(&cells, "  "));
    }
    let outcomes = targets::check_suite(suite, rows);
    if !outcomes.is_empty() {
        let _ = writeln!(out, "  targets");
        let cells: Vec<Vec<String>> = outcomes
            .iter()
            .map(|o| {
                vec![
                    format!("[{}]", status_word(o)),
                    o.target.label.to_owned(),
                    o.value
                        .map(|v| format!("{}x", num(v)))
                        .unwrap_or_else(|| "-".into()),
                    o.target.threshold_text(),
                    o.detail(false),
                ]
            })
            .collect();
        out.push_str(&columns(&cells, "    "));
    }
    out
}

/// Counts of met, missed and not measured targets over `outcomes`.
pub fn tally(outcomes: &[Outcome]) -> (usize, usize, usize) {
    outcomes
        .iter()
        .fold((0, 0, 0), |(a, b, c), o| match o.status {
            Status::Met => (a + 1, b, c),
            Status::Missed => (a, b + 1, c),
            Status::NotMeasured => (a, b, c + 1),
        })
}

/// Of the missed targets in `outcomes`, how many are known (explained in
/// docs/benchmarks.md) and how many are unexpected.
pub fn misses(outcomes: &[Outcome]) -> (usize, usize) {
    outcomes
        .iter()
        .filter_map(Outcome::miss)
        .fold((0, 0), |(k, u), m| match m {
            targets::Miss::Known(_) => (k + 1, u),
            targets::Miss::Unexpected => (k, u + 1),
        })
}

/// The missed count with its split, as the summaries print it:
/// `4 missed (3 known, 1 unexpected)`.
pub fn missed_text(outcomes: &[Outcome]) -> String {
    let (_, missed, _) = tally(outcomes);
    let (known, unexpected) = misses(outcomes);
    if missed == 0 {
        "0 missed".to_owned()
    } else {
        format!("{missed} missed ({known} known, {unexpected} unexpected)")
    }
}

/// What the generated block says about the run itself.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The command as a user types it.
    pub command: String,
    /// `full` or `quick`.
    pub mode: String,
    /// UTC date and time the run started.
    pub started: String,
    /// Commit the binary was run at, with `-dirty` if the tree had changes.
    pub commit: String,
    /// CPU, cores, memory, kernel, compiler.
    pub machine: String,
    /// 1-minute load average before and after.
    pub load: (String, String),
    /// Wall time per suite, seconds.
    pub suite_secs: Vec<(String, f64)>,
    /// Logical CPUs, to judge the load average by.
    pub cores: usize,
    /// The file the rows were read from, if they were not measured now.
    pub from: Option<String>,
    /// Suites the run skipped because this build lacks them.
    pub missing: Vec<String>,
    /// The measuring run's machine and date: this run's, or the one the
    /// rows read by `--from` carry (none if they carry none).
    pub stamp: Option<Stamp>,
}

/// A warning when the load average (before or after) reached half the
/// logical CPUs: other work then shared the cores with the measurement.
pub fn busy(load: &(String, String), cores: usize) -> Option<String> {
    let worst = [&load.0, &load.1]
        .iter()
        .filter_map(|l| l.parse::<f64>().ok())
        .fold(0.0_f64, f64::max);
    (cores > 0 && worst >= cores as f64 / 2.0).then(|| {
        format!(
            "The machine was busy (load average up to {worst} on {cores} logical CPUs): \
             these figures are provisional; rerun on a quiet machine before quoting them."
        )
    })
}

/// Markers around the generated block in docs/benchmarks.md.
pub const BEGIN: &str =
    "<!-- results:begin: generated by `compare --report`; edit outside the markers -->";
/// See [`BEGIN`].
pub const END: &str = "<!-- results:end -->";

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The generated results block, markers included.
pub fn markdown(
    info: &RunInfo,
    suites: &[&str],
    rows: &[Row],
    charts: &[(String, String)],
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{BEGIN}");
    let _ = writeln!(o);
    let _ = writeln!(o, "## Results");
    let _ = writeln!(o);
    let _ = writeln!(o, "Generated from one {} run by:", info.mode);
    let _ = writeln!(o);
    let _ = writeln!(o, "```sh\n{}\n```", info.command);
    let _ = writeln!(o);
    run_lines(&mut o, info);
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Ratios are medians of paired per-round ratios (see Method); medians of \
         time or rate are for scale, and their quotient need not equal the ratio \
         when rounds fall in two regimes. A ratio whose rounds spread more than \
         {}x (largest per-round ratio over smallest) is marked. Rows marked \
         **bold** are this workspace's crates.",
        crate::harness::WIDE_SPREAD
    );

    target_lines(&mut o, info, suites, rows);
    if !charts.is_empty() {
        let _ = writeln!(o, "\n### Charts\n");
        for (link, title) in charts {
            let _ = writeln!(o, "![{title}]({link})\n");
        }
    }

    table_lines(&mut o, suites, rows);
    let _ = writeln!(o, "{END}");
    o
}

/// What the block says about the run: when, where, at what load.
fn run_lines(o: &mut String, info: &RunInfo) {
    let total: f64 = info.suite_secs.iter().map(|s| s.1).sum();
    if let Some(from) = &info.from {
        // The rows were measured earlier; only what they carry is known.
        let _ = writeln!(
            o,
            "- rows read from `{from}`, written {} at commit `{}`;",
            info.started, info.commit
        );
        let _ = match &info.stamp {
            Some(stamp) => writeln!(
                o,
                "- measured by a run stamped `{}` (from the rows); its load and timing: not recorded in the rows.",
                stamp.line()
            ),
            None => writeln!(
                o,
                "- machine, load and timing of the measuring run: not recorded in the rows."
            ),
        };
    } else {
        let _ = writeln!(o, "- started {} at commit `{}`;", info.started, info.commit);
        if let Some(stamp) = &info.stamp {
            let _ = writeln!(
                o,
                "- run stamp `{}`, as every chart's caption gives it;",
                stamp.line()
            );
        }
        let _ = writeln!(o, "- machine: {};", info.machine);
        let _ = writeln!(
            o,
            "- load average (1 min): {} before, {} after;",
            info.load.0, info.load.1
        );
        let per: Vec<String> = info
            .suite_secs
            .iter()
            .map(|(s, t)| format!("{s} {t:.0} s"))
            .collect();
        let _ = writeln!(o, "- wall time {total:.0} s ({}).", per.join(", "));
    }
    if let Some(busy) = busy(&info.load, info.cores).filter(|_| info.from.is_none()) {
        let _ = writeln!(o, "\n**{busy}**");
    }
    if !info.missing.is_empty() {
        let _ = writeln!(
            o,
            "\nNot in this build, so not run: {}.",
            info.missing.join(", ")
        );
    }
}

/// The targets of `suites`, one table row each.
fn target_lines(o: &mut String, info: &RunInfo, suites: &[&str], rows: &[Row]) {
    let all: Vec<Outcome> = suites
        .iter()
        .flat_map(|s| targets::check_suite(s, rows))
        .collect();
    if !all.is_empty() {
        let (met, _, nm) = tally(&all);
        let missed = missed_text(&all);
        let _ = writeln!(o, "\n### Targets\n");
        let _ = writeln!(
            o,
            "{met} met, {missed}, {nm} not measured. A target whose row is absent is not measured, \
             never met; a known miss names the section below that explains it, an unexpected one \
             is news.{}\n",
            if info.mode == "quick" {
                " Quick mode: a few rounds of small samples, so these verdicts are indicative only; \
                 `--full` gives the ones to quote."
            } else {
                ""
            }
        );
        let _ = writeln!(
            o,
            "| suite | target | measured | threshold | row | result |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|");
        for x in &all {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                x.target.suite,
                md_escape(x.target.label),
                x.value
                    .map(|v| format!("{}x", num(v)))
                    .unwrap_or_else(|| "-".into()),
                x.target
                    .threshold_text()
                    .replace("<=", "≤")
                    .replace(">=", "≥"),
                md_escape(&x.detail(true)),
                match x.miss() {
                    Some(m) => format!("**missed**, {m}"),
                    None if x.status == Status::Met => "met".to_owned(),
                    None => "not measured".to_owned(),
                }
            );
        }
    }
}

/// One table per test of each suite.
fn table_lines(o: &mut String, suites: &[&str], rows: &[Row]) {
    for suite in suites {
        let ts = tables(suite, rows);
        if ts.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\n### {suite}\n");
        for t in ts {
            let _ = writeln!(
                o,
                "| {} | {} | {} | other rows |",
                t.test,
                median_header(&t.ratio),
                ratio_header(&t.ratio)
            );
            let _ = writeln!(o, "|---|---|---|---|");
            for l in &t.lines {
                let name = if targets::is_ours(suite, &l.variant) {
                    format!("**{}**", l.variant)
                } else {
                    l.variant.clone()
                };
                let _ = writeln!(
                    o,
                    "| {name} | {} | {} | {} |",
                    l.median
                        .as_ref()
                        .map(|(v, u)| figure(*v, u))
                        .unwrap_or_default(),
                    vs_text(&t, l),
                    md_escape(&others_text(l)),
                );
            }
            let _ = writeln!(o);
        }
    }
}

/// Replaces the block between [`BEGIN`] and [`END`] in `doc` with `block`
/// (which carries its own markers); everything outside stays byte for byte.
pub fn splice(doc: &str, block: &str) -> Result<String, String> {
    let begin = doc
        .find("<!-- results:begin")
        .ok_or("no `<!-- results:begin` marker in the report file")?;
    let end_rel = doc[begin..]
        .find(END)
        .ok_or("no `<!-- results:end -->` marker after the begin marker")?;
    let end = begin + end_rel + END.len();
    // Swallow the newline after the end marker; `block` ends with one.
    let end = if doc[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    Ok(format!("{}{}{}", &doc[..begin], block, &doc[end..]))
}

/// A description of this machine from /proc and `rustc -V`, as far as they
/// can be read.
pub fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = crate::stamp::cpu_model();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map(|kib| format!(", {:.0} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_default();
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let rustc = command_output("rustc", &["-V"]).unwrap_or_default();
    let mut s = format!("{cpu}, {cores} logical CPUs{mem}");
    if !kernel.is_empty() {
        let _ = write!(s, ", Linux {kernel}");
    }
    if !rustc.is_empty() {
        let _ = write!(s, ", {rustc}");
    }
    s
}

/// The 1-minute load average, from /proc/loadavg.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// `git describe`-like: the short commit, `-dirty` if the tree has changes.
pub fn commit() -> String {
    let Some(c) = command_output("git", &["rev-parse", "--short", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    if dirty { format!("{c}-dirty") } else { c }
}

fn command_output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Now, in UTC, as `YYYY-MM-DD HH:MM UTC`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Row> {
        vec![
            Row::new("spsc", "batch64.rtrb.median", 521.7, "Mops/s"),
            Row::new("spsc", "batch64.rtrb.rate_vs_rtrb", 1.0, "x"),
            Row::new("spsc", "batch64.uring_queue.median", 568.8, "Mops/s"),
            Row::new("spsc", "batch64.uring_queue.rate_vs_rtrb", 1.127, "x"),
            Row::new("spsc", "roundtrip.rtrb.median", 816.4, "us"),
            Row::new("spsc", "roundtrip.rtrb.t_vs_rtrb", 1.0, "x"),
            Row::new("spsc", "roundtrip.uring_queue.median", 764.0, "us"),
            Row::new("spsc", "roundtrip.uring_queue.t_vs_rtrb", 0.9213, "x"),
            Row::new(
                "spsc",
                "roundtrip.uring_queue.ns_per_round_trip",
                382.0,
                "ns",
            ),
        ]
    }

    #[test]
    fn tables_put_each_variant_beside_the_anchor() {
        let t = tables("spsc", &sample());
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].test, "batch64");
        assert_eq!(t[0].ratio.as_deref(), Some("rate_vs_rtrb"));
        assert_eq!(t[0].lines[1].variant, "uring_queue");
        assert_eq!(t[0].lines[1].vs_anchor, Some(1.127));
        assert_eq!(t[0].lines[1].median, Some((568.8, "Mops/s".into())));
        assert_eq!(t[1].ratio.as_deref(), Some("t_vs_rtrb"));
        assert_eq!(
            t[1].lines[1].others,
            vec![("ns_per_round_trip".into(), 382.0, "ns".into())]
        );
        assert!(tables("pool", &sample()).is_empty());
    }

    #[test]
    fn the_summary_marks_targets_and_our_variants() {
        let line = |s: &str, needle: &str| -> String {
            s.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no line with {needle} in\n{s}"))
                .trim()
                .to_owned()
        };
        let s = summary("spsc", &sample());
        assert!(s.contains("* uring_queue"));
        assert!(line(&s, " rtrb ").starts_with("rtrb"));
        assert!(line(&s, "batches of 64").starts_with("[met]"));
        assert!(line(&s, "batches of 64").contains("1.127x"));
        assert!(line(&s, "ping-pong round trip").starts_with("[met]"));
        assert!(line(&s, "element-wise, exact").starts_with("[not measured]"));
        let mut missed = sample();
        missed[3].value = 0.95;
        let s = summary("spsc", &missed);
        assert!(line(&s, "batches of 64").starts_with("[MISSED, unexpected]"));
    }

    #[test]
    fn misses_say_whether_they_are_known_and_where() {
        let rows = vec![
            // No section explains this miss.
            Row::new("spsc", "batch64.uring_queue.rate_vs_rtrb", 0.9, "x"),
            // docs/benchmarks.md explains this one.
            Row::new("spsc", "elementwise.uring_queue.rate_vs_rtrb", 0.6, "x"),
            Row::new("spsc", "roundtrip.uring_queue.t_vs_rtrb", 0.9, "x"),
        ];
        let s = summary("spsc", &rows);
        let line = |needle: &str| s.lines().find(|l| l.contains(needle)).unwrap().trim();
        assert!(
            line("batches of 64").starts_with("[MISSED, unexpected]"),
            "{s}"
        );
        let exact = line("element-wise, exact");
        assert!(exact.starts_with("[MISSED, known]"), "{s}");
        assert!(
            exact.contains("\"A second machine: AMD EPYC (2026-11-26)\""),
            "{s}"
        );
        assert!(line("ping-pong").starts_with("[met]"), "{s}");
        let outcomes = targets::check_suite("spsc", &rows);
        assert_eq!(misses(&outcomes), (1, 1));
        assert_eq!(missed_text(&outcomes), "2 missed (1 known, 1 unexpected)");
        let md = markdown(&RunInfo::default(), &["spsc"], &rows, &[]);
        assert!(md.contains("| **missed**, unexpected |"), "{md}");
        assert!(md.contains("| **missed**, known |"), "{md}");
        assert!(md.contains("2 missed (1 known, 1 unexpected)"), "{md}");
    }

    #[test]
    fn columns_say_what_they_are_and_wide_rounds_are_marked() {
        let mut rows = sample();
        rows.push(Row::new("spsc", "batch64.uring_queue.spread", 1.8, "x"));
        rows.push(Row::new("spsc", "roundtrip.uring_queue.spread", 1.05, "x"));
        let t = tables("spsc", &rows);
        assert_eq!(t[0].lines[1].spread, Some(1.8));
        assert!(
            t[0].lines[1].others.is_empty(),
            "spread is not an other row"
        );
        let s = summary("spsc", &rows);
        let header = s
            .lines()
            .find(|l| l.trim_start().starts_with("batch64"))
            .unwrap();
        assert!(header.contains("median rate"), "{s}");
        assert!(header.contains("rate / rtrb, median of rounds"), "{s}");
        let ours = |test: &str| {
            let at = s.find(test).unwrap();
            s[at..]
                .lines()
                .find(|l| l.contains("* uring_queue"))
                .unwrap()
                .to_owned()
        };
        assert!(
            ours("batch64").contains("1.127x (rounds spread widely: 1.800x max/min)"),
            "{s}"
        );
        assert!(!ours("roundtrip").contains("spread"), "{s}");
        let rt = s
            .lines()
            .find(|l| l.trim_start().starts_with("roundtrip"))
            .unwrap();
        assert!(rt.contains("median time") && rt.contains("time / rtrb, median of rounds"));
        let md = markdown(&RunInfo::default(), &["spsc"], &rows, &[]);
        assert!(
            md.contains("| batch64 | median rate | rate / rtrb, median of rounds | other rows |")
        );
        assert!(md.contains("1.127x (rounds spread widely: 1.800x max/min)"));
    }

    #[test]
    fn splice_replaces_only_the_marked_block() {
        let doc = format!("# B\n\nbefore\n\n{BEGIN}\nold\n{END}\n\nafter\n");
        let new = format!("{BEGIN}\nnew\n{END}\n");
        let out = splice(&doc, &new).unwrap();
        assert_eq!(
            out,
            format!("# B\n\nbefore\n\n{BEGIN}\nnew\n{END}\n\nafter\n")
        );
        // Idempotent.
        assert_eq!(splice(&out, &new).unwrap(), out);
        assert!(splice("no markers", &new).is_err());
        assert!(splice(&format!("{BEGIN}\nno end"), &new).is_err());
    }

    #[test]
    fn markdown_has_command_targets_and_tables() {
        let info = RunInfo {
            command: "cargo run --release -p benches -- --full".into(),
            mode: "full".into(),
            load: ("0.2".into(), "0.3".into()),
            cores: 2,
            suite_secs: vec![("spsc".into(), 40.0)],
            missing: vec!["ipc".into()],
            ..RunInfo::default()
        };
        let md = markdown(
            &info,
            &["spsc"],
            &sample(),
            &[("img/spsc.svg".into(), "spsc".into())],
        );
        assert!(md.starts_with(BEGIN));
        assert!(md.trim_end().ends_with(END));
        assert!(md.contains("cargo run --release -p benches -- --full"));
        assert!(md.contains("| spsc | batches of 64: rate vs rtrb | 1.127x | ≥ 1x |"));
        assert!(md.contains("| rtrb | 521.7 Mops/s | anchor |"));
        assert!(!md.contains("machine was busy"));
        let loaded = RunInfo {
            load: ("1.5".into(), "0.5".into()),
            cores: 2,
            ..info.clone()
        };
        let busy = markdown(&loaded, &["spsc"], &sample(), &[]);
        assert!(busy.contains("machine was busy (load average up to 1.5 on 2 logical CPUs)"));
        // Rows from a file: the block does not pass today's machine and
        // load off as the measuring run's.
        let from = RunInfo {
            from: Some("rows.txt".into()),
            ..loaded
        };
        let saved = markdown(&from, &["spsc"], &sample(), &[]);
        assert!(saved.contains("rows read from `rows.txt`"));
        assert!(!saved.contains("load average (1 min)"));
        assert!(!saved.contains("machine was busy"));
        assert!(md.contains("| **uring_queue** | 568.8 Mops/s | 1.127x |"));
        assert!(!md.contains("indicative"), "a full run's verdicts stand");
        // The run stamp: the line every chart's caption carries, from this
        // run or from the rows read.
        let stamp = Stamp {
            cpu: "AMD EPYC".into(),
            cpus: 2,
            started: 1_700_000_000,
            full: Some(false),
        };
        let stamped = RunInfo {
            stamp: Some(stamp.clone()),
            mode: "quick".into(),
            ..info.clone()
        };
        let smd = markdown(&stamped, &["spsc"], &sample(), &[]);
        assert!(smd.contains("run stamp `AMD EPYC, 2 logical CPUs, 2023-11-14 22:13 UTC`"));
        assert!(smd.contains("indicative only"), "quick verdicts are marked");
        let from_stamped = RunInfo {
            from: Some("rows.txt".into()),
            ..stamped
        };
        let fmd = markdown(&from_stamped, &["spsc"], &sample(), &[]);
        assert!(fmd.contains(
            "measured by a run stamped `AMD EPYC, 2 logical CPUs, 2023-11-14 22:13 UTC`"
        ));
        assert!(md.contains("![spsc](img/spsc.svg)"));
        assert!(md.contains("Not in this build, so not run: ipc."));
    }

    #[test]
    fn utc_dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
