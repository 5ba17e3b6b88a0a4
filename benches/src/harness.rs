//! Interleaved, paired measurement.
//!
//! A [`Compare`] runs each of its variants once per round, in an order shuffled
//! afresh every round, and reports the median over rounds of every
//! variant's time divided by the anchor's time in the same round. Slow phases of
//! the machine hit both sides of a ratio, so they cancel out.

use std::io::{IsTerminal, Write as _};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The fewest rounds a comparison runs in quick mode.
pub const QUICK_MIN_ROUNDS: usize = 9;

/// A variant's rounds "spread widely" when its largest per-round ratio to
/// the anchor is more than this many times its smallest.
///
/// The targets sit 10–25% from their thresholds' parity points (0.9x, 1.1x,
/// 1.25x), so a steady row varies round to round by much less than that.
/// Rounds 1.5x apart straddle twice the widest of those margins: the row
/// then has two regimes (the element-wise and ping-pong rows do, see
/// docs/benchmarks.md), its median depends on how many rounds fell in each,
/// and the next run can land on the other side of a threshold (ping-pong
/// read 1.77x in one run and 0.89–0.93x in the next).
pub const WIDE_SPREAD: f64 = 1.5;

/// Whether a `spread` row's value (max/min of per-round ratios) is wide.
pub fn is_wide(spread: f64) -> bool {
    spread.is_finite() && spread > WIDE_SPREAD
}

/// What every suite is given.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Quick mode: a smoke run that keeps each suite to a few seconds.
    pub quick: bool,
}

impl Ctx {
    /// Number of rounds to run: `full` normally; in quick mode `quick`, but
    /// at least [`QUICK_MIN_ROUNDS`] (or `full`, if fewer).
    ///
    /// Quick mode keeps each sample small; the floor on rounds is what makes
    /// its medians worth reading in the summary (three rounds let one noisy
    /// round decide a ratio), and costs a few seconds in all.
    pub fn rounds(&self, full: usize, quick: usize) -> usize {
        if self.quick {
            quick.max(full.min(QUICK_MIN_ROUNDS))
        } else {
            full
        }
    }

    /// `full` normally, `quick` in quick mode: for iteration counts and sizes.
    pub fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick { quick } else { full }
    }
}

/// One result row: `<suite> <name> <value> <unit>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The suite that measured it.
    pub suite: String,
    /// `<test>.<variant>.<metric>`.
    pub name: String,
    /// The figure, as printed.
    pub value: f64,
    /// Its unit (`x` for ratios).
    pub unit: String,
}

impl Row {
    /// Parses a line printed by [`row`]; `None` unless it has exactly four
    /// whitespace-separated fields with a numeric third one.
    pub fn parse(line: &str) -> Option<Row> {
        let mut f = line.split_whitespace();
        let (suite, name, value, unit) = (f.next()?, f.next()?, f.next()?, f.next()?);
        if f.next().is_some() {
            return None;
        }
        Some(Row {
            suite: suite.to_owned(),
            name: name.to_owned(),
            value: value.parse().ok()?,
            unit: unit.to_owned(),
        })
    }
}

impl Row {
    /// A row from its four fields, for tests.
    #[cfg(test)]
    pub(crate) fn new(suite: &str, name: &str, value: f64, unit: &str) -> Row {
        Row {
            suite: suite.to_owned(),
            name: name.to_owned(),
            value,
            unit: unit.to_owned(),
        }
    }

    /// The name as `(test, variant, metric)`. Variant and metric are the
    /// last two dot-separated parts; the test is the rest, so a test name
    /// may itself contain dots (`4KiB.inflight64`).
    pub fn parts(&self) -> Option<(&str, &str, &str)> {
        let mut it = self.name.rsplitn(3, '.');
        let (metric, variant, test) = (it.next()?, it.next()?, it.next()?);
        Some((test, variant, metric))
    }
}

