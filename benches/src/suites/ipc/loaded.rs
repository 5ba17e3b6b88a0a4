//! The 4 B request/response pair on a busy machine: the same clients and
//! servers as the rest of the suite, while two CPU-bound threads run beside
//! them.
//!
//! The load is a process of its own (this binary started again in the role
//! [`ROLE`]), as the builds and test runs that keep a shared machine busy
//! are: two threads that do integer arithmetic without pause, at the
//! default priority, free to run on every CPU (the client's pinning is
//! undone in the load process). With the client pinned to one CPU and the
//! servers to the other, the scheduler then gives each side of a pair a
//! CPU-bound neighbour, as on a 2-core machine running a build. The load
//! runs only while this test does.
//!
//! Each sample times every round trip of its requests on its own (one
//! request in flight, `exchange(4, 1, 1)` of the variant's own client) and
//! counts as its median round trip; it makes as many round trips as take
//! the anchor about 20 ms (3 ms in quick mode), but stops after 200 ms
//! (30 ms) once it has five, so the harness's paired ratio is the
//! median over rounds of one variant's median round trip over the
//! anchor's. Rows, for every variant:
//! - `loaded.4B.<variant>.median` (µs): the median over rounds of the
//!   samples' median round trips;
//! - `loaded.4B.<variant>.t_vs_unix` (×): that paired ratio;
//! - `loaded.4B.<variant>.p99_us` (µs): the 99th percentile of every round
//!   trip timed in the rounds (the warm-up round left out).

use super::peer::{self, Peer};
use super::wire::IpcError;
use super::{ANCHOR, Transport, requests_per_sample};
use crate::harness::{Compare, Ctx, median_duration, row};
use std::cell::RefCell;
use std::hint::black_box;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The load process's role.
pub const ROLE: &str = "load";

/// CPU-bound threads in the load process.
const THREADS: usize = 2;

/// Round trips a sample always has, whatever its budget.
const MIN_TRIPS: usize = 5;

const TEST: &str = "loaded.4B";
const LEN: usize = 4;

/// Measures the 4 B round trip of `variants` (the anchor among them) with
/// the load running.
///
/// # Panics
///
/// If the load process cannot start, or a variant fails: as every
/// comparison of the suite.
pub fn measure(ctx: &Ctx, variants: &mut [(&'static str, &mut dyn Transport)]) {
    let load = Load::start().unwrap_or_else(|e| panic!("ipc {TEST}: starting the load: {e}"));
    eprintln!("  {TEST}: {THREADS} CPU-bound threads in a process of their own, on any CPU");
    let anchor = variants
        .iter_mut()
        .find(|(name, _)| *name == ANCHOR)
        .expect("the anchor is a variant");
    let count = requests_per_sample(ctx, &mut *anchor.1, LEN, 1);
    let budget = ctx.pick(Duration::from_millis(200), Duration::from_millis(30));
    // Every sample's round trips, per variant.
    let log: Vec<RefCell<Vec<Vec<Duration>>>> =
        variants.iter().map(|_| RefCell::default()).collect();
    let mut c = Compare::new("ipc", TEST, ANCHOR);
    for ((name, transport), log) in variants.iter_mut().zip(&log) {
        let name = *name;
        let mut trips = Vec::with_capacity(count);
        c.variant(name, move || {
            trips.clear();
            let start = Instant::now();
            // Up to `count` round trips, but no sample longer than the
            // budget once it has a few: a variant a hundred times slower
            // than the anchor would otherwise take minutes.
            while trips.len() < count && (trips.len() < MIN_TRIPS || start.elapsed() < budget) {
                let t = transport
                    .exchange(LEN, 1, 1)
                    .unwrap_or_else(|e| panic!("ipc {TEST} {name}: {e}"));
                trips.push(t);
            }
            log.borrow_mut().push(trips.clone());
            median_duration(trips.clone())
        });
    }
    let results = c.run(ctx.rounds(21, 3));
    drop(c);
    load.stop()
        .unwrap_or_else(|e| panic!("ipc {TEST}: stopping the load: {e}"));
    eprintln!(
        "  {:<18} {:>12} {:>12} {:>10}   ({count} round trips per sample)",
        "variant", "median", "p99", "t/unix"
    );
    for ((name, _), log) in variants.iter().zip(log) {
        // The first sample is the harness's warm-up.
        let trips: Vec<Duration> = log.into_inner().into_iter().skip(1).flatten().collect();
        let median = results.median(name).as_secs_f64() * 1e6;
        let p99 = percentile(trips, 99).as_secs_f64() * 1e6;
        let ratio = results.ratio(name);
        row("ipc", &format!("{TEST}.{name}.median"), median, "us");
        row("ipc", &format!("{TEST}.{name}.t_vs_{ANCHOR}"), ratio, "x");
        row("ipc", &format!("{TEST}.{name}.p99_us"), p99, "us");
        eprintln!("  {name:<18} {median:>9.3} us {p99:>9.3} us {ratio:>9.3}x");
    }
}

/// The `p`-th percentile of `v` (nearest rank); zero if `v` is empty.
fn percentile(mut v: Vec<Duration>, p: usize) -> Duration {
    v.sort_unstable();
    let rank = (v.len() * p).div_ceil(100);
    v.get(rank.saturating_sub(1)).copied().unwrap_or_default()
}

/// The running load process.
#[derive(Debug)]
struct Load {
    control: UnixStream,
    peer: Peer,
}

impl Load {
    /// Starts the load and waits until its threads run.
    fn start() -> Result<Self, IpcError> {
        let (control, theirs) = UnixStream::pair()?;
        let peer = Peer::spawn(ROLE, &[theirs.as_fd()], None)?;
        drop(theirs);
        let mut running = [0_u8];
        (&control).read_exact(&mut running)?;
        Ok(Self { control, peer })
    }

    /// Stops the load and waits for its process to exit.
    fn stop(self) -> Result<(), IpcError> {
        drop(self.control);
        self.peer.finish()
    }
}

/// The load process: [`THREADS`] threads of arithmetic on every CPU, until
/// the client hangs up.
pub fn serve(fds: Vec<OwnedFd>) -> Result<(), IpcError> {
    let control = UnixStream::from(peer::one_fd(fds, "socket")?);
    // Started by the pinned client thread, the process inherited its CPU.
    peer::unpin()?;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| burn(&stop));
        }
        let said = (&control).write_all(&[1]);
        // Blocks until the client closes its end.
        let heard = (&control).read(&mut [0_u8]);
        stop.store(true, Ordering::Relaxed);
        said?;
        heard?;
        Ok(())
    })
}

/// Integer arithmetic until `stop`: a CPU-bound thread that never sleeps.
fn burn(stop: &AtomicBool) {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..4096 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        black_box(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let us = |v: &[u64]| v.iter().map(|&u| Duration::from_micros(u)).collect();
        let hundred: Vec<Duration> = us(&(1..=100).rev().collect::<Vec<_>>());
        assert_eq!(percentile(hundred.clone(), 99), Duration::from_micros(99));
        assert_eq!(percentile(hundred, 50), Duration::from_micros(50));
        assert_eq!(percentile(us(&[7]), 99), Duration::from_micros(7));
        assert_eq!(percentile(us(&[1, 2, 3]), 99), Duration::from_micros(3));
        assert_eq!(percentile(Vec::new(), 99), Duration::ZERO);
    }
}
