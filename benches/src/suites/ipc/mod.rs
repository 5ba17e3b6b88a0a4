//! `ipc`: request/response between two processes.
//!
//! The client (this process) sends requests of an `i32` header and a body of
//! 4 B to 4 MiB; the server (this binary started again, see [`peer`])
//! checks each request in full and answers with a body of the same length,
//! which the client checks in full (see [`wire`]). A wrong byte stops the run
//! with a message naming the variant, the size and the offset.
//!
//! Variants, in the same shuffled rounds, each over its own server process
//! started once for the whole suite:
//! - `unix`: std `UnixStream`, blocking (the anchor);
//! - `tokio`: tokio over a Unix socket, a current-thread runtime per side;
//! - `uring_queue`, `uring_queue_async`: this workspace's
//!   `uring_queue::uring` pair over a memfd, driven by its blocking and by
//!   its async calls (see [`uring`]);
//! - `uring_queue_tokio`: the same pair driven by tokio's reactor, an
//!   `AsyncClient` and an `AsyncServer` on a `current_thread` runtime each,
//!   woken through eventfds (see [`uring_tokio`]);
//! - `iceoryx2`: iceoryx2 0.10 request/response, busy polling on both sides
//!   (see the `iceoryx` module); built only with the `iceoryx2` feature, and its rows
//!   read `NaN` (not measured) without it;
//! - `memcpy`: no transport, one copy of the body each way in this process
//!   (the yardstick of the 4 MiB target);
//! - `memcpy_checked`: the same plus the two checks (the floor of the work).
//!
//! A variant that cannot do a size or a depth ([`Transport::unsupported`])
//! sits those rounds out; its rows for that test are `NaN` and stderr says
//! why.
//!
//! Each size is measured with one request in flight (round-trip latency) and
//! with 64 in flight (64 requests written, then their 64 replies read; the
//! amortised time per request). By default the client is pinned to one CPU
//! and every server to another, so each side has one core, whatever the
//! variant; `COMPARE_IPC_CPUS=shared` puts both on one CPU and
//! `COMPARE_IPC_CPUS=free` pins nothing (see [`peer::Placement`]).
//!
//! Rows, for `<test>` = `<size>` (one in flight) or `<size>.inflight64`:
//! - `<test>.<variant>.median`: median over rounds of the time per request,
//!   in µs (the round-trip latency with one in flight);
//! - `<test>.<variant>.t_vs_unix`: median over rounds of the paired ratio of
//!   its time to `unix`'s;
//! - `<test>.<variant>.t_vs_memcpy2`: the same against `memcpy`;
//! - `<test>.uring_queue*.t_vs_memcpy_checked`: the crate's variants against
//!   `memcpy_checked`, the floor of the work;
//! - `<test>.uring_queue.t_vs_iceoryx2`: the blocking calls against iceoryx2
//!   (see [`PAIRED`]);
//! - `<test>.uring_queue_tokio.t_vs_tokio` and
//!   `<test>.uring_queue_tokio.t_vs_uring_queue`: the reactor-driven pair
//!   against tokio over a Unix socket and against the blocking calls.
//!
//! Then the regimes against iceoryx2, each with `uring_queue` (the
//! regime's own client, see [`regimes`]) as the anchor of its test, and
//! iceoryx2 beside it (docs/benchmarks.md, "Regimes against iceoryx2"):
//! - `<size>.signal`, 4 B to 4 MiB, one in flight: no payload byte
//!   touched on either side, both busy-polling, against iceoryx2 in the
//!   same regime (its own benchmark's); and `signal.uring_queue.t_4MiB_vs_4B`,
//!   the ratio of the pair's 4 MiB and 4 B medians (how flat it is);
//! - `<test>.busy`, 1 MiB and 4 MiB, one and 64 in flight: the suite's
//!   write-once/read-once work with both sides busy-polling, against
//!   iceoryx2's;
//! - `<size>.inplace`, 1 MiB and 4 MiB: the server writes its reply over
//!   the request in the request's own block, against iceoryx2's
//!   write-once/read-once (which needs a second chunk for the response).
//!
//! Each gives `<test>.uring_queue.t_vs_iceoryx2` (paired, as above) and the
//! variants' `.median` rows. Rows where both sides wait on their event
//! mechanism are left out: iceoryx2 0.10's request/response ports cannot
//! be attached to a `WaitSet`, only an event service's listener can.
//!
//! Then the pair over each kind of page, `<size>.pages` at 1 MiB and
//! 4 MiB with `uring_queue_normal` as the anchor and `uring_queue_thp`
//! and `uring_queue_huge` beside it, and `setup.pages`, what each kind
//! costs to create, map and touch (see [`pages`]; the huge-page rows read
//! `NaN` with the reason on stderr where none can be reserved).
//!
//! Then `loaded.4B`: the 4 B pair of `unix` and `uring_queue` with two
//! CPU-bound threads running beside it (see [`loaded`]).
//!
//! A new transport needs a client implementing [`Transport`] (it owns or
//! borrows its [`peer::Peer`]), a server function registered under its role
//! in [`ROLES`], and an entry in the variant list of [`run`] (and in the
//! list given to [`loaded::measure`] for the rows under load).

