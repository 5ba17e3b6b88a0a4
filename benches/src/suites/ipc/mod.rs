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
//! - `memcpy`: no transport, one copy of the body each way in this process
//!   (the yardstick of the 4 MiB target);
//! - `memcpy_checked`: the same plus the two checks (the floor of the work).
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
//!   `memcpy_checked`, the floor of the work.
//!
//! A new transport needs a client implementing [`Transport`] (it owns or
//! borrows its [`peer::Peer`]), a server function registered under its role
//! in [`peer_main`], and an entry in the variant list of [`run`].

mod memcpy;
mod peer;
mod tokio_unix;
mod unix;
mod uring;
mod wire;

use crate::harness::{Compare, Ctx, paired_median, row};
use std::cell::RefCell;
use std::process::ExitCode;
use std::time::Duration;
use wire::{IpcError, Patterns};

/// One variant's client side.
pub trait Transport {
    /// Sends `count` requests with `len`-byte bodies, `depth` at a time
    /// (`depth` requests go out before the first of their replies is
    /// awaited), checks every reply, and returns the time it took.
    fn exchange(&mut self, len: usize, count: usize, depth: usize) -> Result<Duration, IpcError>;
}

/// In a server process, serves and returns the exit code; `None` in the
/// benchmark process itself. `main` calls this first.
pub fn peer_main() -> Option<ExitCode> {
    peer::main(&[
        ("unix", unix::serve),
        ("tokio", tokio_unix::serve),
        ("uring_queue", uring::serve),
    ])
}

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
                .unwrap_or_else(|e| panic!("ipc {len}-byte probe of {ANCHOR}: {e}"))
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
    let mut memcpy = memcpy::Floor::new(&patterns, false);
    let mut memcpy_checked = memcpy::Floor::new(&patterns, true);
    {
        let mut variants: Vec<(&'static str, &mut dyn Transport)> = vec![
            (ANCHOR, &mut unix),
            ("tokio", &mut tokio),
            ("uring_queue", &mut uring_queue),
            ("uring_queue_async", &mut uring_queue_async),
            (MEMCPY, &mut memcpy),
            (MEMCPY_CHECKED, &mut memcpy_checked),
        ];
        for &depth in DEPTHS {
            for &(size, len) in SIZES {
                if depth > 1 && len > deep_max {
                    continue;
                }
                measure(ctx, &test_name(size, depth), len, depth, &mut variants);
            }
        }
    }
    let finish = |name: &str, r: Result<(), IpcError>| {
        r.unwrap_or_else(|e| panic!("ipc: shutting down the {name} server: {e}"))
    };
    finish("unix", unix.finish());
    finish("tokio", tokio.finish());
    finish("uring_queue", connection.finish());
}

fn started<T>(name: &str, client: Result<T, IpcError>) -> T {
    client.unwrap_or_else(|e| panic!("ipc: starting the {name} server: {e}"))
}

fn measure(
    ctx: &Ctx,
    test: &str,
    len: usize,
    depth: usize,
    variants: &mut [(&'static str, &mut dyn Transport)],
) {
    let anchor = variants
        .iter_mut()
        .find(|(name, _)| *name == ANCHOR)
        .expect("the anchor is a variant");
    let count = requests_per_sample(ctx, &mut *anchor.1, len, depth);
    // Every sample's time, to pair rounds against `memcpy` as the harness
    // pairs them against the anchor.
    let log: Vec<RefCell<Vec<Duration>>> = variants.iter().map(|_| RefCell::default()).collect();
    let mut c = Compare::new("ipc", test, ANCHOR);
    for ((name, transport), log) in variants.iter_mut().zip(&log) {
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
    let names: Vec<&str> = variants.iter().map(|(n, _)| *n).collect();
    // The first sample of each variant is the harness's warm-up.
    let times: Vec<Vec<Duration>> = log
        .into_iter()
        .map(|l| l.into_inner().split_off(1))
        .collect();
    let floor = names.iter().position(|n| *n == MEMCPY);
    let checked = names.iter().position(|n| *n == MEMCPY_CHECKED);
    eprintln!(
        "  {:<18} {:>12} {:>10} {:>12}   ({count} requests per sample)",
        "variant", "per request", "t/unix", "t/memcpy2"
    );
    for (i, name) in names.iter().enumerate() {
        let us = results.median(name).as_secs_f64() * 1e6 / count as f64;
        let vs_unix = results.ratio(name);
        row("ipc", &format!("{test}.{name}.median"), us, "us");
        row("ipc", &format!("{test}.{name}.t_vs_{ANCHOR}"), vs_unix, "x");
        let vs_floor = floor
            .filter(|&f| f != i)
            .map(|f| paired_median(&times[i], &times[f]));
        if let Some(r) = vs_floor {
            row("ipc", &format!("{test}.{name}.t_vs_memcpy2"), r, "x");
        }
        // The crate against the floor of the whole work (copies and
        // checks, one after the other on one core).
        if let Some(f) = checked.filter(|_| name.starts_with("uring_queue")) {
            let r = paired_median(&times[i], &times[f]);
            row("ipc", &format!("{test}.{name}.t_vs_memcpy_checked"), r, "x");
        }
        eprintln!(
            "  {name:<18} {us:>9.3} us {vs_unix:>9.3}x {:>11}",
            vs_floor.map_or(String::new(), |r| format!("{r:.3}x"))
        );
    }
}
