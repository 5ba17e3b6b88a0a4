//! The performance targets, in one table, and how rows are checked against
//! them.
//!
//! A target names the row it reads by a pattern (`*` stands for any run of
//! characters, `|` separates alternatives), or, where a suite prints no row
//! for the ratio itself, two rows whose values are divided. A target whose
//! rows are absent is "not measured", never met.

use crate::harness::Row;

/// Which way a target points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// The value must be at most the threshold (times: lower is faster).
    AtMost,
    /// The value must be at least the threshold (rates: higher is faster).
    AtLeast,
}

/// Where a target's value comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// One row, a paired ratio printed by the suite.
    Row(&'static str),
    /// The first row's value divided by the second's: for ratios a suite
    /// does not print (two rows against the same anchor, or a time against a
    /// floor). Not paired round by round, so a little noisier.
    Quotient(&'static str, &'static str),
}

/// One performance target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The suite whose rows it reads.
    pub suite: &'static str,
    /// Where its value comes from, tried in order: the first that resolves
    /// is used, so a dedicated row can be preferred to a quotient.
    pub sources: &'static [Source],
    /// Which way it points.
    pub cmp: Cmp,
    /// The threshold, as a ratio.
    pub threshold: f64,
    /// A short label for the summary.
    pub label: &'static str,
    /// What a run must do beyond running the suite to measure it (a cargo
    /// feature, say): shown while the target is not measured.
    pub needs: Option<&'static str>,
    /// Rows (patterns) shown beside the verdict for context, such as the
    /// tail latencies behind a median.
    pub also: &'static [&'static str],
    /// The heading of the docs/benchmarks.md section that explains why this
    /// target is missed on some machine, if one does: a miss of a target
    /// without one is unexpected.
    pub known: Option<&'static str>,
}

/// What measures the iceoryx2 targets: the feature that builds the anchor.
const ICEORYX2: &str =
    "`--features iceoryx2` (cargo run --release -p benches --features iceoryx2 -- ipc)";

/// What measures the service suite's iceoryx2 target.
const ICEORYX2_SERVICE: &str =
    "`--features iceoryx2` (cargo run --release -p benches --features iceoryx2 -- service)";

/// What measures the iceoryx2 targets with 64 large requests in flight:
/// the feature, and a full run.
const ICEORYX2_FULL: &str = "`--features iceoryx2` in a full run (quick mode stops 64 in flight \
     at 64 KiB): cargo run --release -p benches --features iceoryx2 -- ipc";

/// The section that measures the floors behind the pool, element-wise and
/// fresh-ops misses on the AMD machine (and on the Intel one for the pool
/// and fresh ops).
const SECOND_MACHINE: &str = "A second machine: AMD EPYC (2026-11-26)";

/// The service section that measures the ceiling of 16 active clients: one
/// pair at its best, on the same two CPUs.
const SERVICE_FLOOR: &str = "What bounds the active rows";

/// The ipc section that shows the 4 MiB target sits on the floor of its work.
const IPC_TARGETS: &str = "Against the targets";

/// A target of the pair against iceoryx2 in one regime (docs/benchmarks.md,
/// "Regimes against iceoryx2"): its row at most `threshold`, the two
/// medians beside it.
const fn vs_iceoryx2(
    sources: &'static [Source],
    threshold: f64,
    label: &'static str,
    also: &'static [&'static str],
) -> Target {
    Target {
        suite: "ipc",
        sources,
        cmp: Cmp::AtMost,
        threshold,
        label,
        needs: Some(ICEORYX2),
        known: None,
        also,
    }
}

