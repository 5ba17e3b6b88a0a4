//! `connect`: connecting to the hub by name, mapping the region and the
//! first 4 B call, against connecting to the tokio server and the first
//! 4 B exchange. Each connection is closed before the next.

use super::rounds::{self, Kind};
use super::{Knobs, SIZE, flight, name, unix};
use crate::suites::ipc::uring::SLOTS;
use crate::suites::ipc::wire::{IpcError, Patterns};
use std::time::{Duration, Instant};
use uring_queue::uring::service::{ClientConfig, connect};

/// Measures and writes the test's rows: variants `unix` (the anchor) and
/// `service`.
pub fn measure(knobs: &Knobs, patterns: &Patterns) {
    let k = knobs.connects();
    let (hub, unix_name) = (name("active"), name("unix"));
    let unix = || -> Result<Duration, IpcError> {
        let start = Instant::now();
        for _ in 0..k {
            let stream = unix::connect(&unix_name)?;
            flight::Socket::new(stream, patterns, SIZE)?.exchange(patterns, (SIZE, 1, 1))?;
        }
        Ok(start.elapsed())
    };
    let service = || -> Result<Duration, IpcError> {
        let start = Instant::now();
        for _ in 0..k {
            let c = connect::<SLOTS>(hub.as_str(), ClientConfig::default())
                .map_err(|e| IpcError::Transport(e.to_string()))?;
            flight::pair(&c, patterns, (SIZE, 1, 1))?;
        }
        Ok(start.elapsed())
    };
    let times = rounds::run(
        "connect",
        knobs.rounds,
        vec![("unix", Box::new(unix)), ("service", Box::new(service))],
    );
    eprintln!("  ({k} connections per sample, each closed before the next)");
    times.emit(Kind::Time, "unix", k, "us");
}