#[cfg(feature = "iceoryx2")]
pub(crate) mod iceoryx;
mod loaded;
mod memcpy;
mod pages;
pub(crate) mod peer;
mod regimes;
pub(crate) mod tokio_unix;
pub(crate) mod unix;
pub(crate) mod uring;
mod uring_tokio;
pub(crate) mod wire;

use crate::harness::{Compare, Ctx, paired_median, row};
use crate::targets::matches;
use regimes::Regime;
use std::cell::RefCell;
use std::time::Duration;
use wire::{IpcError, Patterns};

/// One variant's client side.
pub trait Transport {
    /// Sends `count` requests with `len`-byte bodies, `depth` at a time
    /// (`depth` requests go out before the first of their replies is
    /// awaited), checks every reply, and returns the time it took.
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError>;

    /// Why this variant cannot send `len`-byte bodies `depth` at a time, if
    /// it cannot: the suite then writes its rows as not measured (`NaN`)
    /// and prints the reason.
    fn unsupported(&self, _len: usize, _depth: usize) -> Option<String> {
        None
    }
}

/// A variant this build cannot measure, with the reason.
#[cfg(not(feature = "iceoryx2"))]
#[derive(Debug)]
pub struct NotBuilt(pub &'static str);

#[cfg(not(feature = "iceoryx2"))]
impl Transport for NotBuilt {
    fn exchange(&mut self, _: usize, _: usize, _: usize) -> Result<Duration, IpcError> {
        Err(IpcError::Transport(self.0.to_owned()))
    }

    fn unsupported(&self, _: usize, _: usize) -> Option<String> {
        Some(self.0.to_owned())
    }
}

/// The roles this suite starts this binary in: its servers, and the load
/// of the `loaded` rows. `suites::peer_main` serves them.
pub(crate) const ROLES: &[(&str, peer::Serve)] = &[
    ("unix", unix::serve),
    ("tokio", tokio_unix::serve),
    ("uring_queue", uring::serve),
    (uring::PARKED_ROLE, uring::serve_parked),
    ("uring_queue_tokio", uring_tokio::serve),
    (loaded::ROLE, loaded::serve),
    #[cfg(feature = "iceoryx2")]
    ("iceoryx2", iceoryx::serve),
];

const SIZES: &[(&str, usize)] = &[
    ("4B", 4),
    ("64B", 64),
    ("4KiB", 4 << 10),
    ("64KiB", 64 << 10),
    ("1MiB", 1 << 20),
    ("4MiB", 4 << 20),
];

const DEPTHS: &[usize] = &[1, 64];

/// Quick mode skips 64 in flight above this size: a batch of 64 large
/// requests alone takes longer than a smoke run should.
const QUICK_DEEP_MAX: usize = 64 << 10;

const ANCHOR: &str = "unix";
const MEMCPY: &str = "memcpy";
/// The floor of the whole work: the copies and the checks.
const MEMCPY_CHECKED: &str = "memcpy_checked";
/// The zero-copy anchor (feature `iceoryx2`).
const ICEORYX2: &str = "iceoryx2";

/// Paired ratios beside `t_vs_unix`: variants matching the pattern against
/// the named variant, in the same rounds, as rows `<test>.<variant>.<metric>`.
/// Where the other variant could not be measured the row is `NaN`.
const PAIRED: &[(&str, &str, &str)] = &[
    // Every variant against one copy each way (the 4 MiB target).
    ("*", MEMCPY, "t_vs_memcpy2"),
    // The crate against the floor of the whole work (copies and checks,
    // one after the other on one core).
    ("uring_queue*", MEMCPY_CHECKED, "t_vs_memcpy_checked"),
    // The blocking calls against the zero-copy anchor.
    ("uring_queue", ICEORYX2, "t_vs_iceoryx2"),
    // The reactor-driven pair against tokio's sockets, and against the
    // blocking calls.
    ("uring_queue_tokio", "tokio", "t_vs_tokio"),
    ("uring_queue_tokio", "uring_queue", "t_vs_uring_queue"),
];

/// The iceoryx2 anchor, or what stands in for it in a build without it.
#[cfg(feature = "iceoryx2")]
fn iceoryx2<'p>(
    patterns: &'p Patterns,
    cpu: Option<usize>,
    deep_max: usize,
) -> iceoryx::Client<'p> {
    started(ICEORYX2, iceoryx::Client::spawn(patterns, cpu, deep_max))
}

