//! Shuffled rounds over variants whose samples can fail, and the rows
//! made from their paired sample times.

use crate::harness::{Compare, median_duration, paired_median, paired_spread, row};
use crate::suites::ipc::wire::IpcError;
use std::cell::RefCell;
use std::time::Duration;

/// A variant's sample: its time, or why it failed.
pub type Sample<'a> = Box<dyn FnMut() -> Result<Duration, IpcError> + 'a>;

/// Each variant's sample times, in the order the variants were given.
#[derive(Debug)]
pub struct Times {
    test: String,
    names: Vec<&'static str>,
    times: Vec<Vec<Duration>>,
}

/// Runs `variants` in `count` shuffled rounds after a warm-up round (the
/// first variant is the harness's anchor).
///
/// # Panics
///
/// When a sample fails: its message names the test and the variant.
pub fn run(test: &str, count: usize, variants: Vec<(&'static str, Sample<'_>)>) -> Times {
    let names: Vec<&'static str> = variants.iter().map(|v| v.0).collect();
    let log: Vec<RefCell<Vec<Duration>>> = variants.iter().map(|_| RefCell::default()).collect();
    let mut c = Compare::new("service", test, names[0]);
    for ((name, mut sample), log) in variants.into_iter().zip(&log) {
        c.variant(name, move || {
            let t = sample().unwrap_or_else(|e| panic!("service {test} {name}: {e}"));
            log.borrow_mut().push(t);
            t
        });
    }
    c.run(count);
    drop(c);
    Times {
        test: test.to_owned(),
        names,
        // The first sample of each variant is the harness's warm-up.
        times: log
            .into_iter()
            .map(|l| l.into_inner().split_off(1))
            .collect(),
    }
}

/// Which way a test's ratios point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Time per unit of work, in µs; `t_vs_<anchor>` rows.
    Time,
    /// Units of work per second; `rate_vs_<anchor>` rows.
    Rate,
}

impl Times {
    fn index(&self, variant: &str) -> usize {
        self.names
            .iter()
            .position(|n| *n == variant)
            .unwrap_or_else(|| panic!("service {}: no variant {variant}", self.test))
    }

    /// Median over rounds of `variant`'s ratio to `other` in the same
    /// round, as `kind` points (every variant of a test does the same work
    /// per sample).
    pub fn ratio(&self, kind: Kind, variant: &str, other: &str) -> f64 {
        let (a, b) = (
            &self.times[self.index(variant)],
            &self.times[self.index(other)],
        );
        match kind {
            Kind::Time => paired_median(a, b),
            Kind::Rate => paired_median(b, a),
        }
    }

    /// Writes, for every variant, `<test>.<variant>.median` (per unit of
    /// `work` units per sample, `unit`) and its ratio to `anchor`, and
    /// `<test>.<variant>.spread` for every variant but the anchor; the
    /// same on stderr.
    pub fn emit(&self, kind: Kind, anchor: &str, work: usize, unit: &str) {
        let metric = match kind {
            Kind::Time => format!("t_vs_{anchor}"),
            Kind::Rate => format!("rate_vs_{anchor}"),
        };
        eprintln!("  {:<10} {:>16} {:>12}", "variant", "median", metric);
        let anchor_times = &self.times[self.index(anchor)];
        for (name, times) in self.names.iter().zip(&self.times) {
            let per = median_duration(times.clone()).as_secs_f64() / work as f64;
            let value = match kind {
                Kind::Time => per * 1e6,
                Kind::Rate => 1.0 / per,
            };
            let ratio = self.ratio(kind, name, anchor);
            eprintln!("  {name:<10} {value:>9.2} {unit:<6} {ratio:>11.3}x");
            let test = &self.test;
            row("service", &format!("{test}.{name}.median"), value, unit);
            row("service", &format!("{test}.{name}.{metric}"), ratio, "x");
            if *name != anchor {
                let spread = paired_spread(times, anchor_times);
                row("service", &format!("{test}.{name}.spread"), spread, "x");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_point_the_way_their_kind_says() {
        let ms = |v: &[u64]| v.iter().map(|&x| Duration::from_millis(x)).collect();
        // `slow` takes twice as long as `fast` in every round.
        let t = Times {
            test: "t".into(),
            names: vec!["fast", "slow"],
            times: vec![ms(&[10, 20, 30]), ms(&[20, 40, 60])],
        };
        assert_eq!(t.ratio(Kind::Time, "slow", "fast"), 2.0);
        assert_eq!(t.ratio(Kind::Rate, "slow", "fast"), 0.5);
        assert_eq!(t.ratio(Kind::Rate, "fast", "slow"), 2.0);
        assert_eq!(t.ratio(Kind::Time, "fast", "fast"), 1.0);
    }
}