/// Every target, grouped by suite in the order the suites run.
pub const TARGETS: &[Target] = &[
    // pool: buffer_sv2's own patterns.
    Target {
        suite: "pool",
        sources: &[Source::Row("single.buffer_pool.t_vs_buffer_sv2")],
        cmp: Cmp::AtMost,
        threshold: 0.30,
        label: "single thread: time vs buffer_sv2",
        needs: None,
        known: Some(SECOND_MACHINE),
        also: &[],
    },
    Target {
        suite: "pool",
        sources: &[Source::Row("single.buffer_pool.t_vs_vec")],
        cmp: Cmp::AtMost,
        threshold: 1.0,
        label: "single thread: no slower than a Vec per message",
        needs: None,
        known: None,
        also: &[],
    },
    // The floor of the first target: one reused array that hands nothing
    // out. Against buffer_sv2 the floor itself moves with how the compiler
    // builds buffer_sv2's loop (docs/benchmarks.md, pool), this ratio does not.
    Target {
        suite: "pool",
        sources: &[Source::Row("single.buffer_pool.t_vs_max_efficiency")],
        cmp: Cmp::AtMost,
        threshold: 1.25,
        label: "single thread: time vs one reused array (the floor)",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "pool",
        sources: &[Source::Row("held_10us.buffer_pool.t_vs_buffer_sv2")],
        cmp: Cmp::AtMost,
        threshold: 0.5,
        label: "held 10 us on another thread: time vs buffer_sv2",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "pool",
        sources: &[Source::Row(
            "held_1ms.buffer_pool_64.t_vs_sv2_system_memory",
        )],
        cmp: Cmp::AtMost,
        threshold: 0.5,
        label: "held 1 ms, 64-slot map: time vs BufferFromSystemMemory",
        needs: None,
        known: None,
        also: &[],
    },
    // spsc: u64 values between two threads.
    Target {
        suite: "spsc",
        sources: &[Source::Row("elementwise.uring_queue.rate_vs_rtrb")],
        cmp: Cmp::AtLeast,
        threshold: 1.0,
        label: "element-wise, exact release: rate vs rtrb",
        needs: None,
        known: Some(SECOND_MACHINE),
        also: &[],
    },
    Target {
        suite: "spsc",
        sources: &[Source::Row("elementwise.uring_queue_deferred.rate_vs_rtrb")],
        cmp: Cmp::AtLeast,
        threshold: 1.2,
        label: "element-wise, deferred release (K = 32): rate vs rtrb",
        needs: None,
        known: Some(SECOND_MACHINE),
        also: &[],
    },
    Target {
        suite: "spsc",
        sources: &[Source::Row("batch64.uring_queue.rate_vs_rtrb")],
        cmp: Cmp::AtLeast,
        threshold: 1.0,
        label: "batches of 64: rate vs rtrb",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "spsc",
        sources: &[Source::Row("roundtrip.uring_queue.t_vs_rtrb")],
        cmp: Cmp::AtMost,
        threshold: 1.0,
        label: "ping-pong round trip: time vs rtrb",
        needs: None,
        known: None,
        also: &[],
    },
    // ipc: request/response between two processes.
    Target {
        suite: "ipc",
        sources: &[Source::Row("4B.uring*.t_vs_unix")],
        cmp: Cmp::AtMost,
        threshold: 0.1,
        label: "4 B round trip: time vs UnixStream",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "ipc",
        sources: &[
            Source::Row("4MiB.uring*.t_vs_memcpy*"),
            Source::Quotient("4MiB.uring*.median", "4MiB.memcpy*.median"),
        ],
        cmp: Cmp::AtMost,
        threshold: 2.0,
        label: "4 MiB round trip: time vs a memcpy each way",
        needs: None,
        known: Some(IPC_TARGETS),
        also: &[],
    },
    Target {
        suite: "ipc",
        sources: &[Source::Row("4B.uring_queue.t_vs_iceoryx2")],
        cmp: Cmp::AtMost,
        threshold: 1.0,
        label: "4 B round trip: time vs iceoryx2",
        needs: Some(ICEORYX2),
        known: None,
        also: &["4B.uring_queue.median", "4B.iceoryx2.median"],
    },
    Target {
        suite: "ipc",
        sources: &[Source::Row("4KiB.uring_queue.t_vs_iceoryx2")],
        cmp: Cmp::AtMost,
        threshold: 1.0,
        label: "4 KiB round trip: time vs iceoryx2",
        needs: Some(ICEORYX2),
        known: None,
        also: &["4KiB.uring_queue.median", "4KiB.iceoryx2.median"],
    },
    // The regimes against iceoryx2.
    vs_iceoryx2(
        &[Source::Row("4B.signal.uring_queue.t_vs_iceoryx2")],
        0.15,
        "4 B, signal only, both polling: time vs iceoryx2",
        &["4B.signal.uring_queue.median", "4B.signal.iceoryx2.median"],
    ),
    vs_iceoryx2(
        &[Source::Row("64B.signal.uring_queue.t_vs_iceoryx2")],
        0.15,
        "64 B, signal only, both polling: time vs iceoryx2",
        &[
            "64B.signal.uring_queue.median",
            "64B.signal.iceoryx2.median",
        ],
    ),
    vs_iceoryx2(
        &[Source::Row("4KiB.signal.uring_queue.t_vs_iceoryx2")],
        0.15,
        "4 KiB, signal only, both polling: time vs iceoryx2",
        &[
            "4KiB.signal.uring_queue.median",
            "4KiB.signal.iceoryx2.median",
        ],
    ),
    vs_iceoryx2(
        &[Source::Row("64KiB.signal.uring_queue.t_vs_iceoryx2")],
        0.15,
        "64 KiB, signal only, both polling: time vs iceoryx2",
        &[
            "64KiB.signal.uring_queue.median",
            "64KiB.signal.iceoryx2.median",
        ],
    ),
    vs_iceoryx2(
        &[Source::Row("1MiB.signal.uring_queue.t_vs_iceoryx2")],
        0.15,
        "1 MiB, signal only, both polling: time vs iceoryx2",
        &[
            "1MiB.signal.uring_queue.median",
            "1MiB.signal.iceoryx2.median",
        ],
    ),
    vs_iceoryx2(
        &[Source::Row("4MiB.signal.uring_queue.t_vs_iceoryx2")],
        0.15,
        "4 MiB, signal only, both polling: time vs iceoryx2",
        &[
            "4MiB.signal.uring_queue.median",
            "4MiB.signal.iceoryx2.median",
        ],
    ),
    Target {
        suite: "ipc",
        sources: &[
            Source::Row("signal.uring_queue.t_4MiB_vs_4B"),
            Source::Quotient(
                "4MiB.signal.uring_queue.median",
                "4B.signal.uring_queue.median",
            ),
        ],
        cmp: Cmp::AtMost,
        threshold: 1.2,
        label: "signal only: the pair's 4 MiB time vs its 4 B time",
        needs: None,
        known: None,
        also: &[],
    },
    vs_iceoryx2(
        &[Source::Row("1MiB.busy.uring_queue.t_vs_iceoryx2")],
        1.0,
        "1 MiB, written and read once, both polling: time vs iceoryx2",
        &["1MiB.busy.uring_queue.median", "1MiB.busy.iceoryx2.median"],
    ),
    vs_iceoryx2(
        &[Source::Row("4MiB.busy.uring_queue.t_vs_iceoryx2")],
        1.0,
        "4 MiB, written and read once, both polling: time vs iceoryx2",
        &["4MiB.busy.uring_queue.median", "4MiB.busy.iceoryx2.median"],
    ),
    Target {
        needs: Some(ICEORYX2_FULL),
        ..vs_iceoryx2(
            &[Source::Row(
                "1MiB.inflight64.busy.uring_queue.t_vs_iceoryx2",
            )],
            1.0,
            "1 MiB, 64 in flight, both polling: time vs iceoryx2",
            &[
                "1MiB.inflight64.busy.uring_queue.median",
                "1MiB.inflight64.busy.iceoryx2.median",
            ],
        )
    },
    Target {
        needs: Some(ICEORYX2_FULL),
        ..vs_iceoryx2(
            &[Source::Row(
                "4MiB.inflight64.busy.uring_queue.t_vs_iceoryx2",
            )],
            1.0,
            "4 MiB, 64 in flight, both polling: time vs iceoryx2",
            &[
                "4MiB.inflight64.busy.uring_queue.median",
                "4MiB.inflight64.busy.iceoryx2.median",
            ],
        )
    },
    vs_iceoryx2(
        &[Source::Row("1MiB.inplace.uring_queue.t_vs_iceoryx2")],
        0.8,
        "1 MiB, answered in place: time vs iceoryx2 written and read once",
        &[
            "1MiB.inplace.uring_queue.median",
            "1MiB.inplace.iceoryx2.median",
        ],
    ),
    vs_iceoryx2(
        &[Source::Row("4MiB.inplace.uring_queue.t_vs_iceoryx2")],
        0.8,
        "4 MiB, answered in place: time vs iceoryx2 written and read once",
        &[
            "4MiB.inplace.uring_queue.median",
            "4MiB.inplace.iceoryx2.median",
        ],
    ),
    // The default blocking pair against the floor of its work, one in
    // flight (docs/benchmarks.md, IPC_TARGETS: the restated 4 MiB target).
    Target {
        suite: "ipc",
        sources: &[Source::Row("4MiB.uring_queue.t_vs_memcpy_checked")],
        cmp: Cmp::AtMost,
        threshold: 1.1,
        label: "4 MiB round trip, blocking calls: time vs the floor (memcpy_checked)",
        needs: None,
        known: None,
        also: &["4MiB.uring_queue.median", "4MiB.memcpy_checked.median"],
    },
    Target {
        suite: "ipc",
        sources: &[Source::Row("4B.uring_queue_tokio.t_vs_tokio")],
        cmp: Cmp::AtMost,
        threshold: 0.5,
        label: "4 B round trip, reactor-driven: time vs tokio's UnixStream",
        needs: None,
        known: None,
        also: &["4B.uring_queue_tokio.median", "4B.tokio.median"],
    },
    Target {
        suite: "ipc",
        sources: &[Source::Row(
            "4B.inflight64.uring_queue_tokio.t_vs_uring_queue",
        )],
        cmp: Cmp::AtMost,
        threshold: 2.0,
        label: "4 B, 64 in flight, reactor-driven: time vs the blocking calls",
        needs: None,
        known: None,
        also: &[
            "4B.inflight64.uring_queue_tokio.median",
            "4B.inflight64.uring_queue.median",
        ],
    },
    Target {
        suite: "ipc",
        sources: &[Source::Row("loaded.4B.uring_queue.t_vs_unix")],
        cmp: Cmp::AtMost,
        threshold: 1.0,
        label: "4 B beside two CPU-bound threads: median vs UnixStream",
        needs: None,
        known: None,
        also: &["loaded.4B.uring_queue.p99_us", "loaded.4B.unix.p99_us"],
    },
    // service: many client processes on one server, by name.
    Target {
        suite: "service",
        sources: &[Source::Row("idle200.4B.service.t_vs_one")],
        cmp: Cmp::AtMost,
        threshold: 1.5,
        label: "4 B round trip beside 200 idle clients: time vs alone",
        needs: None,
        known: None,
        also: &["idle200.4B.service.median", "idle200.4B.one.median"],
    },
    Target {
        suite: "service",
        sources: &[Source::Row("active16.service.rate_vs_pair")],
        cmp: Cmp::AtLeast,
        threshold: 0.5,
        label: "16 active clients, 16 in flight each: rate vs one client on a pair",
        needs: None,
        known: Some(SERVICE_FLOOR),
        also: &[
            "active16.service.median",
            "active16.pair.median",
            "active16.pair_parked.median",
        ],
    },
    Target {
        suite: "service",
        sources: &[Source::Row("active16.service.rate_vs_unix")],
        cmp: Cmp::AtLeast,
        threshold: 10.0,
        label: "16 active clients: rate vs a tokio UnixStream server",
        needs: None,
        known: Some(SERVICE_FLOOR),
        also: &[
            "active16.pair.rate_vs_unix",
            "active16.service.median",
            "active16.unix.median",
        ],
    },
    Target {
        suite: "service",
        sources: &[Source::Row("active16.service.rate_vs_iceoryx2")],
        cmp: Cmp::AtLeast,
        threshold: 1.0,
        label: "16 active clients: rate vs iceoryx2 request/response",
        needs: Some(ICEORYX2_SERVICE),
        known: None,
        also: &["active16.service.median", "active16.iceoryx2.median"],
    },
    // batch: seed 000's table, system calls, seed 002.
    Target {
        suite: "batch",
        sources: &[Source::Row("seed.batch_api.rate_vs_ops_by_hand")],
        cmp: Cmp::AtLeast,
        threshold: 0.8,
        label: "batch API, fresh ops: rate vs the same ops by hand",
        needs: None,
        known: Some(SECOND_MACHINE),
        also: &[],
    },
    Target {
        suite: "batch",
        sources: &[Source::Row(
            "seed.batch_api_reused.rate_vs_ops_by_hand_reused",
        )],
        cmp: Cmp::AtLeast,
        threshold: 0.5,
        label: "batch API, reused ops: rate vs the same ops by hand",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "batch",
        sources: &[Source::Row("seed.auto_reader.rate_vs_bare")],
        cmp: Cmp::AtLeast,
        threshold: 0.15,
        label: "auto-batching async reader: rate vs a bare call",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "batch",
        sources: &[
            Source::Row("seed.auto_reader.rate_vs_channel_async"),
            Source::Quotient(
                "seed.auto_reader.rate_vs_bare",
                "seed.channel_async.rate_vs_bare",
            ),
        ],
        cmp: Cmp::AtLeast,
        threshold: 3.0,
        label: "auto-batching async reader: rate vs one async channel",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "batch",
        sources: &[Source::Row("syscall.crate64.rate_vs_raw64")],
        cmp: Cmp::AtLeast,
        threshold: 0.95,
        label: "64 scattered pieces: rate vs the raw batched call",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "batch",
        sources: &[Source::Row("syscall.crate_structs.rate_vs_single_structs")],
        cmp: Cmp::AtLeast,
        threshold: 5.0,
        label: "adjacent fields, coalesced: rate vs one call per piece",
        needs: None,
        known: None,
        also: &[],
    },
    Target {
        suite: "batch",
        sources: &[Source::Row("file.read_iter.t_vs_ceiling")],
        cmp: Cmp::AtMost,
        threshold: 1.10,
        label: "4 KiB reads of a cached file: time vs one 1 MiB read",
        needs: None,
        known: None,
        also: &[],
    },
];