/// The iceoryx2 anchor in iceoryx2's own benchmark's regime.
#[cfg(feature = "iceoryx2")]
fn signal_only<'a>(anchor: &'a mut iceoryx::Client<'_>) -> Box<dyn Transport + 'a> {
    Box::new(iceoryx::SignalOnly(anchor))
}

/// What stands in for the iceoryx2 anchor in a build without it.
#[cfg(not(feature = "iceoryx2"))]
fn signal_only(anchor: &mut NotBuilt) -> Box<dyn Transport + '_> {
    Box::new(NotBuilt(anchor.0))
}

/// The iceoryx2 anchor, or what stands in for it in a build without it.
#[cfg(not(feature = "iceoryx2"))]
fn iceoryx2(_: &Patterns, _: Option<usize>, _: usize) -> NotBuilt {
    NotBuilt(
        "built without the `iceoryx2` feature \
         (cargo run --release -p benches --features iceoryx2 -- ipc)",
    )
}

/// Requests per sample: as many as take the anchor about `target` (it is
/// timed on a few batches first), within `[min, max]`, rounded up to whole
/// batches. Sizing by the anchor's time keeps samples short when a loaded
/// machine slows the sockets down a hundredfold, and long enough to time
/// when it is quiet.
fn requests_per_sample(ctx: &Ctx, anchor: &mut dyn Transport, len: usize, depth: usize) -> usize {
    let target = ctx.pick(Duration::from_millis(20), Duration::from_millis(3));
    let (min, max) = ctx.pick((16, 20_000), (2, 1000));
    let probe = depth.max(8);
    let per_request = (0..2)
        .map(|_| {
            anchor
                .exchange(len, probe, depth)
                .unwrap_or_else(|e| panic!("ipc {len}-byte probe of the anchor: {e}"))
        })
        .min()
        .expect("two probes")
        / probe as u32;
    let n = (target.as_nanos() / per_request.as_nanos().max(1)) as usize;
    n.clamp(min, max).div_ceil(depth) * depth
}

fn test_name(size: &str, depth: usize) -> String {
    if depth == 1 {
        size.to_owned()
    } else {
        format!("{size}.inflight{depth}")
    }
}