/// Every row printed so far, in order, for the summary, charts and report.
static ROWS: Mutex<Vec<Row>> = Mutex::new(Vec::new());

/// Where rows are written as they are made (they are kept for the summary
/// wherever they go).
#[derive(Debug)]
pub enum RowsOut {
    /// Stdout: the default, for a pipe or a file.
    Stdout,
    /// A file named by `--rows`.
    File(std::io::BufWriter<std::fs::File>),
    /// Nowhere: stdout is a terminal, where the summary shows the figures.
    Nowhere,
}

static OUT: Mutex<RowsOut> = Mutex::new(RowsOut::Stdout);

/// Sends the rows made from now on to `out`.
pub fn set_rows_out(out: RowsOut) {
    *OUT.lock().unwrap_or_else(|e| e.into_inner()) = out;
}

/// Flushes the rows' file, if they go to one, reporting a failed write.
pub fn finish_rows() -> std::io::Result<()> {
    match &mut *OUT.lock().unwrap_or_else(|e| e.into_inner()) {
        RowsOut::File(f) => f.flush(),
        RowsOut::Stdout | RowsOut::Nowhere => Ok(()),
    }
}

/// Writes one result row, `<suite> <name> <value> <unit>`, where
/// [`set_rows_out`] said, and keeps it for the summary. The kept value is
/// the printed one, so a summary built from saved rows and one built in the
/// run agree.
///
/// # Panics
///
/// If the rows' file cannot be written: the run's output would be lost.
pub fn row(suite: &str, name: &str, value: f64, unit: &str) {
    let text = num(value);
    match &mut *OUT.lock().unwrap_or_else(|e| e.into_inner()) {
        RowsOut::Stdout => println!("{suite} {name} {text} {unit}"),
        RowsOut::File(f) => writeln!(f, "{suite} {name} {text} {unit}")
            .unwrap_or_else(|e| panic!("cannot write a row to the --rows file: {e}")),
        RowsOut::Nowhere => {}
    }
    let kept = Row {
        suite: suite.to_owned(),
        name: name.to_owned(),
        value: text.parse().unwrap_or(value),
        unit: unit.to_owned(),
    };
    ROWS.lock().unwrap_or_else(|e| e.into_inner()).push(kept);
}

/// Takes every row kept by [`row`] so far.
pub fn take_rows() -> Vec<Row> {
    std::mem::take(&mut *ROWS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Per-round progress on stderr. On a terminal one line is redrawn in place
/// and erased when the comparison ends; otherwise (a log, CI) nothing is
/// printed per round and one line sums up each comparison, so a log never
/// gets every round concatenated on one line.
#[derive(Debug)]
struct Progress {
    tty: bool,
    start: Instant,
}

impl Progress {
    fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            start: Instant::now(),
        }
    }

    fn round(&self, suite: &str, test: &str, done: usize, rounds: usize) {
        if self.tty {
            let mut e = std::io::stderr().lock();
            // `\x1b[2K` erases the line, so a shorter text leaves no tail.
            let _ = write!(e, "\r\x1b[2K  {suite} {test}: round {done}/{rounds}");
            let _ = e.flush();
        }
    }

    fn finish(&self, suite: &str, test: &str, rounds: usize, variants: usize) {
        let secs = self.start.elapsed().as_secs_f64();
        if self.tty {
            eprint!("\r\x1b[2K");
        }
        eprintln!("  {suite} {test}: {variants} variants, {rounds} rounds, {secs:.1} s");
    }
}

/// A figure with about four significant digits, as a row prints it (and as
/// the summary and the report quote it).
pub fn num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        format!("{v}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

type Sample<'a> = Box<dyn FnMut() -> Duration + 'a>;

/// A set of variants measured side by side against an anchor.
pub struct Compare<'a> {
    suite: &'static str,
    test: String,
    anchor: &'static str,
    variants: Vec<(&'static str, Sample<'a>)>,
}