/// Variant names (patterns, as in targets) that are this workspace's code,
/// per suite: the summary marks them so they stand out from the anchors.
pub const OURS: &[(&str, &str)] = &[
    ("write", "io_traits"),
    ("pool", "buffer_pool*"),
    ("spsc", "uring_queue*"),
    ("ipc", "uring*"),
    ("service", "service"),
    ("batch", "batch_api*|crate*|read_iter*|*auto*"),
];

/// Whether `variant` of `suite` is this workspace's code.
pub fn is_ours(suite: &str, variant: &str) -> bool {
    OURS.iter().any(|(s, p)| *s == suite && matches(p, variant))
}

/// How a target fared.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Its rows are present and the value is on the right side.
    Met,
    /// Its rows are present and the value is on the wrong side.
    Missed,
    /// No source resolved (or the value is not a finite number).
    NotMeasured,
}

/// A target checked against one run's rows.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The target.
    pub target: Target,
    /// The value, if measured.
    pub value: Option<f64>,
    /// The row (or `a / b`) it came from, if measured.
    pub from: Option<String>,
    /// The verdict.
    pub status: Status,
    /// The target's `also` rows that the run has, for context.
    pub context: Vec<Row>,
    /// How far apart the rounds behind the value were: the `spread` row
    /// beside the ratio row it came from, if the suite prints one.
    pub spread: Option<f64>,
}