/// Runs the suite.
pub fn run(ctx: &Ctx) {
    let patterns = Patterns::new();
    let placement = peer::Placement::pin_client();
    eprintln!("  placement {}", placement.describe);
    let cpu = placement.server_cpu();
    let mut unix = started("unix", unix::Client::spawn(&patterns, cpu));
    let mut tokio = started("tokio", tokio_unix::Client::spawn(&patterns, cpu));
    // The largest body sent 64 at a time.
    let deep_max = if ctx.quick {
        QUICK_DEEP_MAX
    } else {
        wire::MAX_BODY
    };
    let mut shm = started("uring_queue", uring::memory(deep_max));
    let connection = started(
        "uring_queue",
        uring::Connection::spawn(&mut shm, deep_max, &patterns, cpu),
    );
    let mut uring_queue = uring::Blocking::new(&connection);
    let mut uring_queue_async = uring::Async::new(&connection);
    let mut shm_tokio = started("uring_queue_tokio", uring::memory(deep_max));
    let mut uring_queue_tokio = started(
        "uring_queue_tokio",
        uring_tokio::Client::spawn(&mut shm_tokio, deep_max, &patterns, cpu),
    );
    let mut memcpy = memcpy::Floor::new(&patterns, false);
    let mut memcpy_checked = memcpy::Floor::new(&patterns, true);
    let mut iceoryx2 = iceoryx2(&patterns, cpu, deep_max);
    {
        let mut variants: Vec<(&'static str, &mut dyn Transport)> = vec![
            (ANCHOR, &mut unix),
            ("tokio", &mut tokio),
            ("uring_queue", &mut uring_queue),
            ("uring_queue_async", &mut uring_queue_async),
            ("uring_queue_tokio", &mut uring_queue_tokio),
            (ICEORYX2, &mut iceoryx2),
            (MEMCPY, &mut memcpy),
            (MEMCPY_CHECKED, &mut memcpy_checked),
        ];
        for &depth in DEPTHS {
            for &(size, len) in SIZES {
                if depth > 1 && len > deep_max {
                    continue;
                }
                let test = test_name(size, depth);
                measure(ctx, (&test, ANCHOR), len, depth, &mut variants);
            }
        }
    }
    measure_regimes(ctx, &connection, &mut iceoryx2, deep_max);
    pages::measure_pages(ctx, &patterns, &placement);
    // The same 4 B pair beside two CPU-bound threads; a reactor-driven
    // client goes in this list too.
    loaded::measure(
        ctx,
        &mut [(ANCHOR, &mut unix), ("uring_queue", &mut uring_queue)],
    );
    let finish = |name: &str, r: Result<(), IpcError>| {
        r.unwrap_or_else(|e| panic!("ipc: shutting down the {name} server: {e}"))
    };
    finish("unix", unix.finish());
    finish("tokio", tokio.finish());
    finish("uring_queue", connection.finish());
    finish("uring_queue_tokio", uring_queue_tokio.finish());
    #[cfg(feature = "iceoryx2")]
    finish(ICEORYX2, iceoryx2.finish());
}

/// The sizes the busy and in-place regimes are measured at.
const LARGE: &[(&str, usize)] = &[("1MiB", 1 << 20), ("4MiB", 4 << 20)];

/// The iceoryx2 anchor's type in this build.
#[cfg(feature = "iceoryx2")]
type Iceoryx2<'p> = iceoryx::Client<'p>;
/// The iceoryx2 anchor's type in this build.
#[cfg(not(feature = "iceoryx2"))]
type Iceoryx2<'p> = NotBuilt;