impl<'a> Compare<'a> {
    /// A comparison for test `test` of `suite`, with ratios taken against the
    /// variant named `anchor` (which must be added with [`Compare::variant`]).
    pub fn new(suite: &'static str, test: &str, anchor: &'static str) -> Self {
        Self {
            suite,
            test: test.to_owned(),
            anchor,
            variants: Vec::new(),
        }
    }

    /// Adds a variant. `sample` does any untimed setup, then times one sample
    /// of the work and returns that duration.
    pub fn variant(
        &mut self,
        name: &'static str,
        sample: impl FnMut() -> Duration + 'a,
    ) -> &mut Self {
        self.variants.push((name, Box::new(sample)));
        self
    }

    /// Runs `rounds` rounds (at least one) after one untimed warm-up round.
    ///
    /// # Panics
    ///
    /// If the anchor variant was never added: a bug in the suite.
    pub fn run(&mut self, rounds: usize) -> Results {
        let anchor = self
            .variants
            .iter()
            .position(|(n, _)| *n == self.anchor)
            .unwrap_or_else(|| panic!("suite {}: anchor {} missing", self.suite, self.anchor));
        let n = self.variants.len();
        let rounds = rounds.max(1);
        for (_, f) in &mut self.variants {
            f();
        }
        let mut times = vec![Vec::with_capacity(rounds); n];
        // A fixed rotation would keep the cyclic order, so every variant would
        // always run right after the same other one, and what that one leaves
        // behind (caches, TLB, the kernel's page state) would bias its ratio
        // in every round alike. A fresh shuffle per round (fixed seed, so runs
        // are repeatable) spreads those effects over all variants.
        let mut order: Vec<usize> = (0..n).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let progress = Progress::new();
        for round in 0..rounds {
            shuffle(&mut order, &mut seed);
            for &i in &order {
                let t = (self.variants[i].1)();
                times[i].push(t);
            }
            progress.round(self.suite, &self.test, round + 1, rounds);
        }
        progress.finish(self.suite, &self.test, rounds, n);
        let ratios = (0..n)
            .map(|i| paired_median(&times[i], &times[anchor]))
            .collect();
        let spreads = (0..n)
            .map(|i| paired_spread(&times[i], &times[anchor]))
            .collect();
        let medians = times.into_iter().map(median_duration).collect();
        Results {
            suite: self.suite,
            test: self.test.clone(),
            anchor: self.anchor,
            names: self.variants.iter().map(|(n, _)| *n).collect(),
            medians,
            ratios,
            spreads,
        }
    }
}

impl std::fmt::Debug for Compare<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compare")
            .field("suite", &self.suite)
            .field("test", &self.test)
            .field("anchor", &self.anchor)
            .finish_non_exhaustive()
    }
}

/// What a [`Compare::run`] measured.
#[derive(Debug, Clone)]
pub struct Results {
    suite: &'static str,
    test: String,
    anchor: &'static str,
    names: Vec<&'static str>,
    medians: Vec<Duration>,
    ratios: Vec<f64>,
    spreads: Vec<f64>,
}

// Not every suite reads every accessor.
#[allow(dead_code)]
impl Results {
    fn index(&self, variant: &str) -> usize {
        self.names
            .iter()
            .position(|n| *n == variant)
            .unwrap_or_else(|| panic!("no variant {variant}"))
    }

    /// Median over rounds of `time(variant) / time(anchor)` in the same round.
    pub fn ratio(&self, variant: &str) -> f64 {
        self.ratios[self.index(variant)]
    }

    /// Median time of one sample of `variant`.
    pub fn median(&self, variant: &str) -> Duration {
        self.medians[self.index(variant)]
    }

    /// Emits `<test>.<variant>.spread`, the largest per-round ratio to the
    /// anchor over the smallest, for every variant but the anchor (whose
    /// ratio is 1 in every round).
    fn emit_spread(&self, i: usize) {
        let name = self.names[i];
        if name != self.anchor {
            row(
                self.suite,
                &format!("{}.{name}.spread", self.test),
                self.spreads[i],
                "x",
            );
        }
    }