/// Why a missed target missed, as far as the docs know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// docs/benchmarks.md explains it in the section with this heading.
    Known(&'static str),
    /// Nothing explains it: a regression, or a machine not yet measured.
    Unexpected,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Known(_) => f.write_str("known"),
            Miss::Unexpected => f.write_str("unexpected"),
        }
    }
}

impl Outcome {
    /// For a missed target, whether the miss is known and where the reason
    /// is written; `None` for a met or unmeasured one.
    pub fn miss(&self) -> Option<Miss> {
        let miss = match self.target.known {
            Some(section) => Miss::Known(section),
            None => Miss::Unexpected,
        };
        (self.status == Status::Missed).then_some(miss)
    }

    /// Whether the rounds behind the value spread widely (see
    /// [`crate::harness::WIDE_SPREAD`]).
    pub fn wide(&self) -> bool {
        self.spread.is_some_and(crate::harness::is_wide)
    }

    /// What the summary and the report print beside the verdict: the row it
    /// came from and the context rows, or, when not measured, what would
    /// measure it. With `code`, row names are in backticks (Markdown).
    pub fn detail(&self, code: bool) -> String {
        let name = |n: &str| if code { format!("`{n}`") } else { n.to_owned() };
        let mut parts: Vec<String> = self.from.iter().map(|f| name(f)).collect();
        parts.extend(self.context.iter().map(|r| {
            format!(
                "{} {} {}",
                name(&r.name),
                crate::harness::num(r.value),
                r.unit
            )
        }));
        if self.wide() {
            let spread = self.spread.map_or_else(String::new, crate::harness::num);
            parts.push(format!(
                "rounds spread widely ({spread}x max/min): rerun before trusting it"
            ));
        }
        if let Some(Miss::Known(section)) = self.miss() {
            parts.push(format!(
                "known miss, why: docs/benchmarks.md, \"{section}\""
            ));
        }
        if self.status == Status::NotMeasured {
            if let Some(needs) = self.target.needs {
                parts.push(format!("measured with {needs}"));
            }
        }
        parts.join("; ")
    }
}

