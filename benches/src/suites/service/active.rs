//! `active16`: the aggregate rate of 16 client processes on one hub,
//! against one client on a plain pair, the same processes over Unix
//! sockets to a tokio server, and over iceoryx2.

use super::processes::Processes;
use super::rounds::{self, Kind, Sample};
use super::{DEPTH, Knobs, SIZE, flight};
use crate::harness::row;
use crate::suites::ipc::uring as pair;
use crate::suites::ipc::wire::Patterns;
use std::cell::RefCell;

/// The variants the active processes run, in the rounds' order.
#[cfg(feature = "iceoryx2")]
const VARIANTS: &[&str] = &["service", "unix", "iceoryx2"];
#[cfg(not(feature = "iceoryx2"))]
const VARIANTS: &[&str] = &["service", "unix"];

/// Measures and writes the test's rows: variants `pair` (the anchor, this
/// process on the plain pair with default waits), `pair_parked` (the same
/// on a pair whose ends park at once, as the service's ends do),
/// `service`, `unix` and `iceoryx2`; the service's rate against
/// `pair_parked`, `unix` and `iceoryx2`; and the pair's against `unix`, the
/// ceiling of the service's.
pub fn measure(
    knobs: &Knobs,
    patterns: &Patterns,
    processes: &mut Processes,
    [pair, parked]: [&pair::Connection<'_, '_>; 2],
) {
    let (m, n) = (knobs.active, knobs.requests);
    let total = m * n;
    let test = format!("active{m}");
    let processes = RefCell::new(processes);
    let mut variants: Vec<(&'static str, Sample<'_>)> = vec![
        (
            "pair",
            Box::new(|| flight::pair(pair.client(), patterns, (SIZE, total, DEPTH))),
        ),
        (
            "pair_parked",
            Box::new(|| flight::pair(parked.client(), patterns, (SIZE, total, DEPTH))),
        ),
    ];
    for &v in VARIANTS {
        let processes = &processes;
        variants.push((
            v,
            Box::new(move || sample(&mut processes.borrow_mut(), v, n)),
        ));
    }
    let times = rounds::run(&test, knobs.rounds, variants);
    eprintln!("  ({m} clients x {n} requests per sample, {DEPTH} in flight each)");
    times.emit(Kind::Rate, "pair", total, "req/s");
    for other in ["pair_parked"].iter().chain(&VARIANTS[1..]) {
        let r = times.ratio(Kind::Rate, "service", other);
        row(
            "service",
            &format!("{test}.service.rate_vs_{other}"),
            r,
            "x",
        );
    }
    // The ceiling of the service's rate against the socket server: one pair
    // at its best (each side spinning on a CPU of its own) does the same
    // work per request on the same two CPUs, with no client to wake.
    row(
        "service",
        &format!("{test}.pair.rate_vs_unix"),
        times.ratio(Kind::Rate, "pair", "unix"),
        "x",
    );
    #[cfg(not(feature = "iceoryx2"))]
    {
        eprintln!(
            "  iceoryx2   not measured: built without the `iceoryx2` feature \
             (cargo run --release -p benches --features iceoryx2 -- service)"
        );
        row(
            "service",
            &format!("{test}.iceoryx2.median"),
            f64::NAN,
            "req/s",
        );
        row(
            "service",
            &format!("{test}.service.rate_vs_iceoryx2"),
            f64::NAN,
            "x",
        );
    }
}

/// One sample of `variant` on every active process.
fn sample(
    processes: &mut Processes,
    variant: &str,
    count: usize,
) -> Result<std::time::Duration, crate::suites::ipc::wire::IpcError> {
    #[cfg(feature = "iceoryx2")]
    if variant == "iceoryx2" {
        return processes.iceoryx2_sample(count);
    }
    processes.active_sample(variant, count)
}