    /// Emits `<test>.<variant>.t_vs_<anchor>` (time ratio, lower is faster)
    /// and `<test>.<variant>.median` (µs per sample) for every variant.
    pub fn emit_time_ratio(&self) {
        eprintln!(
            "  {:<28} {:>14} {:>12}",
            "variant",
            "median time",
            format!("t/{} (median of rounds)", self.anchor)
        );
        for (i, name) in self.names.iter().enumerate() {
            let us = self.medians[i].as_secs_f64() * 1e6;
            eprintln!("  {name:<28} {:>11.2} us {:>11.3}x", us, self.ratios[i]);
            row(
                self.suite,
                &format!("{}.{name}.median", self.test),
                us,
                "us",
            );
            row(
                self.suite,
                &format!("{}.{name}.t_vs_{}", self.test, self.anchor),
                self.ratios[i],
                "x",
            );
            self.emit_spread(i);
        }
    }

    /// Emits `<test>.<variant>.rate_vs_<anchor>` (rate ratio, higher is
    /// faster) and `<test>.<variant>.median` in `unit`, where one sample does
    /// `work` units of work (so the rate is `work / time` per second).
    pub fn emit_rate_ratio(&self, work: f64, unit: &str) {
        eprintln!(
            "  {:<28} {:>16} {:>12}",
            "variant",
            "median rate",
            format!("rate/{} (median of rounds)", self.anchor)
        );
        for (i, name) in self.names.iter().enumerate() {
            let rate = work / self.medians[i].as_secs_f64().max(1e-12);
            let ratio = 1.0 / self.ratios[i];
            eprintln!("  {name:<28} {:>9.2} {unit:<6} {:>11.3}x", rate, ratio);
            row(
                self.suite,
                &format!("{}.{name}.median", self.test),
                rate,
                unit,
            );
            row(
                self.suite,
                &format!("{}.{name}.rate_vs_{}", self.test, self.anchor),
                ratio,
                "x",
            );
            self.emit_spread(i);
        }
    }
}

/// Median over rounds of `a[r] / b[r]`: the ratio of two variants sampled
/// in the same rounds.
pub fn paired_median(a: &[Duration], b: &[Duration]) -> f64 {
    median_f64(
        a.iter()
            .zip(b)
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64().max(1e-12))
            .collect(),
    )
}

/// The largest of the per-round ratios `a[r] / b[r]` over the smallest: how
/// far apart the rounds were (the same for a ratio and its inverse).
pub fn paired_spread(a: &[Duration], b: &[Duration]) -> f64 {
    let ratios = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64().max(1e-12));
    let (lo, hi) = ratios.fold((f64::INFINITY, 0.0_f64), |(lo, hi), r| {
        (lo.min(r), hi.max(r))
    });
    if lo > 0.0 && lo.is_finite() {
        hi / lo
    } else {
        f64::NAN
    }
}