/// The regimes against iceoryx2 (see [`regimes`]), each test anchored on
/// the pair's own client in that regime.
fn measure_regimes(
    ctx: &Ctx,
    conn: &uring::Connection<'_, '_>,
    iceoryx2: &mut Iceoryx2<'_>,
    deep_max: usize,
) {
    const OURS: &str = "uring_queue";
    let mut signal = Vec::new();
    for &(size, len) in SIZES {
        let mut ours = regimes::Polling::new(conn, Regime::Signal);
        let mut theirs = signal_only(iceoryx2);
        let mut variants: [(&'static str, &mut dyn Transport); 2] =
            [(OURS, &mut ours), (ICEORYX2, &mut *theirs)];
        let test = format!("{size}.{}", Regime::Signal.name());
        signal.push((size, measure(ctx, (&test, OURS), len, 1, &mut variants)));
    }
    // How flat the signal-only curve is: not paired round by round (the
    // two sizes are separate tests), a quotient of medians.
    let median = |size| signal.iter().find(|(s, _)| *s == size).map(|(_, us)| *us);
    if let (Some(large), Some(small)) = (median("4MiB"), median("4B")) {
        row("ipc", "signal.uring_queue.t_4MiB_vs_4B", large / small, "x");
    }
    for (regime, depths) in [(Regime::Busy, DEPTHS), (Regime::InPlace, &[1][..])] {
        for &depth in depths {
            for &(size, len) in LARGE {
                if depth > 1 && len > deep_max {
                    continue;
                }
                let mut ours = regimes::Polling::new(conn, regime);
                let mut variants: [(&'static str, &mut dyn Transport); 2] =
                    [(OURS, &mut ours), (ICEORYX2, &mut *iceoryx2)];
                let test = format!("{}.{}", test_name(size, depth), regime.name());
                measure(ctx, (&test, OURS), len, depth, &mut variants);
            }
        }
    }
}

fn started<T>(name: &str, client: Result<T, IpcError>) -> T {
    client.unwrap_or_else(|e| panic!("ipc: starting the {name} server: {e}"))
}

/// Measures one test, `(test, anchor)`, of every variant: writes its rows
/// and returns the anchor's median time per request, in µs.
fn measure(
    ctx: &Ctx,
    (test, anchor): (&str, &'static str),
    len: usize,
    depth: usize,
    variants: &mut [(&'static str, &mut dyn Transport)],
) -> f64 {
    let sizer = variants
        .iter_mut()
        .find(|(name, _)| *name == anchor)
        .expect("the anchor is a variant");
    let count = requests_per_sample(ctx, &mut *sizer.1, len, depth);
    // Variants that cannot do this size or depth stay out of the rounds;
    // their rows say "not measured" and stderr says why.
    let (mut able, unable): (Vec<_>, Vec<_>) = variants
        .iter_mut()
        .map(|(name, t)| (*name, t.unsupported(len, depth), t))
        .partition(|(_, why, _)| why.is_none());
    let names: Vec<&'static str> = able.iter().map(|v| v.0).collect();
    // Every sample's time, to pair rounds against other variants as the
    // harness pairs them against the anchor.
    let log: Vec<RefCell<Vec<Duration>>> = able.iter().map(|_| RefCell::default()).collect();
    let mut c = Compare::new("ipc", test, anchor);
    for ((name, _, transport), log) in able.iter_mut().zip(&log) {
        let name = *name;
        c.variant(name, move || {
            let t = transport
                .exchange(len, count, depth)
                .unwrap_or_else(|e| panic!("ipc {test} {name}: {e}"));
            log.borrow_mut().push(t);
            t
        });
    }
    let results = c.run(ctx.rounds(21, 3));
    drop(c);
    // The first sample of each variant is the harness's warm-up.
    let times: Vec<Vec<Duration>> = log
        .into_iter()
        .map(|l| l.into_inner().split_off(1))
        .collect();
    let unable: Vec<(&str, String)> = unable
        .into_iter()
        .map(|(n, why, _)| (n, why.unwrap_or_default()))
        .collect();
    emit((test, anchor), count, &names, &times, &results, &unable);
    results.median(anchor).as_secs_f64() * 1e6 / count as f64
}

/// Writes one test's rows and its table on stderr.
fn emit(
    (test, anchor): (&str, &str),
    count: usize,
    names: &[&str],
    times: &[Vec<Duration>],
    results: &crate::harness::Results,
    unable: &[(&str, String)],
) {
    eprintln!(
        "  {:<18} {:>12} {:>10} {:>12}   ({count} requests per sample)",
        "variant",
        "per request",
        format!("t/{anchor}"),
        "t/memcpy2"
    );
    let index = |n: &str| names.iter().position(|m| *m == n);
    for (i, name) in names.iter().enumerate() {
        let us = results.median(name).as_secs_f64() * 1e6 / count as f64;
        let vs_unix = results.ratio(name);
        row("ipc", &format!("{test}.{name}.median"), us, "us");
        row("ipc", &format!("{test}.{name}.t_vs_{anchor}"), vs_unix, "x");
        for &(pattern, other, metric) in PAIRED {
            if !matches(pattern, name) || *name == other {
                continue;
            }
            let r = match index(other) {
                Some(j) => paired_median(&times[i], &times[j]),
                None if unable.iter().any(|(n, _)| *n == other) => f64::NAN,
                None => continue,
            };
            row("ipc", &format!("{test}.{name}.{metric}"), r, "x");
        }
        let vs_floor = index(MEMCPY)
            .filter(|&f| f != i)
            .map(|f| paired_median(&times[i], &times[f]));
        eprintln!(
            "  {name:<18} {us:>9.3} us {vs_unix:>9.3}x {:>11}",
            vs_floor.map_or(String::new(), |r| format!("{r:.3}x"))
        );
    }
    for (name, why) in unable {
        row("ipc", &format!("{test}.{name}.median"), f64::NAN, "us");
        row(
            "ipc",
            &format!("{test}.{name}.t_vs_{anchor}"),
            f64::NAN,
            "x",
        );
        eprintln!("  {name:<18} not measured: {why}");
    }
}