impl Target {
    /// The threshold as text: `<= 0.30x` or `>= 1.10x`.
    pub fn threshold_text(&self) -> String {
        let op = match self.cmp {
            Cmp::AtMost => "<=",
            Cmp::AtLeast => ">=",
        };
        format!("{op} {}x", trim(self.threshold))
    }

    /// Checks the target against `rows`.
    pub fn check(&self, rows: &[Row]) -> Outcome {
        let find = |pattern: &str| {
            rows.iter()
                .find(|r| r.suite == self.suite && matches(pattern, &r.name))
        };
        let resolved = self.sources.iter().find_map(|s| match *s {
            Source::Row(p) => find(p).map(|r| (r.value, r.name.clone(), spread_of(rows, r))),
            Source::Quotient(a, b) => {
                let (a, b) = (find(a)?, find(b)?);
                Some((a.value / b.value, format!("{} / {}", a.name, b.name), None))
            }
        });
        let context: Vec<Row> = self
            .also
            .iter()
            .filter_map(|p| find(p))
            .filter(|r| r.value.is_finite())
            .cloned()
            .collect();
        match resolved {
            Some((v, from, spread)) if v.is_finite() => {
                let met = match self.cmp {
                    Cmp::AtMost => v <= self.threshold,
                    Cmp::AtLeast => v >= self.threshold,
                };
                Outcome {
                    target: *self,
                    value: Some(v),
                    from: Some(from),
                    status: if met { Status::Met } else { Status::Missed },
                    context,
                    spread,
                }
            }
            _ => Outcome {
                target: *self,
                value: None,
                from: None,
                status: Status::NotMeasured,
                context,
                spread: None,
            },
        }
    }
}

/// The `spread` row of the same test and variant as the ratio row `r`, if
/// `r` is the ratio to the test's anchor (the one the spread is taken
/// against): the anchor prints its own ratio row, `1` by definition.
fn spread_of(rows: &[Row], r: &Row) -> Option<f64> {
    let (test, variant, metric) = r.parts()?;
    let anchor = metric
        .strip_prefix("t_vs_")
        .or_else(|| metric.strip_prefix("rate_vs_"))?;
    let anchors_own = format!("{test}.{anchor}.{metric}");
    rows.iter()
        .find(|x| x.suite == r.suite && x.name == anchors_own)?;
    let name = format!("{test}.{variant}.spread");
    rows.iter()
        .find(|x| x.suite == r.suite && x.name == name)
        .map(|x| x.value)
        .filter(|v| v.is_finite())
}