/// Median over rounds of `a[r] / b[r]` for two variant logs that each hold
/// the untimed warm-up sample first (left out), the upper middle when the
/// count is even: the pairing the suites that log their own samples use.
pub fn paired_logged(a: &[Duration], b: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .skip(1)
        .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64().max(1e-12))
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of `v` (the mean of the middle two if even).
///
/// # Panics
///
/// If `v` is empty.
pub fn median_duration(mut v: Vec<Duration>) -> Duration {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// Fisher-Yates shuffle of `v`, driven by a 64-bit LCG in `seed`.
fn shuffle(v: &mut [usize], seed: &mut u64) {
    for i in (1..v.len()).rev() {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // The high bits of an LCG are the well-mixed ones.
        let j = ((*seed >> 33) % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_mode_runs_at_least_the_minimum_rounds_but_never_more_than_full() {
        let quick = Ctx { quick: true };
        let full = Ctx { quick: false };
        assert_eq!(quick.rounds(21, 3), QUICK_MIN_ROUNDS);
        assert_eq!(quick.rounds(21, 15), 15);
        assert_eq!(quick.rounds(5, 3), 5);
        assert_eq!(full.rounds(21, 3), 21);
    }

    #[test]
    fn printed_rows_parse_back_to_the_printed_value() {
        let r = Row::parse("spsc elementwise.rtrb.rate_vs_rtrb 0.7870 x").unwrap();
        assert_eq!(r.suite, "spsc");
        assert_eq!(r.name, "elementwise.rtrb.rate_vs_rtrb");
        assert_eq!(r.value, 0.787);
        assert_eq!(r.unit, "x");
        assert_eq!(r.parts(), Some(("elementwise", "rtrb", "rate_vs_rtrb")));
        let dotted = Row::parse("ipc 4KiB.inflight64.unix.median 3.0 us").unwrap();
        assert_eq!(dotted.parts(), Some(("4KiB.inflight64", "unix", "median")));
        assert_eq!(Row::parse("s a.b 1 x").unwrap().parts(), None);
        assert_eq!(Row::parse("spsc a 1.0"), None);
        assert_eq!(Row::parse("spsc a 1.0 x extra"), None);
        assert_eq!(Row::parse("spsc a one x"), None);
        assert_eq!(
            num(123.456).parse::<f64>().unwrap(),
            Row::parse(&format!("s n {} us", num(123.456)))
                .unwrap()
                .value
        );
    }

    #[test]
    fn paired_ratio_is_median_of_per_round_ratios() {
        assert_eq!(median_f64(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_f64(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        let mut anchor_t = 0u64;
        let mut other_t = 0u64;
        let mut c = Compare::new("t", "x", "a");
        c.variant("a", || {
            anchor_t += 10;
            Duration::from_micros(anchor_t)
        });
        c.variant("b", || {
            other_t += 20;
            Duration::from_micros(other_t)
        });
        let r = c.run(3);
        // Round k (after one warm-up): a = 10(k+2), b = 20(k+2): ratio 2 every round.
        assert_eq!(r.ratio("b"), 2.0);
        assert_eq!(r.ratio("a"), 1.0);
        assert_eq!(r.median("a"), Duration::from_micros(30));
    }

    #[test]
    fn spread_is_largest_over_smallest_per_round_ratio() {
        let us = |v: &[u64]| {
            v.iter()
                .map(|&x| Duration::from_micros(x))
                .collect::<Vec<_>>()
        };
        // Per-round ratios 2, 1, 4: spread 4 whichever way the ratio points.
        let (a, b) = (us(&[20, 10, 40]), us(&[10, 10, 10]));
        assert_eq!(paired_spread(&a, &b), 4.0);
        assert_eq!(paired_spread(&b, &a), 4.0);
        // Steady rounds: no spread, even when the times themselves drift.
        assert_eq!(paired_spread(&us(&[20, 40, 80]), &us(&[10, 20, 40])), 1.0);
        assert!(paired_spread(&[], &[]).is_nan());
        assert!(is_wide(1.51));
        assert!(!is_wide(WIDE_SPREAD));
        assert!(!is_wide(1.2));
        assert!(!is_wide(f64::NAN));
    }

    #[test]
    fn shuffled_rounds_are_permutations_that_vary_who_runs_before_whom() {
        let mut seed = 1;
        let mut order: Vec<usize> = (0..5).collect();
        let mut follows = [[false; 5]; 5];
        for _ in 0..200 {
            shuffle(&mut order, &mut seed);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..5).collect::<Vec<_>>());
            for w in order.windows(2) {
                follows[w[1]][w[0]] = true;
            }
        }
        // A fixed rotation gives each variant one predecessor; shuffling
        // gives it every other variant at some point.
        for (i, row) in follows.iter().enumerate() {
            for (j, &seen) in row.iter().enumerate() {
                assert_eq!(seen, i != j, "{i} after {j}");
            }
        }
    }
}
