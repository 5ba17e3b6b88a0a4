//! `idle200.4B`: one client's 4 B round trip on a server with 200 idle
//! clients, against the same on a server with no other client.

use super::rounds::{self, Kind};
use super::{Knobs, SIZE, flight, name};
use crate::suites::ipc::uring::SLOTS;
use crate::suites::ipc::wire::{IpcError, Patterns};
use uring_queue::uring::service::{ClientConfig, Connection, connect};

/// This process's connection to the hub started as `what`, with the
/// default spin-then-park options.
fn connected(what: &str) -> Connection<SLOTS> {
    connect::<SLOTS>(name(what).as_str(), ClientConfig::default())
        .map_err(|e| IpcError::Transport(e.to_string()))
        .unwrap_or_else(|e| panic!("service: connecting to the {what} hub: {e}"))
}

/// Measures and writes the test's rows: variants `one` (the anchor) and
/// `service` (beside the idle clients).
pub fn measure(knobs: &Knobs, patterns: &Patterns) {
    let test = format!("idle{}.4B", knobs.idle);
    let (alone, crowded) = (connected("one"), connected("crowded"));
    let n = knobs.requests;
    let work = (SIZE, n, 1);
    let times = rounds::run(
        &test,
        knobs.rounds,
        vec![
            ("one", Box::new(|| flight::pair(&alone, patterns, work))),
            (
                "service",
                Box::new(|| flight::pair(&crowded, patterns, work)),
            ),
        ],
    );
    eprintln!("  ({n} round trips per sample, one in flight)");
    times.emit(Kind::Time, "one", n, "us");
}
