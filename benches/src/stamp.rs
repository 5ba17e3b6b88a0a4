//! The machine and date of a run, in one line that the summary, the results
//! block and every chart's caption carry, so that figures quoted from them can
//! be matched to one run.
//!
//! A measuring run also writes the stamp as rows of the pseudo-suite
//! `run`, so that `--from` redraws charts and the block with the stamp (and
//! the mode) of the run that measured the rows, not of the run that reads
//! them:
//!
//! ```text
//! run started 1764239520 unix_s
//! run cpu.AMD_EPYC 2 logical_cpus
//! run full 1 bool
//! ```
//!
//! The CPU model travels in the row name, blanks as `_`, as a row has four
//! blank-separated fields.

use crate::harness::{Row, row};
use crate::report;

/// The suite name of the stamp's rows.
pub const SUITE: &str = "run";

/// Where and when a run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamp {
    /// CPU model, as /proc/cpuinfo names it.
    pub cpu: String,
    /// Logical CPUs the run could use.
    pub cpus: usize,
    /// Start of the run, seconds since the Unix epoch.
    pub started: u64,
    /// Whether the run was in full mode (not quick); unknown in rows
    /// written before the stamp carried it.
    pub full: Option<bool>,
}

impl Stamp {
    /// This machine, now, for a run in full mode or not.
    pub fn now(full: bool) -> Self {
        Self {
            full: Some(full),
            cpu: cpu_model(),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// Writes the stamp's rows.
    pub fn emit(&self) {
        row(SUITE, "started", self.started as f64, "unix_s");
        let cpu: String = self.cpu.split_whitespace().collect::<Vec<_>>().join("_");
        row(
            SUITE,
            &format!("cpu.{cpu}"),
            self.cpus as f64,
            "logical_cpus",
        );
        if let Some(full) = self.full {
            row(SUITE, "full", f64::from(u8::from(full)), "bool");
        }
    }

    /// The stamp carried by `rows`, if they have its start and CPU rows.
    pub fn from_rows(rows: &[Row]) -> Option<Self> {
        let mine = || rows.iter().filter(|r| r.suite == SUITE);
        let started = mine().find(|r| r.name == "started")?.value;
        let cpu = mine().find_map(|r| Some((r.name.strip_prefix("cpu.")?, r.value)))?;
        let full = mine().find(|r| r.name == "full").map(|r| r.value != 0.0);
        Some(Self {
            full,
            cpu: cpu.0.replace('_', " "),
            cpus: cpu.1 as usize,
            started: started as u64,
        })
    }

    /// `AMD EPYC, 2 logical CPUs, 2026-11-27 10:32 UTC`.
    pub fn line(&self) -> String {
        format!(
            "{}, {} logical CPUs, {}",
            self.cpu,
            self.cpus,
            report::utc(self.started)
        )
    }
}

/// The CPU model from /proc/cpuinfo, or `unknown CPU`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown CPU".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_travels_in_two_rows_and_reads_back() {
        let s = Stamp {
            cpu: "Intel(R) Xeon(R) CPU @ 2.20GHz".into(),
            cpus: 2,
            started: 1_700_000_000,
            full: None,
        };
        assert_eq!(
            s.line(),
            "Intel(R) Xeon(R) CPU @ 2.20GHz, 2 logical CPUs, 2023-11-14 22:13 UTC"
        );
        let rows = [
            Row::new("ipc", "4B.unix.median", 9.0, "us"),
            Row::new(SUITE, "started", 1_700_000_000.0, "unix_s"),
            Row::new(
                SUITE,
                "cpu.Intel(R)_Xeon(R)_CPU_@_2.20GHz",
                2.0,
                "logical_cpus",
            ),
        ];
        assert_eq!(Stamp::from_rows(&rows), Some(s));
        // Half a stamp is none.
        assert_eq!(Stamp::from_rows(&rows[..2]), None);
        let mut with_mode = rows.to_vec();
        with_mode.push(Row::new(SUITE, "full", 1.0, "bool"));
        assert_eq!(Stamp::from_rows(&with_mode).unwrap().full, Some(true));
        assert_eq!(Stamp::from_rows(&[]), None);
    }

    #[test]
    fn stamp_rows_are_four_field_rows() {
        let line = format!(
            "{SUITE} cpu.{} 2 logical_cpus",
            "AMD EPYC 7B13".replace(' ', "_")
        );
        let r = Row::parse(&line).unwrap();
        assert_eq!(r.name, "cpu.AMD_EPYC_7B13");
    }
}