/// Checks every target of `suite` against `rows`.
pub fn check_suite(suite: &str, rows: &[Row]) -> Vec<Outcome> {
    TARGETS
        .iter()
        .filter(|t| t.suite == suite)
        .map(|t| t.check(rows))
        .collect()
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Whether `name` matches `pattern`: `*` stands for any run of characters
/// (none included), `|` separates alternatives, everything else is literal.
pub fn matches(pattern: &str, name: &str) -> bool {
    pattern
        .split('|')
        .any(|alt| glob(alt.as_bytes(), name.as_bytes()))
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard match with one backtrack point: linear enough for
    // row names, and no recursion.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ratio row.
    fn row(suite: &str, name: &str, value: f64) -> Row {
        Row::new(suite, name, value, "x")
    }

    fn target(label: &str) -> &'static Target {
        TARGETS.iter().find(|t| t.label == label).unwrap()
    }

    #[test]
    fn patterns_match_literally_with_stars_and_alternatives() {
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "a.bc"));
        assert!(!matches("a.b", "xa.b"));
        assert!(matches("4B.uring*.t_vs_unix", "4B.uring.t_vs_unix"));
        assert!(matches("4B.uring*.t_vs_unix", "4B.uring_queue.t_vs_unix"));
        assert!(!matches("4B.uring*.t_vs_unix", "4B.uring.t_vs_tokio"));
        assert!(!matches("4B.uring*.t_vs_unix", "64B.uring.t_vs_unix"));
        assert!(matches(
            "seed.*auto*.rate_vs_bare",
            "seed.async_auto_batch.rate_vs_bare"
        ));
        assert!(matches("x|y*", "yz"));
        assert!(!matches("x|y*", "zy"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(!matches("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn a_target_is_met_only_on_the_right_side_of_its_threshold() {
        let t = target("single thread: time vs buffer_sv2");
        let at = |v| t.check(&[row("pool", "single.buffer_pool.t_vs_buffer_sv2", v)]);
        assert_eq!(at(0.29).status, Status::Met);
        assert_eq!(at(0.30).status, Status::Met);
        assert_eq!(at(0.31).status, Status::Missed);
        assert_eq!(at(0.29).value, Some(0.29));

        let t = target("batches of 64: rate vs rtrb");
        let at = |v| t.check(&[row("spsc", "batch64.uring_queue.rate_vs_rtrb", v)]);
        assert_eq!(at(1.06).status, Status::Met);
        assert_eq!(at(0.99).status, Status::Missed);
    }

    #[test]
    fn an_absent_row_is_not_measured_never_met() {
        for t in TARGETS {
            let o = t.check(&[]);
            assert_eq!(o.status, Status::NotMeasured, "{}", t.label);
            assert_eq!(o.value, None);
        }
        // A row of the right name in another suite does not count.
        let t = target("batches of 64: rate vs rtrb");
        let o = t.check(&[row("ipc", "batch64.uring_queue.rate_vs_rtrb", 2.0)]);
        assert_eq!(o.status, Status::NotMeasured);
        // Nor does a row of another variant or test.
        let o = t.check(&[row("spsc", "batch64.ringbuf.rate_vs_rtrb", 2.0)]);
        assert_eq!(o.status, Status::NotMeasured);
        // Nor a value that is not a number.
        let o = t.check(&[row("spsc", "batch64.uring_queue.rate_vs_rtrb", f64::NAN)]);
        assert_eq!(o.status, Status::NotMeasured);
    }

    #[test]
    fn a_quotient_is_used_only_when_no_dedicated_row_exists() {
        let t = target("4 MiB round trip: time vs a memcpy each way");
        let rows = [
            row("ipc", "4MiB.uring.median", 300.0),
            row("ipc", "4MiB.memcpy.median", 200.0),
        ];
        let o = t.check(&rows);
        assert_eq!(o.status, Status::Met);
        assert_eq!(o.value, Some(1.5));
        assert_eq!(
            o.from.as_deref(),
            Some("4MiB.uring.median / 4MiB.memcpy.median")
        );
        // Half the quotient: only one side present.
        assert_eq!(t.check(&rows[..1]).status, Status::NotMeasured);
        // A dedicated row wins over the quotient.
        let mut with_row = rows.to_vec();
        with_row.push(row("ipc", "4MiB.uring.t_vs_memcpy2", 2.5));
        let o = t.check(&with_row);
        assert_eq!(o.status, Status::Missed);
        assert_eq!(o.value, Some(2.5));
    }

    #[test]
    fn every_target_reads_rows_the_current_suites_print() {
        // Row names taken from a quick run of the suites that exist today;
        // targets for suites still being built (ipc, the async batch rows,
        // the deferred spsc row) are covered by the tests above.
        let today = [
            ("pool", "single.buffer_pool.t_vs_buffer_sv2"),
            ("pool", "single.buffer_pool.t_vs_vec"),
            ("pool", "single.buffer_pool.t_vs_max_efficiency"),
            ("pool", "held_10us.buffer_pool.t_vs_buffer_sv2"),
            ("pool", "held_1ms.buffer_pool_64.t_vs_sv2_system_memory"),
            ("spsc", "elementwise.uring_queue.rate_vs_rtrb"),
            ("spsc", "batch64.uring_queue.rate_vs_rtrb"),
            ("spsc", "roundtrip.uring_queue.t_vs_rtrb"),
            ("batch", "syscall.crate64.rate_vs_raw64"),
            ("batch", "syscall.crate_structs.rate_vs_single_structs"),
            ("batch", "file.read_iter.t_vs_ceiling"),
            ("service", "idle200.4B.service.t_vs_one"),
            ("service", "active16.service.rate_vs_pair"),
            ("service", "active16.service.rate_vs_unix"),
            ("service", "active16.service.rate_vs_iceoryx2"),
        ];
        let rows: Vec<Row> = today.iter().map(|(s, n)| row(s, n, 1.0)).collect();
        let measured = TARGETS
            .iter()
            .filter(|t| t.check(&rows).status != Status::NotMeasured)
            .count();
        assert_eq!(measured, today.len());
    }

    #[test]
    fn each_regime_row_meets_its_own_target_and_no_other() {
        let regime_rows = [
            ("4B.signal.uring_queue.t_vs_iceoryx2", 0.1),
            ("4MiB.signal.uring_queue.t_vs_iceoryx2", 0.1),
            ("signal.uring_queue.t_4MiB_vs_4B", 1.1),
            ("1MiB.busy.uring_queue.t_vs_iceoryx2", 0.9),
            ("4MiB.inflight64.busy.uring_queue.t_vs_iceoryx2", 0.9),
            ("4MiB.inplace.uring_queue.t_vs_iceoryx2", 0.7),
        ];
        for (name, value) in regime_rows {
            let rows = [row("ipc", name, value)];
            let measured: Vec<_> = TARGETS
                .iter()
                .map(|t| t.check(&rows))
                .filter(|o| o.status != Status::NotMeasured)
                .collect();
            assert_eq!(measured.len(), 1, "{name}");
            assert_eq!(measured[0].status, Status::Met, "{name}");
        }
        // The regime rows stay out of the targets on the default calls.
        let rows = [row(
            "ipc",
            "4MiB.inplace.uring_queue.t_vs_memcpy_checked",
            0.5,
        )];
        let floor = target("4 MiB round trip, blocking calls: time vs the floor (memcpy_checked)");
        assert_eq!(floor.check(&rows).status, Status::NotMeasured);
        let rows = [row("ipc", "4MiB.uring_queue.t_vs_memcpy_checked", 1.2)];
        assert_eq!(floor.check(&rows).status, Status::Missed);
    }

    #[test]
    fn one_in_flight_targets_ignore_the_64_in_flight_rows() {
        let t = target("4 MiB round trip: time vs a memcpy each way");
        let rows = [row("ipc", "4MiB.inflight64.uring.t_vs_memcpy2", 0.5)];
        assert_eq!(t.check(&rows).status, Status::NotMeasured);
        let t = target("4 B round trip: time vs UnixStream");
        let rows = [
            row("ipc", "4B.inflight64.uring.t_vs_unix", 0.01),
            row("ipc", "4B.uring_queue.t_vs_unix", 0.2),
        ];
        let o = t.check(&rows);
        assert_eq!(o.status, Status::Missed);
        assert_eq!(o.from.as_deref(), Some("4B.uring_queue.t_vs_unix"));
    }

    #[test]
    fn async_reader_targets_read_the_batch_suite_rows() {
        let bare = target("auto-batching async reader: rate vs a bare call");
        let chan = target("auto-batching async reader: rate vs one async channel");
        let rows = [
            row("batch", "seed.channel_async.rate_vs_bare", 0.04),
            row("batch", "seed.auto_reader.rate_vs_bare", 0.16),
            row("batch", "seed.auto_reader_x8.rate_vs_bare", 0.5),
        ];
        let o = bare.check(&rows);
        assert_eq!((o.status, o.value), (Status::Met, Some(0.16)));
        // No dedicated row: the quotient of the two rate-vs-bare rows.
        let o = chan.check(&rows);
        assert_eq!(o.status, Status::Met);
        assert!((o.value.unwrap() - 4.0).abs() < 1e-9);
        let mut with_row = rows.to_vec();
        with_row.push(row("batch", "seed.auto_reader.rate_vs_channel_async", 2.9));
        assert_eq!(chan.check(&with_row).status, Status::Missed);
    }

    #[test]
    fn a_target_says_what_measures_it_and_shows_its_context() {
        let ice = target("4 B round trip: time vs iceoryx2");
        // A build without the feature writes NaN in the row's place.
        let o = ice.check(&[
            row("ipc", "4B.uring_queue.t_vs_iceoryx2", f64::NAN),
            Row::new("ipc", "4B.uring_queue.median", 0.6, "us"),
        ]);
        assert_eq!(o.status, Status::NotMeasured);
        let d = o.detail(false);
        assert!(d.contains("--features iceoryx2"), "{d}");
        assert!(d.contains("4B.uring_queue.median 0.6000 us"), "{d}");
        let loaded = target("4 B beside two CPU-bound threads: median vs UnixStream");
        let o = loaded.check(&[
            row("ipc", "loaded.4B.uring_queue.t_vs_unix", 3.0),
            Row::new("ipc", "loaded.4B.uring_queue.p99_us", 900.0, "us"),
            Row::new("ipc", "loaded.4B.unix.p99_us", 80.0, "us"),
        ]);
        assert_eq!(o.status, Status::Missed);
        assert_eq!(
            o.detail(true),
            "`loaded.4B.uring_queue.t_vs_unix`; `loaded.4B.uring_queue.p99_us` 900.0 us; \
             `loaded.4B.unix.p99_us` 80.000 us"
        );
        // The 4 B target against unix does not read the loaded row.
        let plain = target("4 B round trip: time vs UnixStream");
        let o = plain.check(&[row("ipc", "loaded.4B.uring_queue.t_vs_unix", 0.05)]);
        assert_eq!(o.status, Status::NotMeasured);
    }

    #[test]
    fn a_miss_is_known_only_where_the_docs_explain_it() {
        let pool = target("single thread: time vs buffer_sv2");
        let o = pool.check(&[row("pool", "single.buffer_pool.t_vs_buffer_sv2", 0.43)]);
        assert_eq!(o.miss(), Some(Miss::Known(SECOND_MACHINE)));
        assert!(
            o.detail(false)
                .contains("known miss, why: docs/benchmarks.md")
        );
        // Met or not measured: no miss to classify.
        let o = pool.check(&[row("pool", "single.buffer_pool.t_vs_buffer_sv2", 0.2)]);
        assert_eq!(o.miss(), None);
        assert_eq!(pool.check(&[]).miss(), None);
        // No section explains the batch64 target: its miss is news.
        let b = target("batches of 64: rate vs rtrb");
        let o = b.check(&[row("spsc", "batch64.uring_queue.rate_vs_rtrb", 0.9)]);
        assert_eq!(o.miss(), Some(Miss::Unexpected));
        assert!(!o.detail(false).contains("known"));
    }

    #[test]
    fn every_known_miss_names_a_section_of_the_benchmarks_doc() {
        let doc = include_str!("../../docs/benchmarks.md");
        let headings: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .collect();
        let known: Vec<&str> = TARGETS.iter().filter_map(|t| t.known).collect();
        assert!(!known.is_empty());
        for section in known {
            let n = headings.iter().filter(|h| **h == section).count();
            assert_eq!(
                n, 1,
                "section \"{section}\" must be one heading of docs/benchmarks.md"
            );
        }
    }

    #[test]
    fn a_ratio_carries_the_spread_of_its_rounds() {
        let t = target("ping-pong round trip: time vs rtrb");
        let ratio = row("spsc", "roundtrip.uring_queue.t_vs_rtrb", 0.9);
        let spread = |v| row("spsc", "roundtrip.uring_queue.spread", v);
        // Without the anchor's own row, the spread's reference is unknown.
        assert_eq!(t.check(&[ratio.clone(), spread(1.98)]).spread, None);
        let anchor = row("spsc", "roundtrip.rtrb.t_vs_rtrb", 1.0);
        let o = t.check(&[anchor.clone(), ratio.clone(), spread(1.98)]);
        assert_eq!((&o.status, o.spread), (&Status::Met, Some(1.98)));
        assert!(o.wide());
        assert!(
            o.detail(false)
                .contains("rounds spread widely (1.980x max/min)")
        );
        let o = t.check(&[anchor.clone(), ratio.clone(), spread(1.1)]);
        assert!(!o.wide());
        assert!(!o.detail(false).contains("spread"));
        // Another variant's spread is not this row's; no spread row, none.
        let other = row("spsc", "roundtrip.ringbuf.spread", 3.0);
        assert_eq!(
            t.check(&[anchor.clone(), ratio.clone(), other]).spread,
            None
        );
        assert_eq!(t.check(&[anchor, ratio]).spread, None);
        // A second ratio of the same variant (against another variant than
        // the anchor) does not borrow the anchor ratio's spread.
        let vec = target("single thread: no slower than a Vec per message");
        let rows = [
            row("pool", "single.buffer_sv2.t_vs_buffer_sv2", 1.0),
            row("pool", "single.buffer_pool.t_vs_vec", 0.8),
            row("pool", "single.buffer_pool.spread", 4.0),
        ];
        assert_eq!(vec.check(&rows).spread, None);
    }

    #[test]
    fn ours_marks_workspace_variants_only() {
        assert!(is_ours("spsc", "uring_queue"));
        assert!(is_ours("spsc", "uring_queue_deferred"));
        assert!(!is_ours("spsc", "rtrb"));
        assert!(is_ours("pool", "buffer_pool_64"));
        assert!(!is_ours("pool", "buffer_sv2"));
        assert!(is_ours("batch", "read_iter"));
        assert!(!is_ours("batch", "ceiling"));
    }
}
